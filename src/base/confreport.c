/* confreport: collects a configuration file's errors and renders them in
 * the seed's format (see confreport.h). Errors are kept, not printed, so a
 * checker can finish the whole file and cross-check values before anyone
 * reads the first line of its report. */
#include "base/confreport.h"
#include <stdarg.h>
#include <stdlib.h>
#include "base/xalloc.h"

void confreport_init(confreport *r, const char *path)
{
    r->path = path;
    r->errors = NULL;
    r->n = r->cap = 0;
}

void confreport_fini(confreport *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->errors[i].message);
        free(r->errors[i].note);
        free(r->errors[i].help);
    }
    free(r->errors);
    confreport_init(r, r->path);
}

static char *vformat(const char *fmt, va_list ap)
{
    buf b;
    buf_init(&b);
    buf_vprintf(&b, fmt, ap);
    return buf_steal(&b);
}

void confreport_error_at(confreport *r, int code, int line, const char *fmt, ...)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->errors = xrealloc(r->errors, r->cap * sizeof *r->errors);
    }
    va_list ap;
    va_start(ap, fmt);
    r->errors[r->n++] = (confreport_error){ code, line, vformat(fmt, ap), NULL, NULL };
    va_end(ap);
}

/* A note or help goes to the last error added (none: dropped), and
 * replaces one given before to it: the last word is the one that stands. */
typedef enum attachment { ATTACH_NOTE, ATTACH_HELP } attachment;

static void attach(confreport *r, attachment which, const char *fmt, va_list ap)
{
    if (!r->n) return;
    confreport_error *e = &r->errors[r->n - 1];
    char **slot = which == ATTACH_NOTE ? &e->note : &e->help;
    free(*slot);
    *slot = vformat(fmt, ap);
}

void confreport_note(confreport *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    attach(r, ATTACH_NOTE, fmt, ap);
    va_end(ap);
}

void confreport_help(confreport *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    attach(r, ATTACH_HELP, fmt, ap);
    va_end(ap);
}

void confreport_key_twice(confreport *r, int code, int line, const char *key, const char *section, int first_line)
{
    confreport_error_at(r, code, line, "key `%s` given twice in [%s]", key, section);
    confreport_note(r, "first given at %s:%d", r->path, first_line);
    confreport_help(r, "keep one of them");
}

size_t confreport_count(const confreport *r)
{
    return r->n;
}

static void render_one(const confreport *r, const confreport_error *e, buf *out)
{
    buf_printf(out, "error[HRS-%03d]: %s\n", e->code, e->message);
    if (e->line > 0) buf_printf(out, "  --> %s:%d\n", r->path, e->line);
    else buf_printf(out, "  --> %s\n", r->path);
    if (e->note) buf_printf(out, "   = note: %s\n", e->note);
    if (e->help) buf_printf(out, "   = help: %s\n", e->help);
}

/* Insertion sort on indices: errors are found almost in line order (only
 * the cross-checks made after the whole file come late), so it is close to
 * linear, and it keeps ties in the order found (a cross-check after the
 * value it checks). */
static size_t *line_order(const confreport *r)
{
    size_t *idx = xmalloc((r->n ? r->n : 1) * sizeof *idx);
    for (size_t i = 0; i < r->n; i++) {
        size_t j = i;
        while (j > 0 && r->errors[idx[j - 1]].line > r->errors[i].line) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return idx;
}

void confreport_render(const confreport *r, buf *out)
{
    if (!r->n) return;
    size_t *idx = line_order(r);
    for (size_t i = 0; i < r->n; i++) render_one(r, &r->errors[idx[i]], out);
    free(idx);
    buf_printf(out, "error: aborting due to %zu previous error%s\n", r->n, r->n == 1 ? "" : "s");
}

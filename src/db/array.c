/* array: text-format array literals (see array.h). */
#include "db/array.h"
#include <string.h>

void db_array_init(db_array *a)
{
    buf_init(&a->text);
    buf_putc(&a->text, '{');
    a->n = 0;
    a->closed = false;
}

void db_array_fini(db_array *a) { buf_fini(&a->text); }

static void next_element(db_array *a)
{
    if (a->closed) { a->text.len--; a->closed = false; }   /* reopened after db_array_literal */
    if (a->n++) buf_putc(&a->text, ',');
}

void db_array_text(db_array *a, const char *s)
{
    next_element(a);
    if (!s) { buf_puts(&a->text, "NULL"); return; }
    buf_putc(&a->text, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') buf_putc(&a->text, '\\');
        buf_putc(&a->text, *s);
    }
    buf_putc(&a->text, '"');
}

void db_array_int(db_array *a, int64_t v)
{
    next_element(a);
    buf_printf(&a->text, "%lld", (long long)v);
}

void db_array_bool(db_array *a, bool v)
{
    next_element(a);
    buf_putc(&a->text, v ? 't' : 'f');
}

const char *db_array_literal(db_array *a)
{
    if (!a->closed) { buf_putc(&a->text, '}'); a->closed = true; }
    return a->text.data;
}

void db_array_append(db_array *a, db_array *src)
{
    if (src->n == 0) return;
    const char *lit = db_array_literal(src);   /* "{e1,e2}": the elements are what lies between */
    db_array_append_raw(a, lit + 1, strlen(lit) - 2, src->n);
}

void db_array_append_raw(db_array *a, const char *elements, size_t len, size_t count)
{
    if (count == 0) return;
    if (len && *elements == ',') { elements++; len--; }
    next_element(a);
    buf_append(&a->text, elements, len);
    a->n += count - 1;
}

/* worker_progress: reading a command's progress lines (see worker_progress.h). */
#include "cli/worker_progress.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/json.h"

#define LINE_TOKENS 1024   /* a progressInfo is small; a line of more tokens is refused */

/* A finite number written as float8 reads it back (%.17g), in *out. */
static int finite_number(const json_doc *d, int v, char out[32])
{
    size_t n;
    const char *span = json_span(d, (uint32_t)v, &n);
    char text[64];
    if (d->tokens[v].type != JSON_NUMBER || n >= sizeof text) return -1;
    memcpy(text, span, n);
    text[n] = '\0';
    errno = 0;
    double x = strtod(text, NULL);
    if (errno != 0 || !isfinite(x)) return -1;
    snprintf(out, 32, "%.17g", x);
    return 0;
}

static int put_progress(const json_doc *d, int v, buf *members, char *err, size_t errlen)
{
    char number[32];
    if (v < 0) return 0;
    buf_puts(members, members->len ? ",\"progress\":" : "\"progress\":");
    if (d->tokens[v].type == JSON_NULL) { buf_puts(members, "null"); return 0; }
    if (finite_number(d, v, number) == 0) { buf_puts(members, number); return 0; }
    snprintf(err, errlen, "progress must be a finite number or null");
    return -1;
}

static int put_info(const json_doc *d, int v, buf *members, char *err, size_t errlen)
{
    if (v < 0) return 0;
    size_t n;
    const char *span = json_span(d, (uint32_t)v, &n);
    if (n > WK_PROGRESS_INFO_MAX) {
        snprintf(err, errlen, "progressInfo must be at most %d bytes of JSON", WK_PROGRESS_INFO_MAX);
        return -1;
    }
    buf_puts(members, members->len ? ",\"progressInfo\":" : "\"progressInfo\":");
    buf_append(members, span, n);
    return 0;
}

/* {"progress": ..., "progressInfo": ...}, nothing else, at least one. */
static int put_object(const json_doc *d, buf *members, char *err, size_t errlen)
{
    uint32_t count = d->tokens[0].count;
    int p = json_get(d, 0, "progress"), i = json_get(d, 0, "progressInfo");
    if (count == 0 || (uint32_t)((p >= 0) + (i >= 0)) != count) {
        snprintf(err, errlen, "an object must have progress and/or progressInfo and nothing else");
        return -1;
    }
    return put_progress(d, p, members, err, errlen) < 0 || put_info(d, i, members, err, errlen) < 0 ? -1 : 0;
}

int wk_progress_parse(const char *line, size_t n, buf *members, char *err, size_t errlen)
{
    buf_reset(members);
    json_doc d;
    json_doc_init(&d);
    int rc = -1;
    if (json_parse(&d, line, n, LINE_TOKENS) < 0) snprintf(err, errlen, "not JSON: %s", d.error);
    else if (d.tokens[0].type == JSON_NUMBER) rc = put_progress(&d, 0, members, err, errlen);
    else if (d.tokens[0].type == JSON_OBJECT) rc = put_object(&d, members, err, errlen);
    else snprintf(err, errlen, "a line must be a number or an object with progress and/or progressInfo");
    json_doc_fini(&d);
    return rc;
}

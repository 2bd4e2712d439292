/* buf: growable byte buffer (see buf.h). Doubling growth keeps appends
 * amortised O(1); the terminator lets callers hand data to C string APIs. */
#include "base/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/xalloc.h"

void buf_init(buf *b) { b->data = NULL; b->len = 0; b->cap = 0; }

void buf_fini(buf *b) { free(b->data); buf_init(b); }

void buf_reset(buf *b)
{
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

void buf_grow(buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

void buf_puts(buf *b, const char *s) { buf_append(b, s, strlen(s)); }


/* One formatting pass when the text fits the spare room (the common case),
 * a second one only after growing. */
void buf_vprintf(buf *b, const char *fmt, va_list ap)
{
    buf_reserve(b, 128);
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, copy);
    va_end(copy);
    if (n < 0) { b->data[b->len] = '\0'; return; }
    if ((size_t)n >= b->cap - b->len) {
        buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    }
    b->len += (size_t)n;
}

void buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *buf_steal(buf *b)
{
    if (!b->data) buf_append(b, "", 0);   /* an empty string, terminated */
    char *p = b->data;
    buf_init(b);
    return p;
}

/* buf: a growable byte buffer, the one way silt builds strings and blobs.
 * Allocation failure aborts: a broker that cannot allocate a few bytes cannot
 * answer honestly anyway, and it keeps every caller free of OOM branches. */
#ifndef SILT_BUF_H
#define SILT_BUF_H
#include <stddef.h>
#include <stdarg.h>
#include <string.h>

typedef struct buf {
    char  *data;   /* always NUL-terminated when cap > 0 */
    size_t len;    /* bytes used, excluding the terminator */
    size_t cap;    /* bytes allocated */
} buf;

void  buf_init(buf *b);
void  buf_fini(buf *b);
void  buf_reset(buf *b);                      /* len = 0, keeps memory */
void  buf_grow(buf *b, size_t extra);         /* buf_reserve's slow path */
/* Room for extra more bytes. Inline, with buf_append: the JSON emitter
 * calls them for every key and value (a pop's reply, issue 33). */
static inline void buf_reserve(buf *b, size_t extra)
{
    if (b->len + extra + 1 > b->cap) buf_grow(b, extra);
}
static inline void buf_append(buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}
void  buf_puts(buf *b, const char *s);
/* One byte: inline, since the JSON emitter writes many (a pop's reply). */
static inline void buf_putc(buf *b, char c)
{
    if (b->len + 2 > b->cap) { buf_append(b, &c, 1); return; }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}
void  buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void  buf_vprintf(buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
char *buf_steal(buf *b);                      /* hands the memory to the caller, resets b */

#endif

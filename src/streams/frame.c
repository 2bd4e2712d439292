/* frame: encoding of one message inside a segment (layout in frame.h).
 * Explicit little-endian byte order keeps blobs portable across hosts. */
#include "streams/frame.h"
#include <string.h>

static void put_u16(buf *b, uint16_t v)
{
    uint8_t p[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    buf_append(b, p, 2);
}

static void put_u32(buf *b, uint32_t v)
{
    uint8_t p[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    buf_append(b, p, 4);
}

size_t frame_size(const frame *f)
{
    return 1 + 16 + 2 + f->txn_len + (f->flags & FRAME_HAS_TRACE ? 16 : 0)
           + (f->flags & FRAME_HAS_SUB ? 2 + f->sub_len : 0) + 4 + f->payload_len;
}

void frame_encode_head(buf *out, const frame *f)
{
    buf_putc(out, (char)f->flags);
    buf_append(out, f->message_id, 16);
    put_u16(out, (uint16_t)f->txn_len);
    buf_append(out, f->txn, f->txn_len);
    if (f->flags & FRAME_HAS_TRACE) buf_append(out, f->trace_id, 16);
    if (f->flags & FRAME_HAS_SUB) {
        put_u16(out, (uint16_t)f->sub_len);
        buf_append(out, f->sub, f->sub_len);
    }
    put_u32(out, (uint32_t)f->payload_len);
}

void frame_encode(buf *out, const frame *f)
{
    frame_encode_head(out, f);
    buf_append(out, f->payload, f->payload_len);
}

/* Takes n bytes at *pos when they are there. */
static const uint8_t *take(const char *data, size_t len, size_t *pos, size_t n)
{
    if (len - *pos < n) return NULL;
    const uint8_t *p = (const uint8_t *)data + *pos;
    *pos += n;
    return p;
}

int frame_decode(const char *data, size_t len, size_t *pos, frame *f)
{
    const uint8_t *p;
    if (*pos > len || !(p = take(data, len, pos, 19))) return -1;
    f->flags = p[0];
    memcpy(f->message_id, p + 1, 16);
    f->txn_len = (size_t)p[17] | (size_t)p[18] << 8;
    f->txn = data + *pos;
    if (!take(data, len, pos, f->txn_len)) return -1;
    if (f->flags & FRAME_HAS_TRACE) {
        if (!(p = take(data, len, pos, 16))) return -1;
        memcpy(f->trace_id, p, 16);
    }
    f->sub = NULL;
    f->sub_len = 0;
    if (f->flags & FRAME_HAS_SUB) {
        if (!(p = take(data, len, pos, 2))) return -1;
        f->sub_len = (size_t)p[0] | (size_t)p[1] << 8;
        f->sub = data + *pos;
        if (!take(data, len, pos, f->sub_len)) return -1;
    }
    if (!(p = take(data, len, pos, 4))) return -1;
    f->payload_len = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    f->payload = data + *pos;
    return take(data, len, pos, f->payload_len) ? 0 : -1;
}

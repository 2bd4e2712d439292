/* frame: one message inside a segment. Layout (little-endian):
 *   u8 flags | 16 message id | u16 txn length | txn bytes |
 *   [16 trace id, when flags & FRAME_HAS_TRACE] |
 *   [u16 sub length | sub bytes, when flags & FRAME_HAS_SUB] | u32 payload length | payload
 * The payload is the client's JSON bytes exactly as sent. The producer's sub
 * (the pushing token's subject, producerSub) came later: frames written
 * before it lack the flag and read as they always did. */
#ifndef SILT_FRAME_H
#define SILT_FRAME_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"

#define FRAME_HAS_TRACE 0x01
#define FRAME_ENCRYPTED 0x02   /* payload sealed by streams/encryption */
#define FRAME_HAS_SUB   0x04   /* the pushing token's sub follows the trace id */
#define FRAME_MAX_TXN   65535
#define FRAME_MAX_SUB   65535

typedef struct frame {
    uint8_t     flags;
    uint8_t     message_id[16];
    const char *txn;          /* not NUL-terminated */
    size_t      txn_len;
    uint8_t     trace_id[16]; /* valid when flags & FRAME_HAS_TRACE */
    const char *payload;      /* not NUL-terminated */
    size_t      payload_len;
    const char *sub;          /* when flags & FRAME_HAS_SUB; not NUL-terminated (last: */
    size_t      sub_len;      /* positional initializers of older frames still fit) */
} frame;

void   frame_encode(buf *out, const frame *f);
/* The frame without its payload bytes, and the size of the whole frame: for
 * writers that stream the payload from where it already is. */
void   frame_encode_head(buf *out, const frame *f);
size_t frame_size(const frame *f);
/* Reads the frame at *pos of data[0..len) and advances *pos; -1 if truncated.
 * The frame's pointers point into data. */
int  frame_decode(const char *data, size_t len, size_t *pos, frame *f)
     __attribute__((warn_unused_result));

#endif

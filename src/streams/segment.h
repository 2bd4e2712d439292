/* segment: the stored form of a flushed batch of one partition: its frames
 * concatenated and compressed together with zstd, behind a one-byte version. */
#ifndef SILT_SEGMENT_H
#define SILT_SEGMENT_H
#include <stddef.h>
#include "base/buf.h"
#include "streams/frame.h"

#define SEGMENT_VERSION 1

/* Compresses frames[0..len) into out (appended). */
void segment_encode(buf *out, const char *frames, size_t len, int level);
/* Decompresses a blob into out (replacing its contents). Refuses blobs that
 * would expand beyond max_bytes. 0 ok, -1 corrupt or too large. */
int  segment_decode(buf *out, const char *blob, size_t len, size_t max_bytes)
     __attribute__((warn_unused_result));
/* Frame number index of decoded frames (0-based), or -1. */
int  segment_frame_at(const buf *decoded, size_t index, frame *f)
     __attribute__((warn_unused_result));

#endif

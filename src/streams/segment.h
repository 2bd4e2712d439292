/* segment: the stored form of a flushed batch of one partition: its frames
 * concatenated and compressed together with zstd, behind a one-byte version;
 * or, below SEGMENT_STORE_BELOW bytes, the frames as they are. */
#ifndef SILT_SEGMENT_H
#define SILT_SEGMENT_H
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "streams/frame.h"

#define SEGMENT_VERSION 1   /* zstd-compressed frames */
#define SEGMENT_STORED  2   /* the frames as they are */
/* Frames shorter than this are stored as they are: zstd's frame header and
 * checksum cost more than it saves (one 87-byte frame of a small message
 * became 96 bytes), and its call is a tenth of a small push's CPU in the
 * server (docs/performance.md). */
#define SEGMENT_STORE_BELOW 128

/* Compresses frames into out as they are written, so a batch is never held
 * uncompressed in one piece: small frames are gathered into chunks, a large
 * payload goes to zstd from where it lies. content_len is the exact total
 * that will be written (it is recorded in the blob). */
typedef struct segment_writer {
    buf   *out;
    buf    chunk;   /* small writes gathered until worth a compression call */
    size_t left;    /* of content_len, not yet written */
    int    stored;  /* below SEGMENT_STORE_BELOW: written as they are */
} segment_writer;

void segment_begin(segment_writer *w, buf *out, size_t content_len, int level);
void segment_write(segment_writer *w, const void *p, size_t n);
void segment_end(segment_writer *w);
/* Compresses frames[0..len) into out (appended). */
void segment_encode(buf *out, const char *frames, size_t len, int level);
/* Decompresses a blob into out (replacing its contents). Refuses blobs that
 * would expand beyond max_bytes. 0 ok, -1 corrupt or too large. */
int  segment_decode(buf *out, const char *blob, size_t len, size_t max_bytes)
     __attribute__((warn_unused_result));
/* The message at offset of a stored blob whose first offset is base: seg
 * receives the decoded frames, plain the opened payload when it was sealed,
 * and f points into them. 0 ok; -1 corrupt, or sealed under another key. */
int  segment_open_message(const char *blob, size_t len, int64_t base, int64_t offset, size_t max_bytes,
                          buf *seg, buf *plain, frame *f) __attribute__((warn_unused_result));
/* Frame number index of decoded frames (0-based), or -1. */
int  segment_frame_at(const buf *decoded, size_t index, frame *f)
     __attribute__((warn_unused_result));

#endif

/* segment: zstd compression of a partition's frames, streamed (or, for a
 * few small frames, none). One compression and one
 * decompression context are reused for the life of the process: the server is
 * single-threaded, and context setup would otherwise dominate small segments. */
#include "streams/segment.h"
#include <stdlib.h>
#include "streams/encryption.h"
#include <zstd.h>

/* Streaming input is held by zstd in a window: 1 MiB bounds it. Batches are
 * rarely larger, so the ratio is the same as one-shot compression. */
#define SEGMENT_WINDOW_LOG  20
#define SEGMENT_CHUNK_BYTES (256 * 1024)
#define SEGMENT_EPILOGUE_BYTES 32   /* an empty last block and a checksum, should zstd add them */

static ZSTD_CCtx *cctx;
static ZSTD_DCtx *dctx;

void segment_begin(segment_writer *w, buf *out, size_t content_len, int level)
{
    w->out = out;
    w->left = content_len;
    w->stored = content_len < SEGMENT_STORE_BELOW;
    buf_init(&w->chunk);
    if (w->stored) {
        buf_reserve(out, content_len + 1);
        out->data[out->len++] = SEGMENT_STORED;
        out->data[out->len] = '\0';
        return;
    }
    if (!cctx) {
        cctx = ZSTD_createCCtx();
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, SEGMENT_WINDOW_LOG);
    }
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setPledgedSrcSize(cctx, content_len);
    buf_reserve(out, ZSTD_compressBound(content_len) + 1);
    out->data[out->len++] = SEGMENT_VERSION;
}

/* Feeds zstd until it has taken all of in (and, at the end, flushed all). */
static void compress(segment_writer *w, const void *p, size_t n, ZSTD_EndDirective mode)
{
    ZSTD_inBuffer in = { p, n, 0 };
    size_t pending;
    do {
        /* room for what is left of this input (a frame epilogue at most more):
         * a small segment must not grow the blobs buffer to zstd's 128 KiB
         * streaming size, a size malloc maps and unmaps on every flush */
        buf_reserve(w->out, ZSTD_compressBound(in.size - in.pos) + SEGMENT_EPILOGUE_BYTES);
        ZSTD_outBuffer out = { w->out->data + w->out->len, w->out->cap - w->out->len - 1, 0 };
        pending = ZSTD_compressStream2(cctx, &out, &in, mode);
        if (ZSTD_isError(pending)) abort();   /* only a size mismatch, a bug in the caller */
        w->out->len += out.pos;
    } while (in.pos < in.size || (mode == ZSTD_e_end && pending));
    w->out->data[w->out->len] = '\0';
}

void segment_write(segment_writer *w, const void *p, size_t n)
{
    w->left -= n;
    if (w->stored) { buf_append(w->out, p, n); return; }
    if (w->chunk.len + n <= SEGMENT_CHUNK_BYTES) { buf_append(&w->chunk, p, n); return; }
    compress(w, w->chunk.data, w->chunk.len, ZSTD_e_continue);
    buf_reset(&w->chunk);
    if (n >= SEGMENT_CHUNK_BYTES) compress(w, p, n, ZSTD_e_continue);
    else buf_append(&w->chunk, p, n);
}

void segment_end(segment_writer *w)
{
    if (!w->stored) compress(w, w->chunk.data, w->chunk.len, ZSTD_e_end);
    buf_fini(&w->chunk);
}

void segment_encode(buf *out, const char *frames, size_t len, int level)
{
    segment_writer w;
    segment_begin(&w, out, len, level);
    segment_write(&w, frames, len);
    segment_end(&w);
}

/* A stored segment: the frames after the version byte. */
static int stored_decode(buf *out, const char *blob, size_t len, size_t max_bytes)
{
    if (len - 1 > max_bytes) return -1;
    buf_reset(out);
    buf_append(out, blob + 1, len - 1);
    return 0;
}

int segment_decode(buf *out, const char *blob, size_t len, size_t max_bytes)
{
    if (len >= 1 && (unsigned char)blob[0] == SEGMENT_STORED) return stored_decode(out, blob, len, max_bytes);
    if (len < 2 || (unsigned char)blob[0] != SEGMENT_VERSION) return -1;
    unsigned long long size = ZSTD_getFrameContentSize(blob + 1, len - 1);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > max_bytes) return -1;
    if (!dctx) dctx = ZSTD_createDCtx();
    buf_reset(out);
    buf_reserve(out, (size_t)size);
    size_t n = ZSTD_decompressDCtx(dctx, out->data, (size_t)size, blob + 1, len - 1);
    if (ZSTD_isError(n) || n != size) return -1;
    out->len = n;
    out->data[n] = '\0';
    return 0;
}

int segment_frame_at(const buf *decoded, size_t index, frame *f)
{
    size_t pos = 0;
    for (size_t i = 0; i <= index; i++)
        if (frame_decode(decoded->data, decoded->len, &pos, f) < 0) return -1;
    return 0;
}

int segment_open_message(const char *blob, size_t len, int64_t base, int64_t offset, size_t max_bytes,
                         buf *seg, buf *plain, frame *f)
{
    if (offset < base || segment_decode(seg, blob, len, max_bytes) < 0) return -1;
    if (segment_frame_at(seg, (size_t)(offset - base), f) < 0) return -1;
    if (!(f->flags & FRAME_ENCRYPTED)) return 0;
    buf_reset(plain);
    if (encryption_open(f->message_id, f->payload, f->payload_len, plain) < 0) return -1;
    f->payload = plain->data;
    f->payload_len = plain->len;
    return 0;
}

/* segment: zstd compression of a partition's frames. One compression and one
 * decompression context are reused for the life of the process: the server is
 * single-threaded, and context setup would otherwise dominate small segments. */
#include "streams/segment.h"
#include <zstd.h>

static ZSTD_CCtx *cctx;
static ZSTD_DCtx *dctx;

void segment_encode(buf *out, const char *frames, size_t len, int level)
{
    if (!cctx) cctx = ZSTD_createCCtx();
    size_t bound = ZSTD_compressBound(len);
    buf_reserve(out, bound + 1);
    out->data[out->len++] = SEGMENT_VERSION;
    size_t n = ZSTD_compressCCtx(cctx, out->data + out->len, bound, frames, len, level);
    out->len += ZSTD_isError(n) ? 0 : n;   /* cannot fail: the bound is exact */
    out->data[out->len] = '\0';
}

int segment_decode(buf *out, const char *blob, size_t len, size_t max_bytes)
{
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

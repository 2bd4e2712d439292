/* test_frames: the stored message format. A frame must decode to exactly what
 * was encoded, truncation anywhere must be refused rather than read past the
 * end, and a segment blob must round-trip its frames and refuse corrupt,
 * foreign-version or oversized blobs. */
#include "harness.h"
#include "streams/frame.h"
#include "streams/segment.h"
#include <stdio.h>
#include <stdlib.h>

static void fill_id(uint8_t id[16], uint8_t seed)
{
    for (int i = 0; i < 16; i++) id[i] = (uint8_t)(seed + i * 17);
}

static frame make_frame(const char *txn, const char *payload, uint8_t flags, uint8_t seed)
{
    frame f;
    memset(&f, 0, sizeof f);
    f.flags = flags;
    fill_id(f.message_id, seed);
    f.txn = txn;
    f.txn_len = strlen(txn);
    if (flags & FRAME_HAS_TRACE) fill_id(f.trace_id, (uint8_t)(seed + 100));
    f.payload = payload;
    f.payload_len = strlen(payload);
    return f;
}

static void check_same(const frame *a, const frame *b)
{
    CHECK_INT(a->flags, b->flags);
    CHECK(memcmp(a->message_id, b->message_id, 16) == 0);
    CHECK_INT(a->txn_len, b->txn_len);
    CHECK(memcmp(a->txn, b->txn, a->txn_len) == 0);
    if (a->flags & FRAME_HAS_TRACE) CHECK(memcmp(a->trace_id, b->trace_id, 16) == 0);
    CHECK_INT(a->payload_len, b->payload_len);
    CHECK(memcmp(a->payload, b->payload, a->payload_len) == 0);
}

TEST(frame_round_trip_with_trace_id)
{
    frame in = make_frame("order-42", "{\"a\": [1, 2.50, \"\\u00e9\"]}", FRAME_HAS_TRACE, 1);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    CHECK_INT(b.len, 1 + 16 + 2 + in.txn_len + 16 + 4 + in.payload_len);
    frame out;
    size_t pos = 0;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
    CHECK_INT(pos, b.len);
    check_same(&in, &out);
    /* the decoded pointers point into the encoded bytes, not copies */
    CHECK(out.txn >= b.data && out.txn < b.data + b.len);
    CHECK(out.payload + out.payload_len == b.data + b.len);
    buf_fini(&b);
}

TEST(frame_round_trip_without_trace_id)
{
    frame in = make_frame("t", "null", 0, 7);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    CHECK_INT(b.len, 1 + 16 + 2 + 1 + 4 + 4);   /* no trace bytes at all */
    frame out;
    memset(&out, 0xAA, sizeof out);
    size_t pos = 0;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
    CHECK_INT(pos, b.len);
    check_same(&in, &out);
    CHECK_INT(out.flags & FRAME_HAS_TRACE, 0);
    buf_fini(&b);
}

TEST(frame_other_flags_survive_and_do_not_imply_a_trace)
{
    frame in = make_frame("sealed", "\x01\x02binary", FRAME_ENCRYPTED, 21);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    CHECK_INT(b.len, 1 + 16 + 2 + 6 + 4 + in.payload_len);
    frame out;
    size_t pos = 0;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
    CHECK_INT(out.flags, FRAME_ENCRYPTED);
    check_same(&in, &out);
    buf_reset(&b);
    in = make_frame("sealed", "x", FRAME_ENCRYPTED | FRAME_HAS_TRACE, 22);
    frame_encode(&b, &in);
    pos = 0;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
    CHECK_INT(out.flags, FRAME_ENCRYPTED | FRAME_HAS_TRACE);
    check_same(&in, &out);
    buf_fini(&b);
}

TEST(frame_layout_is_little_endian)
{
    char payload[300];
    memset(payload, 'x', sizeof payload - 1);
    payload[sizeof payload - 1] = '\0';
    frame in = make_frame("abc", payload, 0, 3);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    const uint8_t *p = (const uint8_t *)b.data;
    CHECK_INT(p[0], 0);
    CHECK_INT(p[17], 3);   /* u16 txn length, low byte first */
    CHECK_INT(p[18], 0);
    CHECK(memcmp(p + 19, "abc", 3) == 0);
    CHECK_INT(p[22], 299 & 0xff);   /* u32 payload length */
    CHECK_INT(p[23], 299 >> 8);
    CHECK_INT(p[24], 0);
    CHECK_INT(p[25], 0);
    buf_fini(&b);
}

TEST(frame_empty_payload_and_empty_txn)
{
    frame in = make_frame("", "", FRAME_HAS_TRACE, 9);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    CHECK_INT(b.len, 1 + 16 + 2 + 16 + 4);
    frame out;
    size_t pos = 0;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
    CHECK_INT(pos, b.len);
    CHECK_INT(out.txn_len, 0);
    CHECK_INT(out.payload_len, 0);
    check_same(&in, &out);
    buf_fini(&b);
}

TEST(frame_longest_txn_round_trips)
{
    char *txn = malloc(FRAME_MAX_TXN + 1);
    for (size_t i = 0; i < FRAME_MAX_TXN; i++) txn[i] = (char)('a' + i % 26);
    txn[FRAME_MAX_TXN] = '\0';
    frame in = make_frame(txn, "{}", 0, 5);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    frame out;
    size_t pos = 0;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
    CHECK_INT(out.txn_len, FRAME_MAX_TXN);
    check_same(&in, &out);
    buf_fini(&b);
    free(txn);
}

TEST(frame_truncated_input_rejected_at_every_cut)
{
    const uint8_t flag_sets[] = { 0, FRAME_HAS_TRACE };
    for (int k = 0; k < 2; k++) {
        frame in = make_frame("txn-1", "{\"k\":\"v\"}", flag_sets[k], 11);
        buf b;
        buf_init(&b);
        frame_encode(&b, &in);
        for (size_t cut = 0; cut < b.len; cut++) {
            /* a heap copy of exactly cut bytes, so ASan sees any over-read */
            char *copy = malloc(cut ? cut : 1);
            memcpy(copy, b.data, cut);
            frame out;
            size_t pos = 0;
            if (frame_decode(copy, cut, &pos, &out) != -1)
                harness_failf(__FILE__, __LINE__, "flags %d: accepted a frame cut at %zu of %zu", flag_sets[k], cut, b.len);
            free(copy);
        }
        buf_fini(&b);
    }
}

TEST(frame_decode_rejects_position_past_end)
{
    frame in = make_frame("a", "1", 0, 1);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    frame out;
    size_t pos = b.len;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), -1);
    pos = b.len + 5;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), -1);
    buf_fini(&b);
}

TEST(frame_huge_declared_lengths_rejected)
{
    /* a header that claims more txn or payload bytes than are present */
    uint8_t data[64];
    memset(data, 0, sizeof data);
    data[17] = 0xff;
    data[18] = 0xff;   /* txn length 65535 */
    frame out;
    size_t pos = 0;
    CHECK_INT(frame_decode((const char *)data, sizeof data, &pos, &out), -1);
    memset(data, 0, sizeof data);
    data[17] = 0;      /* txn length 0, then payload length 0xffffffff */
    memset(data + 19, 0xff, 4);
    pos = 0;
    CHECK_INT(frame_decode((const char *)data, sizeof data, &pos, &out), -1);
}

TEST(frame_sequence_decodes_in_order)
{
    buf b;
    buf_init(&b);
    char txn[3][16], payload[3][32];
    frame in[3];
    for (int i = 0; i < 3; i++) {
        snprintf(txn[i], sizeof txn[i], "t%d", i);
        snprintf(payload[i], sizeof payload[i], "{\"i\":%d}", i);
        in[i] = make_frame(txn[i], payload[i], i == 1 ? FRAME_HAS_TRACE : 0, (uint8_t)i);
        frame_encode(&b, &in[i]);
    }
    size_t pos = 0;
    for (int i = 0; i < 3; i++) {
        frame out;
        CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
        check_same(&in[i], &out);
    }
    CHECK_INT(pos, b.len);
    frame out;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), -1);
    buf_fini(&b);
}

/* Frames 0..n-1: txn "txn-<i>", payload {"i":<i>}, a trace on every third. */
static void build_frames(buf *frames, int n)
{
    for (int i = 0; i < n; i++) {
        char txn[32], payload[64];
        snprintf(txn, sizeof txn, "txn-%d", i);
        snprintf(payload, sizeof payload, "{\"i\":%d,\"pad\":\"%0*d\"}", i, i % 50, 0);
        frame f = make_frame(txn, payload, i % 3 == 0 ? FRAME_HAS_TRACE : 0, (uint8_t)i);
        frame_encode(frames, &f);
    }
}

TEST(segment_round_trip_of_many_frames)
{
    buf frames, blob, out;
    buf_init(&frames);
    buf_init(&blob);
    buf_init(&out);
    build_frames(&frames, 2000);
    segment_encode(&blob, frames.data, frames.len, 1);
    CHECK(blob.len > 1);
    CHECK_INT((unsigned char)blob.data[0], SEGMENT_VERSION);
    CHECK(blob.len < frames.len);   /* repetitive frames compress */
    buf_puts(&out, "stale contents that decode must replace");
    CHECK_INT(segment_decode(&out, blob.data, blob.len, 1u << 26), 0);
    CHECK_INT(out.len, frames.len);
    CHECK(memcmp(out.data, frames.data, frames.len) == 0);
    CHECK_INT(out.data[out.len], '\0');

    for (int i = 0; i < 2000; i += 137) {
        frame f;
        CHECK_INT(segment_frame_at(&out, (size_t)i, &f), 0);
        char txn[32], payload[64];
        snprintf(txn, sizeof txn, "txn-%d", i);
        snprintf(payload, sizeof payload, "{\"i\":%d,\"pad\":\"%0*d\"}", i, i % 50, 0);
        frame want = make_frame(txn, payload, i % 3 == 0 ? FRAME_HAS_TRACE : 0, (uint8_t)i);
        check_same(&want, &f);
    }
    frame f;
    CHECK_INT(segment_frame_at(&out, 1999, &f), 0);
    CHECK(f.payload + f.payload_len == out.data + out.len);
    CHECK_INT(segment_frame_at(&out, 2000, &f), -1);     /* one past the last */
    CHECK_INT(segment_frame_at(&out, 100000, &f), -1);
    buf_fini(&frames);
    buf_fini(&blob);
    buf_fini(&out);
}

TEST(segment_encode_appends_to_out)
{
    buf frames, blob, out;
    buf_init(&frames);
    buf_init(&blob);
    buf_init(&out);
    build_frames(&frames, 3);
    buf_puts(&blob, "HEAD");
    segment_encode(&blob, frames.data, frames.len, 3);
    CHECK(memcmp(blob.data, "HEAD", 4) == 0);
    CHECK_INT(segment_decode(&out, blob.data + 4, blob.len - 4, 1u << 20), 0);
    CHECK_INT(out.len, frames.len);
    CHECK(memcmp(out.data, frames.data, frames.len) == 0);
    buf_fini(&frames);
    buf_fini(&blob);
    buf_fini(&out);
}

TEST(segment_frame_at_on_single_frame)
{
    buf frames;
    buf_init(&frames);
    build_frames(&frames, 1);
    frame f;
    CHECK_INT(segment_frame_at(&frames, 0, &f), 0);
    CHECK_INT(f.txn_len, 5);
    CHECK(memcmp(f.txn, "txn-0", 5) == 0);
    CHECK_INT(segment_frame_at(&frames, 1, &f), -1);
    buf empty;
    buf_init(&empty);
    buf_puts(&empty, "");
    CHECK_INT(segment_frame_at(&empty, 0, &f), -1);
    buf_fini(&empty);
    buf_fini(&frames);
}

TEST(segment_rejects_wrong_version)
{
    buf frames, blob, out;
    buf_init(&frames);
    buf_init(&blob);
    buf_init(&out);
    build_frames(&frames, 10);
    segment_encode(&blob, frames.data, frames.len, 1);
    const unsigned char versions[] = { 0, SEGMENT_STORED + 1, 0x28, 0xff };
    for (size_t i = 0; i < sizeof versions; i++) {
        blob.data[0] = (char)versions[i];
        CHECK_INT(segment_decode(&out, blob.data, blob.len, 1u << 20), -1);
    }
    blob.data[0] = SEGMENT_VERSION;
    CHECK_INT(segment_decode(&out, blob.data, blob.len, 1u << 20), 0);
    buf_fini(&frames);
    buf_fini(&blob);
    buf_fini(&out);
}

/* Frames below SEGMENT_STORE_BELOW are stored as they are (zstd would make
 * them longer); at and above it they are compressed. Both decode, and a
 * stored one larger than the caller's limit is refused. */
TEST(segment_of_a_few_small_frames_is_stored_as_it_is)
{
    buf frames, blob, out;
    buf_init(&frames);
    buf_init(&blob);
    buf_init(&out);
    for (size_t n = 0; n < SEGMENT_STORE_BELOW + 2; n++) buf_putc(&frames, (char)('a' + n % 3));
    segment_encode(&blob, frames.data, SEGMENT_STORE_BELOW - 1, 1);
    CHECK_INT((unsigned char)blob.data[0], SEGMENT_STORED);
    CHECK_INT(blob.len, SEGMENT_STORE_BELOW);
    CHECK(memcmp(blob.data + 1, frames.data, SEGMENT_STORE_BELOW - 1) == 0);
    CHECK_INT(segment_decode(&out, blob.data, blob.len, 1u << 20), 0);
    CHECK_INT(out.len, SEGMENT_STORE_BELOW - 1);
    CHECK(memcmp(out.data, frames.data, out.len) == 0);
    CHECK_INT(out.data[out.len], '\0');
    CHECK_INT(segment_decode(&out, blob.data, blob.len, SEGMENT_STORE_BELOW - 2), -1);
    buf_reset(&blob);
    segment_encode(&blob, frames.data, SEGMENT_STORE_BELOW, 1);
    CHECK_INT((unsigned char)blob.data[0], SEGMENT_VERSION);
    CHECK(blob.len < SEGMENT_STORE_BELOW);   /* repetitive: compressed */
    CHECK_INT(segment_decode(&out, blob.data, blob.len, 1u << 20), 0);
    CHECK_INT(out.len, SEGMENT_STORE_BELOW);
    buf_fini(&frames);
    buf_fini(&blob);
    buf_fini(&out);
}

TEST(segment_rejects_corrupt_blobs)
{
    buf frames, blob, out;
    buf_init(&frames);
    buf_init(&blob);
    buf_init(&out);
    build_frames(&frames, 50);
    segment_encode(&blob, frames.data, frames.len, 1);

    CHECK_INT(segment_decode(&out, "", 0, 1u << 20), -1);
    CHECK_INT(segment_decode(&out, "\x01", 1, 1u << 20), -1);   /* version only */
    /* every truncation of the compressed stream */
    for (size_t cut = 2; cut < blob.len; cut++) {
        char *copy = malloc(cut);
        memcpy(copy, blob.data, cut);
        if (segment_decode(&out, copy, cut, 1u << 20) != -1)
            harness_failf(__FILE__, __LINE__, "accepted a blob cut at %zu of %zu", cut, blob.len);
        free(copy);
    }
    /* not a zstd frame at all */
    const char garbage[] = "\x01this is not zstd data at all, just text";
    CHECK_INT(segment_decode(&out, garbage, sizeof garbage - 1, 1u << 20), -1);
    /* a broken magic number */
    buf bad;
    buf_init(&bad);
    buf_append(&bad, blob.data, blob.len);
    bad.data[1] ^= 0x5a;
    CHECK_INT(segment_decode(&out, bad.data, bad.len, 1u << 20), -1);
    /* trailing junk after the frame */
    buf_reset(&bad);
    buf_append(&bad, blob.data, blob.len);
    buf_append(&bad, "junkjunkjunk", 12);
    CHECK_INT(segment_decode(&out, bad.data, bad.len, 1u << 20), -1);
    buf_fini(&bad);
    buf_fini(&frames);
    buf_fini(&blob);
    buf_fini(&out);
}

TEST(segment_rejects_blob_over_max_bytes)
{
    buf frames, blob, out;
    buf_init(&frames);
    buf_init(&blob);
    buf_init(&out);
    build_frames(&frames, 100);
    segment_encode(&blob, frames.data, frames.len, 1);
    CHECK_INT(segment_decode(&out, blob.data, blob.len, frames.len - 1), -1);
    CHECK_INT(segment_decode(&out, blob.data, blob.len, 16), -1);
    CHECK_INT(segment_decode(&out, blob.data, blob.len, 0), -1);
    CHECK_INT(segment_decode(&out, blob.data, blob.len, frames.len), 0);   /* exactly fits */
    CHECK_INT(out.len, frames.len);
    buf_fini(&frames);
    buf_fini(&blob);
    buf_fini(&out);
}

TEST(segment_empty_frames_round_trip)
{
    buf blob, out;
    buf_init(&blob);
    buf_init(&out);
    segment_encode(&blob, "", 0, 1);
    CHECK_INT(blob.len, 1);   /* stored: the version byte alone */
    CHECK_INT((unsigned char)blob.data[0], SEGMENT_STORED);
    CHECK_INT(segment_decode(&out, blob.data, blob.len, 1024), 0);
    CHECK_INT(out.len, 0);
    frame f;
    CHECK_INT(segment_frame_at(&out, 0, &f), -1);
    buf_fini(&blob);
    buf_fini(&out);
}

/* A writer fed in pieces of every size (tiny heads, payloads that straddle
 * and exceed its chunk, 3 MB past the compressor's window) produces the blob
 * that decodes to exactly what was written. */
TEST(segment_writer_round_trips_pieces_of_every_size)
{
    size_t sizes[] = { 1, 19, 300, 262143, 262144, 262145, 5, 3u << 20, 7, 1u << 20 };
    size_t total = 0, n = sizeof sizes / sizeof sizes[0];
    for (size_t i = 0; i < n; i++) total += sizes[i];
    buf all, blob, out;
    buf_init(&all);
    buf_init(&blob);
    buf_init(&out);
    uint32_t x = 12345;
    for (size_t i = 0; i < total; i++) {   /* half noise, half text: neither trivial nor incompressible */
        x = x * 1103515245u + 12345u;
        buf_putc(&all, (char)(i % 2 ? (x >> 16) : (uint32_t)('a' + i % 26)));
    }
    segment_writer w;
    segment_begin(&w, &blob, total, 1);
    for (size_t i = 0, at = 0; i < n; at += sizes[i], i++) segment_write(&w, all.data + at, sizes[i]);
    segment_end(&w);
    CHECK_INT((unsigned char)blob.data[0], SEGMENT_VERSION);
    CHECK_INT(segment_decode(&out, blob.data, blob.len, total), 0);
    CHECK_INT(out.len, total);
    CHECK(out.len == total && memcmp(out.data, all.data, total) == 0);
    CHECK_INT(segment_decode(&out, blob.data, blob.len, total - 1), -1);   /* the recorded size is exact */
    buf_fini(&all);
    buf_fini(&blob);
    buf_fini(&out);
}

TEST(frame_size_and_head_agree_with_frame_encode)
{
    frame f = { FRAME_HAS_TRACE, {1}, "txn-1", 5, {2}, "{\"a\":1}", 7, NULL, 0 };
    buf whole, head;
    buf_init(&whole);
    buf_init(&head);
    frame_encode(&whole, &f);
    frame_encode_head(&head, &f);
    CHECK_INT(whole.len, frame_size(&f));
    CHECK_INT(head.len + f.payload_len, whole.len);
    CHECK(memcmp(whole.data, head.data, head.len) == 0);
    buf_fini(&whole);
    buf_fini(&head);
}

TEST(frame_round_trip_with_producer_sub_and_trace)
{
    frame in = make_frame("t-1", "{\"x\":1}", FRAME_HAS_TRACE | FRAME_HAS_SUB, 3);
    in.sub = "alice@example";
    in.sub_len = strlen(in.sub);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    CHECK_INT(b.len, frame_size(&in));
    CHECK_INT(b.len, 1 + 16 + 2 + in.txn_len + 16 + 2 + in.sub_len + 4 + in.payload_len);
    frame out;
    size_t pos = 0;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
    CHECK_INT(pos, b.len);
    check_same(&in, &out);
    CHECK_INT(out.sub_len, in.sub_len);
    CHECK(memcmp(out.sub, in.sub, in.sub_len) == 0);
    for (size_t cut = 0; cut < b.len; cut++) {   /* a cut inside the sub is refused too */
        pos = 0;
        CHECK_INT(frame_decode(b.data, cut, &pos, &out), -1);
    }
    buf_fini(&b);
}

/* Frames written before producerSub existed carry no FRAME_HAS_SUB: they
 * read as they always did, with no sub. */
TEST(frame_without_sub_flag_reads_as_before_with_no_sub)
{
    frame in = make_frame("old", "[1,2]", 0, 5);
    buf b;
    buf_init(&b);
    frame_encode(&b, &in);
    CHECK_INT(b.len, 1 + 16 + 2 + 3 + 4 + 5);
    frame out;
    memset(&out, 0xAB, sizeof out);
    size_t pos = 0;
    CHECK_INT(frame_decode(b.data, b.len, &pos, &out), 0);
    check_same(&in, &out);
    CHECK(out.sub == NULL);
    CHECK_INT(out.sub_len, 0);
    buf_fini(&b);
}

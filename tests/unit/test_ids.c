/* test_ids: message ids are UUIDv7 and strictly increasing in one process
 * (offset order and id order agree); text forms round-trip; the parser is the
 * gate for every id a client sends; the transactionId hash is what the
 * sidecar stores, so it must be stable across builds (known answers). */
#include "harness.h"
#include "base/ids.h"
#include <stdio.h>
#include <time.h>

static uint64_t id_ms(const uint8_t id[16])
{
    uint64_t ms = 0;
    for (int i = 0; i < 6; i++) ms = ms << 8 | id[i];
    return ms;
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

TEST(uuid7_has_version_and_variant_bits)
{
    for (int i = 0; i < 1000; i++) {
        uint8_t id[16];
        ids_uuid7(id);
        CHECK_INT(id[6] >> 4, 7);          /* version 7 */
        CHECK_INT(id[8] & 0xc0, 0x80);     /* RFC 4122 variant 10xx */
        char text[IDS_UUID_TEXT];
        ids_uuid_format(id, text);
        CHECK_INT(text[14], '7');
        CHECK(strchr("89ab", text[19]) != NULL);
    }
}

TEST(uuid7_carries_the_current_unix_milliseconds)
{
    uint64_t before = wall_ms();
    uint8_t id[16];
    ids_uuid7(id);
    uint64_t after = wall_ms();
    CHECK(id_ms(id) >= before);
    CHECK(id_ms(id) <= after + 1);   /* may borrow at most a little ahead */
}

TEST(uuid7_strictly_increasing_over_10000_calls)
{
    uint8_t prev[16], cur[16];
    ids_uuid7(prev);
    for (int i = 0; i < 10000; i++) {
        ids_uuid7(cur);
        if (memcmp(prev, cur, 16) >= 0) {
            char a[IDS_UUID_TEXT], b[IDS_UUID_TEXT];
            ids_uuid_format(prev, a);
            ids_uuid_format(cur, b);
            harness_failf(__FILE__, __LINE__, "call %d: %s then %s", i, a, b);
        }
        memcpy(prev, cur, 16);
    }
    /* the text form sorts the same way */
    uint8_t a[16], b[16];
    char ta[IDS_UUID_TEXT], tb[IDS_UUID_TEXT];
    ids_uuid7(a);
    ids_uuid7(b);
    ids_uuid_format(a, ta);
    ids_uuid_format(b, tb);
    CHECK(strcmp(ta, tb) < 0);
}

TEST(uuid_format_parse_round_trip)
{
    for (int i = 0; i < 200; i++) {
        uint8_t id[16], back[16];
        ids_uuid7(id);
        char text[IDS_UUID_TEXT];
        memset(text, 'Z', sizeof text);
        ids_uuid_format(id, text);
        CHECK_INT(strlen(text), 36);
        CHECK(text[8] == '-' && text[13] == '-' && text[18] == '-' && text[23] == '-');
        for (int k = 0; k < 36; k++)
            if (k != 8 && k != 13 && k != 18 && k != 23) CHECK(strchr("0123456789abcdef", text[k]) != NULL);
        CHECK_INT(ids_uuid_parse(text, 36, back), 0);
        CHECK(memcmp(id, back, 16) == 0);
    }
}

TEST(uuid_format_known_value)
{
    uint8_t id[16];
    for (int i = 0; i < 16; i++) id[i] = (uint8_t)(i * 0x11);
    char text[IDS_UUID_TEXT];
    ids_uuid_format(id, text);
    CHECK_STR(text, "00112233-4455-6677-8899-aabbccddeeff");
}

TEST(uuid_parse_accepts_upper_case)
{
    uint8_t id[16];
    const char *s = "0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B";
    CHECK_INT(ids_uuid_parse(s, strlen(s), id), 0);
    char text[IDS_UUID_TEXT];
    ids_uuid_format(id, text);
    CHECK_STR(text, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    CHECK_INT(id[0], 0x01);
    CHECK_INT(id[15], 0x5b);
}

TEST(uuid_parse_rejects_bad_inputs)
{
    static const char *bad[] = {
        "",
        "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5",      /* 35 */
        "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b0",    /* 37 */
        "0190a1b2c3d47e5f8a9b0c1d2e3f4a5b",         /* no dashes */
        "0190a1b2xc3d4-7e5f-8a9b-0c1d2e3f4a5b",     /* dash replaced */
        "0190a1b-2c3d4-7e5f-8a9b-0c1d2e3f4a5b",     /* dash moved left */
        "0190a1b2c-3d4-7e5f-8a9b-0c1d2e3f4a5b",     /* dash moved right */
        "0190a1b2-c3d4-7e5f-8a9b0-c1d2e3f4a5b",     /* last dash moved */
        "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5g",     /* not hex */
        "g190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a 5",
        "0190a1b2-c3d4-7e5f-8a9b--c1d2e3f4a5b",
        "{0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b}",
        "0190a1b2_c3d4_7e5f_8a9b_0c1d2e3f4a5b",
        "+190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "------------------------------------",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t id[16];
        if (ids_uuid_parse(bad[i], strlen(bad[i]), id) == 0)
            harness_failf(__FILE__, __LINE__, "accepted bad uuid #%zu \"%s\"", i, bad[i]);
    }
    /* the length is what counts, not the terminator */
    const char *good = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5bEXTRA";
    uint8_t id[16];
    CHECK_INT(ids_uuid_parse(good, 36, id), 0);
    CHECK_INT(ids_uuid_parse(good, 35, id), -1);
    CHECK_INT(ids_uuid_parse(good, 41, id), -1);
    /* an embedded NUL inside the 36 bytes */
    const char nul[37] = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4\0" "5b";
    CHECK_INT(ids_uuid_parse(nul, 36, id), -1);
}

static void hash_hex(const char *s, size_t n, char out[33])
{
    uint8_t h[16];
    ids_txn_hash(s, n, h);
    ids_hex(h, 16, out);
}

TEST(txn_hash_is_xxh3_128_canonical_known_answers)
{
    char hex[33];
    hash_hex("", 0, hex);
    CHECK_STR(hex, "99aa06d3014798d86001c324468d497f");   /* XXH3_128bits("") reference */
    hash_hex("abc", 3, hex);
    CHECK_STR(hex, "06b05ab6733a618578af5f94892f3950");
    CHECK_INT(strlen(hex), 32);                            /* 16 bytes */
}

TEST(txn_hash_is_deterministic_and_distinguishes_inputs)
{
    uint8_t a[16], b[16];
    ids_txn_hash("order-1", 7, a);
    ids_txn_hash("order-1", 7, b);
    CHECK(memcmp(a, b, 16) == 0);
    static const struct { const char *s; size_t n; } inputs[] = {
        { "", 0 }, { "a", 1 }, { "b", 1 }, { "order-1", 7 }, { "order-2", 7 }, { "Order-1", 7 },
        { "order-1 ", 8 }, { "ab\0c", 4 }, { "ab\0d", 4 }, { "ab", 2 },
    };
    size_t n = sizeof inputs / sizeof inputs[0];
    uint8_t h[10][16];
    for (size_t i = 0; i < n; i++) ids_txn_hash(inputs[i].s, inputs[i].n, h[i]);
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++)
            if (memcmp(h[i], h[k], 16) == 0)
                harness_failf(__FILE__, __LINE__, "inputs #%zu and #%zu hash the same", i, k);
    /* exactly n bytes are hashed: what follows does not matter */
    ids_txn_hash("order-1XYZ", 7, b);
    CHECK(memcmp(a, b, 16) == 0);
}

TEST(ids_hex_lower_case_and_terminated)
{
    const uint8_t bytes[] = { 0x00, 0xff, 0x10, 0xab, 0x09 };
    char out[11];
    memset(out, 'Z', sizeof out);
    ids_hex(bytes, 5, out);
    CHECK_STR(out, "00ff10ab09");
    char empty[1] = { 'Z' };
    ids_hex(bytes, 0, empty);
    CHECK_STR(empty, "");
}

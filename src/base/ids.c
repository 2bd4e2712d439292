/* ids: UUIDv7 generation and parsing, and transactionId hashing (see ids.h). */
#include "base/ids.h"
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <xxhash.h>
#include "base/clock.h"

static uint64_t rng_state;
static uint64_t last_ms;
static uint16_t seq;

/* xorshift64*: fast, seeded from the kernel once; ids need uniqueness, not secrecy. */
static uint64_t next_random(void)
{
    if (rng_state == 0 && (getrandom(&rng_state, sizeof rng_state, 0) != sizeof rng_state || rng_state == 0))
        rng_state = (uint64_t)time(NULL) | 1;
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

void ids_uuid7(uint8_t out[16])
{
    uint64_t ms = (uint64_t)(clock_wall_us() / 1000);
    if (ms <= last_ms) {
        ms = last_ms;
        if (++seq > 0x0fff) { ms = ++last_ms; seq = 0; }   /* borrow the next millisecond */
    } else {
        last_ms = ms;
        seq = (uint16_t)(next_random() & 0x3ff);
    }
    for (int i = 0; i < 6; i++) out[i] = (uint8_t)(ms >> (40 - 8 * i));
    out[6] = (uint8_t)(0x70 | (seq >> 8));
    out[7] = (uint8_t)seq;
    uint64_t r = next_random();
    memcpy(out + 8, &r, 8);
    out[8] = (uint8_t)(0x80 | (out[8] & 0x3f));
}

static const char hex_digits[] = "0123456789abcdef";

/* One byte as two hex digits at out. */
static inline void put_hex_byte(char *out, uint8_t b)
{
    out[0] = hex_digits[b >> 4];
    out[1] = hex_digits[b & 15];
}

void ids_hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) put_hex_byte(out + 2 * i, p[i]);
    out[2 * n] = '\0';
}

/* Straight into out, a byte pair at a time (a pop's reply formats one or
 * two per message). */
void ids_uuid_format(const uint8_t id[16], char out[IDS_UUID_TEXT])
{
    char *p = out;
    for (int i = 0; i < 16; i++, p += 2) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
        put_hex_byte(p, id[i]);
    }
    *p = '\0';
}

/* Each character's value as a hex digit, -1 for any other: one load per
 * character (an ack parses two uuids per item). */
static const signed char hex_values[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
    ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static int hex_value(char c) { return hex_values[(unsigned char)c] - 1; }

int ids_uuid_parse(const char *s, size_t n, uint8_t out[16])
{
    if (n != 36) return -1;
    int byte = 0;
    for (size_t i = 0; i < 36; i += 2) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return -1;
            i--;   /* the loop's += 2 then lands on the next digit pair */
            continue;
        }
        int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[byte++] = (uint8_t)(hi << 4 | lo);
    }
    return byte == 16 ? 0 : -1;
}

void ids_txn_hash(const char *txn, size_t n, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(txn, n));
    memcpy(out, c.digest, 16);
}

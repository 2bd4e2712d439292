/* fuzz_json: libFuzzer target for the JSON reader and writers. Any input must
 * parse or fail without a memory error; an accepted input must produce a
 * token tree whose structure is self-consistent, whose strings decode and
 * re-encode losslessly, and whose pretty-printed form parses to the same
 * shape. The writer must turn arbitrary bytes into valid JSON. */
#include "base/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 100000

#define REQUIRE(c) \
    do { if (!(c)) { fprintf(stderr, "invariant failed: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

/* Children of container i, walked through next, must end exactly at its next. */
static void check_container(const json_doc *d, uint32_t i)
{
    const json_token *t = &d->tokens[i];
    uint32_t per = t->type == JSON_OBJECT ? 2 : 1, c = i + 1;
    for (uint32_t k = 0; k < t->count * per; k++) {
        REQUIRE(c < t->next);
        REQUIRE(d->tokens[c].start >= t->start && d->tokens[c].end <= t->end);
        if (per == 2 && k % 2 == 0) REQUIRE(d->tokens[c].type == JSON_STRING);
        c = d->tokens[c].next;
    }
    REQUIRE(c == t->next);
}

/* Decoded strings must round-trip through the writer and the reader. */
static void check_string(const json_doc *d, uint32_t i)
{
    buf dec, enc;
    buf_init(&dec);
    buf_init(&enc);
    json_str_decode(d, i, &dec);
    char *dup = json_str_dup(d, i);
    REQUIRE(memcmp(dup, dec.data ? dec.data : "", dec.len) == 0 && dup[dec.len] == '\0');
    if (!memchr(dup, '\0', dec.len)) REQUIRE(json_str_eq(d, i, dup));
    json_put_str(&enc, dup, dec.len);
    json_doc rd;
    json_doc_init(&rd);
    REQUIRE(json_parse(&rd, enc.data, enc.len, 1) == 0);
    buf again;
    buf_init(&again);
    json_str_decode(&rd, 0, &again);
    REQUIRE(again.len == dec.len && (dec.len == 0 || memcmp(again.data, dec.data, dec.len) == 0));
    buf_fini(&again);
    json_doc_fini(&rd);
    free(dup);
    buf_fini(&enc);
    buf_fini(&dec);
}

static void check_tokens(const json_doc *d, size_t len)
{
    REQUIRE(d->ntokens > 0 && d->tokens[0].end <= len && d->tokens[0].next == d->ntokens);
    for (uint32_t i = 0; i < d->ntokens; i++) {
        const json_token *t = &d->tokens[i];
        REQUIRE(t->start < t->end && t->end <= len);
        REQUIRE(t->next > i && t->next <= d->ntokens);
        REQUIRE(i == 0 || t->start >= d->tokens[i - 1].start);
        if (t->type == JSON_ARRAY || t->type == JSON_OBJECT) check_container(d, i);
        else REQUIRE(t->next == i + 1 && t->count == 0);
        if (t->type == JSON_STRING) check_string(d, i);
        int64_t iv;
        if (t->type == JSON_NUMBER) (void)json_int64(d, i, &iv);
    }
}

/* Pretty output must parse to the same number of tokens and be a fixpoint. */
static void check_pretty(const char *text, size_t len, uint32_t ntokens)
{
    buf p1, p2;
    buf_init(&p1);
    buf_init(&p2);
    json_pretty(&p1, text, len);
    json_doc d;
    json_doc_init(&d);
    REQUIRE(json_parse(&d, p1.data, p1.len, MAX_TOKENS) == 0);
    REQUIRE(d.ntokens == ntokens);
    json_pretty(&p2, p1.data, p1.len);
    REQUIRE(p1.len == p2.len && memcmp(p1.data, p2.data, p1.len) == 0);
    json_doc_fini(&d);
    buf_fini(&p1);
    buf_fini(&p2);
}

/* The writer must make valid JSON of any bytes, even invalid UTF-8. */
static void check_writer(const char *data, size_t size)
{
    buf b;
    buf_init(&b);
    json_put_str(&b, data, size);
    json_doc d;
    json_doc_init(&d);
    REQUIRE(json_parse(&d, b.data, b.len, 1) == 0);
    json_doc_fini(&d);
    buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, text, size, MAX_TOKENS) == 0) {
        check_tokens(&d, size);
        check_pretty(text, size, d.ntokens);
    } else {
        REQUIRE(d.error[0] != '\0' && d.ntokens == 0);
        buf junk;   /* json_pretty may assume valid input, but must not crash */
        buf_init(&junk);
        json_pretty(&junk, text, size < 256 ? size : 256);
        buf_fini(&junk);
    }
    json_doc_fini(&d);
    check_writer(text, size);
    return 0;
}

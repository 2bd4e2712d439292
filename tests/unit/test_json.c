/* test_json: the reader's acceptance boundary (every RFC 8259 rejection the
 * broker relies on), exact token spans, accessors and the writers. */
#include "harness.h"
#include "base/json.h"
#include <stdio.h>
#include <stdlib.h>

#define MAXTOK 1024

static int parse(json_doc *d, const char *s)
{
    return json_parse(d, s, strlen(s), MAXTOK);
}

/* Each entry names the rule it breaks; explicit lengths allow embedded NULs. */
static const struct { const char *text; size_t len; } invalid[] = {
#define S(x) { x, sizeof(x) - 1 }
    S(""), S("   "), S("\n\t\r "),                            /* no value */
    S("1 2"), S("{} x"), S("[]]"), S("nullx"), S("\"a\"\"b\""), /* trailing garbage */
    S("01"), S("-01"), S("00"), S("[012]"),                    /* leading zeros */
    S("-"), S("[-]"), S("- 1"),                                /* bare minus */
    S("1."), S("1.e5"), S(".5"), S("+1"), S("1e"), S("1e+"), S("1E-"), S("0x10"),
    S("\"\\x\""), S("\"\\'\""), S("\"\\u12\""), S("\"\\u12g4\""), S("\"\\U0041\""),
    S("\"\\"), S("\"\\u"),                                      /* invalid escapes */
    S("\"a\x01\""), S("\"\x1f\""), S("\"tab\there\""), S("\"nl\n\""),
    S("\"\x00\""),                                              /* raw control chars */
    S("\"\xc0\xaf\""), S("\"\xc1\xbf\""), S("\"\xe0\x80\xaf\""),
    S("\"\xf0\x80\x80\xaf\""),                                  /* overlongs */
    S("\"\xed\xa0\x80\""), S("\"\xed\xbf\xbf\""),               /* surrogates in utf-8 */
    S("\"\xf4\x90\x80\x80\""), S("\"\xf5\x80\x80\x80\""), S("\"\xff\""),
    S("\"\xe2\x82\""), S("\"\xc3\""), S("\"\xf0\x9f\x98\""), S("\"\x80\""),
    S("\"\\ud800\""), S("\"\\ud800x\""), S("\"\\ud800\\u0041\""),
    S("\"\\udc00\""), S("\"\\udbff\\ud800\""), S("\"\\ud800\\n\""), /* lone surrogates */
    S("\"abc"), S("\""), S("["), S("[1"), S("[1,"), S("{"), S("{\"a\""),
    S("{\"a\":"), S("{\"a\":1"), S("[[]"),                      /* unterminated */
    S("[1,]"), S("{\"a\":1,}"), S("[,]"), S("[1,,2]"), S("{,}"),   /* commas */
    S("'a'"), S("{'a':1}"), S("[1 2]"), S("{\"a\" 1}"), S("{\"a\":1 \"b\":2}"),
    S("{1:2}"), S("{\"a\"}"), S("{null:1}"), S("[}"), S("{]"), /* structure */
    S("NaN"), S("Infinity"), S("-Infinity"), S("nan"), S("[inf]"),
    S("tru"), S("True"), S("nul"), S("fals"),                  /* literals */
    S("// c\n1"), S("/* c */ 1"), S("[1 /* c */]"), S("# c\n1"), /* comments */
    S("\xef\xbb\xbf{}"), S("\f1"), S("\v1"), S("\xa0" "1"),     /* non-json whitespace */
#undef S
};

TEST(json_rejects_invalid)
{
    json_doc d;
    json_doc_init(&d);
    CHECK(sizeof invalid / sizeof invalid[0] >= 40);
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        d.error[0] = '\0';
        if (json_parse(&d, invalid[i].text, invalid[i].len, MAXTOK) == 0)
            harness_failf(__FILE__, __LINE__, "accepted invalid #%zu: %.*s", i,
                          (int)invalid[i].len, invalid[i].text);
        CHECK(strncmp(d.error, "invalid json at byte ", 21) == 0);
        CHECK_INT(d.ntokens, 0);
    }
    json_doc_fini(&d);
}

static const char *valid[] = {
    "0", "-0", "1", "-1", "123", "0.5", "-0.0", "1e5", "1E+5", "1e-5", "1.25e10",
    "-9223372036854775808", "1e400", "true", "false", "null", "\"\"", "\"a\"",
    "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u0041\\u00e9\\u20AC\"",
    "\"\\ud83d\\ude00\"", "\"\\u0000\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
    "\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\"", "\"\x7f\"",
    "[]", "{}", "[ ]", "{ }", "[1,2,3]", "[[],{}]", "{\"a\":1}", "{\"a\":1,\"a\":2}",
    " \t\r\n1 \t\r\n", "\n{ \"a\" : [ 1 , 2 ] }\n", "[\"]\",\"}\",\",\"]", "{\"\":\"\"}",
};

TEST(json_accepts_valid)
{
    json_doc d;
    json_doc_init(&d);
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++)
        if (parse(&d, valid[i]) != 0)
            harness_failf(__FILE__, __LINE__, "rejected valid #%zu %s: %s", i, valid[i], d.error);
    json_doc_fini(&d);
}

TEST(json_error_message)
{
    json_doc d;
    json_doc_init(&d);
    CHECK(parse(&d, "[1, 2, x]") < 0);
    CHECK_STR(d.error, "invalid json at byte 7: unexpected character");
    CHECK(parse(&d, "\"abc") < 0);
    CHECK_STR(d.error, "invalid json at byte 4: unterminated string");
    CHECK(parse(&d, "[01]") < 0);
    CHECK_STR(d.error, "invalid json at byte 2: leading zero in number");
    json_doc_fini(&d);
}

#define CHECK_TOK(d, i, t, s, e, n, c)                                       \
    do { const json_token *k_ = &(d).tokens[i];                              \
         CHECK_INT(k_->type, t); CHECK_INT(k_->start, s); CHECK_INT(k_->end, e); \
         CHECK_INT(k_->next, n); CHECK_INT(k_->count, c); } while (0)

TEST(json_spans_nested)
{
    /*                 0123456789012345678901234567 */
    const char *s = "{\"a\":[1,{\"b\":null}],\"c\":\"x\"}";
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(parse(&d, s), 0);
    CHECK_INT(d.ntokens, 9);
    CHECK_TOK(d, 0, JSON_OBJECT, 0, 28, 9, 2);
    CHECK_TOK(d, 1, JSON_STRING, 1, 4, 2, 0);   /* "a" */
    CHECK_TOK(d, 2, JSON_ARRAY, 5, 19, 7, 2);
    CHECK_TOK(d, 3, JSON_NUMBER, 6, 7, 4, 0);
    CHECK_TOK(d, 4, JSON_OBJECT, 8, 18, 7, 1);
    CHECK_TOK(d, 5, JSON_STRING, 9, 12, 6, 0);  /* "b" */
    CHECK_TOK(d, 6, JSON_NULL, 13, 17, 7, 0);
    CHECK_TOK(d, 7, JSON_STRING, 20, 23, 8, 0); /* "c" */
    CHECK_TOK(d, 8, JSON_STRING, 24, 27, 9, 0);
    size_t n;
    const char *p = json_span(&d, 2, &n);
    CHECK_INT(n, 14);
    CHECK(memcmp(p, "[1,{\"b\":null}]", n) == 0);
    json_doc_fini(&d);
}

/* A shallow parse records the values it is asked to (the same tokens as a
 * full parse at those depths) and only validates what is deeper. */
TEST(json_shallow_parse_records_only_what_is_asked)
{
    /*                 0123456789012345678901234567 */
    const char *s = "{\"a\":[1,{\"b\":null}],\"c\":\"x\"}";
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(json_parse_shallow(&d, s, strlen(s), 100, 1), 0);
    CHECK_INT(d.ntokens, 5);
    CHECK_TOK(d, 0, JSON_OBJECT, 0, 28, 5, 2);
    CHECK_TOK(d, 1, JSON_STRING, 1, 4, 2, 0);   /* "a" */
    CHECK_TOK(d, 2, JSON_ARRAY, 5, 19, 3, 0);   /* its span, not its inside */
    CHECK_TOK(d, 3, JSON_STRING, 20, 23, 4, 0); /* "c" */
    CHECK_TOK(d, 4, JSON_STRING, 24, 27, 5, 0);
    CHECK_INT(json_get(&d, 0, "c"), 4);
    CHECK_INT(json_parse_shallow(&d, s, strlen(s), 100, 2), 0);
    CHECK_INT(d.ntokens, 7);
    CHECK_TOK(d, 4, JSON_OBJECT, 8, 18, 5, 0);
    CHECK_INT(json_parse_shallow(&d, s, strlen(s), 100, 0), 0);
    CHECK_INT(d.ntokens, 1);
    CHECK_TOK(d, 0, JSON_OBJECT, 0, 28, 1, 0);
    /* what is not recorded is still checked */
    const char *bad = "{\"a\":[1,{\"b\":nul}]}";
    CHECK_INT(json_parse_shallow(&d, bad, strlen(bad), 100, 1), -1);
    CHECK_INT(d.ntokens, 0);
    /* and does not count against the token limit */
    CHECK_INT(json_parse_shallow(&d, s, strlen(s), 5, 1), 0);
    json_doc_fini(&d);
}

TEST(json_spans_whitespace_and_empty)
{
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(parse(&d, "  [ [ ] , { } , \"\\n\" ]  "), 0);
    CHECK_INT(d.ntokens, 4);
    CHECK_TOK(d, 0, JSON_ARRAY, 2, 22, 4, 3);
    CHECK_TOK(d, 1, JSON_ARRAY, 4, 7, 2, 0);
    CHECK_TOK(d, 2, JSON_OBJECT, 10, 13, 3, 0);
    CHECK_TOK(d, 3, JSON_STRING, 16, 20, 4, 0);
    CHECK(d.tokens[3].escaped);
    CHECK(!d.tokens[0].escaped);
    json_doc_fini(&d);
}

TEST(json_get_and_at)
{
    const char *s = "{\"a\":[1,{\"b\":null}],\"c\":\"x\",\"a\":2,\"\\u0064\":4}";
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(parse(&d, s), 0);
    CHECK_INT(json_get(&d, 0, "a"), 2);    /* first of duplicate keys */
    CHECK_INT(json_get(&d, 0, "c"), 8);
    CHECK_INT(json_get(&d, 0, "d"), 12);   /* escaped key */
    CHECK_INT(json_get(&d, 0, "b"), -1);   /* nested keys are not members */
    CHECK_INT(json_get(&d, 0, ""), -1);
    CHECK_INT(json_get(&d, 2, "a"), -1);   /* not an object */
    CHECK_INT(json_at(&d, 2, 0), 3);
    CHECK_INT(json_at(&d, 2, 1), 4);
    CHECK_INT(json_at(&d, 2, 2), -1);
    CHECK_INT(json_at(&d, 0, 0), -1);      /* not an array */
    CHECK_INT(json_get(&d, 4, "b"), 6);
    CHECK_INT(d.tokens[json_get(&d, 4, "b")].type, JSON_NULL);
    json_doc_fini(&d);
}

TEST(json_str_eq_escapes)
{
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(parse(&d, "[\"plain\",\"a\\\"b\",\"\\u00e9t\\u00E9\",\"\\ud83d\\ude00!\",\"\",\"\\u0000\"]"), 0);
    CHECK(json_str_eq(&d, 1, "plain"));
    CHECK(!json_str_eq(&d, 1, "plai"));
    CHECK(!json_str_eq(&d, 1, "plainx"));
    CHECK(json_str_eq(&d, 2, "a\"b"));
    CHECK(!json_str_eq(&d, 2, "a\\\"b"));
    CHECK(!json_str_eq(&d, 2, "a\""));
    CHECK(json_str_eq(&d, 3, "\xc3\xa9t\xc3\xa9"));
    CHECK(!json_str_eq(&d, 3, "\xc3\xa9t\xc3"));
    CHECK(json_str_eq(&d, 4, "\xf0\x9f\x98\x80!"));
    CHECK(json_str_eq(&d, 5, ""));
    CHECK(!json_str_eq(&d, 5, "a"));
    CHECK(!json_str_eq(&d, 6, ""));        /* decoded NUL is a real byte */
    CHECK(!json_str_eq(&d, 0, "plain"));   /* not a string */
    json_doc_fini(&d);
}

TEST(json_decode_surrogates)
{
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(parse(&d, "\"x\\ud83d\\ude00y\\uDBFF\\uDFFF\\u0024\\u00a2\\u20ac\\n\""), 0);
    buf b;
    buf_init(&b);
    json_str_decode(&d, 0, &b);
    const char want[] = "x\xf0\x9f\x98\x80y\xf4\x8f\xbf\xbf$\xc2\xa2\xe2\x82\xac\n";
    CHECK_INT(b.len, sizeof want - 1);
    CHECK(memcmp(b.data, want, b.len) == 0);
    char *dup = json_str_dup(&d, 0);
    CHECK_STR(dup, want);
    free(dup);
    CHECK_INT(parse(&d, "\"\""), 0);
    dup = json_str_dup(&d, 0);
    CHECK_STR(dup, "");
    free(dup);
    buf_fini(&b);
    json_doc_fini(&d);
}

static int int_of(json_doc *d, const char *s, int64_t *v)
{
    if (parse(d, s) != 0) return -2;
    return json_int64(d, 0, v);
}

TEST(json_int64_bounds)
{
    json_doc d;
    json_doc_init(&d);
    int64_t v = 0;
    CHECK_INT(int_of(&d, "9223372036854775807", &v), 0);
    CHECK(v == INT64_MAX);
    CHECK_INT(int_of(&d, "-9223372036854775808", &v), 0);
    CHECK(v == INT64_MIN);
    CHECK_INT(int_of(&d, "9223372036854775808", &v), -1);
    CHECK_INT(int_of(&d, "-9223372036854775809", &v), -1);
    CHECK_INT(int_of(&d, "99999999999999999999", &v), -1);
    CHECK_INT(int_of(&d, "1.0", &v), -1);
    CHECK_INT(int_of(&d, "1e2", &v), -1);
    CHECK_INT(int_of(&d, "\"1\"", &v), -1);
    CHECK_INT(int_of(&d, "-0", &v), 0);
    CHECK_INT(v, 0);
    CHECK_INT(int_of(&d, "42", &v), 0);
    CHECK_INT(v, 42);
    json_doc_fini(&d);
}

TEST(json_max_tokens)
{
    json_doc d;
    json_doc_init(&d);
    const char *s = "[1,2,3,4]";
    CHECK_INT(json_parse(&d, s, strlen(s), 5), 0);
    CHECK_INT(d.ntokens, 5);
    CHECK(json_parse(&d, s, strlen(s), 4) < 0);
    CHECK_STR(d.error, "too many json values");
    CHECK(json_parse(&d, "1", 1, 0) < 0);
    CHECK_STR(d.error, "too many json values");
    CHECK_INT(json_parse(&d, "1", 1, 1), 0);
    json_doc_fini(&d);
}

TEST(json_tokens_grow_and_reuse)
{
    buf b;
    buf_init(&b);
    buf_putc(&b, '[');
    for (int i = 0; i < 5000; i++) buf_printf(&b, "%s%d", i ? "," : "", i);
    buf_putc(&b, ']');
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(json_parse(&d, b.data, b.len, 100000), 0);
    CHECK_INT(d.ntokens, 5001);
    CHECK(d.cap >= 5001 && d.cap <= 100000);
    CHECK_INT(d.tokens[0].count, 5000);
    int64_t v;
    CHECK_INT(json_int64(&d, (uint32_t)json_at(&d, 0, 4999), &v), 0);
    CHECK_INT(v, 4999);
    CHECK_INT(parse(&d, "{\"k\":true}"), 0);   /* reuse after a large parse */
    CHECK_INT(d.ntokens, 3);
    CHECK_INT(d.tokens[2].type, JSON_TRUE);
    CHECK(json_parse(&d, b.data, b.len, 5000) < 0);
    CHECK_INT(json_parse(&d, b.data, b.len, 5001), 0);
    buf_fini(&b);
    json_doc_fini(&d);
    json_doc_fini(&d);   /* fini leaves an empty doc behind */
}

static int nested(json_doc *d, int depth, char open, char close)
{
    buf b;
    buf_init(&b);
    for (int i = 0; i < depth; i++) buf_putc(&b, open);
    for (int i = 0; i < depth; i++) buf_putc(&b, close);
    int rc = json_parse(d, b.data, b.len, MAXTOK);
    buf_fini(&b);
    return rc;
}

TEST(json_depth_limit)
{
    json_doc d;
    json_doc_init(&d);
    CHECK_INT(nested(&d, 64, '[', ']'), 0);
    CHECK_INT(d.ntokens, 64);
    CHECK_INT(d.tokens[63].start, 63);
    CHECK_INT(d.tokens[0].next, 64);
    CHECK(nested(&d, 65, '[', ']') < 0);
    CHECK_STR(d.error, "invalid json at byte 64: nesting deeper than 64 levels");
    CHECK(nested(&d, 100000, '[', ']') < 0);
    buf b;
    buf_init(&b);
    for (int i = 0; i < 64; i++) buf_puts(&b, "{\"k\":");
    buf_puts(&b, "1");
    for (int i = 0; i < 64; i++) buf_putc(&b, '}');
    CHECK_INT(json_parse(&d, b.data, b.len, MAXTOK), 0);
    buf_reset(&b);
    for (int i = 0; i < 65; i++) buf_puts(&b, "{\"k\":");
    CHECK(json_parse(&d, b.data, b.len, MAXTOK) < 0);
    buf_fini(&b);
    json_doc_fini(&d);
}

/* Writes s with json_put_str, parses the result and checks the decoded value
 * is byte-identical to s. */
static void round_trip(const char *s, size_t n)
{
    buf b, out;
    buf_init(&b);
    buf_init(&out);
    json_put_str(&b, s, n);
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, b.data, b.len, 4) != 0)
        harness_failf(__FILE__, __LINE__, "writer output %s: %s", b.data, d.error);
    CHECK_INT(d.tokens[0].type, JSON_STRING);
    json_str_decode(&d, 0, &out);
    CHECK_INT(out.len, n);
    CHECK(n == 0 || memcmp(out.data, s, n) == 0);
    json_doc_fini(&d);
    buf_fini(&b);
    buf_fini(&out);
}

TEST(json_put_str_escaping)
{
    buf b;
    buf_init(&b);
    static const char ctl[] = "a\"b\\c\n\r\t\b\f\x01\x1f\x7f/";
    json_put_str(&b, ctl, sizeof ctl - 1);
    CHECK_STR(b.data, "\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f\x7f/\"");
    buf_reset(&b);
    json_put_str(&b, "caf\xc3\xa9 \xf0\x9f\x98\x80", 10);
    CHECK_STR(b.data, "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");   /* utf-8 kept as-is */
    buf_reset(&b);
    json_put_str(&b, "a\xff" "b\xed\xa0\x80", 6);             /* invalid bytes replaced */
    CHECK_STR(b.data, "\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    buf_reset(&b);
    json_put_cstr(&b, NULL);
    json_put_cstr(&b, "");
    json_put_cstr(&b, "x");
    CHECK_STR(b.data, "null\"\"\"x\"");
    buf_fini(&b);
    char all[256];
    for (int i = 0; i < 128; i++) all[i] = (char)i;
    round_trip(all, 128);
    round_trip("", 0);
    static const char mixed[] = "quote\" back\\ slash/ \xe2\x82\xac \xf4\x8f\xbf\xbf";
    round_trip(mixed, sizeof mixed - 1);
}

TEST(json_pretty_output)
{
    const char *in = " {\"a\":[1,{\"b\":null},[],{}],\"s\":\"x\\\"y, [z]\",\"e\":{ },\n\"n\":-1.5e3}";
    const char *want =
        "{\n"
        "  \"a\": [\n"
        "    1,\n"
        "    {\n"
        "      \"b\": null\n"
        "    },\n"
        "    [],\n"
        "    {}\n"
        "  ],\n"
        "  \"s\": \"x\\\"y, [z]\",\n"
        "  \"e\": {},\n"
        "  \"n\": -1.5e3\n"
        "}";
    buf b;
    buf_init(&b);
    json_pretty(&b, in, strlen(in));
    CHECK_STR(b.data, want);
    buf_reset(&b);
    json_pretty(&b, "\"\\\\\"", 4);
    CHECK_STR(b.data, "\"\\\\\"");
    buf_reset(&b);
    json_pretty(&b, "[ ]", 3);
    CHECK_STR(b.data, "[]");
    buf_fini(&b);
}

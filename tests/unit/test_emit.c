/* test_emit: the one JSON emitter: commas, nesting, escaping, the one
 * timestamp format, verbatim values, re-emitting foreign JSON, misuse. */
#include "harness.h"
#include <stdint.h>
#include "base/emit.h"
#include "base/json.h"

static const char *out_of(buf *b) { return b->data ? b->data : ""; }

TEST(emit_writes_objects_and_arrays_without_spaces)
{
    buf b;
    buf_init(&b);
    emit e;
    emit_init(&e, &b);
    emit_object(&e);
    emit_key(&e, "queue"); emit_str(&e, "orders");
    emit_key(&e, "n"); emit_int(&e, -42);
    emit_key(&e, "ok"); emit_bool(&e, true);
    emit_key(&e, "none"); emit_null(&e);
    emit_key(&e, "list"); emit_array(&e);
    emit_int(&e, 1); emit_object(&e); emit_end(&e); emit_array(&e); emit_end(&e); emit_str(&e, NULL);
    emit_end(&e);
    emit_key(&e, "empty"); emit_object(&e); emit_end(&e);
    emit_end(&e);
    CHECK(emit_ok(&e));
    CHECK_STR(out_of(&b), "{\"queue\":\"orders\",\"n\":-42,\"ok\":true,\"none\":null,\"list\":[1,{},[],null],\"empty\":{}}");
    buf_fini(&b);
}

TEST(emit_escapes_strings_and_keys_one_way)
{
    buf b;
    buf_init(&b);
    emit e;
    emit_init(&e, &b);
    emit_object(&e);
    emit_key(&e, "a\"b");
    emit_strn(&e, "line\nquote\" tab\t nul\0 é", 24);
    emit_end(&e);
    CHECK(emit_ok(&e));
    CHECK_STR(out_of(&b), "{\"a\\\"b\":\"line\\nquote\\\" tab\\t nul\\u0000 é\"}");
    buf_fini(&b);
}

TEST(emit_time_is_utc_with_milliseconds_and_z)
{
    buf b;
    buf_init(&b);
    emit e;
    emit_init(&e, &b);
    emit_array(&e);
    emit_time(&e, 1796108670501000LL);   /* 2026-12-01T07:04:30.501Z */
    emit_time(&e, 1796108670501999LL);   /* truncated, not rounded */
    emit_time(&e, 0);
    emit_time(&e, -1000);                /* before the epoch */
    emit_end(&e);
    CHECK_STR(out_of(&b), "[\"2026-12-01T07:04:30.501Z\",\"2026-12-01T07:04:30.501Z\",\"1970-01-01T00:00:00.000Z\","
                          "\"1969-12-31T23:59:59.999Z\"]");
    buf_fini(&b);
}

TEST(emit_raw_and_uuid)
{
    buf b;
    buf_init(&b);
    emit e;
    emit_init(&e, &b);
    const uint8_t id[16] = { 0x01, 0x9a, 0, 0, 0, 0, 0x70, 0, 0x80, 0, 0, 0, 0, 0, 0, 0xff };
    emit_object(&e);
    emit_key(&e, "data"); emit_raw(&e, "{ \"kept\" : [1, 2] }", 19);   /* the client's bytes, verbatim */
    emit_key(&e, "id"); emit_uuid(&e, id);
    emit_end(&e);
    CHECK_STR(out_of(&b), "{\"data\":{ \"kept\" : [1, 2] },\"id\":\"019a0000-0000-7000-8000-0000000000ff\"}");
    buf_fini(&b);
}

/* Integers by hand: both ends of int64 and zero. A time repeated and then
 * changed (the per-thread cache of the last millisecond) reads right. */
TEST(emit_int_extremes_and_the_time_cache)
{
    buf b;
    buf_init(&b);
    emit e;
    emit_init(&e, &b);
    emit_array(&e);
    emit_int(&e, 0); emit_int(&e, INT64_MAX); emit_int(&e, INT64_MIN); emit_int(&e, 7);
    emit_time(&e, 1796108670501000LL); emit_time(&e, 1796108670501000LL); emit_time(&e, 1796108670502000LL);
    emit_time(&e, -1000);   /* the millisecond before the epoch */
    emit_end(&e);
    CHECK(emit_ok(&e));
    CHECK_STR(out_of(&b), "[0,9223372036854775807,-9223372036854775808,7,\"2026-12-01T07:04:30.501Z\","
                          "\"2026-12-01T07:04:30.501Z\",\"2026-12-01T07:04:30.502Z\",\"1969-12-31T23:59:59.999Z\"]");
    buf_fini(&b);
}

/* Members rendered once go where a key is due, with the comma the emitter
 * owes; anywhere else they mark it misused. */
TEST(emit_members_repeats_members_rendered_once)
{
    buf b;
    buf_init(&b);
    emit e;
    emit_init(&e, &b);
    emit_array(&e);
    for (int i = 0; i < 2; i++) {
        emit_object(&e);
        emit_key(&e, "i"); emit_int(&e, i);
        emit_members(&e, "\"q\":\"x\",\"n\":1", 13);
        emit_key(&e, "last"); emit_bool(&e, true);
        emit_end(&e);
    }
    emit_object(&e); emit_members(&e, "\"q\":1", 5); emit_end(&e);   /* first member */
    emit_end(&e);
    CHECK(emit_ok(&e));
    CHECK_STR(out_of(&b), "[{\"i\":0,\"q\":\"x\",\"n\":1,\"last\":true},{\"i\":1,\"q\":\"x\",\"n\":1,\"last\":true},"
                          "{\"q\":1}]");
    emit_members(&e, "\"q\":1", 5);   /* outside any object */
    CHECK(!emit_ok(&e));
    buf_fini(&b);
}

/* PostgreSQL's jsonb text has spaces after ':' and ','; re-emitted it speaks
 * like the rest of the API, and parses back to the same value. */
TEST(emit_json_re_emits_foreign_json_in_the_one_voice)
{
    const char *pg = "{\"a\": 1, \"b\": [true, null, \"x\\u0041\\n\"], \"c\": {\"d\": -1.5e3, \"\": \"\"}}";
    buf b;
    buf_init(&b);
    emit e;
    emit_init(&e, &b);
    emit_array(&e);
    CHECK_INT(emit_json(&e, pg, strlen(pg)), 0);
    CHECK_INT(emit_json(&e, "[]", 2), 0);
    emit_end(&e);
    CHECK(emit_ok(&e));
    CHECK_STR(out_of(&b), "[{\"a\":1,\"b\":[true,null,\"xA\\n\"],\"c\":{\"d\":-1.5e3,\"\":\"\"}},[]]");
    buf_reset(&b);
    emit_init(&e, &b);
    CHECK_INT(emit_json(&e, "{\"a\":", 5), -1);
    buf_fini(&b);
}

TEST(emit_notices_misuse)
{
    buf b;
    buf_init(&b);
    emit e;
    emit_init(&e, &b);
    emit_object(&e);
    emit_int(&e, 1);   /* a value where a key is due */
    emit_end(&e);
    CHECK(!emit_ok(&e));
    emit_init(&e, &b);
    emit_array(&e);
    emit_key(&e, "k");   /* a key in an array */
    emit_end(&e);
    CHECK(!emit_ok(&e));
    emit_init(&e, &b);
    emit_object(&e);
    emit_key(&e, "k");
    emit_end(&e);        /* a key without its value */
    CHECK(!emit_ok(&e));
    emit_init(&e, &b);
    emit_array(&e);      /* never closed */
    CHECK(!emit_ok(&e));
    emit_init(&e, &b);
    emit_end(&e);        /* nothing open */
    CHECK(!emit_ok(&e));
    buf_fini(&b);
}

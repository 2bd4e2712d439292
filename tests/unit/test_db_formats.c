/* test_db_formats: the declared way between C and SQL (statements.c): array
 * literals as PostgreSQL parses them, and result reads that refuse a column
 * of another type or in text format. */
#include "harness.h"
#include "db/array.h"
#include "db/result.h"
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(db_array_quotes_text_and_writes_null_unquoted)
{
    db_array a;
    db_array_init(&a);
    CHECK_STR(db_array_literal(&a), "{}");
    db_array_text(&a, "plain");
    db_array_text(&a, NULL);
    db_array_text(&a, "a \"quoted\", {braced} back\\slash");
    db_array_text(&a, "");
    CHECK_STR(db_array_literal(&a), "{\"plain\",NULL,\"a \\\"quoted\\\", {braced} back\\\\slash\",\"\"}");
    db_array_fini(&a);
}

TEST(db_array_writes_numbers_and_booleans_and_reopens_after_reading)
{
    db_array a;
    db_array_init(&a);
    db_array_int(&a, -9223372036854775807LL - 1);
    CHECK_STR(db_array_literal(&a), "{-9223372036854775808}");
    db_array_int(&a, 42);
    CHECK_STR(db_array_literal(&a), "{-9223372036854775808,42}");
    db_array_fini(&a);
    db_array_init(&a);
    db_array_bool(&a, true);
    db_array_bool(&a, false);
    CHECK_STR(db_array_literal(&a), "{t,f}");
    db_array_fini(&a);
}

/* array_recv's form: ndim 1, a flag, the element type's oid, the size and
 * lower bound 1, then each element as a length (-1: NULL) and its bytes. */
static uint32_t be32_at(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

TEST(db_array_of_uuids_or_strs_goes_binary_and_cuts_like_a_literal)
{
    db_array a, b;
    db_array_init(&a);
    db_array_init(&b);
    int len, fmt;
    CHECK(a.text.len == 1);   /* where the first element begins, whatever the form (a gather's first start) */
    CHECK_STR(db_array_param(&a, &len, &fmt), "{}");   /* empty: the literal, whatever it would hold */
    CHECK(fmt == 0);
    db_array_uuid(&a, "0192d6a4-0000-7000-8000-00000000000a");
    size_t one = a.text.len;
    CHECK(one == 1 + 4 + 16);
    db_array_uuid(&a, NULL);
    const char *p = db_array_param(&a, &len, &fmt);
    CHECK(fmt == 1 && len == 20 + 4 + 16 + 4);
    CHECK(be32_at(p) == 1 && be32_at(p + 8) == 2950 && be32_at(p + 12) == 2 && be32_at(p + 16) == 1);
    CHECK(be32_at(p + 20) == 16 && (unsigned char)p[24] == 0x01 && (unsigned char)p[39] == 0x0a);
    CHECK(be32_at(p + 40) == UINT32_MAX);
    /* the second element cut out alone, as a gather moves a request, into
     * an array that had been read as an empty literal */
    CHECK_STR(db_array_literal(&b), "{}");
    db_array_append_span(&b, &a, one, a.text.len, 1);
    p = db_array_param(&b, &len, &fmt);
    CHECK(fmt == 1 && len == 24 && be32_at(p + 12) == 1 && be32_at(p + 20) == UINT32_MAX);
    db_array_fini(&b);
    db_array_fini(&a);
    db_array_init(&a);
    db_array_str(&a, "a \"quoted\" {x}");
    db_array_str(&a, "");
    p = db_array_param(&a, &len, &fmt);
    CHECK(fmt == 1 && be32_at(p + 8) == 25 && be32_at(p + 12) == 2);
    CHECK(be32_at(p + 20) == 14 && memcmp(p + 24, "a \"quoted\" {x}", 14) == 0 && be32_at(p + 38) == 0);
    CHECK(len == 42);
    db_array_fini(&a);
}

/* What a gather sends as NULL (gather_nulls_as_null): an array with
 * elements, every one NULL, in either form; a quoted "NULL" is a text. */
TEST(db_array_nulls_only_is_an_array_of_nothing_but_nulls)
{
    db_array a;
    db_array_init(&a);
    CHECK(!db_array_nulls_only(&a));   /* empty */
    db_array_int(&a, 0);
    CHECK(!db_array_nulls_only(&a));
    db_array_fini(&a);
    db_array_init(&a);
    db_array_text(&a, NULL);
    db_array_text(&a, NULL);
    CHECK(db_array_nulls_only(&a));
    CHECK_STR(db_array_literal(&a), "{NULL,NULL}");
    CHECK(db_array_nulls_only(&a));   /* closed by the read */
    db_array_text(&a, "NULL");
    CHECK(!db_array_nulls_only(&a));
    db_array_fini(&a);
    db_array_init(&a);
    db_array_int(&a, 1);
    db_array_text(&a, NULL);
    CHECK(!db_array_nulls_only(&a));   /* a value first */
    db_array_fini(&a);
    db_array_init(&a);
    db_array_str(&a, NULL);
    db_array_str(&a, NULL);
    CHECK(db_array_nulls_only(&a));
    db_array_str(&a, "");
    CHECK(!db_array_nulls_only(&a));
    db_array_fini(&a);
    db_array_init(&a);
    db_array_str(&a, "x");
    db_array_str(&a, NULL);
    CHECK(!db_array_nulls_only(&a));   /* a value first */
    db_array_fini(&a);
    /* cut from another array, as a failed batch's requests are sent alone */
    for (int binary = 0; binary < 2; binary++) {
        db_array src, cut;
        db_array_init(&src);
        db_array_init(&cut);
        size_t at[4] = { 1 };
        const char *elements[3] = { NULL, NULL, "v" };
        for (int i = 0; i < 3; i++) {
            if (binary) db_array_str(&src, elements[i]); else db_array_text(&src, elements[i]);
            at[i + 1] = src.text.len;
        }
        db_array_append_span(&cut, &src, at[0], at[2], 2);
        CHECK(db_array_nulls_only(&cut));
        db_array_append_span(&cut, &src, at[2], at[3], 1);
        CHECK(!db_array_nulls_only(&cut));
        db_array_fini(&src);
        db_array_fini(&cut);
    }
}

TEST(db_time_param_keeps_microseconds)
{
    char out[40];
    db_time_param(1764572670501234LL, out);   /* 2025-12-01T07:04:30.501234Z */
    CHECK_STR(out, "2025-12-01 07:04:30.501234+00");
    db_time_param(-1, out);
    CHECK_STR(out, "1969-12-31 23:59:59.999999+00");
}

/* A one-row result with one column of the given type and format. */
static PGresult *result_of(Oid type, int format, const char *value, int len)
{
    PGresult *r = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    PGresAttDesc col = { .name = (char *)"col", .typid = type, .format = format, .typlen = -1, .atttypmod = -1 };
    PQsetResultAttrs(r, 1, &col);
    PQsetvalue(r, 0, 0, (char *)value, len);
    return r;
}

/* Whether reading runs into an abort (in a child, so the test survives). */
static bool aborts(void (*read)(const PGresult *), const PGresult *r)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(3);
        read(r);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void read_int(const PGresult *r) { (void)db_int(r, 0, 0); }
static void read_bool(const PGresult *r) { (void)db_bool(r, 0, 0); }
static void read_text(const PGresult *r) { (void)db_str(r, 0, 0); }
static void read_uuid(const PGresult *r) { (void)db_uuid(r, 0, 0); }

TEST(db_reads_binary_values_of_their_type)
{
    PGresult *r = result_of(20, 1, "\xff\xff\xff\xff\xff\xff\xff\xfe", 8);   /* int8 -2 */
    CHECK(db_int(r, 0, 0) == -2);
    PQclear(r);
    r = result_of(23, 1, "\x00\x00\x01\x00", 4);   /* int4 256 */
    CHECK(db_int(r, 0, 0) == 256);
    PQclear(r);
    r = result_of(3802, 1, "\x01{\"a\":1}", 8);    /* jsonb: version byte, then text */
    size_t n;
    const char *j = db_json(r, 0, 0, &n);
    CHECK(n == 7 && memcmp(j, "{\"a\":1}", 7) == 0);
    PQclear(r);
    r = result_of(1184, 1, "\x00\x00\x00\x00\x00\x00\x00\x00", 8);   /* 2000-01-01 */
    CHECK(db_time_us(r, 0, 0) == 946684800LL * 1000000LL);
    PQclear(r);
}

/* 'infinity' and '-infinity' (the forever leaf's bounds) read as the
 * extremes, not as an overflowed sum. */
TEST(db_reads_infinite_timestamps_as_the_extremes)
{
    PGresult *r = result_of(1184, 1, "\x7f\xff\xff\xff\xff\xff\xff\xff", 8);
    CHECK(db_time_us(r, 0, 0) == INT64_MAX);
    PQclear(r);
    r = result_of(1184, 1, "\x80\x00\x00\x00\x00\x00\x00\x00", 8);
    CHECK(db_time_us(r, 0, 0) == INT64_MIN);
    PQclear(r);
}

TEST(db_reads_abort_on_a_column_of_another_type_or_in_text)
{
    PGresult *text_int = result_of(23, 0, "42", 2);          /* an integer in text format */
    CHECK(aborts(read_int, text_int));
    PQclear(text_int);
    PGresult *bool_col = result_of(16, 1, "\x01", 1);
    CHECK(!aborts(read_bool, bool_col));
    CHECK(aborts(read_int, bool_col));
    CHECK(aborts(read_text, bool_col));
    PQclear(bool_col);
    PGresult *text_col = result_of(25, 1, "0123456789abcdef", 16);
    CHECK(!aborts(read_text, text_col));
    CHECK(aborts(read_uuid, text_col));   /* 16 bytes of text are not a uuid */
    PQclear(text_col);
}

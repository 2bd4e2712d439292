/* result: checked reads of binary PostgreSQL values (see result.h). */
#include "db/result.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_OFFSET_US (946684800LL * 1000000LL)

/* Type OIDs of pg_type.dat: fixed since PostgreSQL 8 (server/catalog/pg_type_d.h). */
enum { OID_BOOL = 16, OID_BYTEA = 17, OID_NAME = 19, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23,
       OID_TEXT = 25, OID_JSON = 114, OID_VARCHAR = 1043, OID_TIMESTAMPTZ = 1184, OID_UUID = 2950,
       OID_JSONB = 3802 };

#define EXPECT(r, col, what, ...) expect(r, col, what, (const Oid[]){ __VA_ARGS__, 0 })

/* Aborts unless column col is binary and of one of the types (0-terminated). */
static void expect(const PGresult *r, int col, const char *what, const Oid *types)
{
    if (col < 0 || col >= PQnfields(r)) {
        fprintf(stderr, "silt: result has no column %d (read as %s)\n", col, what);
        abort();
    }
    Oid t = PQftype(r, col);
    if (PQfformat(r, col) != 1) {
        fprintf(stderr, "silt: column \"%s\" (%d) is in text format, read as %s: mark its statement binary\n",
                PQfname(r, col), col, what);
        abort();
    }
    for (; *types; types++)
        if (t == *types) return;
    fprintf(stderr, "silt: column \"%s\" (%d) has type oid %u, read as %s\n", PQfname(r, col), col, t, what);
    abort();
}

bool db_null(const PGresult *r, int row, int col) { return PQgetisnull(r, row, col); }

int64_t db_int(const PGresult *r, int row, int col)
{
    EXPECT(r, col, "an integer", OID_INT2, OID_INT4, OID_INT8);
    if (PQgetisnull(r, row, col)) return 0;
    const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
    int n = PQgetlength(r, row, col);
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    if (n == 4) return (int32_t)(uint32_t)v;
    if (n == 2) return (int16_t)(uint16_t)v;
    return (int64_t)v;
}

bool db_bool(const PGresult *r, int row, int col)
{
    EXPECT(r, col, "a boolean", OID_BOOL);
    return !PQgetisnull(r, row, col) && PQgetvalue(r, row, col)[0] != 0;
}

static const char *value(const PGresult *r, int row, int col, size_t *len)
{
    *len = (size_t)PQgetlength(r, row, col);
    return PQgetvalue(r, row, col);
}

const char *db_bytes(const PGresult *r, int row, int col, size_t *len)
{
    EXPECT(r, col, "bytea", OID_BYTEA);
    return value(r, row, col, len);
}

const char *db_text(const PGresult *r, int row, int col, size_t *len)
{
    EXPECT(r, col, "text", OID_TEXT, OID_VARCHAR, OID_NAME);
    return value(r, row, col, len);
}

const char *db_str(const PGresult *r, int row, int col)
{
    size_t len;
    return db_text(r, row, col, &len);
}

const char *db_json(const PGresult *r, int row, int col, size_t *len)
{
    EXPECT(r, col, "json", OID_JSON, OID_JSONB);
    const char *p = value(r, row, col, len);
    if (PQftype(r, col) == OID_JSONB && *len > 0) { p++; (*len)--; }   /* jsonb's version byte (1) */
    return p;
}

const uint8_t *db_uuid(const PGresult *r, int row, int col)
{
    EXPECT(r, col, "a uuid", OID_UUID);
    return (const uint8_t *)PQgetvalue(r, row, col);
}

int64_t db_time_us(const PGresult *r, int row, int col)
{
    EXPECT(r, col, "a timestamptz", OID_TIMESTAMPTZ);
    if (PQgetisnull(r, row, col)) return 0;
    const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    int64_t t = (int64_t)v;
    if (t == INT64_MAX || t == INT64_MIN) return t;   /* 'infinity', '-infinity' stay what they are */
    return t + PG_EPOCH_OFFSET_US;
}

void db_time_param(int64_t unix_us, char out[40])
{
    int64_t us = unix_us % 1000000, s = unix_us / 1000000;
    if (us < 0) { us += 1000000; s--; }
    time_t t = (time_t)s;
    struct tm tm;
    gmtime_r(&t, &tm);
    char day[24];
    strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(out, 40, "%s.%06lld+00", day, (long long)us);
}

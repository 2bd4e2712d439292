/* result: decoding of binary and text PostgreSQL values (see result.h). */
#include "db/result.h"
#include <stdio.h>
#include <string.h>

/* Seconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_OFFSET_US (946684800LL * 1000000LL)

bool db_null(const PGresult *r, int row, int col) { return PQgetisnull(r, row, col); }

int64_t db_int(const PGresult *r, int row, int col)
{
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
    return !PQgetisnull(r, row, col) && PQgetvalue(r, row, col)[0] != 0;
}

const char *db_bytes(const PGresult *r, int row, int col, size_t *len)
{
    *len = (size_t)PQgetlength(r, row, col);
    return PQgetvalue(r, row, col);
}

int64_t db_time_us(const PGresult *r, int row, int col)
{
    return db_int(r, row, col) + PG_EPOCH_OFFSET_US;
}


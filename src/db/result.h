/* result: the one way C reads a PGresult. Every statement asks for its
 * results in PostgreSQL's binary format (statements.c), and every value is
 * read through one of these helpers, named for the SQL type it expects. Each
 * checks the column's format and type (PQfformat, PQftype) and aborts with a
 * message naming the column when they do not match: that is a programming
 * error (a statement and its reader disagree), never bad input. Binary
 * values: big-endian integers, timestamps as microseconds since 2000-01-01,
 * uuids as 16 bytes, text and bytea as their bytes, jsonb as a version byte
 * and its text. A NULL reads as 0, false, "" or an empty span. */
#ifndef SILT_RESULT_H
#define SILT_RESULT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>

bool           db_null(const PGresult *r, int row, int col);
int64_t        db_int(const PGresult *r, int row, int col);       /* int2, int4, int8 */
bool           db_bool(const PGresult *r, int row, int col);      /* boolean */
const char    *db_bytes(const PGresult *r, int row, int col, size_t *len);  /* bytea */
/* text, varchar, name; NUL-terminated as well as *len bytes long. */
const char    *db_text(const PGresult *r, int row, int col, size_t *len);
const char    *db_str(const PGresult *r, int row, int col);      /* db_text, without the length */
const char    *db_json(const PGresult *r, int row, int col, size_t *len);   /* json, jsonb: the text */
const uint8_t *db_uuid(const PGresult *r, int row, int col);      /* uuid: 16 bytes */
/* timestamptz, as Unix microseconds; 'infinity' and '-infinity' as
 * INT64_MAX and INT64_MIN. */
int64_t        db_time_us(const PGresult *r, int row, int col);
/* Unix microseconds as a timestamptz parameter, to the microsecond. */
void           db_time_param(int64_t unix_us, char out[40]);

#endif

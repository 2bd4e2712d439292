/* result: typed reads of PGresult values. Statements marked binary in
 * statements.c return PostgreSQL's binary wire format (big-endian integers,
 * timestamps as microseconds since 2000-01-01, uuids as 16 bytes), which
 * avoids hex-decoding segment blobs; the others return text. */
#ifndef SILT_RESULT_H
#define SILT_RESULT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>

bool        db_null(const PGresult *r, int row, int col);
int64_t     db_int(const PGresult *r, int row, int col);       /* int2/4/8, binary */
bool        db_bool(const PGresult *r, int row, int col);      /* binary */
const char *db_bytes(const PGresult *r, int row, int col, size_t *len); /* text/bytea, binary */
/* timestamptz, binary, as Unix microseconds. */
int64_t     db_time_us(const PGresult *r, int row, int col);
/* Formats Unix microseconds as ISO 8601 UTC with milliseconds. */
void        db_format_time(int64_t unix_us, char out[32]);
/* A text-format timestamptz ("2026-11-30 13:15:06.92+00") as ISO 8601 UTC. */
void        db_iso_time(const char *pg, char out[32]);

#endif

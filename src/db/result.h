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

#endif

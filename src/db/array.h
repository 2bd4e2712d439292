/* array: one typed PostgreSQL array parameter, the way C hands SQL a batch:
 * one array per field, parallel (see "Between C and SQL" at the top of
 * statements.c). Written as a text-format array literal ('{"a","b",NULL}'),
 * except a uuid[] or text[] of a batch on the task engine's hot path, sent
 * in binary format (array_recv's: the 16 bytes of each id, the bytes of
 * each text, so PostgreSQL parses no literal for it). An array takes the
 * form of its first element; an empty one is the literal '{}'.
 * Bytes never go here: they go as one bytea in binary format. */
#ifndef SILT_ARRAY_H
#define SILT_ARRAY_H
#include <stdbool.h>
#include <stdint.h>
#include "base/buf.h"

typedef struct db_array {
    buf    text;   /* the literal so far; binary: '{', then the elements so far (length, bytes) */
    buf    wire;   /* binary: header and elements, made by db_array_param */
    size_t n;      /* elements added */
    bool   closed; /* the literal ends in its '}' (db_array_literal) */
    uint32_t oid;  /* sent in binary: the elements' type (db_array_uuid, _str); 0: a literal */
} db_array;

void        db_array_init(db_array *a);
void        db_array_fini(db_array *a);
/* A text element (text, timestamptz...), quoted; NULL adds NULL. */
void        db_array_text(db_array *a, const char *s);
void        db_array_int(db_array *a, int64_t v);
void        db_array_bool(db_array *a, bool v);
/* A uuid element, from its 36-character text (checked by the caller:
 * another text aborts); NULL adds NULL. An array of uuids holds nothing
 * else. */
void        db_array_uuid(db_array *a, const char *s);
/* A text element of a text[] sent in binary, as it is; NULL adds NULL. */
void        db_array_str(db_array *a, const char *s);
void        db_array_uuid_bytes(db_array *a, const uint8_t id[16]);
/* Appends every element of src to a (of the same form, or a empty). */
void        db_array_append(db_array *a, db_array *src);
/* The count elements that lie between offsets start and end of src's
 * text, whatever its form, appended to a. Every array's text begins with
 * its '{' (offset 1: the first element), and its elements end where its
 * text did when they were added. */
void        db_array_append_span(db_array *a, const db_array *src, size_t start, size_t end, size_t count);
/* Appends count elements already written as literal text ("e1,e2"; a
 * leading comma is dropped), as cut from another array's literal. */
void        db_array_append_raw(db_array *a, const char *elements, size_t len, size_t count);
/* The literal, terminated; valid until the next call on a. A text array only. */
const char *db_array_literal(db_array *a);
/* The parameter: its value, *length and *format (0 text, 1 binary) as
 * PQsendQueryPrepared takes them; valid until the next call on a. */
const char *db_array_param(db_array *a, int *length, int *format);
/* Elements there are, all of them NULL. */
bool        db_array_nulls_only(const db_array *a);

#endif

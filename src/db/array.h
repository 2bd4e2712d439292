/* array: one typed PostgreSQL array parameter, written as a text-format
 * array literal ('{"a","b",NULL}'), the way C hands SQL a batch: one array
 * per field, parallel (see "Between C and SQL" at the top of statements.c).
 * Bytes never go here: they go as one bytea in binary format. */
#ifndef SILT_ARRAY_H
#define SILT_ARRAY_H
#include <stdbool.h>
#include <stdint.h>
#include "base/buf.h"

typedef struct db_array {
    buf    text;   /* the literal so far */
    size_t n;      /* elements added */
    bool   closed; /* the literal ends in its '}' (db_array_literal) */
} db_array;

void        db_array_init(db_array *a);
void        db_array_fini(db_array *a);
/* A text element (text, uuid, timestamptz...), quoted; NULL adds NULL. */
void        db_array_text(db_array *a, const char *s);
void        db_array_int(db_array *a, int64_t v);
void        db_array_bool(db_array *a, bool v);
/* Appends count elements already written as literal text ("e1,e2"; a
 * leading comma is dropped), as cut from another array's literal. */
void        db_array_append_raw(db_array *a, const char *elements, size_t len, size_t count);
/* Appends every element of src to a. */
void        db_array_append(db_array *a, db_array *src);
/* The literal, terminated; valid until the next call on a. */
const char *db_array_literal(db_array *a);

#endif

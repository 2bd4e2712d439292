/* emit: the JSON emitter every reply is written with, so the API has one
 * voice: no spaces, keys in the order the code writes them, strings escaped
 * one way, timestamps one way (ISO 8601 UTC with milliseconds and "Z",
 * e.g. 2026-12-01T07:04:30.501Z), uuids lower-case. Commas are the
 * emitter's business: callers open, write keys and values, and close.
 *
 *   emit e;
 *   emit_init(&e, &out);
 *   emit_object(&e);
 *   emit_key(&e, "queue"); emit_str(&e, name);
 *   emit_key(&e, "messages"); emit_array(&e); ... emit_end(&e);
 *   emit_end(&e);
 *
 * Values a client sent as JSON (payloads, trace data) go out verbatim with
 * emit_raw. Misuse (a value where a key is due, a key outside an object,
 * too deep, unbalanced ends) is a bug in silt: it marks the emitter, and
 * emit_ok says so (the tests check it). */
#ifndef SILT_EMIT_H
#define SILT_EMIT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "base/buf.h"

#define EMIT_MAX_DEPTH 32

typedef struct emit {
    buf  *out;
    int   depth;                          /* open containers */
    bool  wrote[EMIT_MAX_DEPTH];          /* the container at each depth has a member already */
    bool  in_object[EMIT_MAX_DEPTH];
    bool  key_due;                        /* inside an object, a key comes next */
    bool  broken;                         /* misused: see emit_ok */
} emit;

void emit_init(emit *e, buf *out);
void emit_object(emit *e);
void emit_array(emit *e);
void emit_end(emit *e);
void emit_keyn(emit *e, const char *key, size_t n);
/* Inline so that a literal key's length is known when compiled. */
static inline void emit_key(emit *e, const char *key) { emit_keyn(e, key, strlen(key)); }
void emit_str(emit *e, const char *s);               /* NULL writes null */
void emit_strn(emit *e, const char *s, size_t n);
void emit_int(emit *e, int64_t v);
void emit_bool(emit *e, bool v);
void emit_null(emit *e);
void emit_raw(emit *e, const char *json, size_t n);  /* one JSON value, as is */
void emit_time(emit *e, int64_t unix_us);            /* ISO 8601 UTC, milliseconds */
void emit_uuid(emit *e, const uint8_t id[16]);
/* Members of the open object rendered once beforehand and repeated, e.g.
 * in every message of a pop: the inside of an object another emitter wrote
 * ("k":v,"k2":v2, its braces left out). Where a key is due. */
void emit_members(emit *e, const char *members, size_t n);
/* Re-emits a JSON text (e.g. jsonb from PostgreSQL) in this voice: spacing
 * removed, strings re-escaped one way. -1 when it does not parse. */
int  emit_json(emit *e, const char *text, size_t len) __attribute__((warn_unused_result));
/* True when every container was closed and nothing was misused. */
bool emit_ok(const emit *e);

#endif

/* json: a strict, validating JSON reader that records the byte span of every
 * value, and the writer helpers used to build replies.
 *
 * Spans matter because payloads are stored and returned byte-for-byte: the
 * reader never rebuilds a value, it only says where each one starts and ends.
 * Tokens are laid out depth-first; an object's members are key, value, key,
 * value...; tokens[i].next is the index just past value i and everything in it,
 * so siblings are walked without recursion. */
#ifndef SILT_JSON_H
#define SILT_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"

typedef enum json_type {
    JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT
} json_type;

typedef struct json_token {
    json_type type;
    uint32_t  start;   /* byte offset of the first byte (the quote, for strings) */
    uint32_t  end;     /* byte offset just past the last byte */
    uint32_t  next;    /* token index just past this value and its descendants */
    uint32_t  count;   /* arrays: elements; objects: members; else 0 */
    bool      escaped; /* strings: contains a backslash escape */
} json_token;

typedef struct json_doc {
    const char *text;       /* not owned */
    size_t      len;
    json_token *tokens;
    uint32_t    ntokens;
    uint32_t    cap;
    char        error[128]; /* set when json_parse fails */
} json_doc;

void json_doc_init(json_doc *d);
void json_doc_fini(json_doc *d);
/* Parses one complete JSON text (RFC 8259, UTF-8 checked, depth <= 64).
 * max_tokens bounds memory; exceeding it is an error. */
int  json_parse(json_doc *d, const char *text, size_t len, uint32_t max_tokens)
     __attribute__((warn_unused_result));
/* The same, but values nested deeper than record_depth containers are only
 * validated, not recorded: a container at that depth keeps its span with
 * count 0. A message payload is passed on as bytes, so tokenising its inside
 * would only cost memory (a token per value, several times the text). */
int  json_parse_shallow(json_doc *d, const char *text, size_t len, uint32_t max_tokens, int record_depth)
     __attribute__((warn_unused_result));

/* Member value index of key in object obj, or -1. */
int  json_get(const json_doc *d, uint32_t obj, const char *key);
/* Element i of array arr, or -1. */
int  json_at(const json_doc *d, uint32_t arr, uint32_t i);
bool json_str_eq(const json_doc *d, uint32_t tok, const char *s);
/* Appends the decoded (unescaped) string to out. Token must be a string. */
void json_str_decode(const json_doc *d, uint32_t tok, buf *out);
/* Decoded string as a new NUL-terminated heap copy (caller frees). */
char *json_str_dup(const json_doc *d, uint32_t tok);
/* Integer value of a number token without fraction/exponent; -1 if not one. */
int  json_int64(const json_doc *d, uint32_t tok, int64_t *out)
     __attribute__((warn_unused_result));

static inline const char *json_span(const json_doc *d, uint32_t tok, size_t *n)
{
    *n = d->tokens[tok].end - d->tokens[tok].start;
    return d->text + d->tokens[tok].start;
}

/* Well-formed UTF-8 without NUL (what PostgreSQL's text accepts). */
bool json_utf8_valid(const char *s, size_t n);

/* Writer: appends s (n bytes, UTF-8) as a quoted, escaped JSON string. */
void json_put_str(buf *b, const char *s, size_t n);
void json_put_cstr(buf *b, const char *s);   /* NULL writes null */
/* Pretty-prints a valid JSON text with two-space indentation. */
void json_pretty(buf *out, const char *text, size_t len);

#endif

/* array: text-format array literals, and uuid and text arrays in binary (see array.h). */
#include "db/array.h"
#include <stdlib.h>
#include <string.h>
#include "base/ids.h"
#include "base/log.h"

/* pg_type.oid of the element types sent in binary: array_recv checks them */
#define TEXT_OID 25
#define UUID_OID 2950

void db_array_init(db_array *a)
{
    buf_init(&a->text);
    buf_init(&a->wire);
    buf_putc(&a->text, '{');
    a->n = 0;
    a->closed = false;
    a->oid = 0;
}

void db_array_fini(db_array *a)
{
    buf_fini(&a->text);
    buf_fini(&a->wire);
}

/* A programming error: one array, two forms, or a uuid the caller did not check. */
static void misuse(const char *what)
{
    log_error("db_array: %s", what);
    abort();
}

/* The form of a's elements from now on (oid: the element type sent in
 * binary, 0 for a literal): the first element decides. */
static void take_form(db_array *a, uint32_t oid)
{
    if (a->n == 0 && a->oid != oid) {
        a->oid = oid;
        if (a->closed) { a->text.len--; a->closed = false; }   /* back to the '{' alone */
    }
    if (a->oid != oid) misuse("elements of two forms in one array");
}

static void next_element(db_array *a)
{
    take_form(a, 0);
    if (a->closed) { a->text.len--; a->closed = false; }   /* reopened after db_array_literal */
    if (a->n++) buf_putc(&a->text, ',');
}

void db_array_text(db_array *a, const char *s)
{
    next_element(a);
    if (!s) { buf_puts(&a->text, "NULL"); return; }
    buf_putc(&a->text, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') buf_putc(&a->text, '\\');
        buf_putc(&a->text, *s);
    }
    buf_putc(&a->text, '"');
}

void db_array_int(db_array *a, int64_t v)
{
    next_element(a);
    buf_printf(&a->text, "%lld", (long long)v);
}

void db_array_bool(db_array *a, bool v)
{
    next_element(a);
    buf_putc(&a->text, v ? 't' : 'f');
}

static void put_be32(buf *b, uint32_t v)
{
    const uint8_t be[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
    buf_append(b, be, 4);
}

void db_array_str(db_array *a, const char *s)
{
    take_form(a, TEXT_OID);
    a->n++;
    if (!s) { put_be32(&a->text, UINT32_MAX); return; }   /* length -1: NULL */
    size_t n = strlen(s);
    if (n > INT32_MAX) misuse("a text of more than 2 GB");
    put_be32(&a->text, (uint32_t)n);
    buf_append(&a->text, s, n);
}

void db_array_uuid_bytes(db_array *a, const uint8_t id[16])
{
    take_form(a, UUID_OID);
    a->n++;
    if (!id) { put_be32(&a->text, UINT32_MAX); return; }   /* length -1: NULL */
    put_be32(&a->text, 16);
    buf_append(&a->text, id, 16);
}

void db_array_uuid(db_array *a, const char *s)
{
    uint8_t id[16];
    if (s && ids_uuid_parse(s, strlen(s), id) < 0) misuse("not a uuid");
    db_array_uuid_bytes(a, s ? id : NULL);
}

const char *db_array_literal(db_array *a)
{
    if (a->oid) misuse("the literal of a binary array");
    if (!a->closed) { buf_putc(&a->text, '}'); a->closed = true; }
    return a->text.data;
}

/* array_recv's format: dimensions, a has-nulls flag (array_recv finds the
 * NULLs itself), the element type, each dimension's size and lower bound,
 * then the elements. */
const char *db_array_param(db_array *a, int *length, int *format)
{
    if (!a->oid) {
        const char *lit = db_array_literal(a);
        *length = 0;
        *format = 0;
        return lit;
    }
    buf_reset(&a->wire);
    put_be32(&a->wire, 1);
    put_be32(&a->wire, 0);
    put_be32(&a->wire, a->oid);
    put_be32(&a->wire, (uint32_t)a->n);
    put_be32(&a->wire, 1);
    buf_append(&a->wire, a->text.data + 1, a->text.len - 1);   /* past the '{' */
    *length = (int)a->wire.len;
    *format = 1;
    return a->wire.data;
}

bool db_array_nulls_only(const db_array *a)
{
    if (a->n == 0) return false;
    const char *p = a->text.data + 1, *end = a->text.data + a->text.len - (a->closed ? 1 : 0);   /* past the '{' */
    if (a->oid) {   /* binary: each element's length, -1 for a NULL, which has no bytes */
        for (; p + 4 <= end; p += 4)
            if (memcmp(p, "\xff\xff\xff\xff", 4) != 0) return false;
        return true;
    }
    for (size_t i = 0; i < a->n; i++, p += 5)   /* "NULL," ... "NULL": a quoted text is never bare */
        if (end - p < 4 || memcmp(p, "NULL", 4) != 0 || (p + 4 < end && p[4] != ',')) return false;
    return true;
}

void db_array_append_span(db_array *a, const db_array *src, size_t start, size_t end, size_t count)
{
    if (count == 0) return;
    if (!src->oid) { db_array_append_raw(a, src->text.data + start, end - start, count); return; }
    take_form(a, src->oid);
    buf_append(&a->text, src->text.data + start, end - start);
    a->n += count;
}

void db_array_append(db_array *a, db_array *src)
{
    if (src->n == 0) return;
    if (src->oid) { db_array_append_span(a, src, 1, src->text.len, src->n); return; }
    const char *lit = db_array_literal(src);   /* "{e1,e2}": the elements are what lies between */
    db_array_append_raw(a, lit + 1, strlen(lit) - 2, src->n);
}

void db_array_append_raw(db_array *a, const char *elements, size_t len, size_t count)
{
    if (count == 0) return;
    if (len && *elements == ',') { elements++; len--; }
    next_element(a);
    buf_append(&a->text, elements, len);
    a->n += count - 1;
}

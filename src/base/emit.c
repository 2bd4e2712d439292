/* emit: the JSON emitter (see emit.h). */
#include "base/emit.h"
#include <stdio.h>
#include <string.h>
#include "base/ids.h"
#include "base/iso_time.h"
#include "base/json.h"

void emit_init(emit *e, buf *out)
{
    memset(e, 0, sizeof *e);
    e->out = out;
}

/* Before any value: the comma that separates it from the one before. */
static void before_value(emit *e)
{
    if (e->depth == 0) return;
    int d = e->depth - 1;
    if (e->in_object[d]) {
        if (e->key_due) e->broken = true;   /* a value where a key was due */
        e->key_due = true;
        return;
    }
    if (e->wrote[d]) buf_putc(e->out, ',');
    e->wrote[d] = true;
}

static void open_container(emit *e, char c, bool object)
{
    before_value(e);
    buf_putc(e->out, c);
    if (e->depth == EMIT_MAX_DEPTH) { e->broken = true; return; }
    e->wrote[e->depth] = false;
    e->in_object[e->depth] = object;
    e->depth++;
    e->key_due = object;
}

void emit_object(emit *e) { open_container(e, '{', true); }

void emit_array(emit *e) { open_container(e, '[', false); }

void emit_end(emit *e)
{
    if (e->depth == 0) { e->broken = true; return; }
    e->depth--;
    bool object = e->in_object[e->depth];
    if (object && !e->key_due) e->broken = true;   /* a key without its value */
    buf_putc(e->out, object ? '}' : ']');
    e->key_due = e->depth > 0 && e->in_object[e->depth - 1];
}

/* The separator, the key and its colon (json_put_str copies a plain key,
 * every key silt's code names, in one write). */
void emit_keyn(emit *e, const char *key, size_t n)
{
    int d = e->depth - 1;
    if (d < 0 || !e->in_object[d] || !e->key_due) { e->broken = true; return; }
    if (e->wrote[d]) buf_putc(e->out, ',');
    e->wrote[d] = true;
    e->key_due = false;
    json_put_str(e->out, key, n);
    buf_putc(e->out, ':');
}

void emit_members(emit *e, const char *members, size_t n)
{
    int d = e->depth - 1;
    if (d < 0 || !e->in_object[d] || !e->key_due) { e->broken = true; return; }
    if (n == 0) return;
    if (e->wrote[d]) buf_putc(e->out, ',');
    e->wrote[d] = true;
    buf_append(e->out, members, n);
}

void emit_strn(emit *e, const char *s, size_t n)
{
    before_value(e);
    json_put_str(e->out, s, n);
}

void emit_str(emit *e, const char *s)
{
    if (!s) { emit_null(e); return; }
    emit_strn(e, s, strlen(s));
}

/* Digits by hand: snprintf's format parsing was a visible share of a
 * pop's reply (an offset per message). */
void emit_int(emit *e, int64_t v)
{
    char text[24], *p = text + sizeof text;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do { *--p = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) *--p = '-';
    emit_raw(e, p, (size_t)(text + sizeof text - p));
}

void emit_bool(emit *e, bool v) { emit_raw(e, v ? "true" : "false", v ? 4 : 5); }

void emit_null(emit *e) { emit_raw(e, "null", 4); }

void emit_raw(emit *e, const char *json, size_t n)
{
    before_value(e);
    buf_append(e->out, json, n);
}

/* The last millisecond formatted, per thread: the messages of a segment
 * share their time, and gmtime and strftime per message were a visible
 * share of a pop's reply. */
void emit_time(emit *e, int64_t unix_us)
{
    static _Thread_local int64_t last_ms = INT64_MIN;
    static _Thread_local char text[ISO_TIME_BYTES + 2];
    static _Thread_local size_t len;
    int64_t ms = unix_us / 1000;   /* as iso_time_format reads it: the same text for one ms */
    if (ms != last_ms) {
        iso_time_format(unix_us, text + 1);
        len = strlen(text + 1);
        text[0] = text[len + 1] = '"';
        last_ms = ms;
    }
    emit_raw(e, text, len + 2);
}

/* A uuid's text needs no escaping: formatted between its quotes, in place. */
void emit_uuid(emit *e, const uint8_t id[16])
{
    before_value(e);
    buf *b = e->out;
    buf_reserve(b, IDS_UUID_TEXT + 1);
    char *p = b->data + b->len;
    p[0] = '"';
    ids_uuid_format(id, p + 1);          /* 36 characters and a NUL */
    p[IDS_UUID_TEXT] = '"';
    b->len += IDS_UUID_TEXT + 1;
    b->data[b->len] = '\0';
}

/* Emits the value at token t and returns the token after it. */
static uint32_t emit_token(emit *e, const json_doc *d, uint32_t t)
{
    const json_token *k = &d->tokens[t];
    if (k->type != JSON_OBJECT && k->type != JSON_ARRAY) {
        if (k->type != JSON_STRING) { size_t n; const char *s = json_span(d, t, &n); emit_raw(e, s, n); }
        else if (!k->escaped) emit_strn(e, d->text + k->start + 1, k->end - k->start - 2);
        else { buf s; buf_init(&s); json_str_decode(d, t, &s); emit_strn(e, s.data, s.len); buf_fini(&s); }
        return t + 1;
    }
    bool object = k->type == JSON_OBJECT;
    if (object) emit_object(e); else emit_array(e);
    uint32_t c = t + 1;
    for (uint32_t i = 0; i < k->count; i++) {
        if (object) {
            buf key;
            buf_init(&key);
            json_str_decode(d, c, &key);
            emit_key(e, key.data ? key.data : "");
            buf_fini(&key);
            c++;
        }
        c = emit_token(e, d, c);
    }
    emit_end(e);
    return k->next;
}

int emit_json(emit *e, const char *text, size_t len)
{
    json_doc d;
    json_doc_init(&d);
    int rc = json_parse(&d, text, len, (uint32_t)len + 1);
    if (rc == 0) emit_token(e, &d, 0);
    json_doc_fini(&d);
    return rc;
}

bool emit_ok(const emit *e) { return !e->broken && e->depth == 0; }

/* json: a strict RFC 8259 reader that records spans, plus the writer helpers
 * replies are built with (see json.h).
 *
 * The reader is a small state machine over a fixed stack of open containers
 * rather than recursive descent: a hostile body nested a million deep costs a
 * bounded error, never the C stack. Every size the client controls (tokens,
 * depth, text length) is checked before anything grows. Strings are validated
 * once here (escapes, surrogate pairs, UTF-8) so the accessors below can
 * decode without re-checking. */
#include "base/json.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/xalloc.h"

#define JSON_MAX_DEPTH 64
#define JSON_FIRST_CAP 16   /* tokens allocated by the first growth */

/* Parser states; each step function returns the next one. */
enum { ST_ERR = -1, ST_VALUE, ST_AFTER, ST_KEY, ST_END };

typedef struct parser {
    json_doc            *d;
    const unsigned char *s;
    size_t               pos;   /* byte offset of the next unread byte */
    size_t               len;   /* bytes */
    uint32_t             max;   /* token limit for this parse */
    int                  depth; /* open containers */
    int                  record_depth; /* values inside more containers than this are not recorded */
    uint32_t             stack[JSON_MAX_DEPTH]; /* token index of each open container, or UNRECORDED */
    json_type            kinds[JSON_MAX_DEPTH]; /* the type of each open container */
} parser;

#define UNRECORDED UINT32_MAX

/* Bytes that may appear in a string with no further checking: printable
 * ASCII except '"' and '\\'. A table keeps the hot scan loop branch-light. */
#define R1 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
#define R0 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
static const unsigned char plain[256] = {
    R0, R0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x22 '"' */
    R1, R1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x5c '\\' */
    R1, R1,
    R0, R0, R0, R0, R0, R0, R0, R0,
};
#undef R0
#undef R1

/* ---- shared helpers ---- */

/* Length of the well-formed UTF-8 sequence at s (RFC 3629 table 3-7), or 0.
 * The narrowed second-byte ranges exclude overlongs, UTF-16 surrogates and
 * code points above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3;
    else if (c >= 0xF0 && c <= 0xF4) len = 4;
    else return 0;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    return len;
}

bool json_utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n; ) {
        if (u[i] == 0) return false;
        if (u[i] < 0x80) { i++; continue; }
        size_t k = utf8_len(u + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

static size_t utf8_put(uint32_t cp, char out[4])
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Value of four hex digits at s (avail bytes readable), or -1. */
static long hex4(const unsigned char *s, size_t avail)
{
    long v = 0;
    if (avail < 4) return -1;
    for (int k = 0; k < 4; k++) {
        unsigned char c = s[k];
        int x = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (x < 0) return -1;
        v = v << 4 | x;
    }
    return v;
}

static bool is_high(long cp) { return cp >= 0xD800 && cp <= 0xDBFF; }
static bool is_low(long cp) { return cp >= 0xDC00 && cp <= 0xDFFF; }

/* ---- doc lifecycle ---- */

void json_doc_init(json_doc *d)
{
    memset(d, 0, sizeof *d);
}

void json_doc_fini(json_doc *d)
{
    free(d->tokens);
    json_doc_init(d);
}

/* ---- parser ---- */

static int fail_at(parser *p, size_t at, const char *what)
{
    snprintf(p->d->error, sizeof p->d->error, "invalid json at byte %zu: %s", at, what);
    return ST_ERR;
}

static int fail(parser *p, const char *what) { return fail_at(p, p->pos, what); }

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
        p->pos++;
    }
}

/* Next significant byte, or -1 at end of input. */
static int peek(parser *p)
{
    skip_ws(p);
    return p->pos < p->len ? p->s[p->pos] : -1;
}

/* Doubling growth, clamped to the caller's limit so a small limit never
 * allocates more than it allows. */
static void grow(json_doc *d, uint32_t max)
{
    uint32_t cap = d->cap ? d->cap : JSON_FIRST_CAP / 2;
    cap = cap > max / 2 ? max : cap * 2;
    d->tokens = xrealloc(d->tokens, (size_t)cap * sizeof *d->tokens);
    d->cap = cap;
}

/* Records a token; 1 when it is too deep to record (see record_depth). */
static int push_token(parser *p, json_type t, size_t start, size_t end, bool esc)
{
    json_doc *d = p->d;
    if (p->depth > p->record_depth) return 1;
    if (d->ntokens >= p->max) {
        snprintf(d->error, sizeof d->error, "too many json values");
        return ST_ERR;
    }
    if (d->ntokens >= d->cap) grow(d, p->max);
    d->tokens[d->ntokens] = (json_token){
        .type = t, .start = (uint32_t)start, .end = (uint32_t)end,
        .next = d->ntokens + 1, .count = 0, .escaped = esc,
    };
    d->ntokens++;
    return 0;
}

/* Validates the escape at i (s[i] == '\\'); returns its length or 0. A high
 * surrogate must be followed by an escaped low one: a lone half cannot be
 * turned into UTF-8, and passing it on would poison every later reader. */
static size_t scan_escape(parser *p, size_t i)
{
    size_t avail = p->len - i;
    if (avail < 2) return 0;
    if (p->s[i + 1] != 'u') return strchr("\"\\/bfnrt", p->s[i + 1]) && p->s[i + 1] ? 2 : 0;
    long cp = hex4(p->s + i + 2, avail - 2);
    if (cp < 0 || is_low(cp)) return 0;
    if (!is_high(cp)) return 6;
    if (avail < 12 || p->s[i + 6] != '\\' || p->s[i + 7] != 'u') return 0;
    return is_low(hex4(p->s + i + 8, 4)) ? 12 : 0;
}

/* Scans the string starting at p->pos (a quote) to just past its closing
 * quote, setting *esc when it holds any backslash escape. */
static int scan_string(parser *p, bool *esc)
{
    size_t i = p->pos + 1;
    for (;;) {
        while (i < p->len && plain[p->s[i]]) i++;
        if (i >= p->len) return fail_at(p, p->len, "unterminated string");
        unsigned char c = p->s[i];
        size_t n;
        if (c == '"') break;
        if (c < 0x20) return fail_at(p, i, "unescaped control character in string");
        if (c == '\\') {
            if (!(n = scan_escape(p, i))) return fail_at(p, i, "invalid escape sequence");
            *esc = true;
        } else if (!(n = utf8_len(p->s + i, p->len - i))) {
            return fail_at(p, i, "invalid utf-8 in string");
        }
        i += n;
    }
    p->pos = i + 1;
    return 0;
}

static size_t digits(const parser *p, size_t i)
{
    size_t n = 0;
    while (i + n < p->len && p->s[i + n] >= '0' && p->s[i + n] <= '9') n++;
    return n;
}

/* -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)? */
static int scan_number(parser *p)
{
    size_t i = p->pos, n;
    i += p->s[i] == '-';
    if (i < p->len && p->s[i] == '0') {
        if (digits(p, ++i)) return fail_at(p, i, "leading zero in number");
    } else if (!(n = digits(p, i))) {
        return fail_at(p, i, "invalid number");
    } else {
        i += n;
    }
    if (i < p->len && p->s[i] == '.') {
        if (!(n = digits(p, ++i))) return fail_at(p, i, "invalid number");
        i += n;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-')) i++;
        if (!(n = digits(p, i))) return fail_at(p, i, "invalid number");
        i += n;
    }
    p->pos = i;
    return 0;
}

static int scan_word(parser *p, const char *w, size_t n)
{
    if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0)
        return fail(p, "unexpected character");
    p->pos += n;
    return 0;
}

static int scan_scalar(parser *p, int c, json_type *t, bool *esc)
{
    if (c == '"') { *t = JSON_STRING; return scan_string(p, esc); }
    if (c == '-' || (c >= '0' && c <= '9')) { *t = JSON_NUMBER; return scan_number(p); }
    if (c == 't') { *t = JSON_TRUE; return scan_word(p, "true", 4); }
    if (c == 'f') { *t = JSON_FALSE; return scan_word(p, "false", 5); }
    if (c == 'n') { *t = JSON_NULL; return scan_word(p, "null", 4); }
    return fail(p, "unexpected character");
}

static int close_container(parser *p)
{
    uint32_t tok = p->stack[--p->depth];
    p->pos++;
    if (tok == UNRECORDED) return ST_AFTER;
    json_token *k = &p->d->tokens[tok];
    k->end = (uint32_t)p->pos;
    k->next = p->d->ntokens;
    return ST_AFTER;
}

static int open_container(parser *p, json_type t)
{
    if (p->depth == JSON_MAX_DEPTH) return fail(p, "nesting deeper than 64 levels");
    int rc = push_token(p, t, p->pos, p->pos, false);
    if (rc < 0) return ST_ERR;
    p->kinds[p->depth] = t;
    p->stack[p->depth++] = rc == 0 ? p->d->ntokens - 1 : UNRECORDED;
    p->pos++;
    if (peek(p) == (t == JSON_OBJECT ? '}' : ']')) return close_container(p);
    return t == JSON_OBJECT ? ST_KEY : ST_VALUE;
}

static int st_value(parser *p)
{
    int c = peek(p);
    if (c < 0) return fail(p, "unexpected end of input");
    if (c == '{') return open_container(p, JSON_OBJECT);
    if (c == '[') return open_container(p, JSON_ARRAY);
    size_t start = p->pos;
    json_type t;
    bool esc = false;
    if (scan_scalar(p, c, &t, &esc) < 0) return ST_ERR;
    return push_token(p, t, start, p->pos, esc) < 0 ? ST_ERR : ST_AFTER;
}

static int st_key(parser *p)
{
    int c = peek(p);
    if (c < 0) return fail(p, "unexpected end of input");
    if (c != '"') return fail(p, "expected string as object key");
    size_t start = p->pos;
    bool esc = false;
    if (scan_string(p, &esc) < 0) return ST_ERR;
    if (push_token(p, JSON_STRING, start, p->pos, esc) < 0) return ST_ERR;
    c = peek(p);
    if (c < 0) return fail(p, "unexpected end of input");
    if (c != ':') return fail(p, "expected \":\"");
    p->pos++;
    return ST_VALUE;
}

/* A value just ended: count it in its container, then expect ',' or the
 * close; at top level only whitespace may follow. */
static int st_after(parser *p)
{
    int c = peek(p);
    if (p->depth == 0) return c < 0 ? ST_END : fail(p, "unexpected character after value");
    json_type kind = p->kinds[p->depth - 1];
    if (p->depth <= p->record_depth) p->d->tokens[p->stack[p->depth - 1]].count++;   /* members recorded */
    if (c < 0) return fail(p, "unexpected end of input");
    if (c == (kind == JSON_OBJECT ? '}' : ']')) return close_container(p);
    if (c != ',') return fail(p, "expected \",\" or end of container");
    p->pos++;
    return kind == JSON_OBJECT ? ST_KEY : ST_VALUE;
}

typedef int (*step_fn)(parser *p);
static const step_fn steps[] = {
    [ST_VALUE] = st_value, [ST_AFTER] = st_after, [ST_KEY] = st_key,
};

int json_parse(json_doc *d, const char *text, size_t len, uint32_t max_tokens)
{
    return json_parse_shallow(d, text, len, max_tokens, JSON_MAX_DEPTH);
}

int json_parse_shallow(json_doc *d, const char *text, size_t len, uint32_t max_tokens, int record_depth)
{
    d->text = text;
    d->len = len;
    d->ntokens = 0;
    d->error[0] = '\0';
    if (len > UINT32_MAX) {   /* spans are 32-bit offsets */
        snprintf(d->error, sizeof d->error, "json text too long");
        return -1;
    }
    parser p = { .d = d, .s = (const unsigned char *)text, .len = len, .max = max_tokens,
                 .record_depth = record_depth };
    int st = ST_VALUE;
    while (st != ST_END && st != ST_ERR) st = steps[st](&p);
    if (st == ST_ERR) d->ntokens = 0;   /* never expose a half-built tree */
    return st == ST_END ? 0 : -1;
}

/* ---- accessors ---- */

int json_get(const json_doc *d, uint32_t obj, const char *key)
{
    const json_token *o = &d->tokens[obj];
    if (o->type != JSON_OBJECT) return -1;
    uint32_t i = obj + 1;
    for (uint32_t m = 0; m < o->count; m++, i = d->tokens[i + 1].next)
        if (json_str_eq(d, i, key)) return (int)(i + 1);
    return -1;
}

int json_at(const json_doc *d, uint32_t arr, uint32_t i)
{
    const json_token *a = &d->tokens[arr];
    if (a->type != JSON_ARRAY || i >= a->count) return -1;
    uint32_t t = arr + 1;
    while (i--) t = d->tokens[t].next;
    return (int)t;
}

/* Decodes the escape at p (p[0] == '\\', validated by the parser) into out;
 * returns the source bytes consumed and sets *nout to the bytes written. */
static size_t unescape(const char *p, char out[4], size_t *nout)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (p[1] != 'u') {
        out[0] = to[strchr(from, p[1]) - from];
        *nout = 1;
        return 2;
    }
    const unsigned char *u = (const unsigned char *)p;
    uint32_t cp = (uint32_t)hex4(u + 2, 4);
    size_t used = 6;
    if (is_high(cp)) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)hex4(u + 8, 4) - 0xDC00);
        used = 12;
    }
    *nout = utf8_put(cp, out);
    return used;
}

/* Compares the escaped body [p, end) with s (n bytes), decoding as it goes so
 * no allocation is needed. */
static bool escaped_eq(const char *p, const char *end, const char *s, size_t n)
{
    size_t j = 0;
    while (p < end) {
        char u[4];
        size_t k = 1;
        if (*p == '\\') p += unescape(p, u, &k);
        else u[0] = *p++;
        if (k > n - j || memcmp(u, s + j, k) != 0) return false;
        j += k;
    }
    return j == n;
}

bool json_str_eq(const json_doc *d, uint32_t tok, const char *s)
{
    const json_token *t = &d->tokens[tok];
    if (t->type != JSON_STRING) return false;
    const char *p = d->text + t->start + 1, *end = d->text + t->end - 1;
    size_t n = strlen(s), raw = (size_t)(end - p);
    if (!t->escaped) return raw == n && memcmp(p, s, n) == 0;
    return n <= raw && escaped_eq(p, end, s, n);   /* decoding never grows */
}

void json_str_decode(const json_doc *d, uint32_t tok, buf *out)
{
    const json_token *t = &d->tokens[tok];
    const char *p = d->text + t->start + 1, *end = d->text + t->end - 1;
    while (p < end) {
        const char *bs = t->escaped ? memchr(p, '\\', (size_t)(end - p)) : NULL;
        if (!bs) bs = end;
        buf_append(out, p, (size_t)(bs - p));
        if (bs == end) break;
        char u[4];
        size_t n;
        p = bs + unescape(bs, u, &n);
        buf_append(out, u, n);
    }
}

char *json_str_dup(const json_doc *d, uint32_t tok)
{
    buf b;
    buf_init(&b);
    buf_append(&b, "", 0);   /* terminated even when the string is empty */
    json_str_decode(d, tok, &b);
    return buf_steal(&b);
}

int json_int64(const json_doc *d, uint32_t tok, int64_t *out)
{
    const json_token *t = &d->tokens[tok];
    if (t->type != JSON_NUMBER) return -1;
    const char *p = d->text + t->start, *end = d->text + t->end;
    bool neg = *p == '-';
    uint64_t limit = (uint64_t)INT64_MAX + neg, v = 0;
    for (p += neg; p < end; p++) {
        if (*p < '0' || *p > '9') return -1;   /* fraction or exponent */
        unsigned dig = (unsigned)(*p - '0');
        if (v > (limit - dig) / 10) return -1;
        v = v * 10 + dig;
    }
    *out = !neg ? (int64_t)v : v == limit ? INT64_MIN : -(int64_t)v;
    return 0;
}

/* ---- writer ---- */

/* Escapes one byte the scan in json_put_str refused. A byte that starts no
 * valid UTF-8 sequence becomes U+FFFD so the reply is always valid JSON. */
static void put_escape(buf *b, unsigned char c)
{
    switch (c) {
    case '"':  buf_append(b, "\\\"", 2); return;
    case '\\': buf_append(b, "\\\\", 2); return;
    case '\n': buf_append(b, "\\n", 2); return;
    case '\r': buf_append(b, "\\r", 2); return;
    case '\t': buf_append(b, "\\t", 2); return;
    case '\b': buf_append(b, "\\b", 2); return;
    case '\f': buf_append(b, "\\f", 2); return;
    }
    if (c >= 0x80) buf_append(b, "\xEF\xBF\xBD", 3);
    else buf_printf(b, "\\u%04x", c);
}

/* The plain ASCII prefix (most strings: keys, ids, names) is scanned and
 * copied with the quote in one write; the byte-by-byte loop, which also
 * checks UTF-8, starts at the first byte that is not plain ASCII (issue 33:
 * a pop's and an ack's reply write a dozen strings per message). */
void json_put_str(buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n && plain[u[i]]) i++;
    buf_reserve(b, n + 2);
    char *p = b->data + b->len;
    *p++ = '"';
    memcpy(p, s, i);
    b->len += 1 + i;
    if (i == n) {
        b->data[b->len++] = '"';
        b->data[b->len] = '\0';
        return;
    }
    size_t run = i;   /* [run, i) is copied verbatim */
    while (i < n) {
        size_t k = plain[u[i]] ? 1 : u[i] >= 0x80 ? utf8_len(u + i, n - i) : 0;
        if (k) { i += k; continue; }
        buf_append(b, s + run, i - run);
        put_escape(b, u[i]);
        run = ++i;
    }
    buf_append(b, s + run, n - run);
    buf_putc(b, '"');
}

void json_put_cstr(buf *b, const char *s)
{
    if (!s) buf_append(b, "null", 4);
    else json_put_str(b, s, strlen(s));
}

/* ---- pretty printer ---- */

static void newline(buf *out, int depth)
{
    static const char spaces[] = "                                ";   /* 32 */
    buf_putc(out, '\n');
    for (size_t n = depth > 0 ? (size_t)depth * 2 : 0; n > 0;) {
        size_t k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
        buf_append(out, spaces, k);
        n -= k;
    }
}

/* Copies the string starting at i (a quote) verbatim; returns the index
 * just past it. Bounded by len so bad input cannot read past the end. */
static size_t copy_string(buf *out, const char *text, size_t len, size_t i)
{
    size_t j = i + 1;
    while (j < len && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
    j = j < len ? j + 1 : len;
    buf_append(out, text + i, j - i);
    return j;
}

static size_t skip_space(const char *text, size_t len, size_t i)
{
    while (i < len && strchr(" \t\r\n", text[i]) && text[i]) i++;
    return i;
}

/* Opens the container at i; an empty one is written whole as [] or {}.
 * Returns the index of the last byte consumed. */
static size_t pretty_open(buf *out, const char *text, size_t len, size_t i, int *depth)
{
    char close = text[i] == '{' ? '}' : ']';
    size_t j = skip_space(text, len, i + 1);
    buf_putc(out, text[i]);
    if (j < len && text[j] == close) { buf_putc(out, close); return j; }
    newline(out, ++*depth);
    return i;
}

void json_pretty(buf *out, const char *text, size_t len)
{
    int depth = 0;
    buf_append(out, "", 0);
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        switch (c) {
        case ' ': case '\t': case '\r': case '\n': break;
        case '"': i = copy_string(out, text, len, i) - 1; break;
        case '{': case '[': i = pretty_open(out, text, len, i, &depth); break;
        case '}': case ']': newline(out, --depth); buf_putc(out, c); break;
        case ',': buf_putc(out, ','); newline(out, depth); break;
        case ':': buf_append(out, ": ", 2); break;
        default: buf_putc(out, c); break;
        }
    }
}

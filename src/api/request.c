/* request: reading and checking request input for the handlers (see api.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/ids.h"
#include "base/iso_time.h"
#include "base/names.h"
#include "base/xalloc.h"
#include "db/result.h"

#define API_MAX_TOKENS_PER_BYTE 1   /* a token needs at least one byte of input */

int api_read_object(httpd_req *req, server *srv, json_doc *doc)
{
    return api_read_shallow(req, srv, doc, API_ALL_DEPTHS);
}

int api_read_shallow(httpd_req *req, server *srv, json_doc *doc, int record_depth)
{
    size_t limit = httpd_max_body(srv->http);
    if (req->body_len > limit) {
        httpd_error(req, 413, "request body exceeds %zu bytes", limit);
        return -1;
    }
    if (req->body_len == 0) { httpd_error(req, 400, "request body is required"); return -1; }
    uint32_t max_tokens = (uint32_t)(req->body_len * API_MAX_TOKENS_PER_BYTE + 1);
    if (json_parse_shallow(doc, req->body, req->body_len, max_tokens, record_depth) < 0) {
        httpd_error(req, 400, "%s", doc->error);
        return -1;
    }
    if (doc->tokens[0].type != JSON_OBJECT) {
        httpd_error(req, 400, "request body must be a json object");
        return -1;
    }
    return 0;
}

int api_check_name(httpd_req *req, const char *where, const char *field, const char *value)
{
    if (!value || strlen(value) <= NAMES_MAX_BYTES) return 0;
    return api_name_too_long(req, field, where, field);
}

int api_name_too_long(httpd_req *req, const char *field, const char *where, const char *what)
{
    httpd_error_field(req, 400, "field", field, "%s%s is longer than %d bytes", where, what, NAMES_MAX_BYTES);
    return -1;
}

int api_opt_string(httpd_req *req, const json_doc *d, uint32_t obj, const char *key, char **out)
{
    return api_member_string(req, d, obj, "", key, out);
}

int api_member_string(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key, char **out)
{
    *out = NULL;
    int v = json_get(d, obj, key);
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    if (d->tokens[v].type != JSON_STRING || d->tokens[v].end - d->tokens[v].start <= 2) {
        httpd_error_field(req, 400, "field", key, "%s%s must be a non-empty string", where, key);
        return -1;
    }
    buf text;
    buf_init(&text);
    json_str_decode(d, (uint32_t)v, &text);
    if (memchr(text.data, '\0', text.len)) {   /* "\u0000" would silently cut a C string */
        buf_fini(&text);
        httpd_error_field(req, 400, "field", key, "%s%s must not contain NUL characters", where, key);
        return -1;
    }
    *out = buf_steal(&text);
    return 0;
}

char *api_member_json(const json_doc *d, uint32_t obj, const char *key)
{
    int v = json_get(d, obj, key);
    size_t n = 4;
    const char *text = v >= 0 ? json_span(d, (uint32_t)v, &n) : "null";
    return xstrndup(text, n);
}

int api_member_int(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key,
                   int64_t min, int64_t max, int64_t *out)
{
    int v = json_get(d, obj, key);
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    int64_t n;
    if (d->tokens[v].type != JSON_NUMBER || json_int64(d, (uint32_t)v, &n) < 0 || n < min || n > max) {
        httpd_error_field(req, 400, "field", key, "%s%s must be an integer from %lld to %lld", where, key,
                          (long long)min, (long long)max);
        return -1;
    }
    *out = n;
    return 0;
}

int api_member_bool(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key, bool *out)
{
    int v = json_get(d, obj, key);
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    if (d->tokens[v].type != JSON_TRUE && d->tokens[v].type != JSON_FALSE) {
        httpd_error_field(req, 400, "field", key, "%s%s must be true or false", where, key);
        return -1;
    }
    *out = d->tokens[v].type == JSON_TRUE;
    return 0;
}

int api_read_uuid(httpd_req *req, const char *text, char out[IDS_UUID_TEXT], const char *what)
{
    uint8_t id[16];
    if (ids_uuid_parse(text, strlen(text), id) < 0) {
        httpd_error_field(req, 400, "field", what, "%s must be a uuid", what);
        return -1;
    }
    ids_uuid_format(id, out);
    return 0;
}

int api_check_time(httpd_req *req, const char *field, const char *text)
{
    if (!text || iso_time_valid(text)) return 0;
    httpd_error_field(req, 400, "field", field, "%s must be an ISO 8601 timestamp, e.g. 2026-12-01T07:04:30.501Z",
                      field);
    return -1;
}

int api_query_int(httpd_req *req, const char *key, int64_t fallback, int64_t min, int64_t max, int64_t *out)
{
    const char *text = httpd_query(req, key);
    *out = fallback;
    if (!text) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max) {
        httpd_error_field(req, 400, "field", key, "%s must be an integer from %lld to %lld",
                          key, (long long)min, (long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int api_query_position(httpd_req *req, int64_t default_limit, api_position *pos)
{
    if (api_query_int(req, "limit", default_limit, 1, API_PAGE_MAX, &pos->limit) < 0 ||
        api_query_int(req, "offset", 0, 0, INT32_MAX, &pos->offset) < 0) return -1;
    snprintf(pos->limit_text, sizeof pos->limit_text, "%lld", (long long)pos->limit);
    snprintf(pos->offset_text, sizeof pos->offset_text, "%lld", (long long)pos->offset);
    return 0;
}

int api_query_offset_page(httpd_req *req, api_offset_page *page)
{
    if (api_query_position(req, 0, &page->pos) < 0) return -1;
    page->limit = httpd_query(req, "limit") ? page->pos.limit_text : NULL;
    page->offset = httpd_query(req, "offset") ? page->pos.offset_text : NULL;
    return 0;
}

int api_query_bool(httpd_req *req, const char *key, bool fallback, bool *out)
{
    const char *text = httpd_query(req, key);
    *out = fallback;
    if (!text) return 0;
    if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0) { *out = true; return 0; }
    if (strcmp(text, "false") == 0 || strcmp(text, "0") == 0) { *out = false; return 0; }
    httpd_error_field(req, 400, "field", key, "%s must be true or false", key);
    return -1;
}

void api_engine_error(httpd_req *req, const char *error, const char *sqlstate, bool unavailable)
{
    if (unavailable) httpd_error(req, 503, "database unavailable: %s", error);
    else if (sqlstate && strncmp(sqlstate, "22", 2) == 0) httpd_error(req, 400, "%s", error);
    else httpd_error(req, 500, "%s", error);
}

void api_db_error(httpd_req *req, const db_reply *reply)
{
    api_engine_error(req, reply->error, reply->sqlstate, reply->unavailable);
}

typedef struct json_call {
    httpd_req  *req;
    const char *not_found;
    server     *srv;
    char       *wake_group;   /* NULL, or told once the statement answered */
} json_call;

/* jsonb text as PostgreSQL writes it (a space after every ':' and ',')
 * re-emitted the way every other reply is written. */
static void reply_in_one_voice(httpd_req *req, const char *jsonb, size_t len)
{
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    if (emit_json(&e, jsonb, len) < 0) { buf_fini(&out); httpd_error(req, 500, "malformed reply from the database"); return; }
    httpd_reply_buf(req, 200, &out);
}

static void json_call_done(void *arg, const db_reply *reply)
{
    json_call *c = arg;
    const PGresult *r = reply->results[0];
    if (reply->error) api_db_error(c->req, reply);
    else if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0)) httpd_error(c->req, 404, "%s", c->not_found);
    else {
        size_t n;
        const char *json = db_json(r, 0, 0, &n);
        if (c->wake_group) server_group_released(c->srv, c->wake_group);
        if (PQnfields(r) > 1 && !db_null(r, 0, 1)) {   /* a list's whole size: the body stays Queen's array */
            char total[24];
            snprintf(total, sizeof total, "%lld", (long long)db_int(r, 0, 1));
            httpd_header(c->req, "X-Total-Count", total);
        }
        reply_in_one_voice(c->req, json, n);
    }
    free(c->wake_group);
    free(c);
}

void api_json_call_waking(httpd_req *req, server *srv, db_stmt stmt, const char *const *values,
                          const char *not_found, const char *group)
{
    json_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    c->not_found = not_found;
    c->srv = srv;
    c->wake_group = group ? xstrdup(group) : NULL;
    api_submit_stmt(req, srv, stmt, values, json_call_done, c);
}

void api_json_call(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, const char *not_found)
{
    api_json_call_waking(req, srv, stmt, values, not_found, NULL);
}

/* ---- the calls that answer 200 with one reply ---- */

/* The first member of each call below: the request it answers, and what
 * writes the reply from the statements' results (call: the whole call). */
typedef struct answer answer;
struct answer {
    httpd_req *req;
    void     (*write)(api_reply *out, const answer *call, const db_reply *reply);
};

/* Every such call's done: a failure answered as api_db_error does, else
 * 200 with what write wrote; the call freed either way. */
static void answered(void *arg, const db_reply *reply)
{
    answer *call = arg;
    if (reply->error) api_db_error(call->req, reply);
    else {
        api_reply out;
        call->write(&out, call, reply);
        api_reply_send(&out, call->req, 200);
    }
    free(call);
}

/* Copies the nfilters filters (at most API_PAGE_FILTERS) into values, then
 * two more after them (the page's bounds). */
static void filters_then(const char **values, const char *const *filters, size_t nfilters, const char *first,
                         const char *second)
{
    for (size_t i = 0; i < nfilters; i++) values[i] = filters[i];
    values[nfilters] = first;
    values[nfilters + 1] = second;
}

/* ---- a whole list ---- */

typedef struct rows_call {
    answer      a;
    const char *member;
    void      (*emit_row)(emit *e, const PGresult *r, int row);
} rows_call;

/* Opens the reply {"<member>": [...]} with a value per row of r written
 * by emit_row; the emitter is left inside the array, for what follows it. */
static emit *reply_rows(api_reply *out, const char *member, const PGresult *r,
                        void (*emit_row)(emit *e, const PGresult *r, int row))
{
    emit *e = api_reply_list(out, member);
    for (int row = 0; row < PQntuples(r); row++) emit_row(e, r, row);
    return e;
}

static void write_rows(api_reply *out, const answer *call, const db_reply *reply)
{
    const rows_call *c = (const rows_call *)call;
    reply_rows(out, c->member, reply->results[0], c->emit_row);
}

void api_rows_call(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, const char *member,
                   void (*emit_row)(emit *e, const PGresult *r, int row))
{
    rows_call *c = xcalloc(1, sizeof *c);
    *c = (rows_call){ { req, write_rows }, member, emit_row };
    api_submit_stmt(req, srv, stmt, values, answered, c);
}

/* ---- one object ---- */

typedef struct object_call {
    answer         a;
    server        *srv;
    api_members_fn members;
    bool           flag;
} object_call;

static void write_object(api_reply *out, const answer *call, const db_reply *reply)
{
    const object_call *c = (const object_call *)call;
    c->members(api_reply_object(out), c->srv, reply->results[0], c->flag);
}

void api_object_call(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, api_members_fn members,
                     bool flag)
{
    object_call *c = xcalloc(1, sizeof *c);
    *c = (object_call){ { req, write_object }, srv, members, flag };
    api_submit_stmt(req, srv, stmt, values, answered, c);
}

/* ---- a list, a page at a time ---- */

typedef struct page_call {
    answer          a;
    const api_page *page;
    int64_t         limit;
} page_call;

static void emit_total(emit *e, const PGresult *counted)
{
    int64_t n = db_int(counted, 0, 0);
    emit_key(e, "total"); emit_int(e, n > API_PAGE_COUNT_CAP ? API_PAGE_COUNT_CAP : n);
    emit_key(e, "totalCapped"); emit_bool(e, n > API_PAGE_COUNT_CAP);
}

static void write_page(api_reply *out, const answer *call, const db_reply *reply)
{
    const page_call *c = (const page_call *)call;
    const PGresult *r = reply->results[0];
    int n = PQntuples(r);
    emit *e = reply_rows(out, c->page->member, r, c->page->emit_row);
    emit_end(e);
    /* A full page may have more after it: its last id is where the next starts. */
    emit_key(e, "nextCursor");
    if (n == c->limit && n > 0) api_emit_uuid_col(e, r, n - 1, c->page->id_col);
    else emit_null(e);
    if (c->page->counted) emit_total(e, reply->results[1]);
}

void api_list_page(httpd_req *req, server *srv, const api_page *page, const char *const *filters, size_t nfilters)
{
    int64_t limit;
    const char *cursor = httpd_query(req, "cursor");
    char cur[IDS_UUID_TEXT], lim[24];
    const char *values[API_PAGE_FILTERS + 2];
    if (nfilters > API_PAGE_FILTERS) abort();   /* a handler's mistake, not a client's */
    if (api_query_int(req, "limit", API_PAGE_DEFAULT, 1, API_PAGE_MAX, &limit) < 0) return;
    if (page->check && page->check(req, filters) < 0) return;
    if (cursor && api_read_uuid(req, cursor, cur, "cursor") < 0) return;
    snprintf(lim, sizeof lim, "%lld", (long long)limit);
    filters_then(values, filters, nfilters, cursor ? cur : NULL, lim);
    page_call *c = xcalloc(1, sizeof *c);
    *c = (page_call){ { req, write_page }, page, limit };
    db_job *job = db_job_new(answered, c);
    db_job_call(job, page->stmt, values, NULL, NULL);
    if (page->counted) db_job_call(job, page->count_stmt, filters, NULL, NULL);
    api_submit(req, srv, job);
}

/* ---- a list by position, with its total ---- */

typedef struct position_call {
    answer                    a;
    const api_position_list  *list;
    api_position              pos;
} position_call;

static void write_position(api_reply *out, const answer *call, const db_reply *reply)
{
    const position_call *c = (const position_call *)call;
    emit *e = reply_rows(out, c->list->member, reply->results[1], c->list->emit_row);
    emit_end(e);
    api_emit_pagination(e, db_int(reply->results[0], 0, 0), c->pos.limit, c->pos.offset);
}

void api_list_by_position(httpd_req *req, server *srv, const api_position_list *list, const char *const *filters,
                          size_t nfilters)
{
    const char *values[API_PAGE_FILTERS + 2];
    if (nfilters > API_PAGE_FILTERS) abort();   /* a handler's mistake, not a client's */
    position_call *c = xcalloc(1, sizeof *c);
    *c = (position_call){ .a = { req, write_position }, .list = list };
    if (api_query_position(req, list->default_limit, &c->pos) < 0) { free(c); return; }
    filters_then(values, filters, nfilters, c->pos.limit_text, c->pos.offset_text);
    db_job *job = db_job_new(answered, c);
    db_job_call(job, list->count_stmt, values, NULL, NULL);
    db_job_call(job, list->page_stmt, values, NULL, NULL);
    api_submit(req, srv, job);
}

/* ---- search and sort ---- */

int api_query_find(httpd_req *req, const char *const *sorts, api_find *out)
{
    const char *search = httpd_query(req, "search"), *sort = httpd_query(req, "sort"),
               *order = httpd_query(req, "order");
    out->search = search && *search ? search : NULL;
    if (out->search && api_check_name(req, "", "search", out->search) < 0) return -1;
    out->sort = sorts[0];
    if (sort) {
        size_t i = 0;
        while (sorts[i] && strcmp(sorts[i], sort) != 0) i++;
        if (!sorts[i]) {
            char list[256] = "";
            for (size_t k = 0; sorts[k]; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", sorts[k]);
            httpd_error_field(req, 400, "field", "sort", "sort must be one of %s", list);
            return -1;
        }
        out->sort = sorts[i];
    }
    bool desc = out->sort != sorts[0];   /* a figure: largest first; the name: a to z */
    if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
        httpd_error_field(req, 400, "field", "order", "order must be asc or desc");
        return -1;
    }
    if (order) desc = strcmp(order, "desc") == 0;
    out->desc = desc ? "t" : "f";
    return 0;
}

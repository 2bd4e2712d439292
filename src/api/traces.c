/* traces: POST /api/v1/traces (Queen's message.trace()), and reading them:
 * GET /api/v1/traces/:partitionId/:transactionId,
 * GET /api/v1/traces/by-name/:traceName and GET /api/v1/traces/names.
 * The rules (what a trace is attached to, how long it lives) are in the
 * Traces section of sql/migrations/018_schema.sql. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "streams/segment.h"

#define TRACE_NAME_MAX_BYTES  255
#define TRACE_EVENT_MAX_BYTES 100
#define TRACE_QUEUE_MODE      "__QUEUE_MODE__"   /* what Queen's client sends outside a group */

typedef struct trace_call {
    httpd_req   *req;
    server      *srv;
    char         id[IDS_UUID_TEXT];
    api_position page;   /* the lists by name: the page asked for */
} trace_call;

static trace_call *call_new(httpd_req *req, server *srv)
{
    trace_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    c->srv = srv;
    return c;
}

static void submit(trace_call *c, db_done_fn done, db_stmt stmt, const char *const *values, const int *lengths,
                   const int *formats)
{
    db_job *job = db_job_new(done, c);
    db_job_call(job, stmt, values, lengths, formats);
    api_submit(c->req, c->srv, job);
}

/* ---- recording ---- */

/* One name: a non-empty string of at most TRACE_NAME_MAX_BYTES, appended to
 * the JSON array names. */
static bool put_name(const json_doc *d, int t, buf *names)
{
    if (t < 0 || d->tokens[t].type != JSON_STRING) return false;
    buf name;
    buf_init(&name);
    json_str_decode(d, (uint32_t)t, &name);
    bool ok = name.len > 0 && name.len <= TRACE_NAME_MAX_BYTES && !memchr(name.data, '\0', name.len);
    if (ok) {
        if (names->len > 1) buf_putc(names, ',');
        json_put_str(names, name.data, name.len);
    }
    buf_fini(&name);
    return ok;
}

/* traceNames: absent, null, a name or an array of names, as a JSON array. */
static int read_names(httpd_req *req, const json_doc *d, buf *names)
{
    int v = json_get(d, 0, "traceNames");
    json_type type = v < 0 ? JSON_NULL : d->tokens[v].type;
    bool ok = type == JSON_NULL || type == JSON_STRING || type == JSON_ARRAY;
    buf_putc(names, '[');
    if (type == JSON_STRING) ok = put_name(d, v, names);
    for (uint32_t i = 0; ok && type == JSON_ARRAY && i < d->tokens[v].count; i++)
        ok = put_name(d, json_at(d, (uint32_t)v, i), names);
    buf_putc(names, ']');
    if (ok) return 0;
    httpd_error_field(req, 400, "field", "traceNames",
                      "traceNames must be a name or an array of names (non-empty strings of at most %d bytes)",
                      TRACE_NAME_MAX_BYTES);
    return -1;
}

typedef struct trace_input {
    char *txn, *partition, *group, *event, *worker;
    buf   names;
    const char *data;
    size_t data_len;
} trace_input;

static void input_fini(trace_input *in)
{
    free(in->txn); free(in->partition); free(in->group); free(in->event); free(in->worker);
    buf_fini(&in->names);
}

static int required(httpd_req *req, const char *value, const char *key)
{
    if (value) return 0;
    httpd_error_field(req, 400, "field", key, "%s is required", key);
    return -1;
}

static int read_input(httpd_req *req, const json_doc *d, trace_input *in)
{
    if (api_opt_string(req, d, 0, "transactionId", &in->txn) < 0 || required(req, in->txn, "transactionId") < 0)
        return -1;
    if (api_opt_string(req, d, 0, "partitionId", &in->partition) < 0 ||
        required(req, in->partition, "partitionId") < 0)
        return -1;
    if (api_opt_string(req, d, 0, "consumerGroup", &in->group) < 0) return -1;
    if (api_opt_string(req, d, 0, "eventType", &in->event) < 0) return -1;
    if (in->event && strlen(in->event) > TRACE_EVENT_MAX_BYTES) {
        httpd_error_field(req, 400, "field", "eventType", "eventType is longer than %d bytes", TRACE_EVENT_MAX_BYTES);
        return -1;
    }
    if (api_opt_string(req, d, 0, "workerId", &in->worker) < 0) return -1;
    if (read_names(req, d, &in->names) < 0) return -1;
    int data = json_get(d, 0, "data");
    if (data < 0) { httpd_error_field(req, 400, "field", "data", "data is required"); return -1; }
    in->data = json_span(d, (uint32_t)data, &in->data_len);
    return 0;
}

static void recorded(void *arg, const db_reply *reply)
{
    trace_call *c = arg;
    if (reply->error) api_db_error(c->req, reply);
    else if (!db_bool(reply->results[0], 0, 0)) httpd_error(c->req, 404, "message not found");
    else {
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "success"); emit_bool(e, true);
        emit_key(e, "traceId"); emit_str(e, c->id);
        api_reply_send(&out, c->req, 201);
    }
    free(c);
}

static void record(trace_call *c, const trace_input *in)
{
    uint8_t id[16], hash[16];
    ids_uuid7(id);
    ids_uuid_format(id, c->id);
    ids_txn_hash(in->txn, strlen(in->txn), hash);
    char *data = xstrndup(in->data, in->data_len);
    const char *values[9] = { c->id, in->partition, (const char *)hash, in->txn, in->group ? in->group : TRACE_QUEUE_MODE,
                              in->event ? in->event : "info", data, in->worker, in->names.data };
    int lengths[9] = { 0, 0, 16, 0, 0, 0, 0, 0, 0 }, formats[9] = { 0, 0, 1, 0, 0, 0, 0, 0, 0 };
    submit(c, recorded, STMT_TRACE_RECORD, values, lengths, formats);
    free(data);
}

void api_trace_record(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    trace_input in = { 0 };
    buf_init(&in.names);
    char partition[IDS_UUID_TEXT];
    int rc = api_read_shallow(req, srv, &d, 2);   /* traceNames[i]; data is passed on as bytes */
    if (rc == 0) rc = read_input(req, &d, &in);
    if (rc == 0) rc = api_read_uuid(req, in.partition, partition, "partitionId");
    if (rc == 0) {
        free(in.partition);
        in.partition = xstrdup(partition);
        record(call_new(req, srv), &in);
    }
    input_fini(&in);
    json_doc_fini(&d);
}

/* ---- reading ---- */

/* The names of the trace at *row (its rows are consecutive), advancing *row
 * past them; then closes the trace's object. */
static void put_names(emit *e, const PGresult *r, int *row, int id_col, int name_col)
{
    emit_key(e, "traceNames");
    emit_array(e);
    int first = *row;
    for (; *row < PQntuples(r) && memcmp(db_uuid(r, *row, id_col), db_uuid(r, first, id_col), 16) == 0; (*row)++)
        if (!db_null(r, *row, name_col)) api_emit_text_col(e, r, *row, name_col);
    emit_end(e);
    emit_end(e);
}

/* id, event type, data, group, worker and time at cols[0..5] of both readers' rows */
static void put_trace(emit *e, const PGresult *r, int row, const int cols[6])
{
    size_t n;
    const char *data = db_json(r, row, cols[2], &n);
    emit_object(e);
    emit_key(e, "id"); api_emit_uuid_col(e, r, row, cols[0]);
    emit_key(e, "eventType"); api_emit_text_col(e, r, row, cols[1]);
    emit_key(e, "data"); emit_raw(e, data, n);
    emit_key(e, "consumerGroup"); api_emit_text_col(e, r, row, cols[3]);
    emit_key(e, "workerId"); api_emit_text_col(e, r, row, cols[4]);
    emit_key(e, "createdAt"); api_emit_time_col(e, r, row, cols[5]);
}

/* Members a reader adds to each trace after the common ones. */
typedef void (*trace_more_fn)(emit *e, trace_call *c, const PGresult *r, int row);

/* Both readers' reply: an array of their traces, each with the common
 * members at cols, then more's (NULL: none), then its names at name_col. */
static void reply_traces(trace_call *c, const db_reply *reply, const int cols[6], int name_col, trace_more_fn more)
{
    if (reply->error) { api_db_error(c->req, reply); free(c); return; }
    const PGresult *r = reply->results[0];
    api_reply out;
    emit *e = api_reply_array(&out);
    for (int row = 0; row < PQntuples(r);) {
        put_trace(e, r, row, cols);
        if (more) more(e, c, r, row);
        put_names(e, r, &row, 0, name_col);
    }
    api_reply_send(&out, c->req, 200);
    free(c);
}

static void of_message_done(void *arg, const db_reply *reply)
{
    static const int cols[6] = { 0, 1, 2, 3, 4, 5 };
    reply_traces(arg, reply, cols, 6, NULL);
}

void api_traces_of_message(httpd_req *req, server *srv)
{
    trace_call *c = call_new(req, srv);
    if (api_read_uuid(req, req->params[0], c->id, "partitionId") < 0) { free(c); return; }
    const char *values[2] = { c->id, req->params[1] };
    submit(c, of_message_done, STMT_TRACES_OF_MESSAGE, values, NULL, NULL);
}

/* by-name rows: 0 id, 1 txn, 2 partition id, 3 event, 4 data, 5 group,
 * 6 worker, 7 time, 8 queue, 9 partition, 10 name, 11 offset, 12 base,
 * 13 blob (on a trace's first row). */
static void put_payload(emit *e, trace_call *c, const PGresult *r, int row)
{
    emit_key(e, "messagePayload");
    buf seg, plain;
    buf_init(&seg);
    buf_init(&plain);
    frame f;
    size_t n;
    const char *blob = db_null(r, row, 13) ? NULL : db_bytes(r, row, 13, &n);
    if (blob && segment_open_message(blob, n, db_int(r, row, 12), db_int(r, row, 11), c->srv->max_segment_bytes,
                                     &seg, &plain, &f) == 0)
        emit_raw(e, f.payload, f.payload_len);
    else
        emit_null(e);
    buf_fini(&seg);
    buf_fini(&plain);
}

/* What a by-name trace tells beyond the common members: its message. */
static void put_message(emit *e, trace_call *c, const PGresult *r, int row)
{
    emit_key(e, "transactionId"); api_emit_text_col(e, r, row, 1);
    emit_key(e, "partitionId"); api_emit_uuid_col(e, r, row, 2);
    emit_key(e, "queueName"); api_emit_text_col(e, r, row, 8);
    emit_key(e, "partitionName"); api_emit_text_col(e, r, row, 9);
    put_payload(e, c, r, row);
}

static void by_name_done(void *arg, const db_reply *reply)
{
    static const int cols[6] = { 0, 3, 4, 5, 6, 7 };
    reply_traces(arg, reply, cols, 10, put_message);
}

void api_traces_by_name(httpd_req *req, server *srv)
{
    trace_call *c = call_new(req, srv);
    if (api_query_position(req, 100, &c->page) < 0) { free(c); return; }
    const char *values[3] = { req->params[0], c->page.limit_text, c->page.offset_text };
    submit(c, by_name_done, STMT_TRACES_BY_NAME, values, NULL, NULL);
}

static void emit_name(emit *e, const PGresult *r, int row)
{
    emit_object(e);
    emit_key(e, "traceName"); api_emit_text_col(e, r, row, 0);
    emit_key(e, "traceCount"); emit_int(e, db_int(r, row, 1));
    emit_key(e, "messageCount"); emit_int(e, db_int(r, row, 2));
    emit_key(e, "lastSeen"); api_emit_time_col(e, r, row, 3);
    emit_end(e);
}

void api_trace_names(httpd_req *req, server *srv)
{
    static const api_position_list list = { "traceNames", 50, STMT_TRACE_NAME_COUNT, STMT_TRACE_NAMES, emit_name };
    api_list_by_position(req, srv, &list, NULL, 0);
}

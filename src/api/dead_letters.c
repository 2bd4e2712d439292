/* dead_letters: GET /api/v1/dlq, POST /api/v1/dlq/:id/replay, and
 * GET/DELETE /api/v1/messages/:partitionId/:transactionId. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "api/dead_letters.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "streams/encryption.h"
#include "streams/frame.h"
#include "streams/push_plan.h"
#include "streams/segment.h"

/* Indexes into DLQ_COLUMNS. */
enum { D_ID, D_QUEUE, D_PARTITION_ID, D_PARTITION, D_GROUP, D_OFFSET, D_MESSAGE_ID, D_TXN, D_TRACE,
       D_PAYLOAD, D_ERROR, D_RETRIES, D_CREATED, D_FAILED, D_ENCRYPTED, D_PRODUCER_SUB };

typedef struct dlq_call {
    httpd_req   *req;
    server      *srv;
    char         id[IDS_UUID_TEXT];
    char        *txn;        /* message calls: the transactionId */
    push_item    item;       /* replay: the message going back */
} dlq_call;

static dlq_call *call_new(httpd_req *req, server *srv)
{
    dlq_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    c->srv = srv;
    return c;
}

static void call_free(dlq_call *c)
{
    free(c->txn);
    api_dlq_item_free(&c->item);
    free(c);
}

/* The dead letter's payload as the client sent it: opened when sealed. */
static int dlq_payload(const PGresult *r, int row, buf *out)
{
    size_t n;
    const char *p = db_bytes(r, row, D_PAYLOAD, &n);
    if (!db_bool(r, row, D_ENCRYPTED)) { buf_append(out, p, n); return 0; }
    return encryption_open(db_uuid(r, row, D_MESSAGE_ID), p, n, out);
}

void api_dlq_row_json(emit *e, const PGresult *r, int row)
{
    emit_object(e);
    emit_key(e, "id"); api_emit_uuid_col(e, r, row, D_ID);
    emit_key(e, "transactionId"); api_emit_text_col(e, r, row, D_TXN);
    emit_key(e, "partitionId"); api_emit_uuid_col(e, r, row, D_PARTITION_ID);
    emit_key(e, "queue"); api_emit_text_col(e, r, row, D_QUEUE);
    emit_key(e, "partition"); api_emit_text_col(e, r, row, D_PARTITION);
    emit_key(e, "consumerGroup"); api_emit_text_col(e, r, row, D_GROUP);
    emit_key(e, "offset"); emit_int(e, db_int(r, row, D_OFFSET));
    emit_key(e, "messageId"); api_emit_uuid_col(e, r, row, D_MESSAGE_ID);
    emit_key(e, "traceId"); api_emit_uuid_col(e, r, row, D_TRACE);
    emit_key(e, "producerSub"); api_emit_text_col(e, r, row, D_PRODUCER_SUB);   /* as pop: null when none */
    emit_key(e, "errorMessage"); api_emit_text_col(e, r, row, D_ERROR);
    emit_key(e, "retryCount"); emit_int(e, db_int(r, row, D_RETRIES));
    buf payload;
    buf_init(&payload);
    emit_key(e, "data");
    if (dlq_payload(r, row, &payload) == 0) {
        emit_raw(e, payload.data, payload.len);
    } else {
        emit_null(e);
        emit_key(e, "dataError"); emit_str(e, "cannot decrypt the payload: missing or wrong QUEEN_ENCRYPTION_KEY");
    }
    buf_fini(&payload);
    emit_key(e, "createdAt"); api_emit_time_col(e, r, row, D_CREATED);
    emit_key(e, "failedAt"); api_emit_time_col(e, r, row, D_FAILED);
    emit_end(e);
}

/* ---- listing ---- */

void api_dlq_list(httpd_req *req, server *srv)
{
    static const api_position_list list = { "messages", 100, STMT_DLQ_COUNT, STMT_DLQ_PAGE, api_dlq_row_json };
    const char *filters[3] = { httpd_query(req, "queue"), httpd_query(req, "consumerGroup"),
                               httpd_query(req, "partition") };
    api_list_by_position(req, srv, &list, filters, 3);
}

/* ---- replay ---- */

static void replay_done(void *arg, const db_reply *reply)
{
    dlq_call *c = arg;
    if (reply->error && strcmp(reply->sqlstate, "SLN01") == 0) httpd_error(c->req, 404, "dead letter not found");
    else if (reply->error && strcmp(reply->sqlstate, "SLD01") == 0)
        httpd_error(c->req, 409, "this dead letter was already replayed within the dedup window");
    else if (reply->error) api_db_error(c->req, reply);
    else {
        const PGresult *r = reply->results[0];
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "replayed"); emit_bool(e, true);
        emit_key(e, "id"); emit_str(e, c->id);
        emit_key(e, "messageId"); emit_uuid(e, c->item.message_id);
        emit_key(e, "transactionId"); emit_str(e, c->item.txn);
        emit_key(e, "queue"); emit_str(e, c->item.queue);
        emit_key(e, "partition"); emit_str(e, c->item.partition);
        emit_key(e, "partitionId"); api_emit_uuid_col(e, r, 0, 1);
        emit_key(e, "offset"); emit_int(e, db_int(r, 0, 2));
        emit_end(e);
        c->srv->stats.pushed++;
        const char *partition[1] = { c->item.partition };
        server_log_appended(c->srv, c->item.queue, partition, 1);
        api_reply_send(&out, c->req, 200);
    }
    call_free(c);
}

/* The dead letter as a new message of its partition, transactionId dlq:<id>.
 * It keeps the producerSub of the message that failed, not the sub of the
 * admin replaying it: a consumer reads who produced the data, and the
 * replay changes where it sits, not what it is or where it came from. */
int api_dlq_replay_item(const PGresult *r, int row, push_item *it)
{
    size_t n;
    const char *p = db_text(r, row, D_QUEUE, &n);
    it->queue = xstrndup(p, n);
    p = db_text(r, row, D_PARTITION, &n);
    it->partition = xstrndup(p, n);
    char id[IDS_UUID_TEXT];
    ids_uuid_format(db_uuid(r, row, D_ID), id);
    it->txn = xmalloc(IDS_UUID_TEXT + 4);
    snprintf(it->txn, IDS_UUID_TEXT + 4, "dlq:%s", id);
    it->txn_given = true;
    buf payload;
    buf_init(&payload);
    if (dlq_payload(r, row, &payload) < 0) { buf_fini(&payload); return -1; }
    it->payload_len = payload.len;
    it->payload = buf_steal(&payload);
    it->has_trace = !db_null(r, row, D_TRACE);
    if (it->has_trace) memcpy(it->trace_id, db_uuid(r, row, D_TRACE), 16);
    if (!db_null(r, row, D_PRODUCER_SUB)) {
        p = db_text(r, row, D_PRODUCER_SUB, &n);
        it->sub = xstrndup(p, n);
    }
    push_item_prepare(it);
    return 0;
}

void api_dlq_item_free(push_item *it)
{
    free(it->queue);
    free(it->partition);
    free(it->txn);
    free(it->sub);
    free((char *)it->payload);
}

static void replay_fetched(void *arg, const db_reply *reply)
{
    dlq_call *c = arg;
    if (reply->error) { api_db_error(c->req, reply); call_free(c); return; }
    if (PQntuples(reply->results[0]) == 0) { httpd_error(c->req, 404, "dead letter not found"); call_free(c); return; }
    if (api_dlq_replay_item(reply->results[0], 0, &c->item) < 0) {
        httpd_error(c->req, 500, "cannot decrypt the dead letter: missing or wrong QUEEN_ENCRYPTION_KEY");
        call_free(c);
        return;
    }
    push_item *items[1] = { &c->item };
    const char *values[1] = { c->id };
    push_plan plan;
    push_plan_init(&plan);
    push_plan_build(&plan, items, 1);
    db_job *job = db_job_new(replay_done, c);
    push_plan_calls(&plan, job, (int)c->srv->cfg.zstd_level);
    push_plan_fini(&plan);
    db_job_call(job, STMT_DLQ_TAKE, values, NULL, NULL);   /* same transaction: both or neither */
    api_submit(c->req, c->srv, job);
}

void api_dlq_replay(httpd_req *req, server *srv)
{
    dlq_call *c = call_new(req, srv);
    if (api_read_uuid(req, req->params[0], c->id, "id") < 0) { call_free(c); return; }
    const char *values[1] = { c->id };
    api_submit_stmt(req, srv, STMT_DLQ_GET, values, replay_fetched, c);
}

/* ---- messages by (partitionId, transactionId) ---- */

static int retained_json(emit *e, dlq_call *c, const PGresult *r)
{
    size_t n;
    const char *blob = db_bytes(r, 0, 5, &n);
    buf seg, plain;
    buf_init(&seg);
    buf_init(&plain);
    frame f;
    int64_t offset = db_int(r, 0, 2);
    int rc = segment_open_message(blob, n, db_int(r, 0, 3), offset, c->srv->max_segment_bytes, &seg, &plain, &f);
    if (rc == 0) {
        emit_object(e);
        emit_key(e, "status"); emit_str(e, "retained");
        emit_key(e, "id"); emit_uuid(e, f.message_id);
        emit_key(e, "transactionId"); emit_strn(e, f.txn, f.txn_len);
        emit_key(e, "traceId");
        if (f.flags & FRAME_HAS_TRACE) emit_uuid(e, f.trace_id); else emit_null(e);
        emit_key(e, "producerSub");
        if (f.flags & FRAME_HAS_SUB) emit_strn(e, f.sub, f.sub_len); else emit_null(e);
        emit_key(e, "partitionId"); emit_str(e, c->id);
        emit_key(e, "queue"); api_emit_text_col(e, r, 0, 0);
        emit_key(e, "partition"); api_emit_text_col(e, r, 0, 1);
        emit_key(e, "offset"); emit_int(e, offset);
        emit_key(e, "data"); emit_raw(e, f.payload, f.payload_len);
        emit_key(e, "createdAt"); api_emit_time_col(e, r, 0, 4);
        emit_end(e);
    }
    buf_fini(&plain);
    buf_fini(&seg);
    return rc;
}

static void message_done(void *arg, const db_reply *reply)
{
    dlq_call *c = arg;
    if (reply->error) { api_db_error(c->req, reply); call_free(c); return; }
    const PGresult *log = reply->results[0], *dead = reply->results[1];
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    if (PQntuples(log) > 0 && retained_json(&e, c, log) == 0) {
        httpd_reply_buf(c->req, 200, &out);
    } else if (PQntuples(dead) > 0) {
        buf_reset(&out);
        emit_init(&e, &out);
        emit_object(&e);
        emit_key(&e, "status"); emit_str(&e, "dead-lettered");
        emit_key(&e, "deadLetter"); api_dlq_row_json(&e, dead, 0);
        emit_end(&e);
        httpd_reply_buf(c->req, 200, &out);
    } else {
        buf_fini(&out);
        httpd_error(c->req, 404, "message not found");
    }
    call_free(c);
}

void api_message_get(httpd_req *req, server *srv)
{
    dlq_call *c = call_new(req, srv);
    if (api_read_uuid(req, req->params[0], c->id, "partitionId") < 0) { call_free(c); return; }
    uint8_t hash[16];
    ids_txn_hash(req->params[1], strlen(req->params[1]), hash);
    const char *lookup[2] = { c->id, (const char *)hash };
    int lengths[2] = { 0, 16 }, formats[2] = { 0, 1 };
    const char *by_message[2] = { c->id, req->params[1] };
    db_job *job = db_job_new(message_done, c);
    db_job_call(job, STMT_MESSAGE_LOOKUP, lookup, lengths, formats);
    db_job_call(job, STMT_DLQ_BY_MESSAGE, by_message, NULL, NULL);
    api_submit(req, srv, job);
}

static void delete_done(void *arg, const db_reply *reply)
{
    dlq_call *c = arg;
    if (reply->error) api_db_error(c->req, reply);
    else if (db_int(reply->results[0], 0, 0) == 0) httpd_error(c->req, 404, "no dead letter for that message");
    else {
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "deleted"); emit_int(e, db_int(reply->results[0], 0, 0));
        api_reply_send(&out, c->req, 200);
    }
    call_free(c);
}

void api_message_delete(httpd_req *req, server *srv)
{
    dlq_call *c = call_new(req, srv);
    if (api_read_uuid(req, req->params[0], c->id, "partitionId") < 0) { call_free(c); return; }
    const char *values[2] = { c->id, req->params[1] };
    api_submit_stmt(req, srv, STMT_DLQ_DELETE_MESSAGE, values, delete_done, c);
}

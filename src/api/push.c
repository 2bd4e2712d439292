/* push: POST /api/v1/push — validates every item before anything is queued
 * (bad input changes nothing), hands the batch to push fusion, and replies
 * 201 after the flush that holds it commits. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/emit.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include "streams/frame.h"

static int item_name(httpd_req *req, const json_doc *d, uint32_t item, const char *where, const char *key,
                     const char *fallback, char **out)
{
    if (api_member_string(req, d, item, where, key, out) < 0) return -1;
    if (!*out && !fallback) { httpd_error_field(req, 400, "field", key, "%s%s is required", where, key); return -1; }
    if (!*out) *out = xstrdup(fallback);
    return api_check_name(req, where, key, *out);
}

static int item_ids(httpd_req *req, const json_doc *d, uint32_t item, const char *where, push_item *it)
{
    char *trace = NULL;
    if (api_member_string(req, d, item, where, "transactionId", &it->txn) < 0) return -1;
    if (it->txn && strlen(it->txn) > FRAME_MAX_TXN) {
        httpd_error_field(req, 400, "field", "transactionId", "%stransactionId is longer than %d bytes", where,
                          FRAME_MAX_TXN);
        return -1;
    }
    it->txn_given = it->txn != NULL;
    if (!it->txn) {
        uint8_t id[16];
        it->txn = xmalloc(IDS_UUID_TEXT);
        ids_uuid7(id);
        ids_uuid_format(id, it->txn);
    }
    if (api_member_string(req, d, item, where, "traceId", &trace) < 0) return -1;
    it->has_trace = trace != NULL;
    int bad = trace && ids_uuid_parse(trace, strlen(trace), it->trace_id) < 0;
    free(trace);
    if (bad) httpd_error_field(req, 400, "field", "traceId", "%straceId must be a uuid", where);
    return bad ? -1 : 0;
}

int api_push_item(httpd_req *req, server *srv, const json_doc *d, uint32_t item, const char *where, push_item *it)
{
    if (d->tokens[item].type != JSON_OBJECT) { httpd_error(req, 400, "%smust be an object", where); return -1; }
    if (item_name(req, d, item, where, "queue", NULL, &it->queue) < 0) return -1;
    if (item_name(req, d, item, where, "partition", "Default", &it->partition) < 0) return -1;
    if (item_ids(req, d, item, where, it) < 0) return -1;
    /* producerSub is whom the token says pushed: a body's own producerSub is never read */
    if (req->auth_sub) it->sub = xstrdup(req->auth_sub);
    int payload = json_get(d, item, "payload");
    if (payload < 0) { httpd_error_field(req, 400, "field", "payload", "%spayload is required", where); return -1; }
    it->payload = json_span(d, (uint32_t)payload, &it->payload_len);
    if (it->payload_len > (size_t)srv->cfg.max_payload_bytes) {
        httpd_error_field(req, 413, "field", "payload", "%spayload exceeds %lld bytes", where,
                          (long long)srv->cfg.max_payload_bytes);
        return -1;
    }
    return 0;
}

static void reply_results(httpd_req *req, server *srv, const push_batch *b)
{
    buf out;
    buf_init(&out);
    buf_reserve(&out, b->n * 160);
    emit e;
    emit_init(&e, &out);
    emit_array(&e);
    for (size_t i = 0; i < b->n; i++) {
        const push_item *it = &b->items[i];
        srv->stats.pushed += it->status == PUSH_QUEUED;
        srv->stats.duplicates += it->status == PUSH_DUPLICATE;
        srv->stats.buffered += it->status == PUSH_BUFFERED;
        emit_object(&e);
        emit_key(&e, "index"); emit_int(&e, (int64_t)i);
        emit_key(&e, "message_id"); emit_uuid(&e, it->message_id);
        emit_key(&e, "transaction_id"); emit_str(&e, it->txn);
        emit_key(&e, "queueName"); emit_str(&e, it->queue);
        emit_key(&e, "status"); emit_str(&e, push_status_name(it->status));
        emit_end(&e);
    }
    emit_end(&e);
    httpd_reply_buf(req, 201, &out);
}

static void push_done(push_batch *b, void *arg)
{
    api_call *c = arg;
    if (b->error) api_engine_error(c->req, b->error, NULL, b->unavailable);
    else reply_results(c->req, c->srv, b);
    push_batch_free(b);
    free(c);
}

/* The request timed out after its flush reached PostgreSQL (net/httpd.c):
 * every item's transactionId, the client's or the one silt made, in item
 * order. Pushed again with the same transactionIds, an item already written
 * answers "duplicate" and is not written twice. */
static void push_resend_keys(httpd_req *req, void *arg, emit *e)
{
    (void)req;
    const push_batch *b = arg;
    emit_key(e, "transactionIds");
    emit_array(e);
    for (size_t i = 0; i < b->n; i++) emit_str(e, b->items[i].txn);
    emit_end(e);
}

static push_batch *read_batch(httpd_req *req, server *srv, const json_doc *d)
{
    int items = json_get(d, 0, "items");
    if (items < 0 || d->tokens[items].type != JSON_ARRAY) { httpd_error(req, 400, "items array is required"); return NULL; }
    size_t n = d->tokens[items].count;
    if (n > (size_t)srv->cfg.max_items) {
        httpd_error(req, 413, "too many items: %zu (the limit is %lld)", n, (long long)srv->cfg.max_items);
        return NULL;
    }
    push_batch *b = xcalloc(1, sizeof *b);
    b->items = xcalloc(n ? n : 1, sizeof *b->items);
    b->n = n;
    uint32_t item = (uint32_t)items + 1;
    for (size_t i = 0; i < n; i++, item = d->tokens[item].next) {
        char where[32];
        snprintf(where, sizeof where, "items[%zu]: ", i);
        if (api_push_item(req, srv, d, item, where, &b->items[i]) < 0) { push_batch_free(b); return NULL; }
    }
    return b;
}

void api_push(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    push_batch *b = NULL;
    if (api_read_shallow(req, srv, &d, API_PUSH_DEPTH) == 0) b = read_batch(req, srv, &d);
    json_doc_fini(&d);   /* payload spans point into the request body, not the doc */
    if (!b) return;
    if (b->n == 0) { push_batch_free(b); httpd_reply(req, 201, "[]", 2); return; }
    api_call *c = api_call_new(req, srv);
    b->done = push_done;
    b->arg = c;
    b->abandoned = &req->left;   /* req outlives the batch: it is freed by the reply in push_done */
    b->sent = &req->sent;
    req->resend_keys = push_resend_keys;
    req->resend_arg = b;
    pusher_submit(srv->push, b);
}

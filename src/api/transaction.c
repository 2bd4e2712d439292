/* transaction: POST /api/v1/transaction — pushes and acks that commit
 * together or not at all (the engine is streams/tx.c). */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/emit.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include "streams/tx.h"

/* Sizes the request: items of push operations and ack operations. */
static int count_ops(httpd_req *req, const json_doc *d, int ops, size_t *pushes, size_t *acks)
{
    *pushes = *acks = 0;
    uint32_t t = (uint32_t)ops + 1;
    for (uint32_t k = 0; k < d->tokens[ops].count; k++, t = d->tokens[t].next) {
        int type = d->tokens[t].type == JSON_OBJECT ? json_get(d, t, "type") : -1;
        if (type < 0 || d->tokens[type].type != JSON_STRING) {
            httpd_error(req, 400, "operations[%u] needs a type", k);
            return -1;
        }
        int items = json_get(d, t, "items");
        if (json_str_eq(d, (uint32_t)type, "push")) {
            if (items < 0 || d->tokens[items].type != JSON_ARRAY) {
                httpd_error(req, 400, "operations[%u]: items array is required", k);
                return -1;
            }
            *pushes += d->tokens[items].count;
        } else if (json_str_eq(d, (uint32_t)type, "ack")) {
            (*acks)++;
        }
    }
    return 0;
}

static int read_push_op(httpd_req *req, server *srv, const json_doc *d, uint32_t op, size_t k, tx_request *tx)
{
    int items = json_get(d, op, "items");
    uint32_t t = (uint32_t)items + 1;
    for (uint32_t i = 0; i < d->tokens[items].count; i++, t = d->tokens[t].next) {
        char where[64];
        snprintf(where, sizeof where, "operations[%zu].items[%u]: ", k, i);
        tx->push_op[tx->npushes] = k;
        /* counted before it is checked: a refused item's names are freed with the rest */
        if (api_push_item(req, srv, d, t, where, &tx->pushes[tx->npushes++]) < 0) return -1;
    }
    return 0;
}

/* An unknown operation type rolls the transaction back before it starts. */
static int read_ops(httpd_req *req, server *srv, const json_doc *d, int ops, tx_request *tx, char **unknown)
{
    uint32_t t = (uint32_t)ops + 1;
    for (size_t k = 0; k < d->tokens[ops].count; k++, t = d->tokens[t].next) {
        int type = json_get(d, t, "type");
        if (json_str_eq(d, (uint32_t)type, "push")) {
            if (read_push_op(req, srv, d, t, k, tx) < 0) return -1;
        } else if (json_str_eq(d, (uint32_t)type, "ack")) {
            char where[40];
            snprintf(where, sizeof where, "operations[%zu]: ", k);
            tx->ack_op[tx->nacks] = k;
            if (api_ack_item(req, d, t, where, QUEUE_MODE, &tx->acks[tx->nacks++]) < 0) return -1;   /* counted first, as pushes */
        } else if (!*unknown) {
            buf msg;
            buf_init(&msg);
            buf_printf(&msg, "unknown operation type at operations[%zu]: ", k);
            json_str_decode(d, (uint32_t)type, &msg);
            *unknown = buf_steal(&msg);
        }
    }
    return 0;
}

static int read_leases(httpd_req *req, const json_doc *d, tx_request *tx)
{
    int list = json_get(d, 0, "requiredLeases");
    if (list < 0 || d->tokens[list].type == JSON_NULL) return 0;
    if (d->tokens[list].type != JSON_ARRAY) { httpd_error(req, 400, "requiredLeases must be an array"); return -1; }
    tx->leases = xcalloc(d->tokens[list].count + 1, sizeof *tx->leases);
    uint32_t t = (uint32_t)list + 1;
    for (uint32_t k = 0; k < d->tokens[list].count; k++, t = d->tokens[t].next) {
        uint8_t id[16];
        size_t n;
        const char *s = json_span(d, t, &n);
        if (d->tokens[t].type != JSON_STRING || ids_uuid_parse(s + 1, n - 2, id) < 0) {
            httpd_error_field(req, 400, "field", "requiredLeases", "requiredLeases[%u] is not a lease id", k);
            return -1;
        }
        ids_uuid_format(id, tx->leases[tx->nleases++]);
    }
    return 0;
}

static tx_request *read_tx(httpd_req *req, server *srv, const json_doc *d, char **unknown)
{
    int ops = json_get(d, 0, "operations");
    size_t pushes, acks;
    if (ops < 0 || d->tokens[ops].type != JSON_ARRAY || d->tokens[ops].count == 0) {
        httpd_error(req, 400, "operations must be a non-empty array");
        return NULL;
    }
    if (count_ops(req, d, ops, &pushes, &acks) < 0) return NULL;
    if (pushes + acks > (size_t)srv->cfg.max_items) { httpd_error(req, 413, "too many operations"); return NULL; }
    tx_request *tx = xcalloc(1, sizeof *tx);
    tx->pushes = xcalloc(pushes + 1, sizeof *tx->pushes);
    tx->push_op = xcalloc(pushes + 1, sizeof *tx->push_op);
    tx->acks = xcalloc(acks + 1, sizeof *tx->acks);
    tx->ack_op = xcalloc(acks + 1, sizeof *tx->ack_op);
    if (read_leases(req, d, tx) < 0 || read_ops(req, srv, d, ops, tx, unknown) < 0) { tx_request_free(tx); return NULL; }
    return tx;
}

static void put_push_members(emit *e, const push_item *it)
{
    emit_key(e, "message_id"); emit_uuid(e, it->message_id);
    emit_key(e, "transaction_id"); emit_str(e, it->txn);
    emit_key(e, "queueName"); emit_str(e, it->queue);
    emit_key(e, "status"); emit_str(e, push_status_name(it->status));
}

static void put_ack_members(emit *e, const ack_item *it)
{
    emit_key(e, "success"); emit_bool(e, it->success);
    emit_key(e, "transactionId"); emit_str(e, it->txn);
    emit_key(e, "dlq"); emit_bool(e, it->dlq);
    emit_key(e, "leaseReleased"); emit_bool(e, it->lease_released);
}

/* One entry per pushed item and per ack, in operation order: where its
 * operation stood and its type, then the members of its kind. */
static void put_results(emit *e, const tx_request *tx)
{
    size_t p = 0, a = 0;
    while (p < tx->npushes || a < tx->nacks) {
        bool push = a >= tx->nacks || (p < tx->npushes && tx->push_op[p] <= tx->ack_op[a]);
        emit_object(e);
        emit_key(e, "index"); emit_int(e, (int64_t)(push ? tx->push_op[p] : tx->ack_op[a]));
        emit_key(e, "type"); emit_str(e, push ? "push" : "ack");
        if (push) put_push_members(e, &tx->pushes[p++]);
        else put_ack_members(e, &tx->acks[a++]);
        emit_end(e);
    }
}

static void reply_failure(httpd_req *req, const char *why)
{
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "success"); emit_bool(e, false);
    emit_key(e, "error"); emit_str(e, why);
    api_reply_send(&out, req, 200);
}

static void tx_done(tx_request *tx, void *arg)
{
    api_call *c = arg;
    if (tx->error) api_engine_error(c->req, tx->error, tx->sqlstate, tx->unavailable);
    else if (tx->failure) reply_failure(c->req, tx->failure);
    else {
        uint8_t id[16];
        ids_uuid7(id);
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "transactionId"); emit_uuid(e, id);
        emit_key(e, "success"); emit_bool(e, true);
        emit_key(e, "results"); emit_array(e);
        put_results(e, tx);
        emit_end(e);
        emit_end(e);
        for (size_t i = 0; i < tx->npushes; i++)
            if (i == 0 || strcmp(tx->pushes[i].queue, tx->pushes[i - 1].queue) != 0)
                server_log_appended(c->srv, tx->pushes[i].queue, NULL, 0);
        api_announce_released(c->srv, tx->acks, tx->nacks);
        api_reply_send(&out, c->req, 200);
    }
    tx_request_free(tx);
    free(c);
}

/* The request timed out after its transaction reached PostgreSQL
 * (net/httpd.c): its pushes' transactionIds, in operation order, as a push's
 * 504 names them: sent again with them, no push is written twice. */
static void tx_resend_keys(httpd_req *req, void *arg, emit *e)
{
    (void)req;
    const tx_request *tx = arg;
    if (tx->npushes == 0) return;
    emit_key(e, "transactionIds");
    emit_array(e);
    for (size_t i = 0; i < tx->npushes; i++) emit_str(e, tx->pushes[i].txn);
    emit_end(e);
}

void api_transaction(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    char *unknown = NULL;
    tx_request *tx = NULL;
    if (api_read_shallow(req, srv, &d, API_TX_DEPTH) == 0) tx = read_tx(req, srv, &d, &unknown);
    json_doc_fini(&d);
    if (tx && unknown) { reply_failure(req, unknown); tx_request_free(tx); tx = NULL; }
    free(unknown);
    if (!tx) return;
    api_call *c = api_call_new(req, srv);
    tx->done = tx_done;
    tx->arg = c;
    tx->abandoned = &req->left;   /* req is freed by the reply in tx_done */
    tx->sent = &req->sent;
    req->resend_keys = tx_resend_keys;
    req->resend_arg = tx;
    tx_submit(srv->pool, (int)srv->cfg.zstd_level, srv->max_segment_bytes, tx);
}

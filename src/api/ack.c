/* ack: POST /api/v1/ack, /api/v1/ack/batch and /api/v1/lease/:leaseId/extend. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/emit.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "streams/ack.h"


static int read_status(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, ack_status *status)
{
    static const struct { const char *name; ack_status code; } statuses[] = {
        { "completed", ACK_COMPLETED }, { "success", ACK_COMPLETED }, { "failed", ACK_FAILED },
        { "retry", ACK_RETRY }, { "dlq", ACK_DEAD_LETTER },
    };
    int v = json_get(d, obj, "status");
    *status = ACK_COMPLETED;
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    for (size_t k = 0; k < sizeof statuses / sizeof statuses[0]; k++)
        if (d->tokens[v].type == JSON_STRING && json_str_eq(d, (uint32_t)v, statuses[k].name)) {
            *status = statuses[k].code;
            return 0;
        }
    httpd_error_field(req, 400, "field", "status", "%sstatus must be completed, success, failed, retry or dlq", where);
    return -1;
}

/* A uuid member as text (lower case) and bytes; out "" when absent. A
 * string without escapes (every uuid a client sends) is parsed where it
 * lies in the body, not copied first: an ack reads two per item. */
static int read_uuid_field(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key,
                           char out[37], uint8_t id[16])
{
    out[0] = '\0';
    int v = json_get(d, obj, key);
    const json_token *t = v >= 0 ? &d->tokens[v] : NULL;
    int bad;
    if (t && t->type == JSON_STRING && !t->escaped && t->end - t->start > 2) {
        bad = ids_uuid_parse(d->text + t->start + 1, t->end - t->start - 2, id) < 0;
    } else {
        char *text = NULL;
        if (api_member_string(req, d, obj, where, key, &text) < 0) return -1;
        if (!text) return 0;
        bad = ids_uuid_parse(text, strlen(text), id) < 0;
        free(text);
    }
    if (bad) { httpd_error_field(req, 400, "field", key, "%s%s must be a uuid", where, key); return -1; }
    ids_uuid_format(id, out);
    return 0;
}

int api_ack_item(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *group, ack_item *it)
{
    if (d->tokens[obj].type != JSON_OBJECT) { httpd_error(req, 400, "%smust be an object", where); return -1; }
    if (api_member_string(req, d, obj, where, "transactionId", &it->txn) < 0) return -1;
    if (!it->txn) { httpd_error_field(req, 400, "field", "transactionId", "%stransactionId is required", where); return -1; }
    if (read_uuid_field(req, d, obj, where, "partitionId", it->partition_id, it->partition_raw) < 0) return -1;
    if (!it->partition_id[0]) {
        httpd_error_field(req, 400, "field", "partitionId", "%spartitionId is required to ensure message uniqueness",
                          where);
        return -1;
    }
    if (read_uuid_field(req, d, obj, where, "leaseId", it->lease_id, it->lease_raw) < 0 ||
        read_status(req, d, obj, where, &it->status) < 0 ||
        api_member_string(req, d, obj, where, "consumerGroup", &it->group) < 0 ||
        api_member_string(req, d, obj, where, "error", &it->error_text) < 0)
        return -1;
    if (!it->group) it->group = xstrdup(group);
    return api_check_name(req, where, "consumerGroup", it->group);
}

/* Room for the reply of the usual item (~100 bytes and its transactionId),
 * so that it is not copied at every doubling of its buffer. */
static size_t ack_reply_estimate(const ack_request *a)
{
    size_t n = 16;
    for (size_t i = 0; i < a->n; i++) n += 112 + strlen(a->items[i].txn);
    return n;
}

static void reply_results(httpd_req *req, server *srv, const ack_request *a)
{
    buf out;
    buf_init(&out);
    buf_reserve(&out, ack_reply_estimate(a));
    emit e;
    emit_init(&e, &out);
    emit_array(&e);
    for (size_t i = 0; i < a->n; i++) {
        const ack_item *it = &a->items[i];
        srv->stats.acked += it->success;
        srv->stats.dead_lettered += it->dlq;
        emit_object(&e);
        emit_key(&e, "index"); emit_int(&e, (int64_t)i);
        emit_key(&e, "transactionId"); emit_str(&e, it->txn);
        emit_key(&e, "success"); emit_bool(&e, it->success);
        emit_key(&e, "error"); emit_str(&e, it->error);
        emit_key(&e, "leaseReleased"); emit_bool(&e, it->lease_released);
        emit_key(&e, "dlq"); emit_bool(&e, it->dlq);
        emit_key(&e, "noop"); emit_bool(&e, it->noop);
        if (it->dropped) { emit_key(&e, "dropped"); emit_bool(&e, true); }
        emit_end(&e);
    }
    emit_end(&e);
    httpd_reply_buf(req, 200, &out);
}

void api_announce_released(server *srv, const ack_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!items[i].lease_released) continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = items[j].lease_released && strcmp(items[j].group, items[i].group) == 0;
        if (!seen) server_group_released(srv, items[i].group);
    }
}

static void ack_done(ack_request *a, void *arg)
{
    api_call *c = arg;
    if (a->error) api_engine_error(c->req, a->error, a->sqlstate, a->unavailable);
    else {
        c->srv->stats.acks_known += a->known;
        api_announce_released(c->srv, a->items, a->n);
        reply_results(c->req, c->srv, a);
    }
    ack_request_free(a);
    free(c);
}

static void submit(httpd_req *req, server *srv, ack_request *a)
{
    api_call *c = api_call_new(req, srv);
    a->done = ack_done;
    a->arg = c;
    a->abandoned = &req->left;   /* req is freed by the reply in ack_done */
    a->sent = &req->sent;
    acker_submit(srv->acks, a);
}

static ack_request *new_request(size_t n)
{
    ack_request *a = xcalloc(1, sizeof *a);
    a->items = xcalloc(n ? n : 1, sizeof *a->items);
    a->n = n;
    return a;
}

void api_ack(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    ack_request *a = NULL;
    if (api_read_object(req, srv, &d) == 0) {
        a = new_request(1);
        if (api_ack_item(req, &d, 0, "", QUEUE_MODE, &a->items[0]) < 0) { ack_request_free(a); a = NULL; }
    }
    json_doc_fini(&d);
    if (a) submit(req, srv, a);
}

/* "acknowledgments[i]: ", the prefix of an item's errors, without printf:
 * made for every item, used only by the one that is refused. */
static void item_where(char out[48], size_t i)
{
    static const char head[] = "acknowledgments[";
    char digits[24], *p = digits + sizeof digits;
    do { *--p = (char)('0' + i % 10); i /= 10; } while (i);
    size_t n = (size_t)(digits + sizeof digits - p);
    memcpy(out, head, sizeof head - 1);
    memcpy(out + sizeof head - 1, p, n);
    memcpy(out + sizeof head - 1 + n, "]: ", 4);
}

static ack_request *read_batch(httpd_req *req, server *srv, const json_doc *d)
{
    char *group = NULL;
    if (api_opt_string(req, d, 0, "consumerGroup", &group) < 0) return NULL;
    int list = json_get(d, 0, "acknowledgments");
    ack_request *a = NULL;
    if (list < 0 || d->tokens[list].type != JSON_ARRAY) httpd_error(req, 400, "acknowledgments array is required");
    else if (d->tokens[list].count > (uint32_t)srv->cfg.max_items) httpd_error(req, 413, "too many acknowledgments");
    else a = new_request(d->tokens[list].count);
    uint32_t tok = (uint32_t)list + 1;
    for (size_t i = 0; a && i < a->n; i++, tok = d->tokens[tok].next) {
        char where[48];
        item_where(where, i);
        if (api_ack_item(req, d, tok, where, group ? group : QUEUE_MODE, &a->items[i]) < 0) { ack_request_free(a); a = NULL; }
    }
    free(group);
    return a;
}

void api_ack_batch(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    ack_request *a = NULL;
    if (api_read_object(req, srv, &d) == 0) a = read_batch(req, srv, &d);
    json_doc_fini(&d);
    if (!a) return;
    if (a->n == 0) { ack_request_free(a); httpd_reply(req, 200, "[]", 2); return; }
    submit(req, srv, a);
}

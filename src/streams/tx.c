/* tx: transactions of pushes and acks (see tx.h). */
#include "streams/tx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/ids.h"
#include "base/iso_time.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "streams/frame.h"
#include "streams/push_plan.h"
#include "streams/segment.h"

#define TX_MAX_ATTEMPTS 16
#define LEASE_SQLSTATE "SLL01"
#define ACK_SQLSTATE "SLA01"
#define COPIES_SQLSTATE "SLQ01"

typedef struct tx_state {
    push_plan  plan;
    push_item **items;      /* pointers to tx->pushes for the plan */
    buf        copies;      /* {"<ack index>": {...}} dead-letter copies */
    int        attempt;
    int        ack_call;    /* index of the tx_ack call, -1 */
} tx_state;

static void tx_send(tx_request *tx);

static void finish(tx_request *tx)
{
    tx->done(tx, tx->arg);
}

static void fail(tx_request *tx, const char *msg)
{
    tx->failure = xstrdup(msg);
    finish(tx);
}

static void leases_array(const tx_request *tx, buf *out)
{
    buf_putc(out, '{');
    for (size_t i = 0; i < tx->nleases; i++) buf_printf(out, "%s%s", i ? "," : "", tx->leases[i]);
    buf_putc(out, '}');
}

static void take_acks(tx_request *tx, const PGresult *r)
{
    for (int row = 0; r && row < PQntuples(r); row++) {
        size_t i = (size_t)db_int(r, row, ACK_IDX);
        if (i < tx->nacks) ack_take_outcome(&tx->acks[i], r, row);
    }
}

/* ---- dead-letter copies ---- */

static void put_copy(buf *out, size_t idx, const frame *f, int64_t created_us)
{
    char msg[IDS_UUID_TEXT], trace[IDS_UUID_TEXT], created[32];
    ids_uuid_format(f->message_id, msg);
    ids_uuid_format(f->trace_id, trace);
    iso_time_format(created_us, created);
    buf_printf(out, "%s\"%zu\":{\"m\":\"%s\",\"t\":", out->len > 1 ? "," : "", idx, msg);
    json_put_str(out, f->txn, f->txn_len);
    buf_puts(out, ",\"tr\":");
    json_put_cstr(out, (f->flags & FRAME_HAS_TRACE) ? trace : NULL);
    buf_printf(out, ",\"c\":\"%s\",\"enc\":%s,\"pl\":\"", created, (f->flags & FRAME_ENCRYPTED) ? "true" : "false");
    buf_reserve(out, f->payload_len * 2);
    ids_hex((const uint8_t *)f->payload, f->payload_len, out->data + out->len);
    out->len += f->payload_len * 2;
    buf_puts(out, "\"}");
}

static void copies_done(void *arg, const db_reply *reply)
{
    tx_request *tx = arg;
    tx_state *st = tx->state;
    if (reply->error) { tx->error = xstrdup(reply->error); tx->unavailable = reply->unavailable; finish(tx); return; }
    buf_reset(&st->copies);
    buf_putc(&st->copies, '{');
    for (int k = 0; k < reply->ncalls; k++) {
        const PGresult *r = reply->results[k];
        if (PQntuples(r) == 0 || db_null(r, 0, 0)) { fail(tx, "dlq rejected"); return; }
        size_t len, idx = (size_t)db_int(r, 0, 3);
        const char *blob = db_bytes(r, 0, 2, &len);
        buf seg;
        buf_init(&seg);
        frame f;
        int rc = segment_decode(&seg, blob, len, tx->max_segment_bytes);
        if (rc == 0) rc = segment_frame_at(&seg, (size_t)(db_int(r, 0, 4) - db_int(r, 0, 0)), &f);
        if (rc == 0) put_copy(&st->copies, idx, &f, db_time_us(r, 0, 1));
        buf_fini(&seg);
        if (rc < 0) { fail(tx, "dlq rejected: corrupt segment"); return; }
    }
    buf_putc(&st->copies, '}');
    tx_send(tx);
}

/* DETAIL [{"i": ack index, "p": partitionId, "o": offset}]: fetch each segment. */
static void fetch_copies(tx_request *tx, const char *detail)
{
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, detail, strlen(detail), 4096) < 0 || d.tokens[0].type != JSON_ARRAY) {
        json_doc_fini(&d);
        fail(tx, "dead-letter hand-off failed");
        return;
    }
    db_job *job = db_job_new(copies_done, tx);
    for (uint32_t k = 0, t = 1; k < d.tokens[0].count; k++, t = d.tokens[t].next) {
        char *pid = json_str_dup(&d, (uint32_t)json_get(&d, t, "p"));
        size_t n;
        const char *o = json_span(&d, (uint32_t)json_get(&d, t, "o"), &n);
        const char *i = json_span(&d, (uint32_t)json_get(&d, t, "i"), &n);
        char off[24], idx[24];
        snprintf(off, sizeof off, "%.*s", (int)strspn(o, "0123456789"), o);
        snprintf(idx, sizeof idx, "%.*s", (int)strspn(i, "0123456789"), i);
        const char *values[3] = { pid, off, idx };
        db_job_call(job, STMT_SEGMENT_FOR_COPY, values, NULL, NULL);
        free(pid);
    }
    json_doc_fini(&d);
    db_submit(tx->pool, job);
}

/* ---- the transaction ---- */

static void tx_done(void *arg, const db_reply *reply)
{
    tx_request *tx = arg;
    tx_state *st = tx->state;
    if (!reply->error) {
        push_plan_resolve(&st->plan, reply);
        if (st->ack_call >= 0) take_acks(tx, reply->results[st->ack_call]);
        finish(tx);
        return;
    }
    bool retry = ++st->attempt < TX_MAX_ATTEMPTS;
    if (retry && (push_plan_take_duplicates(&st->plan, reply) || push_plan_take_encryption(&st->plan, reply))) {
        tx_send(tx);
        return;
    }
    if (retry && strcmp(reply->sqlstate, COPIES_SQLSTATE) == 0) { fetch_copies(tx, reply->detail); return; }
    if (strcmp(reply->sqlstate, LEASE_SQLSTATE) == 0 || strcmp(reply->sqlstate, ACK_SQLSTATE) == 0) {
        fail(tx, reply->error);
        return;
    }
    tx->error = xstrdup(reply->error);
    snprintf(tx->sqlstate, sizeof tx->sqlstate, "%s", reply->sqlstate);
    tx->unavailable = reply->unavailable;
    finish(tx);
}

static void tx_send(tx_request *tx)
{
    tx_state *st = tx->state;
    db_job *job = db_job_new(tx_done, tx);
    if (tx->nleases) {
        buf leases;
        buf_init(&leases);
        leases_array(tx, &leases);
        const char *values[1] = { leases.data };
        db_job_call(job, STMT_REQUIRE_LEASES, values, NULL, NULL);
        buf_fini(&leases);
    }
    push_plan_build(&st->plan, st->items, tx->npushes);
    push_plan_calls(&st->plan, job, tx->zstd_level);
    st->ack_call = -1;
    if (tx->nacks) {
        buf items;
        buf_init(&items);
        ack_items_json(tx->acks, tx->nacks, &items);
        const char *values[2] = { items.data, st->copies.data };
        st->ack_call = db_job_ncalls(job);
        db_job_call(job, STMT_TX_ACK, values, NULL, NULL);
        buf_fini(&items);
    }
    db_submit(tx->pool, job);
}

void tx_submit(db_pool *pool, int zstd_level, size_t max_segment_bytes, tx_request *tx)
{
    tx_state *st = xcalloc(1, sizeof *st);
    st->items = xcalloc(tx->npushes + 1, sizeof *st->items);
    tx->state = st;
    tx->pool = pool;
    tx->zstd_level = zstd_level;
    tx->max_segment_bytes = max_segment_bytes;
    push_plan_init(&st->plan);
    buf_init(&st->copies);
    buf_puts(&st->copies, "{}");
    for (size_t i = 0; i < tx->npushes; i++) {
        push_item_prepare(&tx->pushes[i]);
        st->items[i] = &tx->pushes[i];
    }
    tx_send(tx);
}

void tx_request_free(tx_request *tx)
{
    if (!tx) return;
    tx_state *st = tx->state;
    if (st) {
        push_plan_fini(&st->plan);
        buf_fini(&st->copies);
        free(st->items);
        free(st);
    }
    for (size_t i = 0; i < tx->npushes; i++) {
        free(tx->pushes[i].queue);
        free(tx->pushes[i].partition);
        free(tx->pushes[i].txn);
    }
    for (size_t i = 0; i < tx->nacks; i++) {
        free(tx->acks[i].txn);
        free(tx->acks[i].group);
        free(tx->acks[i].error_text);
        free(tx->acks[i].error);
    }
    free(tx->pushes);
    free(tx->push_op);
    free(tx->acks);
    free(tx->ack_op);
    free(tx->leases);
    free(tx->failure);
    free(tx->error);
    free(tx);
}

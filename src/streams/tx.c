/* tx: transactions of pushes and acks (see tx.h). */
#include "streams/tx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "streams/frame.h"
#include "streams/push_plan.h"
#include "streams/segment.h"

#define TX_MAX_ATTEMPTS 16
#define LEASE_SQLSTATE "SLL01"
#define ACK_SQLSTATE "SLA01"
#define COPIES_SQLSTATE "SLQ01"

/* Dead-letter copies, as queen.tx_copies reads them: one array per field
 * (subs: each message's producerSub, NULL for none), the payloads
 * concatenated in one binary bytea. */
typedef struct tx_copies {
    db_array items, messages, txns, traces, created, encrypted, subs, lengths;
    buf      payloads;
} tx_copies;

#define TX_COPY_ARRAYS 8

typedef struct tx_state {
    push_plan  plan;
    push_item **items;      /* pointers to tx->pushes for the plan */
    tx_copies  copies;      /* those fetched after the last SLQ01 */
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

static db_array *copy_array(tx_copies *c, size_t k)
{
    /* queen.tx_ack's parameter order; lengths comes after the payloads */
    db_array *all[TX_COPY_ARRAYS] = { &c->items, &c->messages, &c->txns, &c->traces, &c->created,
                                      &c->encrypted, &c->subs, &c->lengths };
    return all[k];
}

static void copies_init(tx_copies *c)
{
    for (size_t k = 0; k < TX_COPY_ARRAYS; k++) db_array_init(copy_array(c, k));
    buf_init(&c->payloads);
}

static void copies_fini(tx_copies *c)
{
    for (size_t k = 0; k < TX_COPY_ARRAYS; k++) db_array_fini(copy_array(c, k));
    buf_fini(&c->payloads);
}

static void take_acks(tx_request *tx, const PGresult *r)
{
    for (int row = 0; r && row < PQntuples(r); row++) {
        size_t i = (size_t)db_int(r, row, ACK_IDX);
        if (i < tx->nacks) ack_take_outcome(&tx->acks[i], r, row);
    }
}

/* ---- dead-letter copies ---- */

static void put_copy(tx_copies *c, size_t idx, const frame *f, int64_t created_us)
{
    char msg[IDS_UUID_TEXT], trace[IDS_UUID_TEXT], created[40];
    ids_uuid_format(f->message_id, msg);
    ids_uuid_format(f->trace_id, trace);
    db_time_param(created_us, created);
    char *txn = xstrndup(f->txn, f->txn_len);
    char *sub = (f->flags & FRAME_HAS_SUB) ? xstrndup(f->sub, f->sub_len) : NULL;
    db_array_int(&c->items, (int64_t)idx);
    db_array_text(&c->messages, msg);
    db_array_text(&c->txns, txn);
    db_array_text(&c->traces, (f->flags & FRAME_HAS_TRACE) ? trace : NULL);
    db_array_text(&c->created, created);
    db_array_bool(&c->encrypted, f->flags & FRAME_ENCRYPTED);
    db_array_text(&c->subs, sub);
    db_array_int(&c->lengths, (int64_t)f->payload_len);
    buf_append(&c->payloads, f->payload, f->payload_len);
    free(txn);
    free(sub);
}

static void copies_done(void *arg, const db_reply *reply)
{
    tx_request *tx = arg;
    tx_state *st = tx->state;
    if (reply->error) { tx->error = xstrdup(reply->error); tx->unavailable = reply->unavailable; finish(tx); return; }
    copies_fini(&st->copies);
    copies_init(&st->copies);
    for (int k = 0; k < reply->ncalls; k++) {
        const PGresult *r = reply->results[k];
        if (PQntuples(r) == 0 || db_null(r, 0, 0)) { fail(tx, "dlq rejected"); return; }
        size_t len, idx = (size_t)db_int(r, 0, 3);
        if (idx >= tx->nacks) { fail(tx, "dead-letter hand-off failed"); return; }
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
    tx_send(tx);
}

/* The next "<ack index>:<offset>" of an SLQ01 DETAIL at *p: 1, 0 at its
 * end, -1 when it is not one (or names no item of ours). */
static int next_needed(const char **p, size_t nacks, size_t *idx, char off[24])
{
    if (!**p) return 0;
    char *end;
    unsigned long long i = strtoull(*p, &end, 10), o;
    if (end == *p || *end != ':' || i >= nacks) return -1;
    const char *q = end + 1;
    o = strtoull(q, &end, 10);
    if (end == q || (*end != ',' && *end)) return -1;
    *idx = (size_t)i;
    snprintf(off, 24, "%llu", o);
    *p = *end ? end + 1 : end;
    return 1;
}

/* DETAIL "<ack index>:<offset>,...": fetch the segment of each. */
static void fetch_copies(tx_request *tx, const char *detail)
{
    size_t idx;
    char off[24], idxs[24];
    int rc;
    for (const char *p = detail; (rc = next_needed(&p, tx->nacks, &idx, off)) > 0;) {}
    if (rc < 0 || !*detail) { fail(tx, "dead-letter hand-off failed"); return; }
    db_job *job = db_job_new(copies_done, tx);
    db_job_abandon_when(job, tx->abandoned);
    for (const char *p = detail; next_needed(&p, tx->nacks, &idx, off) > 0;) {
        snprintf(idxs, sizeof idxs, "%zu", idx);
        const char *values[3] = { tx->acks[idx].partition_id, off, idxs };
        db_job_call(job, STMT_SEGMENT_FOR_COPY, values, NULL, NULL);
    }
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

/* queen.tx_ack's parameters: the ack arrays, each item's transactionId and
 * error text, then the copies (see tx_copies). */
static void add_tx_ack(db_job *job, tx_request *tx)
{
    tx_state *st = tx->state;
    ack_params p;
    db_array txns, errors;
    ack_params_build(&p, tx->acks, tx->nacks);
    db_array_init(&txns);
    db_array_init(&errors);
    for (size_t i = 0; i < tx->nacks; i++) {
        db_array_text(&txns, tx->acks[i].txn);
        db_array_text(&errors, tx->acks[i].error_text);
    }
    const char *values[DB_MAX_PARAMS];
    int lengths[DB_MAX_PARAMS] = { 0 }, formats[DB_MAX_PARAMS] = { 0 };
    ack_params_values(&p, values, lengths, formats);
    int k = ACK_NPARAMS;
    values[k++] = db_array_literal(&txns);
    values[k++] = db_array_literal(&errors);
    for (size_t a = 0; a < TX_COPY_ARRAYS - 1; a++) values[k++] = db_array_literal(copy_array(&st->copies, a));
    lengths[k] = (int)st->copies.payloads.len;
    formats[k] = 1;
    values[k++] = st->copies.payloads.data ? st->copies.payloads.data : "";
    values[k++] = db_array_literal(&st->copies.lengths);
    st->ack_call = db_job_ncalls(job);
    db_job_call(job, STMT_TX_ACK, values, lengths, formats);
    ack_params_fini(&p);
    db_array_fini(&txns);
    db_array_fini(&errors);
}

static void tx_send(tx_request *tx)
{
    tx_state *st = tx->state;
    db_job *job = db_job_new(tx_done, tx);
    db_job_abandon_when(job, tx->abandoned);
    db_job_note_sent(job, tx->sent);
    if (tx->nleases) {
        db_array leases;
        db_array_init(&leases);
        for (size_t i = 0; i < tx->nleases; i++) db_array_text(&leases, tx->leases[i]);
        const char *values[1] = { db_array_literal(&leases) };
        db_job_call(job, STMT_REQUIRE_LEASES, values, NULL, NULL);
        db_array_fini(&leases);
    }
    push_plan_build(&st->plan, st->items, tx->npushes);
    push_plan_calls(&st->plan, job, tx->zstd_level);
    st->ack_call = -1;
    if (tx->nacks) add_tx_ack(job, tx);
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
    copies_init(&st->copies);
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
        copies_fini(&st->copies);
        free(st->items);
        free(st);
    }
    push_items_free(tx->pushes, tx->npushes);
    ack_items_free(tx->acks, tx->nacks);
    free(tx->push_op);
    free(tx->ack_op);
    free(tx->leases);
    free(tx->failure);
    free(tx->error);
    free(tx);
}

/* ack: the ack contract's C half (see ack.h; the rules live in queen.ack_partition,
 * in the Ack section of sql/migrations/018_schema.sql). */
#include "streams/ack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "streams/frame.h"
#include "streams/segment.h"


typedef struct handoff {        /* dead letters in flight for one request */
    ack_request *req;
    size_t      *items;          /* item index per dead_letter call */
    size_t       n;
} handoff;

static const char *const status_names[] = {
    [ACK_COMPLETED] = "completed", [ACK_FAILED] = "failed", [ACK_RETRY] = "retry", [ACK_DEAD_LETTER] = "dlq",
};

void ack_params_build(ack_params *p, const ack_item *items, size_t n)
{
    db_array *arrays[] = { &p->groups, &p->partitions, &p->statuses, &p->leases };
    for (size_t k = 0; k < 4; k++) db_array_init(arrays[k]);
    buf_init(&p->hashes);
    buf_reserve(&p->hashes, n * 16);
    for (size_t i = 0; i < n; i++) {
        const ack_item *it = &items[i];
        db_array_text(&p->groups, it->group);
        db_array_text(&p->partitions, it->partition_id);
        db_array_text(&p->statuses, status_names[it->status]);
        db_array_text(&p->leases, it->lease_id[0] ? it->lease_id : NULL);
        ids_txn_hash(it->txn, strlen(it->txn), (uint8_t *)p->hashes.data + p->hashes.len);
        p->hashes.len += 16;
    }
}

void ack_params_values(ack_params *p, const char **values, int *lengths, int *formats)
{
    const char *v[ACK_NPARAMS] = { db_array_literal(&p->groups), db_array_literal(&p->partitions),
                                   p->hashes.data, db_array_literal(&p->statuses), db_array_literal(&p->leases) };
    for (int k = 0; k < ACK_NPARAMS; k++) {
        values[k] = v[k];
        lengths[k] = k == 2 ? (int)p->hashes.len : 0;
        formats[k] = k == 2;   /* the hashes: binary bytea */
    }
}

void ack_params_fini(ack_params *p)
{
    db_array *arrays[] = { &p->groups, &p->partitions, &p->statuses, &p->leases };
    for (size_t k = 0; k < 4; k++) db_array_fini(arrays[k]);
    buf_fini(&p->hashes);
}

void ack_take_outcome(ack_item *it, const PGresult *r, int row)
{
    size_t len;
    it->success = db_bool(r, row, ACK_SUCCESS);
    it->lease_released = db_bool(r, row, ACK_RELEASED);
    it->dlq = db_bool(r, row, ACK_DLQ);
    it->noop = db_bool(r, row, ACK_NOOP);
    it->dropped = db_bool(r, row, ACK_DROPPED);
    if (!db_null(r, row, ACK_ERROR)) {
        const char *e = db_text(r, row, ACK_ERROR, &len);
        it->error = xstrndup(e, len);
    }
}

/* The offset this server handed out for each item under the item's lease
 * (-1: not known, or not completed); req->known counts the known ones. Only
 * the hash of each transactionId is made: queen.ack's arrays are built if
 * it is called. */
static int64_t *look_up_offsets(ack_request *req)
{
    int64_t *offsets = xcalloc(req->n ? req->n : 1, sizeof *offsets);
    for (size_t i = 0; i < req->n; i++) {
        const ack_item *it = &req->items[i];
        offsets[i] = -1;
        if (it->status == ACK_COMPLETED && it->lease_id[0]) {
            uint8_t hash[16];
            ids_txn_hash(it->txn, strlen(it->txn), hash);
            offsets[i] = lease_book_offset(req->leases, it->lease_raw, it->partition_raw, hash);
        }
        req->known += offsets[i] >= 0;
    }
    return offsets;
}

/* Whether the ack is one span of one lease: every item completed, known,
 * and of the first item's group, partition and lease (known implies the
 * first two). lo and hi: the lowest and highest offset. */
static bool one_span(const ack_request *req, int64_t *lo, int64_t *hi)
{
    if (req->n == 0 || req->known != req->n) return false;
    const ack_item *first = &req->items[0];
    *lo = *hi = req->offsets[0];
    for (size_t i = 1; i < req->n; i++) {
        const ack_item *it = &req->items[i];
        if (strcmp(it->group, first->group) || strcmp(it->partition_id, first->partition_id) ||
            strcmp(it->lease_id, first->lease_id))
            return false;
        if (req->offsets[i] < *lo) *lo = req->offsets[i];
        if (req->offsets[i] > *hi) *hi = req->offsets[i];
    }
    return true;
}

/* A released lease's messages are not acked under it again. */
static void forget_released(const ack_request *req)
{
    if (!req->leases) return;
    for (size_t i = 0; i < req->n; i++) {
        const ack_item *it = &req->items[i];
        if (it->lease_released && it->lease_id[0]) lease_book_forget(req->leases, it->lease_raw, it->partition_raw);
    }
}

/* Adds the dead_letter call for the message at the row's dlq_offset. */
static int add_handoff(db_job *job, const ack_request *req, const ack_item *it, const PGresult *r, int row)
{
    size_t len;
    const char *blob = db_bytes(r, row, ACK_DLQ_BLOB, &len);
    buf seg;
    buf_init(&seg);
    frame f;
    int64_t offset = db_int(r, row, ACK_DLQ_OFFSET);
    if (segment_decode(&seg, blob, len, req->max_segment_bytes) < 0 ||
        segment_frame_at(&seg, (size_t)(offset - db_int(r, row, ACK_DLQ_BASE)), &f) < 0) {
        buf_fini(&seg);
        return -1;
    }
    char off[24], msg[37], trace[37], created[40];
    snprintf(off, sizeof off, "%lld", (long long)offset);
    ids_uuid_format(f.message_id, msg);
    ids_uuid_format(f.trace_id, trace);
    db_time_param(db_time_us(r, row, ACK_DLQ_CREATED), created);
    char *txn = xstrndup(f.txn, f.txn_len);
    char *sub = (f.flags & FRAME_HAS_SUB) ? xstrndup(f.sub, f.sub_len) : NULL;   /* kept as producerSub */
    const char *values[11] = { it->group, it->partition_id, off, msg, txn,
                               (f.flags & FRAME_HAS_TRACE) ? trace : NULL, f.payload,
                               (f.flags & FRAME_ENCRYPTED) ? "t" : "f", it->error_text, created, sub };
    int lengths[11] = { 0, 0, 0, 0, 0, 0, (int)f.payload_len, 0, 0, 0, 0 };
    int formats[11] = { 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 };
    db_job_call(job, STMT_DEAD_LETTER, values, lengths, formats);
    free(txn);
    free(sub);
    buf_fini(&seg);
    return 0;
}

static void handoff_done(void *arg, const db_reply *reply)
{
    handoff *h = arg;
    for (size_t k = 0; k < h->n; k++) {
        ack_item *it = &h->req->items[h->items[k]];
        const PGresult *r = reply->results[k];
        if (reply->error || !r || PQntuples(r) != 1) {
            it->success = false;
            it->error = xstrdup(reply->error ? reply->error : "dead-letter hand-off failed");
            continue;
        }
        size_t len;
        if (!db_null(r, 0, 1)) { it->success = false; it->error = xstrdup(db_text(r, 0, 1, &len)); continue; }
        it->dlq = true;
        it->lease_released = db_bool(r, 0, 0);
    }
    forget_released(h->req);
    h->req->done(h->req, h->req->arg);
    free(h->items);
    free(h);
}

static void start_handoffs(ack_request *req, const PGresult *r)
{
    handoff *h = xcalloc(1, sizeof *h);
    h->items = xcalloc((size_t)PQntuples(r), sizeof *h->items);
    h->req = req;
    db_job *job = db_job_new(handoff_done, h);
    for (int row = 0; row < PQntuples(r); row++) {
        if (db_null(r, row, ACK_DLQ_OFFSET)) continue;
        size_t i = (size_t)db_int(r, row, ACK_IDX);
        if (add_handoff(job, req, &req->items[i], r, row) < 0) {
            req->items[i].success = false;
            free(req->items[i].error);
            req->items[i].error = xstrdup("dlq rejected: corrupt segment");
            continue;
        }
        h->items[h->n++] = i;
    }
    db_submit(req->pool, job);
}

static void ack_done(void *arg, const db_reply *reply)
{
    ack_request *req = arg;
    if (reply->error) {
        req->error = xstrdup(reply->error);
        snprintf(req->sqlstate, sizeof req->sqlstate, "%s", reply->sqlstate);
        req->unavailable = reply->unavailable;
        req->done(req, req->arg);
        return;
    }
    const PGresult *r = reply->results[0];
    bool handoffs = false;
    for (int row = 0; row < PQntuples(r); row++) {
        size_t i = (size_t)db_int(r, row, ACK_IDX);
        if (i < req->n) ack_take_outcome(&req->items[i], r, row);
        handoffs |= !db_null(r, row, ACK_DLQ_OFFSET);
    }
    forget_released(req);
    if (handoffs) start_handoffs(req, r);
    else req->done(req, req->arg);
}

/* queen.ack: every item resolved in SQL, with the offsets known unless
 * queen.ack_known just said they do not apply. */
static void submit_general(ack_request *req, bool with_offsets)
{
    ack_params p;
    ack_params_build(&p, req->items, req->n);
    const char *values[ACK_NPARAMS + 1];
    int lengths[ACK_NPARAMS + 1] = { 0 }, formats[ACK_NPARAMS + 1] = { 0 };
    ack_params_values(&p, values, lengths, formats);
    db_array offsets;
    db_array_init(&offsets);
    for (size_t i = 0; with_offsets && i < req->n; i++) {
        if (req->offsets[i] >= 0) db_array_int(&offsets, req->offsets[i]);
        else db_array_text(&offsets, NULL);
    }
    values[ACK_NPARAMS] = with_offsets ? db_array_literal(&offsets) : NULL;
    db_job *job = db_job_new(ack_done, req);
    db_job_call(job, STMT_ACK, values, lengths, formats);
    db_job_abandon_when(job, req->abandoned);
    db_job_note_sent(job, req->sent);
    db_array_fini(&offsets);
    ack_params_fini(&p);
    db_submit(req->pool, job);
}

enum { KNOWN_APPLIED, KNOWN_COMMITTED_BEFORE, KNOWN_RELEASED };

/* queen.ack_known's answer (r, one row): every item succeeded, or (its
 * premise did not hold: another lease is live, say) nothing changed and
 * queen.ack answers. */
static void known_answered(ack_request *req, const PGresult *r)
{
    if (PQntuples(r) != 1 || !db_bool(r, 0, KNOWN_APPLIED)) { submit_general(req, false); return; }
    int64_t before = db_int(r, 0, KNOWN_COMMITTED_BEFORE);
    bool released = db_bool(r, 0, KNOWN_RELEASED);
    for (size_t i = 0; i < req->n; i++) {
        ack_item *it = &req->items[i];
        it->success = true;
        it->lease_released = released;
        it->noop = req->offsets[i] <= before;
    }
    forget_released(req);
    req->done(req, req->arg);
}

static void known_done(void *arg, const db_reply *reply)
{
    ack_request *req = arg;
    if (reply->error) { ack_done(arg, reply); return; }   /* said as queen.ack's would be */
    known_answered(req, reply->results[0]);
}

/* One lease's span: queen.ack_known's parameters. */
static void known_call(db_job *job, const ack_request *req)
{
    char los[24], his[24];
    snprintf(los, sizeof los, "%lld", (long long)req->known_lo);
    snprintf(his, sizeof his, "%lld", (long long)req->known_hi);
    const ack_item *it = &req->items[0];
    const char *values[5] = { it->group, it->partition_id, it->lease_id, los, his };
    db_job_call(job, STMT_ACK_KNOWN, values, NULL, NULL);
}

static void known_alone(ack_request *req)
{
    db_job *job = db_job_new(known_done, req);
    known_call(job, req);
    db_job_abandon_when(job, req->abandoned);
    db_job_note_sent(job, req->sent);
    db_submit(req->pool, job);
}

/* ---- gathered acks ----
 *
 * Acks that take the fast path (one lease's span, its offsets known) are
 * gathered: while a transaction of them is in flight, the next wait here
 * and then go together, one queen.ack_known call each in one transaction,
 * one commit for all. They lock their cursors in (partition, group) byte
 * order, as queen.ack and queen.extend_lease do. An ack that waits on a
 * cursor's lock (an open transaction request holding it, a seek) must not
 * hold up the rest: the transaction gives up after 200 ms (its
 * lock_timeout, STMT_GATHERED_LOCK_TIMEOUT), and when it fails so (or
 * deadlocks), nothing of it committed and each ack is sent again alone,
 * outside the gathering, waiting as long as it must. */
struct acker {
    db_pool     *pool;
    lease_book  *leases;
    size_t       max_segment_bytes;
    bool         in_flight;
    ack_request *pending, *pending_tail;   /* through gathered_next */
    size_t       ngathering;
    uint64_t     gathered;
};

typedef struct ack_batch {
    acker       *owner;
    size_t       n;
    ack_request *members[];
} ack_batch;

static int lock_order(const void *a, const void *b)
{
    const ack_item *x = &(*(ack_request *const *)a)->items[0], *y = &(*(ack_request *const *)b)->items[0];
    int c = memcmp(x->partition_raw, y->partition_raw, 16);
    return c ? c : strcmp(x->group, y->group);
}

static void acker_send(acker *a, ack_request *list);

static void batch_done(void *arg, const db_reply *reply)
{
    ack_batch *b = arg;
    acker *a = b->owner;
    for (size_t i = 0; i < b->n; i++) {
        if (!reply->error) known_answered(b->members[i], reply->results[1 + i]);   /* after the lock_timeout */
        else if (reply->abandoned) known_done(b->members[i], reply);
        else known_alone(b->members[i]);   /* nothing committed: each again, alone */
    }
    free(b);
    a->in_flight = false;
    ack_request *next = a->pending;
    a->pending = a->pending_tail = NULL;
    a->ngathering = 0;
    if (next) acker_send(a, next);
}

/* Sends the list (through gathered_next) as one transaction; members whose
 * client has gone answer unsent, as the pool's abandoned jobs do. */
static void acker_send(acker *a, ack_request *list)
{
    size_t n = 0;
    for (ack_request *r = list; r; r = r->gathered_next) n++;
    ack_batch *b = xcalloc(1, sizeof *b + n * sizeof *b->members);
    b->owner = a;
    for (ack_request *r = list, *next; r; r = next) {
        next = r->gathered_next;
        r->gathered_next = NULL;
        if (n > 1 && r->abandoned && *r->abandoned) {
            r->error = xstrdup(DB_ABANDONED_ERROR);
            snprintf(r->sqlstate, sizeof r->sqlstate, "%s", DB_ABANDONED_SQLSTATE);
            r->done(r, r->arg);
            continue;
        }
        b->members[b->n++] = r;
    }
    if (b->n == 0) { free(b); return; }
    qsort(b->members, b->n, sizeof *b->members, lock_order);
    db_job *job = db_job_new(batch_done, b);
    db_job_call(job, STMT_GATHERED_LOCK_TIMEOUT, NULL, NULL, NULL);
    for (size_t i = 0; i < b->n; i++) known_call(job, b->members[i]);
    if (b->n == 1) {
        db_job_abandon_when(job, b->members[0]->abandoned);
        db_job_note_sent(job, b->members[0]->sent);
    } else {
        a->gathered += b->n;
        for (size_t i = 0; i < b->n; i++)   /* as it is submitted: a 504, never a 503, once it may commit */
            if (b->members[i]->sent) *b->members[i]->sent = true;
    }
    a->in_flight = true;
    db_submit(a->pool, job);
}

static void acker_gather(acker *a, ack_request *req)
{
    req->gathered_next = NULL;
    if (!a->in_flight) { acker_send(a, req); return; }
    if (a->pending_tail) a->pending_tail->gathered_next = req; else a->pending = req;
    a->pending_tail = req;
    a->ngathering++;
}

acker *acker_new(db_pool *pool, lease_book *leases, size_t max_segment_bytes)
{
    acker *a = xcalloc(1, sizeof *a);
    a->pool = pool;
    a->leases = leases;
    a->max_segment_bytes = max_segment_bytes;
    return a;
}

void acker_free(acker *a) { free(a); }

uint64_t acker_gathered(const acker *a) { return a->gathered; }

size_t acker_gathering(const acker *a) { return a->ngathering; }

void acker_submit(acker *a, ack_request *req)
{
    req->pool = a->pool;
    req->leases = a->leases;
    req->max_segment_bytes = a->max_segment_bytes;
    if (req->leases) req->offsets = look_up_offsets(req);
    if (!req->leases || !one_span(req, &req->known_lo, &req->known_hi)) {
        submit_general(req, req->known > 0);
        return;
    }
    acker_gather(a, req);
}

void ack_items_free(ack_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(items[i].txn);
        free(items[i].group);
        free(items[i].error_text);
        free(items[i].error);
    }
    free(items);
}

void ack_request_free(ack_request *req)
{
    if (!req) return;
    ack_items_free(req->items, req->n);
    free(req->offsets);
    free(req->error);
    free(req);
}

/* pop: leases and long-polls (see pop.h). */
#include "streams/pop.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"
#include "streams/encryption.h"
#include "streams/frame.h"
#include "streams/lease_book.h"
#include "streams/narrow_queues.h"
#include "streams/segment.h"

typedef struct pop_lane pop_lane;

struct popper {
    struct event_base *base;
    db_pool     *pool;
    int          recheck_ms;    /* also look again this often; 0: only when woken or due */
    size_t       max_segment_bytes;
    pop_request *waiting;       /* long-polls from submission to answer, newest first; doubly linked */
    size_t       nwaiting;      /* length of that list */
    size_t       nparked;       /* of them, those that found nothing and wait */
    uint64_t     wakeups;       /* waiting pops woken by commits */
    uint64_t     queries;       /* pop statements sent, first tries and looks again alike */
    uint64_t     reconciles;    /* of them, those sent behind the ready set's reconcile */
    lease_book  *leases;        /* what each lease handed out, for its acks */
    narrow_queues *narrow;      /* queues whose pops need no reconcile */
    pop_released_fn released;   /* told of a lease given back (popper_on_release) */
    void        *released_arg;
    bool         draining;
    pop_lane    *lanes;         /* gathered pops, one lane per kind with a statement in flight */
    uint64_t     gathered;      /* pops sent in a statement with others */
    size_t       ngathering;    /* pops waiting in lanes for the statement in flight */
};

enum { COL_QUEUE, COL_PARTITION_ID, COL_PARTITION, COL_FROM, COL_TO, COL_SEG_BASE, COL_SEG_CREATED, COL_SEG_BLOB,
       COL_MEMBER /* queen.pop_many's */ };

static void pop_query(pop_request *req);

/* A long-poll waits from its submission, before its first query is sent
 * (see popper_submit), so that no commit's wake-up can pass it by. */
static void list_waiting(pop_request *req)
{
    popper *p = req->owner;
    req->waiting = true;
    req->prev = NULL;
    req->next = p->waiting;
    if (p->waiting) p->waiting->prev = req;
    p->waiting = req;
    p->nwaiting++;
}

static void unlist_waiting(pop_request *req)
{
    popper *p = req->owner;
    if (!req->waiting) return;
    if (req->prev) req->prev->next = req->next; else p->waiting = req->next;
    if (req->next) req->next->prev = req->prev;
    req->waiting = false;
    p->nwaiting--;
}

static void finish(pop_request *req)
{
    popper *p = req->owner;
    unlist_waiting(req);
    if (req->parked) {
        req->parked = false;
        p->nparked--;
    }
    if (req->deadline) evtimer_del(req->deadline);
    if (req->recheck) evtimer_del(req->recheck);
    req->done(req, req->arg);
}

/* Sealed payloads are opened into memory the message owns. */
static int open_payload(pop_msg *m, const frame *f)
{
    if (!(f->flags & FRAME_ENCRYPTED)) return 0;
    buf plain;
    buf_init(&plain);
    if (encryption_open(f->message_id, f->payload, f->payload_len, &plain) < 0) { buf_fini(&plain); return -1; }
    m->payload_len = plain.len;
    m->owned = buf_steal(&plain);
    m->payload = m->owned;
    return 0;
}

static int add_frames(pop_request *req, const buf *seg, int64_t base, int64_t from, int64_t to, int64_t created_us)
{
    size_t pos = 0;
    frame f;
    for (int64_t off = base; off <= to && pos < seg->len; off++) {
        if (frame_decode(seg->data, seg->len, &pos, &f) < 0) return -1;
        if (off <= from) continue;
        pop_msg *m = &req->msgs[req->nmsgs++];
        m->part = req->nparts - 1;
        memcpy(m->message_id, f.message_id, 16);
        m->txn = f.txn;
        m->txn_len = f.txn_len;
        m->has_trace = f.flags & FRAME_HAS_TRACE;
        memcpy(m->trace_id, f.trace_id, 16);
        m->sub = f.sub;
        m->sub_len = f.sub_len;
        m->payload = f.payload;
        m->payload_len = f.payload_len;
        m->offset = off;
        m->created_us = created_us;
        if (open_payload(m, &f) < 0) return -1;
    }
    return 0;
}

static void copy_text(char *out, size_t cap, const PGresult *r, int row, int col)
{
    size_t n;
    const char *p = db_text(r, row, col, &n);
    snprintf(out, cap, "%.*s", (int)n, p);
}

/* Rows come grouped by partition; a row whose partition differs from the
 * previous one starts a new claimed partition. */
static void start_part(pop_request *req, const PGresult *r, int row)
{
    pop_part *part = &req->parts[req->nparts++];
    copy_text(part->queue, sizeof part->queue, r, row, COL_QUEUE);
    copy_text(part->name, sizeof part->name, r, row, COL_PARTITION);
    ids_uuid_format(db_uuid(r, row, COL_PARTITION_ID), part->id);
}

/* A result's rows; none when the call failed (or never ran). */
static int result_rows(const PGresult *r)
{
    return r && PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) : 0;
}

/* The rows of one pop: all of a result, or one member's of a gathered one. */
typedef struct pop_rows {
    const PGresult *r;
    int first, end;
} pop_rows;

static bool new_part(const pop_rows *rows, int row)
{
    return row == rows->first || memcmp(db_uuid(rows->r, row, COL_PARTITION_ID),
                                        db_uuid(rows->r, row - 1, COL_PARTITION_ID), 16) != 0;
}

static size_t claimed_total(const pop_rows *rows)
{
    size_t total = 0;
    for (int row = rows->first; row < rows->end; row++)
        if (new_part(rows, row)) total += (size_t)(db_int(rows->r, row, COL_TO) - db_int(rows->r, row, COL_FROM));
    return total;
}

static int take_rows(pop_request *req, const pop_rows *rows)
{
    const PGresult *r = rows->r;
    size_t n = (size_t)(rows->end - rows->first);
    req->msgs = xcalloc(claimed_total(rows) + 1, sizeof *req->msgs);
    req->parts = xcalloc(n, sizeof *req->parts);
    req->decoded = xcalloc(n, sizeof *req->decoded);
    req->ndecoded = n;
    for (int i = rows->first; i < rows->end; i++) {
        if (new_part(rows, i)) start_part(req, r, i);
        buf *seg = &req->decoded[i - rows->first];
        size_t len;
        const char *blob = db_bytes(r, i, COL_SEG_BLOB, &len);
        buf_init(seg);
        if (segment_decode(seg, blob, len, req->owner->max_segment_bytes) < 0) return -1;
        if (add_frames(req, seg, db_int(r, i, COL_SEG_BASE), db_int(r, i, COL_FROM),
                       db_int(r, i, COL_TO), db_time_us(r, i, COL_SEG_CREATED)) < 0)
            return -1;
    }
    return 0;
}

/* Each claimed partition's messages go in the lease book (rows and so
 * messages come grouped by partition). */
static void note_leased(pop_request *req)
{
    uint8_t lease[16], partition[16];
    if (!req->owner->leases || ids_uuid_parse(req->lease_id, strlen(req->lease_id), lease) < 0) return;
    lease_book_msg *msgs = xcalloc(req->nmsgs + 1, sizeof *msgs);
    for (size_t i = 0, start = 0; i < req->nmsgs; i++) {
        const pop_msg *m = &req->msgs[i];
        ids_txn_hash(m->txn, m->txn_len, msgs[i].hash);
        msgs[i].offset = m->offset;
        if (i + 1 < req->nmsgs && req->msgs[i + 1].part == m->part) continue;
        const char *id = req->parts[m->part].id;
        if (ids_uuid_parse(id, strlen(id), partition) == 0)
            lease_book_note(req->owner->leases, lease, partition, msgs + start, i + 1 - start, clock_mono_us());
        start = i + 1;
    }
    free(msgs);
}

static void park(pop_request *req, int64_t due_us);
static void pass_on(pop_request *done);

typedef struct release_call {
    popper *owner;
    char   *group;
} release_call;

static void release_done(void *arg, const db_reply *reply)
{
    release_call *c = arg;
    if (reply->error) log_warn("pop: cannot release the lease of messages it could not read: %s", reply->error);
    else if (c->owner->released) c->owner->released(c->owner->released_arg, c->group);
    free(c->group);
    free(c);
}

/* Messages this server cannot read (sealed under another key, or a corrupt
 * segment) are not the consumer's to hold: the lease is given back at once,
 * cursor and retry count untouched, so the partition is not blocked until
 * the lease expires and a server holding the right key serves them. They
 * are not dead-lettered: the message is not at fault, this server's key is.
 * An autoAck pop has already committed them (the statement that claims
 * commits the cursor); they stay in the log for a seek (docs/api.md). */
static void release_lease(pop_request *req)
{
    const char *values[1] = { req->lease_id };
    release_call *c = xcalloc(1, sizeof *c);
    c->owner = req->owner;
    c->group = xstrdup(req->group);
    db_submit_stmt(req->owner->pool, STMT_RELEASE_LEASE, values, release_done, c);
}

static void ask_due(pop_request *req);

/* A queue-wide pop sends the job's first call to bring its group's ready
 * set (sql/031) up to date, in a transaction of its own; queen.pop then
 * walks the set when the queue has more than 256 partitions and scans
 * otherwise (the reconcile returns at once for such a queue). Pops of one
 * partition and discovery pops always scan. A queue the last reconcile
 * found narrow has its pops sent alone (sql/035, narrow_queues.h). */
static bool walks_ready_set(const pop_request *req) { return req->queue && !req->partition; }

static bool needs_reconcile(const pop_request *req)
{
    return walks_ready_set(req) && !narrow_queues_has(req->owner->narrow, req->queue);
}

/* The reconcile only keeps the ready set current, and a set it could not
 * update is made whole by a later one: its failure (say a deadlock with a
 * group's deletion) does not fail the claim that ran after it. */
static bool only_reconcile_failed(const pop_request *req, const db_reply *reply)
{
    if (!req->reconciled || reply->failed_call != 0 || reply->unavailable) return false;
    const PGresult *r = reply->results[1];
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) return false;
    log_warn("pop %s: the ready set of group %s was not brought up to date: %s", req->queue, req->group,
             reply->error);
    return true;
}

/* A pop sent alone to a queue that has grown wide since this server last
 * looked: nothing was claimed, and it goes again behind a reconcile. */
static bool refused_as_wide(const pop_request *req, const db_reply *reply)
{
    return reply->error && !req->reconciled && strcmp(reply->sqlstate, NARROW_QUEUES_REFUSED_SQLSTATE) == 0;
}

/* What the reconcile's first column says: whether the queue is wide. */
static void note_width(const pop_request *req, const db_reply *reply)
{
    const PGresult *r = reply->results[0];
    if (!req->reconciled || !r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) return;
    narrow_queues_note(req->owner->narrow, req->queue, !db_bool(r, 0, 0));
}

/* What a pop's look answered: rows are what it claimed (none: nothing),
 * seen the time it looked (a waiting pop's, NULL otherwise). */
static void look_done(pop_request *req, const db_reply *reply, const pop_rows *rows, const PGresult *seen)
{
    req->querying = false;
    if (refused_as_wide(req, reply)) {
        log_debug("pop %s: the queue has grown wide; its pops reconcile again", req->queue);
        narrow_queues_note(req->owner->narrow, req->queue, false);
        if (req->expired || req->cancelled || req->owner->draining) { finish(req); return; }
        pop_query(req);
        return;
    }
    note_width(req, reply);
    if (reply->error && !only_reconcile_failed(req, reply)) {
        req->error = xstrdup(reply->error);
        snprintf(req->sqlstate, sizeof req->sqlstate, "%s", reply->sqlstate);
        req->unavailable = reply->unavailable;
        finish(req);
        return;
    }
    if (rows->end > rows->first) {
        log_debug("pop %s: %d segment rows for group %s", req->queue ? req->queue : "(discovery)",
                  rows->end - rows->first, req->group);
        if (req->auto_ack) req->lease_id[0] = '\0';
        if (req->cancelled && req->lease_id[0]) {   /* claimed for nobody: the group has it back at once */
            release_lease(req);
            finish(req);
            return;
        }
        if (take_rows(req, rows) < 0) {
            req->error = xstrdup("cannot read the claimed messages: corrupt segment or wrong encryption key");
            if (req->lease_id[0]) release_lease(req);
        } else if (req->lease_id[0]) {
            note_leased(req);
        }
        pass_on(req);
        finish(req);
        return;
    }
    if (!req->wait || req->expired || req->cancelled || req->owner->draining) { finish(req); return; }
    if (req->rerun) { req->rerun = false; pop_query(req); return; }
    copy_text(req->seen, sizeof req->seen, seen, 0, 0);
    ask_due(req);
}

static void query_done(void *arg, const db_reply *reply)
{
    pop_request *req = arg;
    int at = req->reconciled ? 1 : 0;   /* the claim's call */
    const PGresult *r = reply->results[at];
    pop_rows rows = { r, 0, result_rows(r) };
    look_done(req, reply, &rows, req->wait ? reply->results[at + 1] : NULL);
}

/* When what the pop could not take falls due (queen.pop_wake_at): Unix
 * microseconds, 0 when nothing will without a commit. A query failure
 * parks the pop without a due time: commits still wake it. */
static void due_done(void *arg, const db_reply *reply)
{
    pop_request *req = arg;
    req->querying = false;
    const PGresult *r = reply->error ? NULL : reply->results[0];
    int64_t due = r && PQntuples(r) > 0 && !db_null(r, 0, 0) ? db_time_us(r, 0, 0) : 0;
    if (req->expired || req->cancelled || req->owner->draining) { finish(req); return; }
    if (req->rerun) { req->rerun = false; pop_query(req); return; }   /* a commit came meanwhile */
    park(req, due);
}

/* Asked only of a pop about to park, in a round trip of its own: a pop that
 * finds something (the busy consumer's case) pays nothing for it, and one
 * that parks has nothing to deliver, so the round trip delays nobody. It
 * counts from the pop's own look (req->seen, the same transaction's now()),
 * not from its own now(): what fell due between the two is answered too. */
static void ask_due(pop_request *req)
{
    const char *values[6] = { req->queue, req->partition, req->namespace_tag, req->task_tag, req->group, req->seen };
    db_job *job = db_job_new(due_done, req);
    db_job_call(job, STMT_POP_WAKE_AT, values, NULL, NULL);
    req->querying = true;
    db_submit(req->owner->pool, job);
}

static void new_lease(pop_request *req)
{
    uint8_t lease[16];
    ids_uuid7(lease);
    ids_uuid_format(lease, req->lease_id);
}

static const char *partitions_text(const pop_request *req, char out[16])
{
    snprintf(out, 16, "%d", req->partitions > 0 ? req->partitions : 1);
    return out;
}

/* A pop sent alone: one of a partition, a discovery pop, or one behind the
 * ready set's reconcile. */
static void query_alone(pop_request *req)
{
    new_lease(req);
    char batch[16], partitions[16];
    snprintf(batch, sizeof batch, "%d", req->batch);
    const char *values[11] = { req->queue, req->partition, req->namespace_tag, req->task_tag, req->group,
                               batch, partitions_text(req, partitions), req->auto_ack ? "t" : "f",
                               req->subscription, req->lease_id, req->reconciled ? "t" : "f" };
    db_job *job = db_job_new(query_done, req);
    if (req->reconciled) {   /* takes in what was written, committed before the claim looks */
        req->owner->reconciles++;
        const char *ready[2] = { req->group, req->queue };
        db_job_call(job, STMT_READY_RECONCILE, ready, NULL, NULL);
        db_job_commit(job);
    }
    db_job_call(job, STMT_POP, values, NULL, NULL);
    if (req->wait) db_job_call(job, STMT_POP_SEEN, NULL, NULL, NULL);   /* what ask_due measures from */
    db_job_abandon_when(job, &req->cancelled);   /* the request lives until the job's done */
    db_submit(req->owner->pool, job);
}

/* ---- gathered pops ----
 *
 * Leased queue-wide pops of a narrow queue are gathered by kind (queue,
 * group, tags, subscription, partitions a pop may claim): while one
 * statement of a kind is in flight, the next pops of that kind wait for it
 * and then go together in one queen.pop_many, one look at the candidates
 * and one transaction for all of them, each under its own lease. Pops of
 * one group and queue contend for the same cursors: sent one statement
 * each, they tried the cursors one another held, and ten of them at once
 * on two cores cost PostgreSQL half as much again per message as two
 * (docs/performance.md, "CPU per message"). A pop alone still goes at
 * once: gathering delays a pop only behind a statement of its own kind.
 * A lane lives while a statement of its kind is in flight. */
struct pop_lane {
    pop_lane    *next;
    char        *queue, *group, *namespace_tag, *task_tag, *subscription;
    int          partitions;
    pop_request *pending, *pending_tail;   /* through gathered_next */
};

typedef struct pop_gather {
    pop_lane    *lane;
    bool         asks_seen;   /* the job's second call: the time it looked (STMT_POP_SEEN) */
    size_t       n;
    pop_request *members[];
} pop_gather;

/* An autoAck pop goes alone: its claim commits what it takes, so it must stay
 * droppable unsent (db_job_abandon_when) until it leaves for PostgreSQL,
 * whatever other clients do. */
static bool gatherable(const pop_request *req) { return walks_ready_set(req) && !req->reconciled && !req->auto_ack; }

static bool same_text(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool lane_serves(const pop_lane *lane, const pop_request *req)
{
    return strcmp(lane->queue, req->queue) == 0 && strcmp(lane->group, req->group) == 0 &&
           same_text(lane->namespace_tag, req->namespace_tag) && same_text(lane->task_tag, req->task_tag) &&
           same_text(lane->subscription, req->subscription) && lane->partitions == req->partitions;
}

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

static pop_lane *lane_find(const popper *p, const pop_request *req)
{
    for (pop_lane *lane = p->lanes; lane; lane = lane->next)
        if (lane_serves(lane, req)) return lane;
    return NULL;
}

static pop_lane *lane_new(popper *p, const pop_request *req)
{
    pop_lane *lane = xcalloc(1, sizeof *lane);
    lane->queue = xstrdup(req->queue);
    lane->group = xstrdup(req->group);
    lane->namespace_tag = dup_or_null(req->namespace_tag);
    lane->task_tag = dup_or_null(req->task_tag);
    lane->subscription = dup_or_null(req->subscription);
    lane->partitions = req->partitions;
    lane->next = p->lanes;
    p->lanes = lane;
    return lane;
}

static void lane_free(popper *p, pop_lane *lane)
{
    for (pop_lane **at = &p->lanes; *at; at = &(*at)->next)
        if (*at == lane) { *at = lane->next; break; }
    free(lane->queue);
    free(lane->group);
    free(lane->namespace_tag);
    free(lane->task_tag);
    free(lane->subscription);
    free(lane);
}

static void lane_append(popper *p, pop_lane *lane, pop_request *req)
{
    req->gathered_next = NULL;
    if (lane->pending_tail) lane->pending_tail->gathered_next = req; else lane->pending = req;
    lane->pending_tail = req;
    p->ngathering++;
}

static void gather_done(void *arg, const db_reply *reply);

/* Sends the pops waiting in the lane as one statement. */
static void lane_send(popper *p, pop_lane *lane)
{
    size_t n = 0;
    for (pop_request *m = lane->pending; m; m = m->gathered_next) n++;
    pop_gather *g = xcalloc(1, sizeof *g + n * sizeof *g->members);
    g->lane = lane;
    db_array batches, leases;
    db_array_init(&batches);
    db_array_init(&leases);
    for (pop_request *m = lane->pending, *after; m; m = after) {
        after = m->gathered_next;
        m->gathered_next = NULL;
        new_lease(m);
        db_array_int(&batches, m->batch);
        db_array_text(&leases, m->lease_id);
        g->asks_seen = g->asks_seen || m->wait;
        g->members[g->n++] = m;
    }
    lane->pending = lane->pending_tail = NULL;
    p->ngathering -= n;
    char partitions[16];
    const pop_request *first = g->members[0];
    const char *values[10] = { first->queue, NULL, first->namespace_tag, first->task_tag, first->group,
                               db_array_literal(&batches), partitions_text(first, partitions), "f",
                               first->subscription, db_array_literal(&leases) };
    db_job *job = db_job_new(gather_done, g);
    db_job_call(job, STMT_POP_MANY, values, NULL, NULL);
    if (g->asks_seen) db_job_call(job, STMT_POP_SEEN, NULL, NULL, NULL);   /* what ask_due measures from */
    if (n == 1) db_job_abandon_when(job, &first->cancelled);
    db_array_fini(&batches);
    db_array_fini(&leases);
    if (n > 1) p->gathered += n;
    db_submit(p->pool, job);
}

/* A member's rows: from first on, those of member (1-based). */
static pop_rows member_rows(const PGresult *r, int first, int member)
{
    pop_rows rows = { r, first, first };
    int total = result_rows(r);
    while (rows.end < total && db_int(r, rows.end, COL_MEMBER) == member) rows.end++;
    return rows;
}

/* Each member takes its rows; then the pops that gathered meanwhile go, or
 * the lane, idle, goes. (A pop that left or ran out of time while it
 * waited was taken back from the lane then: lane_take_back.) */
static void gather_done(void *arg, const db_reply *reply)
{
    pop_gather *g = arg;
    pop_lane *lane = g->lane;
    popper *p = g->members[0]->owner;
    const PGresult *r = reply->results[0];
    const PGresult *seen = g->asks_seen ? reply->results[1] : NULL;
    int at = 0;
    for (size_t i = 0; i < g->n; i++) {
        pop_rows rows = member_rows(r, at, (int)i + 1);
        at = rows.end;
        look_done(g->members[i], reply, &rows, seen);
    }
    free(g);
    if (lane->pending) lane_send(p, lane);
    else lane_free(p, lane);
}

/* A pop joins the statement of its kind in flight, or goes at once. */
static void lane_add(popper *p, pop_request *req)
{
    pop_lane *lane = lane_find(p, req);
    bool in_flight = lane != NULL;
    if (!lane) lane = lane_new(p, req);
    lane_append(p, lane, req);
    if (!in_flight) lane_send(p, lane);
}

/* Takes req out of the pops waiting to be gathered, if it is one. */
static bool lane_take_back(popper *p, pop_request *req)
{
    for (pop_lane *lane = p->lanes; lane; lane = lane->next) {
        pop_request *prev = NULL;
        for (pop_request *m = lane->pending; m; prev = m, m = m->gathered_next) {
            if (m != req) continue;
            if (prev) prev->gathered_next = m->gathered_next; else lane->pending = m->gathered_next;
            if (lane->pending_tail == m) lane->pending_tail = prev;
            m->gathered_next = NULL;
            p->ngathering--;
            return true;
        }
    }
    return false;
}

static void pop_query(pop_request *req)
{
    req->reconciled = needs_reconcile(req);
    req->querying = true;
    req->owner->queries++;
    if (gatherable(req)) lane_add(req->owner, req);
    else query_alone(req);
}

/* ---- parking ---- */

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    pop_request *req = arg;
    req->expired = true;
    if (req->querying && lane_take_back(req->owner, req)) req->querying = false;   /* never sent */
    if (!req->querying) finish(req);
}

static void on_recheck(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    pop_request *req = arg;
    if (req->querying || req->cancelled) { req->rerun = !req->cancelled; return; }
    pop_query(req);
}

/* Parked pops do not poll: commits wake them (this server's first-hand,
 * the others' through the task hub's channel), and a timer only for what
 * falls due by time (due_us), or every recheck_ms when that is set. The
 * pop has been on the waiting list since its submission: parking only
 * counts it and sets the timer. */
static void park(pop_request *req, int64_t due_us)
{
    popper *p = req->owner;
    if (!req->parked) {
        req->parked = true;
        p->nparked++;
    }
    int64_t ms = p->recheck_ms > 0 ? p->recheck_ms : -1;
    if (due_us > 0) {
        int64_t until = (due_us - clock_wall_us()) / 1000 + 1;   /* +1: not a moment early */
        if (until < 1) until = 1;
        if (ms < 0 || until < ms) ms = until;
    }
    if (ms < 0) { evtimer_del(req->recheck); return; }
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
    evtimer_add(req->recheck, &tv);
}

static bool written(const char *partition, const char *const *partitions, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(partition, partitions[i]) == 0) return true;
    return false;
}

/* Whether a and b wait for the same messages, one serving as well as the
 * other: the same group, and the same queue or, discovery pops, the same
 * tags. Discovery pops of other tags are not: the server does not know
 * which queues carry which tags, so each such kind counts on its own (one
 * used to take the wake-up a commit meant for a queue's pops, and the
 * queue's pop waited for its deadline). */
static bool interchangeable(const pop_request *a, const pop_request *b)
{
    if (!same_text(a->queue, b->queue) || strcmp(a->group, b->group) != 0) return false;
    return a->queue || (same_text(a->namespace_tag, b->namespace_tag) && same_text(a->task_tag, b->task_tag));
}

/* Pops like req woken so far by this commit; groups[] holds one
 * representative request per kind seen (at most as many as are waiting). */
static size_t *group_count(pop_request **groups, size_t *counts, size_t *ngroups, pop_request *req)
{
    for (size_t g = 0; g < *ngroups; g++)
        if (interchangeable(groups[g], req)) return &counts[g];
    groups[*ngroups] = req;
    counts[*ngroups] = 0;
    return &counts[(*ngroups)++];
}

/* A pop whose query (or due-time question) is in flight may have looked
 * before this commit: it looks again once that answers empty. */
static void wake(pop_request *req)
{
    if (req->querying) { req->rerun = true; return; }
    evtimer_del(req->recheck);
    pop_query(req);
}

/* Whether r, of any partition, waits where done just took from. */
static bool waits_beside(const pop_request *r, const pop_request *done)
{
    return r != done && !r->partition && interchangeable(r, done);
}

/* A pop that claimed something may not have taken all there was (a commit
 * wakes only as many pops as it can serve, a woken pop can lose the
 * partition it was meant for to a pop of another server, and a pop woken
 * while still looking may have claimed what was there before the commit):
 * the longest waiting pop beside it looks next. One query per successful
 * claim, instead of one per parked pop per commit. */
static void pass_on(pop_request *done)
{
    pop_request *oldest = NULL;
    for (pop_request *r = done->owner->waiting; r; r = r->next)
        if (waits_beside(r, done)) oldest = r;
    if (oldest) wake(oldest);
}

void popper_wake(popper *p, const char *queue, const char *const *partitions, size_t n)
{
    if (p->nwaiting == 0) return;   /* the common case: every commit comes here */
    size_t waiting = p->nwaiting, ngroups = 0, woken = 0;
    pop_request **groups = xcalloc(waiting, sizeof *groups);
    size_t *counts = xcalloc(waiting, sizeof *counts);
    pop_request *oldest = p->waiting, *prev;
    while (oldest && oldest->next) oldest = oldest->next;
    for (pop_request *req = oldest; req; req = prev) {   /* the longest waiting first */
        prev = req->prev;
        if (req->queue && strcmp(req->queue, queue) != 0) continue;
        if (partitions && req->partition && !written(req->partition, partitions, n)) continue;
        size_t *count = partitions && !req->partition ? group_count(groups, counts, &ngroups, req) : NULL;
        if (count && (*count)++ >= n) continue;
        woken++;
        p->wakeups++;
        wake(req);
    }
    log_debug("pop: a commit to %zu partitions of %s woke %zu of %zu waiting pops", n, queue, woken, waiting);
    free(groups);
    free(counts);
}

void popper_wake_all(popper *p)
{
    for (pop_request *req = p->waiting, *next; req; req = next) {   /* not commits: not counted as wake-ups */
        next = req->next;
        wake(req);
    }
}

void popper_wake_group(popper *p, const char *group)
{
    for (pop_request *req = p->waiting, *next; req; req = next) {
        next = req->next;
        if (strcmp(req->group, group) != 0) continue;
        p->wakeups++;
        wake(req);
    }
}

/* A query still waiting for a connection is dropped unsent by the pool's
 * reap, which the server schedules for every leaving client (abandon.c);
 * one still waiting to be gathered, here. */
void popper_cancel(popper *p, pop_request *req)
{
    req->cancelled = true;
    if (req->querying && lane_take_back(p, req)) req->querying = false;   /* waiting to be gathered: never sent */
    if (!req->querying) finish(req);
}

void popper_drain(popper *p)
{
    p->draining = true;
    while (p->waiting) {
        pop_request *req = p->waiting;
        if (req->querying) unlist_waiting(req);   /* answers when its query returns */
        else finish(req);
    }
}

/* A long-poll is on the waiting list before its first query is sent. A
 * commit told to this server after that (first-hand, or by NOTIFY from
 * another server, which sends it after its own commit) wakes it wherever
 * it is: it looks again if the look in flight finds nothing. A commit told
 * before that had committed before the query was sent, so the query's
 * snapshot, taken when PostgreSQL starts it, sees what it wrote. Either
 * way nothing the pop could take is left for its deadline (issue 32: a
 * pop listed only when it parked, after its query and the due-time
 * question, missed the commits told in between). */
void popper_submit(popper *p, pop_request *req)
{
    req->owner = p;
    if (req->wait && !p->draining) {
        req->deadline = evtimer_new(p->base, on_deadline, req);
        req->recheck = evtimer_new(p->base, on_recheck, req);
        struct timeval tv = { req->timeout_ms / 1000, (req->timeout_ms % 1000) * 1000 };
        evtimer_add(req->deadline, &tv);
        list_waiting(req);
    } else {
        req->wait = false;
    }
    pop_query(req);
}

void pop_request_free_timers(pop_request *req)
{
    if (req->deadline) event_free(req->deadline);
    if (req->recheck) event_free(req->recheck);
    req->deadline = req->recheck = NULL;
}

void pop_request_free(pop_request *req)
{
    if (!req) return;
    pop_request_free_timers(req);
    for (size_t i = 0; i < req->ndecoded; i++) buf_fini(&req->decoded[i]);
    free(req->decoded);
    for (size_t i = 0; i < req->nmsgs; i++) free(req->msgs[i].owned);
    free(req->msgs);
    free(req->parts);
    free(req->namespace_tag);
    free(req->task_tag);
    free(req->error);
    free(req->queue);
    free(req->partition);
    free(req->group);
    free(req->subscription);
    free(req);
}

popper *popper_new(struct event_base *base, db_pool *pool, lease_book *leases, int recheck_ms,
                   size_t max_segment_bytes)
{
    popper *p = xcalloc(1, sizeof *p);
    p->leases = leases;
    p->base = base;
    p->pool = pool;
    p->recheck_ms = recheck_ms;
    p->max_segment_bytes = max_segment_bytes;
    p->narrow = narrow_queues_new();
    return p;
}

void popper_on_release(popper *p, pop_released_fn released, void *arg)
{
    p->released = released;
    p->released_arg = arg;
}

void popper_free(popper *p)
{
    if (!p) return;
    while (p->lanes) lane_free(p, p->lanes);
    narrow_queues_free(p->narrow);
    free(p);
}

size_t popper_parked(const popper *p) { return p->nparked; }

uint64_t popper_wakeups(const popper *p) { return p->wakeups; }

uint64_t popper_queries(const popper *p) { return p->queries; }

uint64_t popper_reconciles(const popper *p) { return p->reconciles; }

uint64_t popper_gathered(const popper *p) { return p->gathered; }

size_t popper_gathering(const popper *p) { return p->ngathering; }

/* push: push fusion (see push.h).
 *
 * A flush hands the gathered items to a push plan (push_plan.c: sorted by
 * queue and partition, so every flush of every server locks partitions in
 * the same order, one segment per partition) and sends its one
 * queen.push_flush call, a transaction of its own, so the flush commits
 * whole or not at all. When a client-chosen transactionId turns out to be
 * a duplicate, or a queue turns out to require encryption, push_flush aborts
 * saying so; the plan takes note and the same flush is sent again, so a
 * flush stays all-or-nothing. A deadlock or serialization failure is sent
 * again too. Flushes in flight at once take the batches of different
 * lanes (partitions), so that they do not queue on each other's partition
 * row locks (see Lanes below). */
#include "streams/push.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "base/buf.h"
#include "base/clock.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "streams/push_plan.h"

#define MAX_ATTEMPTS 64

struct pusher {
    db_pool        *pool;
    push_limits     limits;
    int             inflight;
    bool           *lane_busy;       /* max_flushes lanes: a flush in flight on each */
    push_batch     *head, *tail;     /* gathered, not yet flushing */
    struct event   *kick;
    push_commit_fn  on_commit;
    void           *commit_arg;
};

typedef struct flush {
    pusher      *p;
    push_batch  *batches;            /* linked through next */
    push_item  **all;                /* every item of the batches */
    size_t       nall;
    push_plan    plan;
    int          lane;               /* of pusher.lane_busy */
    int          attempt;
    int64_t      started_us;         /* for the debug line */
} flush;

static void flush_send(flush *f);

static void flush_finish(flush *f, const char *error, bool unavailable)
{
    pusher *p = f->p;
    const push_plan *plan = &f->plan;
    if (!error) push_plan_announce(plan, p->on_commit, p->commit_arg);
    for (push_batch *b = f->batches, *next; b; b = next) {
        next = b->next;
        if (error) { b->error = xstrdup(error); b->unavailable = unavailable; }
        b->done(b, b->arg);
    }
    p->lane_busy[f->lane] = false;
    push_plan_fini(&f->plan);
    free(f->all);
    free(f);
    p->inflight--;
    if (p->head) event_active(p->kick, EV_TIMEOUT, 0);
}

static void flush_done(void *arg, const db_reply *reply)
{
    flush *f = arg;
    if (!reply->error) {
        push_plan_resolve(&f->plan, reply);
        log_debug("push flush: %zu messages, %zu partitions, %d retries, %.1f ms", f->plan.nitems, f->plan.ngroups,
                  f->attempt, (double)(clock_mono_us() - f->started_us) / 1000.0);
        flush_finish(f, NULL, false);
        return;
    }
    if (++f->attempt < MAX_ATTEMPTS &&
        (push_plan_take_duplicates(&f->plan, reply) || push_plan_take_encryption(&f->plan, reply) ||
         db_reply_retryable(reply))) {
        log_debug("push flush: sent again (%s)", reply->sqlstate);
        flush_send(f);
        return;
    }
    log_warn("push flush failed: %s", reply->error);
    flush_finish(f, reply->error, reply->unavailable);
}

static void flush_send(flush *f)
{
    push_plan_build(&f->plan, f->all, f->nall);
    if (f->plan.nitems == 0) { flush_finish(f, NULL, false); return; }
    db_job *job = db_job_new(flush_done, f);
    push_plan_calls(&f->plan, job, f->p->limits.zstd_level);
    db_submit(f->p->pool, job);
}

static void collect_all(flush *f, size_t messages)
{
    f->all = xmalloc((messages ? messages : 1) * sizeof *f->all);
    for (push_batch *b = f->batches; b; b = b->next)
        for (size_t i = 0; i < b->n; i++) f->all[f->nall++] = &b->items[i];
}

/* ---- gathering ---- */

/* Nobody waits for this batch's reply any more: writing it would store
 * messages the client may well send again. */
static void drop_abandoned(push_batch *b)
{
    log_info("push: %zu messages not written: the client is gone", b->n);
    b->error = xstrdup("the client is gone; nothing was written");
    b->done(b, b->arg);
}

/* Lanes: flushes in flight at once lock their partitions in one order, so
 * two that share a partition run one after the other, the second waiting
 * on the first's row locks until it commits. A batch's lane is that of its
 * first item's partition, and a flush takes the batches of its own lane, so
 * concurrent flushes touch disjoint partitions (a batch spanning lanes may
 * still meet another). A lane with none of its own takes every lane's, as
 * all flushes did before lanes: pushes to one partition still have a second
 * flush ready behind the first. */
int push_lane(const char *queue, const char *partition, int lanes)
{
    uint64_t h = XXH3_64bits_withSeed(partition, strlen(partition), XXH3_64bits(queue, strlen(queue)));
    return (int)(h % (uint64_t)lanes);
}

static int batch_lane(const pusher *p, const push_batch *b)
{
    if (b->n == 0) return 0;
    return push_lane(b->items[0].queue, b->items[0].partition, p->limits.max_flushes);
}

static bool lane_pending(const pusher *p, int lane)
{
    for (const push_batch *b = p->head; b; b = b->next)
        if (b->lane == lane) return true;
    return false;
}

/* A free lane, one with batches of its own first; -1: none is free. */
static int free_lane(const pusher *p)
{
    int any = -1;
    for (int lane = 0; lane < p->limits.max_flushes; lane++) {
        if (p->lane_busy[lane]) continue;
        if (lane_pending(p, lane)) return lane;
        if (any < 0) any = lane;
    }
    return any;
}

/* Unlinks b, whose predecessor in the gathered list is prev (NULL: head). */
static void unlink_batch(pusher *p, push_batch *prev, push_batch *b)
{
    if (prev) prev->next = b->next; else p->head = b->next;
    if (p->tail == b) p->tail = prev;
    b->next = NULL;
}

/* Takes gathered batches in arrival order, up to flush_messages: those of
 * the lane, or all when it has none (see Lanes). */
static flush *take_gathered(pusher *p, int lane)
{
    flush *f = xcalloc(1, sizeof *f);
    f->p = p;
    f->lane = lane;
    f->started_us = clock_mono_us();
    bool own = lane_pending(p, lane);
    push_batch **tail = &f->batches, *prev = NULL, *next;
    size_t messages = 0;
    for (push_batch *b = p->head; b; b = next) {
        next = b->next;
        if (own && b->lane != lane) { prev = b; continue; }
        if (messages > 0 && messages + b->n > (size_t)p->limits.flush_messages) break;
        unlink_batch(p, prev, b);
        if (b->abandoned && *b->abandoned) { drop_abandoned(b); continue; }
        if (b->sent) *b->sent = true;   /* the flush is sent whole, whoever gives up from now on */
        *tail = b;
        tail = &b->next;
        messages += b->n;
    }
    push_plan_init(&f->plan);
    collect_all(f, messages);
    return f;
}

static void kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    pusher *p = arg;
    int lane;
    while (p->head && (lane = free_lane(p)) >= 0) {
        p->inflight++;
        p->lane_busy[lane] = true;
        flush_send(take_gathered(p, lane));
    }
}

const char *push_status_name(push_status status)
{
    static const char *const names[] = { "pending", "queued", "duplicate", "buffered" };
    return names[status];
}

void push_item_prepare(push_item *it)
{
    ids_uuid7(it->message_id);
    ids_txn_hash(it->txn, strlen(it->txn), it->hash);
    it->status = PUSH_PENDING;
    it->dup_of = NULL;
}

void pusher_submit(pusher *p, push_batch *batch)
{
    for (size_t i = 0; i < batch->n; i++) push_item_prepare(&batch->items[i]);
    batch->lane = batch_lane(p, batch);
    batch->next = NULL;
    if (p->tail) p->tail->next = batch; else p->head = batch;
    p->tail = batch;
    /* Deferred to the end of this loop iteration, so every request read in
     * the same iteration joins the same flush. */
    event_active(p->kick, EV_TIMEOUT, 0);
}

bool pusher_idle(const pusher *p) { return p->inflight == 0 && !p->head; }

pusher *pusher_new(struct event_base *base, db_pool *pool, push_limits limits,
                   push_commit_fn on_commit, void *commit_arg)
{
    pusher *p = xcalloc(1, sizeof *p);
    p->pool = pool;
    p->limits = limits;
    p->on_commit = on_commit;
    p->commit_arg = commit_arg;
    p->lane_busy = xcalloc((size_t)limits.max_flushes, sizeof *p->lane_busy);
    p->kick = event_new(base, -1, 0, kick, p);
    return p;
}

void pusher_free(pusher *p)
{
    if (!p) return;
    event_free(p->kick);
    free(p->lane_busy);
    free(p);
}

void push_items_free(push_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(items[i].queue);
        free(items[i].partition);
        free(items[i].txn);
        free(items[i].sub);
    }
    free(items);
}

void push_batch_free(push_batch *batch)
{
    if (!batch) return;
    push_items_free(batch->items, batch->n);
    free(batch->error);
    free(batch);
}

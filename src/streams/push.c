/* push: push fusion (see push.h).
 *
 * A flush sorts the gathered items by (queue, partition) so that partition
 * row locks are always taken in the same order by every flush of every
 * server, encodes one segment per partition, and sends push_segment x N as
 * one pipelined job: the calls before a pipeline Sync run in one implicit
 * transaction, so the flush commits whole or not at all. When a
 * client-chosen transactionId turns out to be a duplicate, push_segment
 * aborts the transaction naming the duplicates; they are marked and the same
 * flush is retried without them, so a flush stays all-or-nothing. */
#include "streams/push.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/ids.h"
#include "base/log.h"
#include "streams/frame.h"
#include "streams/segment.h"

#define DUPLICATE_SQLSTATE "SLD01"
#define MAX_ATTEMPTS 64

struct pusher {
    db_pool        *pool;
    push_limits     limits;
    int             inflight;
    push_batch     *head, *tail;     /* gathered, not yet flushing */
    struct event   *kick;
    push_commit_fn  on_commit;
    void           *commit_arg;
};

typedef struct group {               /* one partition's items in a flush */
    push_item **items;
    size_t      n;
} group;

typedef struct flush {
    pusher      *p;
    push_batch  *batches;            /* linked through next */
    push_item  **items;              /* unresolved items, sorted */
    size_t       nitems;
    group       *groups;
    size_t       ngroups;
    int          attempt;
} flush;

static void flush_send(flush *f);

/* ---- grouping ---- */

static int item_order(const void *a, const void *b)
{
    const push_item *x = *(push_item *const *)a, *y = *(push_item *const *)b;
    int c = strcmp(x->queue, y->queue);
    if (c == 0) c = strcmp(x->partition, y->partition);
    if (c == 0) c = x < y ? -1 : x > y;   /* items are contiguous per batch: keeps arrival order */
    return c;
}

static void collect_items(flush *f)
{
    size_t n = 0;
    for (push_batch *b = f->batches; b; b = b->next)
        for (size_t i = 0; i < b->n; i++) n += b->items[i].status == PUSH_PENDING;
    free(f->items);
    f->items = malloc((n ? n : 1) * sizeof *f->items);
    if (!f->items) abort();
    f->nitems = 0;
    for (push_batch *b = f->batches; b; b = b->next)
        for (size_t i = 0; i < b->n; i++)
            if (b->items[i].status == PUSH_PENDING) f->items[f->nitems++] = &b->items[i];
    qsort(f->items, f->nitems, sizeof *f->items, item_order);
}

static void build_groups(flush *f)
{
    free(f->groups);
    f->groups = calloc(f->nitems ? f->nitems : 1, sizeof *f->groups);
    if (!f->groups) abort();
    f->ngroups = 0;
    for (size_t i = 0; i < f->nitems; i++) {
        group *g = f->ngroups ? &f->groups[f->ngroups - 1] : NULL;
        if (!g || strcmp(g->items[0]->queue, f->items[i]->queue) != 0 ||
            strcmp(g->items[0]->partition, f->items[i]->partition) != 0) {
            g = &f->groups[f->ngroups++];
            g->items = &f->items[i];
        }
        g->n++;
    }
}

/* Later items repeating a client transactionId of the same partition in this
 * flush are duplicates of the first (open addressing on the hash). */
static void mark_repeats(group *g)
{
    size_t cap = 16;
    while (cap < g->n * 2) cap *= 2;
    push_item **table = calloc(cap, sizeof *table);
    if (!table) abort();
    for (size_t i = 0; i < g->n; i++) {
        push_item *it = g->items[i];
        it->dup_of = NULL;
        if (!it->txn_given) continue;
        size_t h;
        memcpy(&h, it->hash, sizeof h);
        for (h &= cap - 1; table[h]; h = (h + 1) & (cap - 1))
            if (memcmp(table[h]->hash, it->hash, 16) == 0) { it->dup_of = table[h]; break; }
        if (!it->dup_of) table[h] = it;
    }
    free(table);
}

/* ---- encoding ---- */

static void encode_items(push_item *const *items, size_t n, int level, buf *blob, buf *hashes, buf *ids,
                         int *count, bool *probe)
{
    buf frames;
    buf_init(&frames);
    *count = 0;
    *probe = false;
    for (size_t i = 0; i < n; i++) {
        const push_item *it = items[i];
        if (it->dup_of) continue;
        frame fr = { it->has_trace ? FRAME_HAS_TRACE : 0, {0}, it->txn, strlen(it->txn), {0},
                     it->payload, it->payload_len };
        memcpy(fr.message_id, it->message_id, 16);
        memcpy(fr.trace_id, it->trace_id, 16);
        frame_encode(&frames, &fr);
        buf_append(hashes, it->hash, 16);
        buf_append(ids, it->message_id, 16);
        *probe |= it->txn_given;
        (*count)++;
    }
    segment_encode(blob, frames.data, frames.len, level);
    buf_fini(&frames);
}

void push_segment_call(db_job *job, push_item *const *items, size_t n, int level)
{
    buf blob, hashes, ids;
    buf_init(&blob); buf_init(&hashes); buf_init(&ids);
    int count;
    bool probe;
    encode_items(items, n, level, &blob, &hashes, &ids, &count, &probe);
    char count_text[16];
    snprintf(count_text, sizeof count_text, "%d", count);
    const char *values[7] = { items[0]->queue, items[0]->partition, count_text,
                              blob.data, hashes.data, ids.data, probe ? "t" : "f" };
    int lengths[7] = { 0, 0, 0, (int)blob.len, (int)hashes.len, (int)ids.len, 0 };
    int formats[7] = { 0, 0, 0, 1, 1, 1, 0 };
    db_job_call(job, STMT_PUSH_SEGMENT, values, lengths, formats);
    buf_fini(&blob); buf_fini(&hashes); buf_fini(&ids);
}

void push_item_prepare(push_item *it)
{
    ids_uuid7(it->message_id);
    ids_txn_hash(it->txn, strlen(it->txn), it->hash);
    it->status = PUSH_PENDING;
    it->dup_of = NULL;
}

/* ---- completion ---- */

static group *group_of_call(flush *f, int call)
{
    return call >= 0 && (size_t)call < f->ngroups ? &f->groups[call] : NULL;
}

/* DETAIL "frame:message-id-hex,...": frame numbers count written frames only. */
static void mark_duplicates(group *g, const char *detail)
{
    const char *p = detail;
    while (*p) {
        char *end;
        long frame_no = strtol(p, &end, 10);
        if (*end != ':' || strlen(end + 1) < 32) return;
        long k = -1;
        for (size_t i = 0; i < g->n; i++) {
            if (g->items[i]->dup_of) continue;
            if (++k != frame_no) continue;
            push_item *it = g->items[i];
            it->status = PUSH_DUPLICATE;
            for (int b = 0; b < 16; b++) {
                unsigned v;
                sscanf(end + 1 + 2 * b, "%2x", &v);
                it->message_id[b] = (uint8_t)v;
            }
            for (size_t j = i + 1; j < g->n; j++)   /* its repeats in this flush too */
                if (g->items[j]->dup_of == it) {
                    g->items[j]->status = PUSH_DUPLICATE;
                    memcpy(g->items[j]->message_id, it->message_id, 16);
                }
            break;
        }
        p = end + 33;
        if (*p == ',') p++;
    }
}

static void resolve_written(flush *f)
{
    for (size_t i = 0; i < f->nitems; i++)
        if (!f->items[i]->dup_of && f->items[i]->status == PUSH_PENDING) f->items[i]->status = PUSH_QUEUED;
    for (size_t i = 0; i < f->nitems; i++) {
        push_item *it = f->items[i];
        if (!it->dup_of) continue;
        it->status = PUSH_DUPLICATE;
        memcpy(it->message_id, it->dup_of->message_id, 16);
    }
}

static void flush_finish(flush *f, const char *error, bool unavailable)
{
    pusher *p = f->p;
    if (!error)
        for (size_t g = 0; g < f->ngroups; g++)
            if (g == 0 || strcmp(f->groups[g].items[0]->queue, f->groups[g - 1].items[0]->queue) != 0)
                p->on_commit(p->commit_arg, f->groups[g].items[0]->queue);
    for (push_batch *b = f->batches, *next; b; b = next) {
        next = b->next;
        if (error) { b->error = strdup(error); b->unavailable = unavailable; }
        b->done(b, b->arg);
    }
    free(f->items);
    free(f->groups);
    free(f);
    p->inflight--;
    if (p->head) event_active(p->kick, EV_TIMEOUT, 0);
}

static void flush_done(void *arg, const db_reply *reply)
{
    flush *f = arg;
    if (!reply->error) { resolve_written(f); flush_finish(f, NULL, false); return; }
    group *g = group_of_call(f, reply->failed_call);
    if (g && strcmp(reply->sqlstate, DUPLICATE_SQLSTATE) == 0 && ++f->attempt < MAX_ATTEMPTS) {
        mark_duplicates(g, reply->detail);
        flush_send(f);
        return;
    }
    log_warn("push flush failed: %s", reply->error);
    flush_finish(f, reply->error, reply->unavailable);
}

static void flush_send(flush *f)
{
    collect_items(f);
    if (f->nitems == 0) { f->ngroups = 0; flush_finish(f, NULL, false); return; }
    build_groups(f);
    db_job *job = db_job_new(flush_done, f);
    for (size_t g = 0; g < f->ngroups; g++) {
        mark_repeats(&f->groups[g]);
        push_segment_call(job, f->groups[g].items, f->groups[g].n, f->p->limits.zstd_level);
    }
    db_submit(f->p->pool, job);
}

/* ---- gathering ---- */

static flush *take_gathered(pusher *p)
{
    flush *f = calloc(1, sizeof *f);
    if (!f) abort();
    f->p = p;
    push_batch **tail = &f->batches;
    size_t messages = 0;
    while (p->head && (messages == 0 || messages + p->head->n <= (size_t)p->limits.flush_messages)) {
        push_batch *b = p->head;
        p->head = b->next;
        b->next = NULL;
        *tail = b;
        tail = &b->next;
        messages += b->n;
    }
    if (!p->head) p->tail = NULL;
    return f;
}

static void kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    pusher *p = arg;
    while (p->head && p->inflight < p->limits.max_flushes) {
        p->inflight++;
        flush_send(take_gathered(p));
    }
}

void pusher_submit(pusher *p, push_batch *batch)
{
    for (size_t i = 0; i < batch->n; i++) push_item_prepare(&batch->items[i]);
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
    pusher *p = calloc(1, sizeof *p);
    if (!p) abort();
    p->pool = pool;
    p->limits = limits;
    p->on_commit = on_commit;
    p->commit_arg = commit_arg;
    p->kick = event_new(base, -1, 0, kick, p);
    return p;
}

void pusher_free(pusher *p)
{
    if (!p) return;
    event_free(p->kick);
    free(p);
}

void push_batch_free(push_batch *batch)
{
    if (!batch) return;
    for (size_t i = 0; i < batch->n; i++) {
        free(batch->items[i].queue);
        free(batch->items[i].partition);
        free(batch->items[i].txn);
    }
    free(batch->items);
    free(batch->error);
    free(batch);
}

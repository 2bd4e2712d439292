/* push_plan: sorting, grouping and encoding of pushed items (see push_plan.h). */
#include "streams/push_plan.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "base/buf.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "streams/encryption.h"
#include "streams/frame.h"
#include "streams/segment.h"

/* Grouping is linear: a hash table maps each (queue, partition) to its
 * group, the few groups are sorted by name (the lock order), and a counting
 * pass lays the items out group by group in arrival order. */
typedef struct group_slot {
    const push_item *first;     /* NULL: empty slot */
    size_t           group;
} group_slot;

static uint64_t group_hash(const push_item *it)
{
    return XXH3_64bits_withSeed(it->partition, strlen(it->partition), XXH3_64bits(it->queue, strlen(it->queue)));
}

static bool same_group(const push_item *a, const push_item *b)
{
    return strcmp(a->queue, b->queue) == 0 && strcmp(a->partition, b->partition) == 0;
}

static int group_order(const void *a, const void *b)
{
    const push_group *x = a, *y = b;
    int c = strcmp(x->items[0]->queue, y->items[0]->queue);
    return c ? c : strcmp(x->items[0]->partition, y->items[0]->partition);
}

/* Numbers the groups of the pending items in order of first appearance;
 * returns each item's group number, and each group's first item in firsts. */
static size_t *assign_groups(push_plan *f, push_item *const *items, size_t n, push_item **firsts)
{
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    group_slot *table = xcalloc(cap, sizeof *table);
    size_t *of = xmalloc((n ? n : 1) * sizeof *of);
    for (size_t i = 0; i < n; i++) {
        if (items[i]->status != PUSH_PENDING) continue;
        size_t h = (size_t)group_hash(items[i]) & (cap - 1);
        while (table[h].first && !same_group(table[h].first, items[i])) h = (h + 1) & (cap - 1);
        if (!table[h].first) {
            table[h].first = items[i];
            table[h].group = f->ngroups;
            firsts[f->ngroups++] = items[i];
        }
        of[i] = table[h].group;
    }
    free(table);
    return of;
}

/* Orders the groups by name; rank[g] is group g's place in that order. */
static size_t *rank_groups(push_plan *f, push_item **firsts)
{
    size_t *rank = xcalloc(f->ngroups + 1, sizeof *rank);
    for (size_t g = 0; g < f->ngroups; g++) { f->groups[g].items = &firsts[g]; f->groups[g].n = g; }
    qsort(f->groups, f->ngroups, sizeof *f->groups, group_order);   /* .n carries the number */
    for (size_t g = 0; g < f->ngroups; g++) rank[f->groups[g].n] = g;
    return rank;
}

static void collect_items(push_plan *f, push_item *const *items, size_t n)
{
    free(f->items);
    free(f->groups);
    f->items = xmalloc((n ? n : 1) * sizeof *f->items);
    f->groups = xcalloc(n ? n : 1, sizeof *f->groups);
    push_item **firsts = xmalloc((n ? n : 1) * sizeof *firsts);
    size_t *at = xcalloc(n + 2, sizeof *at);
    f->ngroups = 0;
    size_t *of = assign_groups(f, items, n, firsts), *rank = rank_groups(f, firsts);
    for (size_t i = 0; i < n; i++)
        if (items[i]->status == PUSH_PENDING) at[rank[of[i]] + 1]++;
    for (size_t g = 0; g < f->ngroups; g++) {
        at[g + 1] += at[g];
        f->groups[g].items = &f->items[at[g]];
        f->groups[g].n = 0;
    }
    f->nitems = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i]->status != PUSH_PENDING) continue;
        push_group *g = &f->groups[rank[of[i]]];
        g->items[g->n++] = items[i];
        f->nitems++;
    }
    free(of); free(rank); free(at); free(firsts);
}

/* Later items repeating a client transactionId of the same partition in this
 * flush are duplicates of the first (open addressing on the hash). */
static void mark_repeats(push_group *g)
{
    size_t cap = 16;
    while (cap < g->n * 2) cap *= 2;
    push_item **table = xcalloc(cap, sizeof *table);
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

void push_plan_init(push_plan *plan) { memset(plan, 0, sizeof *plan); }

void push_plan_fini(push_plan *plan)
{
    free(plan->items);
    free(plan->groups);
    push_plan_init(plan);
}

void push_plan_build(push_plan *plan, push_item *const *items, size_t n)
{
    collect_items(plan, items, n);
    for (size_t g = 0; g < plan->ngroups; g++) mark_repeats(&plan->groups[g]);
}

/* ---- encoding ---- */

/* The frame of one item, its payload not yet sealed. */
static frame item_frame(const push_item *it, bool seal)
{
    frame fr = { it->has_trace ? FRAME_HAS_TRACE : 0, {0}, it->txn, strlen(it->txn), {0},
                 it->payload, it->payload_len, NULL, 0 };
    memcpy(fr.message_id, it->message_id, 16);
    memcpy(fr.trace_id, it->trace_id, 16);
    if (it->sub) {
        fr.flags |= FRAME_HAS_SUB;
        fr.sub = it->sub;
        fr.sub_len = strlen(it->sub);
    }
    if (seal) {
        fr.flags |= FRAME_ENCRYPTED;
        fr.payload_len += ENCRYPTION_OVERHEAD;
    }
    return fr;
}

/* Writes one frame; the payload goes from the request body (or the sealed
 * copy) straight to the compressor. */
static void write_frame(segment_writer *w, const push_item *it, bool seal, buf *scratch)
{
    frame fr = item_frame(it, seal);
    buf_reset(scratch);
    frame_encode_head(scratch, &fr);
    if (!seal) {
        segment_write(w, scratch->data, scratch->len);
        segment_write(w, it->payload, it->payload_len);
        return;
    }
    if (encryption_seal(it->message_id, it->payload, it->payload_len, scratch) < 0) abort();   /* only without memory */
    segment_write(w, scratch->data, scratch->len);
}

static size_t content_size(push_item *const *items, size_t n, bool seal)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i]->dup_of) continue;
        frame fr = item_frame(items[i], seal);
        total += frame_size(&fr);
    }
    return total;
}

static void encode_items(push_item *const *items, size_t n, int level, buf *blob, buf *hashes, buf *ids,
                         int *count, bool *probe)
{
    bool seal = encryption_queue(items[0]->queue) && encryption_has_key();
    segment_writer w;
    segment_begin(&w, blob, content_size(items, n, seal), level);
    buf scratch;
    buf_init(&scratch);
    *count = 0;
    *probe = false;
    for (size_t i = 0; i < n; i++) {
        const push_item *it = items[i];
        if (it->dup_of) continue;
        write_frame(&w, it, seal, &scratch);
        buf_append(hashes, it->hash, 16);
        buf_append(ids, it->message_id, 16);
        *probe |= it->txn_given;
        (*count)++;
    }
    segment_end(&w);
    buf_fini(&scratch);
}

typedef struct flush_arrays {
    db_array queues, partitions, counts, lens, probes, sealed;   /* one element per partition */
    buf      blobs, hashes, ids;                                /* concatenated binary */
} flush_arrays;

/* The members listed once, for init and fini alike: a member added to
 * flush_arrays and here is never left unfreed. */
static void arrays_each(flush_arrays *a, void (*on_array)(db_array *), void (*on_buf)(buf *))
{
    db_array *lit[] = { &a->queues, &a->partitions, &a->counts, &a->lens, &a->probes, &a->sealed };
    buf *bin[] = { &a->blobs, &a->hashes, &a->ids };
    for (size_t i = 0; i < sizeof lit / sizeof lit[0]; i++) on_array(lit[i]);
    for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++) on_buf(bin[i]);
}

static void arrays_init(flush_arrays *a) { arrays_each(a, db_array_init, buf_init); }

static void arrays_fini(flush_arrays *a) { arrays_each(a, db_array_fini, buf_fini); }

static void add_group(flush_arrays *a, const push_group *g, int level)
{
    int count;
    bool probe, sealed = encryption_queue(g->items[0]->queue) && encryption_has_key();
    size_t before = a->blobs.len;
    encode_items(g->items, g->n, level, &a->blobs, &a->hashes, &a->ids, &count, &probe);
    db_array_text(&a->queues, g->items[0]->queue);
    db_array_text(&a->partitions, g->items[0]->partition);
    db_array_int(&a->counts, count);
    db_array_int(&a->lens, (int64_t)(a->blobs.len - before));
    db_array_bool(&a->probes, probe);
    db_array_bool(&a->sealed, sealed);
}

void push_plan_calls(push_plan *plan, db_job *job, int zstd_level)
{
    flush_arrays a;
    arrays_init(&a);
    for (size_t g = 0; g < plan->ngroups; g++) add_group(&a, &plan->groups[g], zstd_level);
    int lengths[9] = { 0, 0, 0, (int)a.blobs.len, 0, (int)a.hashes.len, (int)a.ids.len, 0, 0 };
    int formats[9] = { 0, 0, 0, 1, 0, 1, 1, 0, 0 };
    const char *values[9] = { db_array_literal(&a.queues), db_array_literal(&a.partitions),
                              db_array_literal(&a.counts), buf_steal(&a.blobs), db_array_literal(&a.lens),
                              a.hashes.data, a.ids.data, db_array_literal(&a.probes), db_array_literal(&a.sealed) };
    plan->call = db_job_ncalls(job);
    db_job_call_taking(job, STMT_PUSH_FLUSH, values, lengths, formats, 1u << 3);   /* the blobs: held once */
    arrays_fini(&a);
}

/* ---- outcomes ---- */

/* DETAIL "frame:message-id-hex,...": frame numbers count written frames only. */
static void mark_duplicates(push_group *g, const char *detail)
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

/* The group a refusal names: DETAIL starts with its index in the arrays. */
static push_group *refused_group(push_plan *plan, const db_reply *reply, const char *sqlstate)
{
    if (!reply->error || reply->failed_call != plan->call || strcmp(reply->sqlstate, sqlstate) != 0) return NULL;
    char *end;
    long g = strtol(reply->detail, &end, 10);
    if (end == reply->detail || g < 0 || (size_t)g >= plan->ngroups) return NULL;
    return &plan->groups[g];
}

bool push_plan_take_encryption(push_plan *plan, const db_reply *reply)
{
    push_group *g = refused_group(plan, reply, ENCRYPTION_REQUIRED_SQLSTATE);
    if (!g || !encryption_has_key()) return false;
    encryption_set_queue(g->items[0]->queue, true);
    return true;
}

bool push_plan_take_duplicates(push_plan *plan, const db_reply *reply)
{
    push_group *g = refused_group(plan, reply, PUSH_DUPLICATE_SQLSTATE);
    const char *list = g ? strchr(reply->detail, '|') : NULL;
    if (!list) return false;
    mark_duplicates(g, list + 1);
    return true;
}

void push_plan_resolve(push_plan *f, const db_reply *reply)
{
    const PGresult *rows = f->call >= 0 && f->call < reply->ncalls ? reply->results[f->call] : NULL;
    bool buffered = rows && PQntuples(rows) > 0 && PQgetisnull(rows, 0, 2);   /* a flush is held whole or not */
    f->buffered = buffered;
    for (size_t i = 0; i < f->nitems; i++)
        if (!f->items[i]->dup_of && f->items[i]->status == PUSH_PENDING)
            f->items[i]->status = buffered ? PUSH_BUFFERED : PUSH_QUEUED;
    for (size_t i = 0; i < f->nitems; i++) {
        push_item *it = f->items[i];
        if (!it->dup_of) continue;
        it->status = PUSH_DUPLICATE;
        memcpy(it->message_id, it->dup_of->message_id, 16);
    }
}

/* Groups come sorted by queue, then partition: one call per queue. */
void push_plan_announce(const push_plan *plan, push_commit_fn fn, void *arg)
{
    if (plan->ngroups == 0 || plan->buffered) return;
    const char **names = xcalloc(plan->ngroups, sizeof *names);
    size_t n = 0;
    for (size_t g = 0; g < plan->ngroups; g++) {
        const push_item *first = plan->groups[g].items[0];
        names[n++] = first->partition;
        bool last = g + 1 == plan->ngroups || strcmp(plan->groups[g + 1].items[0]->queue, first->queue) != 0;
        if (last) { fn(arg, first->queue, names, n); n = 0; }
    }
    free(names);
}

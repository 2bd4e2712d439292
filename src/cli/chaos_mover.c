/* chaos_mover: the second consumer group of `silt chaos` (see chaos.h).
 *
 * One thread per partition pops the producers' queue with the group
 * "chaos-mover" and moves each message to the same partition of the queue
 * "<queue>-moved" with POST /api/v1/transaction: the push of a run of
 * messages and the ack (completed) of its last one, under the batch's lease
 * as a required lease, commit together or not at all. A deterministic share
 * of the messages is acked otherwise: message i with i % 100 == 7 is
 * dead-lettered (an ack with status dlq, in the transaction of the run
 * before it), and with i % 100 == 57 it is acked with status retry at its
 * first delivery (the lease is given back, the batch comes again from it)
 * and moved at the next one.
 *
 * A transaction not answered 200 with success:true leaves the rest of the
 * batch to its lease's expiry: it was either committed (the cursor moved:
 * nothing redelivers) or rolled back (everything redelivers), never half,
 * so the checks below hold exactly whatever the kills hit:
 * - every message stored upstream was delivered to this group too (a second
 *   group sees every message), and none was delivered again after a
 *   transaction holding its ack was answered success;
 * - every stored message outside the dlq share is in the moved queue
 *   exactly once, in its producer's order (the transaction is atomic, and a
 *   resent one is not needed: a committed one moved the cursor), and none
 *   of the dlq share is;
 * - every stored message of the dlq share is in the dead letters of the
 *   group exactly once, and no other message is;
 * - every stored message of the retry share was acked retry and delivered
 *   again (and so moved). */
#include "cli/chaos.h"
#include "base/xalloc.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOVER_GROUP     "chaos-mover"
#define MOVER_MAX_PARTS 64
#define DLQ_PAGE        1000

/* 1% each: a retry gives the rest of its batch back (about half of it to
 * pop again), so a larger share would slow the group down more than it
 * adds to what is checked. */
static bool dlq_share(long i) { return i % 100 == 7; }
static bool retry_share(long i) { return i % 100 == 57; }

/* What the group did with message i; written by its partition's thread,
 * then by the checks (after the threads are joined). */
typedef struct mover_msg {
    uint8_t deliveries;   /* to the group, saturating */
    uint8_t committed;    /* the latest delivery's ack was in a transaction answered success */
    uint8_t retry_acks;   /* acks with status retry sent */
    uint8_t moved;        /* times the moved queue holds it */
    uint8_t dead;         /* times the group's dead letters hold it */
} mover_msg;

typedef struct mover_counts {
    _Atomic uint64_t pops, pops_failed, txs, txs_failed, txs_refused, retries, retries_failed;
    _Atomic uint64_t redelivered_excused, redelivered_after_commit, foreign;
    uint64_t moved_foreign, moved_out_of_order, dead_foreign;
} mover_counts;

typedef struct mover_thread {
    chaos_mover *m;
    long         p;
    http_client *http;
    pthread_t    th;
} mover_thread;

struct chaos_mover {
    chaos_run    *run;
    char          moved[64];    /* the queue the messages are moved to */
    mover_msg    *msgs;         /* [run->messages] */
    long         *last_read;    /* [partitions * producers]: the moved read-back's order */
    mover_counts  n;
    mover_thread  threads[MOVER_MAX_PARTS];
    long          nthreads;
};

/* The part of a popped batch a transaction needs. */
typedef struct popped {
    const json_doc *d;
    int             list;       /* the messages array */
    long           *idx;        /* message numbers, -1 for a foreign one */
    uint32_t        n;
} popped;

chaos_mover *chaos_mover_new(chaos_run *run)
{
    chaos_mover *m = xcalloc(1, sizeof *m);
    m->run = run;
    snprintf(m->moved, sizeof m->moved, "%s-moved", run->queue);
    m->msgs = xcalloc((size_t)run->messages, sizeof *m->msgs);
    m->last_read = xcalloc((size_t)(run->partitions * run->producers), sizeof *m->last_read);
    return m;
}

void chaos_mover_free(chaos_mover *m)
{
    if (!m) return;
    free(m->last_read);
    free(m->msgs);
    free(m);
}

/* ---- moving ---- */

static void put_span(buf *b, const json_doc *d, int obj, const char *key)
{
    int tok = json_get(d, (uint32_t)obj, key);
    size_t n;
    const char *s = tok >= 0 ? json_span(d, (uint32_t)tok, &n) : "null";
    buf_append(b, s, tok >= 0 ? n : 4);
}

static int item(const popped *b, uint32_t k)
{
    return json_at(b->d, (uint32_t)b->list, k);
}

/* One ack operation (or ack body, op false) for message k of the batch. */
static void put_ack(buf *b, const popped *pb, uint32_t k, const char *status, bool op)
{
    int it = item(pb, k);
    buf_puts(b, op ? "{\"type\":\"ack\",\"transactionId\":" : "{\"transactionId\":");
    put_span(b, pb->d, it, "transactionId");
    buf_puts(b, ",\"partitionId\":");
    put_span(b, pb->d, it, "partitionId");
    buf_puts(b, ",\"leaseId\":");
    put_span(b, pb->d, it, "leaseId");
    buf_printf(b, ",\"consumerGroup\":\"" MOVER_GROUP "\",\"status\":\"%s\"%s}", status,
               strcmp(status, "dlq") ? "" : ",\"error\":\"chaos: the dlq share\"");
}

/* Messages [k, j) pushed to the moved queue, the last acked completed, and
 * message dead (or -1) acked dlq: one transaction under the batch's lease. */
static void tx_body(const chaos_mover *m, const popped *pb, uint32_t k, uint32_t j, int dead, buf *b)
{
    buf_reset(b);
    buf_puts(b, "{\"operations\":[");
    if (j > k) {
        buf_puts(b, "{\"type\":\"push\",\"items\":[");
        for (uint32_t x = k; x < j; x++) {
            int it = item(pb, x);
            buf_printf(b, "%s{\"queue\":\"%s\",\"partition\":\"p%ld\",\"transactionId\":", x > k ? "," : "",
                       m->moved, pb->idx[x] >= 0 ? pb->idx[x] % m->run->partitions : 0);
            put_span(b, pb->d, it, "transactionId");
            buf_puts(b, ",\"payload\":");
            put_span(b, pb->d, it, "data");
            buf_putc(b, '}');
        }
        buf_puts(b, "]},");
        put_ack(b, pb, j - 1, "completed", true);
    }
    if (dead >= 0) {
        if (j > k) buf_putc(b, ',');
        put_ack(b, pb, (uint32_t)dead, "dlq", true);
    }
    buf_puts(b, "],\"requiredLeases\":[");
    put_span(b, pb->d, item(pb, 0), "leaseId");
    buf_puts(b, "]}");
}

static bool answered_success(const json_doc *d)
{
    int s = d->ntokens ? json_get(d, 0, "success") : -1;
    return s >= 0 && d->tokens[s].type == JSON_TRUE;
}

/* True when the transaction was answered success: its messages committed. */
static bool move(mover_thread *t, const popped *pb, uint32_t k, uint32_t j, int dead)
{
    chaos_mover *m = t->m;
    buf body;
    buf_init(&body);
    tx_body(m, pb, k, j, dead, &body);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    m->n.txs++;
    bool ok = false;
    if (chaos_call(t->http, "POST", "/api/v1/transaction", &body, &r, &d) < 0) m->n.txs_failed++;
    else if (!(ok = answered_success(&d))) m->n.txs_refused++;
    for (uint32_t x = k; ok && x < j; x++)
        if (pb->idx[x] >= 0) m->msgs[pb->idx[x]].committed = 1;
    if (ok && dead >= 0 && pb->idx[dead] >= 0) m->msgs[pb->idx[dead]].committed = 1;
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body);
    return ok;
}

/* Gives the lease back on message k (the batch comes again from it): sent
 * once per message, whatever the answer; an unanswered one expires. */
static void retry(mover_thread *t, const popped *pb, uint32_t k)
{
    chaos_mover *m = t->m;
    buf body;
    buf_init(&body);
    put_ack(&body, pb, k, "retry", false);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    m->n.retries++;
    if (pb->idx[k] >= 0 && m->msgs[pb->idx[k]].retry_acks < 255) m->msgs[pb->idx[k]].retry_acks++;
    if (chaos_call(t->http, "POST", "/api/v1/ack", &body, &r, &d) < 0) m->n.retries_failed++;
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body);
}

static void note_delivery(chaos_mover *m, long i)
{
    if (i < 0) { m->n.foreign++; return; }
    mover_msg *g = &m->msgs[i];
    if (g->deliveries > 0 && g->committed) m->n.redelivered_after_commit++;
    else if (g->deliveries > 0) m->n.redelivered_excused++;
    if (g->deliveries < 255) g->deliveries++;
    g->committed = 0;
}

/* A message acked otherwise than by moving it: dlq always, retry at the
 * first delivery. */
static bool special(const chaos_mover *m, long i)
{
    return i >= 0 && (dlq_share(i) || (retry_share(i) && m->msgs[i].retry_acks == 0));
}

/* Moves the batch run by run; stops at a retry (the batch comes again) or
 * a transaction not answered success (the lease will expire). */
static void handle(mover_thread *t, const popped *pb)
{
    chaos_mover *m = t->m;
    uint32_t k = 0;
    while (k < pb->n) {
        uint32_t j = k;
        while (j < pb->n && !special(m, pb->idx[j])) j++;
        bool to_retry = j < pb->n && !dlq_share(pb->idx[j]);
        if ((j > k || (j < pb->n && !to_retry)) && !move(t, pb, k, j, j < pb->n && !to_retry ? (int)j : -1)) return;
        if (to_retry) { retry(t, pb, j); return; }
        k = j + 1;
    }
}

/* 1 when the pop held messages, 0 when empty. */
static int consume(void *ctx, const json_doc *d)
{
    mover_thread *t = ctx;
    chaos_mover *m = t->m;
    int list = d->ntokens ? json_get(d, 0, "messages") : -1;
    if (list < 0 || d->tokens[list].type != JSON_ARRAY || d->tokens[list].count == 0) return 0;
    popped pb = { d, list, NULL, d->tokens[list].count };
    pb.idx = xmalloc(pb.n * sizeof *pb.idx);
    for (uint32_t k = 0; k < pb.n; k++) {
        pb.idx[k] = chaos_msg_index(d, json_get(d, (uint32_t)item(&pb, k), "transactionId"), m->run->messages);
        note_delivery(m, pb.idx[k]);
    }
    handle(t, &pb);
    free(pb.idx);
    return 1;
}

static void *mover_main(void *arg)
{
    mover_thread *t = arg;
    chaos_consume(t->http, t->m->run, MOVER_GROUP, t->p, &t->m->n.pops, &t->m->n.pops_failed, consume, t);
    return NULL;
}

void chaos_mover_start(chaos_mover *m)
{
    http_client *h = chaos_client(m->run->url);
    int rc = chaos_configure(h, m->moved, m->run->t_drain_ms);
    http_client_free(h);
    if (rc < 0) return;
    m->nthreads = m->run->partitions < MOVER_MAX_PARTS ? m->run->partitions : MOVER_MAX_PARTS;
    for (long p = 0; p < m->nthreads; p++) {
        mover_thread *t = &m->threads[p];
        *t = (mover_thread){ m, p, chaos_client(m->run->url), 0 };
        if (pthread_create(&t->th, NULL, mover_main, t) != 0) abort();
    }
}

void chaos_mover_join(chaos_mover *m)
{
    for (long p = 0; p < m->nthreads; p++) {
        pthread_join(m->threads[p].th, NULL);
        http_client_free(m->threads[p].http);
    }
}

/* ---- checking ---- */

static void seen_moved(void *ctx, long p, long i)
{
    chaos_mover *m = ctx;
    if (i < 0) { m->n.moved_foreign++; return; }
    long *last = &m->last_read[p * m->run->producers + chaos_producer_of(m->run, i)];
    if (i <= *last) m->n.moved_out_of_order++;
    *last = i;
    if (m->msgs[i].moved < 255) m->msgs[i].moved++;
}

/* The moved queue read whole by a fresh group, started over on a failure. */
static int read_moved(chaos_mover *m, http_client *h)
{
    chaos_run *run = m->run;
    for (int attempt = 1; !chaos_past(run->t_drain_ms + CHAOS_GRACE_MS); attempt++) {
        char group[64];
        snprintf(group, sizeof group, "chaos-verify-moved-%d", attempt);
        for (long i = 0; i < run->messages; i++) m->msgs[i].moved = 0;
        for (long k = 0; k < run->partitions * run->producers; k++) m->last_read[k] = -1;
        m->n.moved_out_of_order = m->n.moved_foreign = 0;
        long p = 0;
        while (p < run->partitions && chaos_read_partition(h, m->moved, group, p, run->messages, seen_moved, m) == 0)
            p++;
        if (p == run->partitions) return 0;
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    }
    return -1;
}

/* One page of the group's dead letters; the total in *total. */
static int read_dead_page(chaos_mover *m, http_client *h, long offset, long *total)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/dlq?queue=%s&consumerGroup=" MOVER_GROUP "&limit=%d&offset=%ld",
             m->run->queue, DLQ_PAGE, offset);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    int rc = chaos_call(h, "GET", path, NULL, &r, &d);
    int list = rc == 0 ? json_get(&d, 0, "messages") : -1, t = rc == 0 ? json_get(&d, 0, "total") : -1;
    int64_t n = 0;
    if (list < 0 || t < 0 || json_int64(&d, (uint32_t)t, &n) < 0) rc = -1;
    for (uint32_t k = 0; rc == 0 && k < d.tokens[list].count; k++) {
        long i = chaos_msg_index(&d, json_get(&d, (uint32_t)json_at(&d, (uint32_t)list, k), "transactionId"),
                                 m->run->messages);
        if (i < 0) m->n.dead_foreign++;
        else if (m->msgs[i].dead < 255) m->msgs[i].dead++;
    }
    *total = (long)n;
    json_doc_fini(&d);
    http_response_fini(&r);
    return rc;
}

/* Every dead letter of the group, pages newest first (nothing is added
 * any more: the threads are joined); started over on a failure. */
static int read_dead(chaos_mover *m, http_client *h)
{
    while (!chaos_past(m->run->t_drain_ms + CHAOS_GRACE_MS)) {
        for (long i = 0; i < m->run->messages; i++) m->msgs[i].dead = 0;
        m->n.dead_foreign = 0;
        long offset = 0, total = 0;
        int rc;
        while ((rc = read_dead_page(m, h, offset, &total)) == 0 && offset + DLQ_PAGE < total) offset += DLQ_PAGE;
        if (rc == 0) return 0;
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    }
    return -1;
}

typedef struct mover_tally {
    uint64_t delivered, moved, dead, retried;
    uint64_t skipped, delivered_not_stored, not_moved, moved_twice, moved_not_stored, dlq_moved;
    uint64_t dlq_missing, dead_twice, dead_outside, retry_not_redelivered;
} mover_tally;

static void tally_one(const mover_msg *g, long i, bool stored, mover_tally *t)
{
    t->delivered += g->deliveries > 0;
    t->moved += g->moved > 0;
    t->dead += g->dead > 0;
    t->retried += g->retry_acks > 0;
    t->skipped += stored && g->deliveries == 0;
    t->delivered_not_stored += !stored && g->deliveries > 0;
    t->not_moved += stored && !dlq_share(i) && g->moved == 0;
    t->moved_twice += g->moved > 1;
    t->moved_not_stored += !stored && g->moved > 0;
    t->dlq_moved += dlq_share(i) && g->moved > 0;
    t->dlq_missing += stored && dlq_share(i) && g->dead == 0;
    t->dead_twice += g->dead > 1;
    t->dead_outside += !dlq_share(i) && g->dead > 0;
    t->retry_not_redelivered += stored && retry_share(i) && (g->retry_acks == 0 || g->deliveries < 2);
}

static bool tally_ok(const mover_tally *t, const mover_counts *n)
{
    return t->skipped == 0 && t->delivered_not_stored == 0 && t->not_moved == 0 && t->moved_twice == 0 &&
           t->moved_not_stored == 0 && t->dlq_moved == 0 && t->dlq_missing == 0 && t->dead_twice == 0 &&
           t->dead_outside == 0 && t->retry_not_redelivered == 0 && n->redelivered_after_commit == 0 &&
           n->foreign == 0 && n->moved_foreign == 0 && n->moved_out_of_order == 0 && n->dead_foreign == 0 &&
           t->moved > 0;
}

static void print_tally(const chaos_mover *m, const mover_tally *t)
{
    const mover_counts *n = &m->n;
    printf("  group " MOVER_GROUP ": %" PRIu64 " pops (%" PRIu64 " failed), %" PRIu64 " transactions (%" PRIu64
           " unanswered, %" PRIu64 " answered without success), %" PRIu64 " retry acks (%" PRIu64 " unanswered)\n",
           (uint64_t)n->pops, (uint64_t)n->pops_failed, (uint64_t)n->txs, (uint64_t)n->txs_failed,
           (uint64_t)n->txs_refused, (uint64_t)n->retries, (uint64_t)n->retries_failed);
    printf("            %" PRIu64 " delivered, %" PRIu64 " moved to %s, %" PRIu64 " dead-lettered, %" PRIu64
           " retried; %" PRIu64 " redelivered after a retry ack or an answer that was not success\n", t->delivered, t->moved,
           m->moved, t->dead, t->retried, (uint64_t)n->redelivered_excused);
    printf("  mover: skipped (stored, never delivered): %" PRIu64 "\n", t->skipped);
    printf("  mover: redelivered after a committed ack: %" PRIu64 "\n", (uint64_t)n->redelivered_after_commit);
    printf("  mover: delivered or moved, not stored:    %" PRIu64 "\n", t->delivered_not_stored + t->moved_not_stored);
    printf("  mover: stored, not moved (not dlq share): %" PRIu64 "\n", t->not_moved);
    printf("  mover: moved twice:                       %" PRIu64 "\n", t->moved_twice);
    printf("  mover: moved out of a producer's order:   %" PRIu64 "\n", n->moved_out_of_order);
    printf("  mover: dlq share moved / not dead-lettered / dead-lettered twice: %" PRIu64 " / %" PRIu64 " / %" PRIu64
           "\n", t->dlq_moved, t->dlq_missing, t->dead_twice);
    printf("  mover: dead-lettered outside the dlq share: %" PRIu64 "\n", t->dead_outside);
    printf("  mover: retry share not redelivered:       %" PRIu64 "\n", t->retry_not_redelivered);
    printf("  mover: foreign (delivered, moved, dead):  %" PRIu64 ", %" PRIu64 ", %" PRIu64 "\n", (uint64_t)n->foreign,
           n->moved_foreign, n->dead_foreign);
}

bool chaos_mover_check(chaos_mover *m, http_client *h)
{
    if (m->nthreads == 0) { printf("  group " MOVER_GROUP ": did not start\n"); return false; }
    if (read_moved(m, h) < 0 || read_dead(m, h) < 0) {
        printf("  group " MOVER_GROUP ": could not read the moved queue or the dead letters back (%s)\n",
               http_client_error(h));
        return false;
    }
    mover_tally t;
    memset(&t, 0, sizeof t);
    for (long i = 0; i < m->run->messages; i++) tally_one(&m->msgs[i], i, m->run->msgs[i].stored > 0, &t);
    print_tally(m, &t);
    return tally_ok(&t, &m->n);
}

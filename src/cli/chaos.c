/* chaos: `silt chaos`, the workload half of the crash-safety check (the
 * killer half is scripts/chaos.sh, which kill -9s the server and stops
 * PostgreSQL with -m immediate while this runs; docs/reliability.md).
 *
 * Producers push numbered messages ("m<i>", transactionId = the number) to
 * a fresh queue and record each push's outcome: acknowledged (201 with every
 * item queued or duplicate) or unknown (the connection died, or any other
 * answer). An unknown push is sent again with the same transactionIds until
 * it is acknowledged, so the server's dedup is exercised on every crash.
 * Consumers, one per partition and so one thread per message, pop with one
 * consumer group and ack the last message of each batch with its lease,
 * recording every delivery and whether its ack got a 2xx with success:true.
 *
 * After the workload and a drain, a fresh group reads every partition whole
 * (autoAck) and the figures are checked: every acknowledged push stored
 * (lost = 0), nothing stored twice, every stored message delivered to the
 * group (skipped = 0), a message delivered again only after an earlier
 * delivery's ack was not answered 2xx/success (a lease that expired makes
 * that ack fail, so it is covered), and each producer's messages in each
 * partition in the order it pushed them (a producer sends its next batch
 * only once the last is acknowledged, so the log must keep that order).
 * Beside them run the parts chaos.h lists: a second consumer group moving
 * the messages in transactions, tasks, an HTTP worker, workflows and a
 * schedule, each with its own checks. Exit 0 when all hold, 1 otherwise.
 *
 * Correctness never depends on timing: every wait has a deadline and every
 * failed request is retried until one; the figures are what they are. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/chaos.h"
#include "base/clock.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHAOS_GROUP        "chaos"
#define CHAOS_READ_BATCH   1000
#define CHAOS_MAX_PARTS    64
#define CHAOS_MAX_THREADS  64

static const char chaos_usage[] =
    "usage: silt chaos [options]\n"
    "\n"
    "A producer/consumer workload that checks crash safety while something else\n"
    "kills the server and PostgreSQL (scripts/chaos.sh, make chaos). Pushes\n"
    "numbered messages with unique transactionIds, pops and acks them with one\n"
    "consumer group, then reads every partition with a fresh group and checks:\n"
    "acknowledged pushes lost = 0, stored duplicates = 0, skipped = 0, and a\n"
    "message delivered again only after an ack that was not answered 2xx.\n"
    "Failed requests are retried until --drain seconds after the workload.\n"
    "Exits 0 when every check holds, 1 otherwise.\n"
    "\n"
    "options:\n"
    "  --url URL         server (default SILT_URL, else " CLI_DEFAULT_URL ")\n"
    "  --consumer-url URL  the consumers' server (default --url): another server\n"
    "                    of the same database, so wake-ups cross servers\n"
    "  --seconds N       workload seconds (default 60)\n"
    "  --messages N      messages to push at most (default 200000)\n"
    "  --producers N     producer threads (default 4)\n"
    "  --partitions N    partitions, one consumer each (default 4)\n"
    "  --batch N         items per push (default 20)\n"
    "  --drain N         seconds allowed after the workload to finish pushes,\n"
    "                    consume the backlog and read back (default 120)\n"
    "  --tasks N         also send N tasks to --task-queue (default 0), run by\n"
    "                    `silt worker` processes started beside it whose command\n"
    "                    appends \"$SILT_TASK_ID $SILT_TASK_ATTEMPT\" to --task-runs;\n"
    "                    checks none lost, unfinished, FAILED, completed or run twice\n"
    "  --task-queue Q    the tasks' queue (required with --tasks)\n"
    "  --workflows N     also start N workflows (a diamond of four nodes) on\n"
    "                    --workflow-queue; checks each COMPLETED, every node once\n"
    "  --workflow-queue Q  the workflows' queue (required with --workflows)\n"
    "  --schedule NAME   a schedule of the servers' silt.conf firing every minute\n"
    "                    to --schedule-queue; checks every slot fired once\n"
    "  --schedule-queue Q  its queue (required with --schedule)\n"
    "  --task-runs FILE  the file the runs of tasks are appended to, \"<id> <attempt>\"\n"
    "                    (required with --tasks, --workflows or --schedule)\n"
    "  --help            show this help\n"
    "\n"
    "Tasks, workflow nodes and the schedule's tasks are also run by an HTTP worker\n"
    "inside silt chaos. A second consumer group moves every message to the queue\n"
    "<queue>-moved in transactions, acking a share with retry and with dlq.\n";

/* The options of the parts beside the message log. */
typedef struct chaos_opts {
    long        tasks, workflows;
    const char *task_queue, *task_runs, *workflow_queue, *schedule, *schedule_queue;
} chaos_opts;

typedef struct chaos_worker {
    chaos_run   *run;
    long         index;          /* producer or partition number */
    http_client *http;
} chaos_worker;

void chaos_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

bool chaos_past(int64_t deadline_ms)
{
    return clock_mono_ms() >= deadline_ms;
}

void chaos_spread_start(chaos_spread *s, void *(*fn)(void *), void *arg, int64_t t_end_ms, int64_t t_drain_ms)
{
    s->t_begin_ms = clock_mono_ms();
    s->t_end_ms = t_end_ms;
    s->t_drain_ms = t_drain_ms;
    if (pthread_create(&s->thread, NULL, fn, arg) != 0) abort();
    s->started = true;
}

void chaos_spread_join(chaos_spread *s)
{
    if (s->started) pthread_join(s->thread, NULL);
    s->started = false;
}

bool chaos_spread_wait(const chaos_spread *s, long i, long n)
{
    int64_t due = s->t_begin_ms + (s->t_end_ms - s->t_begin_ms) * i / (n > 0 ? n : 1);
    while (clock_mono_ms() < due && !chaos_past(s->t_end_ms)) chaos_sleep_ms(10);
    return !chaos_past(s->t_end_ms);
}

int chaos_call(http_client *h, const char *method, const char *path, const buf *body, http_response *r,
               json_doc *d)
{
    json_doc_fini(d);
    json_doc_init(d);
    if (http_request(h, method, path, body ? body->data : NULL, body ? body->len : 0, r) < 0)
        return -1;
    if (r->status < 200 || r->status > 299) return -1;
    if (r->status == 204) return 0;
    return json_parse_shallow(d, r->body.data, r->body.len, CLI_MAX_TOKENS, 3) == 0 ? 0 : -1;
}

int chaos_call_until(http_client *h, const char *method, const char *path, const buf *body, int64_t deadline,
                     http_response *r, json_doc *d)
{
    for (;;) {
        if (chaos_call(h, method, path, body, r, d) == 0) return 0;
        if (chaos_past(deadline)) return -1;
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    }
}

http_client *chaos_client(const char *url)
{
    http_client *h = http_client_new(url);
    if (!h) abort();   /* chaos_main checked the URLs */
    http_client_set_timeout(h, CHAOS_TIMEOUT_MS);
    return h;
}

void chaos_str(const json_doc *d, int obj, const char *key, char *out, size_t cap)
{
    int tok = obj >= 0 ? json_get(d, (uint32_t)obj, key) : -1;
    out[0] = '\0';
    if (tok < 0 || d->tokens[tok].type != JSON_STRING) return;
    size_t n;
    const char *s = json_span(d, (uint32_t)tok, &n);
    snprintf(out, cap, "%.*s", (int)(n - 2), s + 1);   /* the ids and times read here have no escapes */
}

/* ---- producers ---- */

void chaos_batch_body(buf *b, const char *key, long first, long n, void (*put)(buf *, const void *, long),
                      const void *ctx)
{
    buf_reset(b);
    buf_printf(b, "{\"%s\":[", key);
    for (long i = first; i < first + n; i++) {
        if (i > first) buf_putc(b, ',');
        put(b, ctx, i);
    }
    buf_puts(b, "]}");
}

static void put_message(buf *b, const void *ctx, long i)
{
    const chaos_run *run = ctx;
    buf_printf(b, "{\"queue\":\"%s\",\"partition\":\"p%ld\",\"transactionId\":\"m%ld\","
               "\"payload\":{\"i\":%ld,\"s\":\"chaos\"}}", run->queue, i % run->partitions, i, i);
}

static void push_body(const chaos_run *run, long first, long n, buf *b)
{
    chaos_batch_body(b, "items", first, n, put_message, run);
}

/* Acknowledged: 201, one result per item, each queued or duplicate. */
static bool push_acked(chaos_run *run, const json_doc *d, long n)
{
    if (d->ntokens == 0 || d->tokens[0].type != JSON_ARRAY || d->tokens[0].count != (uint32_t)n)
        return false;
    for (long k = 0; k < n; k++) {
        int st = json_get(d, (uint32_t)json_at(d, 0, (uint32_t)k), "status");
        if (st >= 0 && json_str_eq(d, (uint32_t)st, "duplicate")) run->n.push_dup_items++;
        else if (st < 0 || !json_str_eq(d, (uint32_t)st, "queued")) return false;
    }
    return true;
}

/* Sends items [first, first+n) until acknowledged or the drain deadline. */
static void push_until_acked(chaos_worker *w, long first, long n, buf *body)
{
    chaos_run *run = w->run;
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    push_body(run, first, n, body);
    for (int attempt = 0; !chaos_past(run->t_drain_ms); attempt++) {
        for (long i = first; i < first + n; i++) run->msgs[i].push = CHAOS_UNKNOWN;
        run->n.push_requests++;
        if (attempt > 0) run->n.push_resent++;
        if (chaos_call(w->http, "POST", "/api/v1/push", body, &r, &d) == 0 && push_acked(run, &d, n)) {
            for (long i = first; i < first + n; i++) run->msgs[i].push = CHAOS_ACKED;
            break;
        }
        run->n.push_failed++;
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    }
    json_doc_fini(&d);
    http_response_fini(&r);
}

static void *producer_main(void *arg)
{
    chaos_worker *w = arg;
    chaos_run *run = w->run;
    long share = run->messages / run->producers;
    long first = w->index * share, last = first + share;
    buf body;
    buf_init(&body);
    for (long i = first; i < last && !chaos_past(run->t_end_ms); i += run->batch) {
        long n = last - i < run->batch ? last - i : run->batch;
        push_until_acked(w, i, n, &body);
    }
    buf_fini(&body);
    run->producers_left--;
    return NULL;
}

/* ---- consumers ---- */

long chaos_msg_index(const json_doc *d, int tok, long messages)
{
    if (tok < 0 || d->tokens[tok].type != JSON_STRING) return -1;
    size_t n;
    const char *s = json_span(d, (uint32_t)tok, &n);
    if (n < 4 || s[1] != 'm') return -1;
    char *end;
    long i = strtol(s + 2, &end, 10);
    return end == s + n - 1 && i >= 0 && i < messages ? i : -1;
}

/* Records one delivery; a second one is a violation when the earlier
 * delivery's ack was answered 2xx with success. */
static void note_delivery(chaos_run *run, long i)
{
    chaos_msg *m = &run->msgs[i];
    if (m->deliveries > 0 && m->ack_ok) run->n.redelivered_after_ack++;
    else if (m->deliveries > 0) run->n.redelivered_excused++;
    if (m->deliveries < 255) m->deliveries++;
    m->ack_ok = 0;
}

/* The ack of the batch's last message commits the whole batch. */
static bool ack_batch(chaos_worker *w, const json_doc *pd, int last, buf *body)
{
    int tx = json_get(pd, (uint32_t)last, "transactionId");
    int pid = json_get(pd, (uint32_t)last, "partitionId");
    int lease = json_get(pd, (uint32_t)last, "leaseId");
    if (tx < 0 || pid < 0 || lease < 0) return false;
    size_t ntx, npid, nlease;
    const char *stx = json_span(pd, (uint32_t)tx, &ntx), *spid = json_span(pd, (uint32_t)pid, &npid);
    const char *slease = json_span(pd, (uint32_t)lease, &nlease);
    buf_reset(body);
    buf_printf(body, "{\"transactionId\":%.*s,\"partitionId\":%.*s,\"leaseId\":%.*s,"
               "\"consumerGroup\":\"" CHAOS_GROUP "\",\"status\":\"completed\"}",
               (int)ntx, stx, (int)npid, spid, (int)nlease, slease);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    w->run->n.acks++;
    bool ok = false;
    if (chaos_call(w->http, "POST", "/api/v1/ack", body, &r, &d) == 0 && d.ntokens > 0) {
        int first = d.tokens[0].type == JSON_ARRAY ? json_at(&d, 0, 0) : 0;
        int s = first >= 0 ? json_get(&d, (uint32_t)first, "success") : -1;
        ok = s >= 0 && d.tokens[s].type == JSON_TRUE;
        if (!ok) w->run->n.acks_refused++;
    } else {
        w->run->n.acks_failed++;
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    return ok;
}

/* What a consumer thread of the first group keeps: its worker and the
 * body its acks are written in. */
typedef struct consumer {
    chaos_worker *w;
    buf           body;
} consumer;

/* Handles one popped batch: 1 when it held messages, 0 when empty. */
static int consume_batch(void *ctx, const json_doc *d)
{
    consumer *c = ctx;
    chaos_run *run = c->w->run;
    int msgs = d->ntokens ? json_get(d, 0, "messages") : -1;
    if (msgs < 0 || d->tokens[msgs].type != JSON_ARRAY || d->tokens[msgs].count == 0) return 0;
    uint32_t count = d->tokens[msgs].count;
    long *seen = xmalloc(count * sizeof *seen);
    for (uint32_t k = 0; k < count; k++) {
        seen[k] = chaos_msg_index(d, json_get(d, (uint32_t)json_at(d, (uint32_t)msgs, k), "transactionId"),
                                  run->messages);
        if (seen[k] < 0) run->n.foreign++;
        else note_delivery(run, seen[k]);
    }

    bool ok = ack_batch(c->w, d, json_at(d, (uint32_t)msgs, count - 1), &c->body);
    for (uint32_t k = 0; k < count; k++)
        if (seen[k] >= 0) run->msgs[seen[k]].ack_ok = ok;
    free(seen);
    return 1;
}

/* When a consumer is done (chaos_consume): busy_at is when it last had a
 * delivery or a failed request, quiet the empty pops since that started a
 * lease (and a margin) later. */
typedef struct chaos_quiet {
    int64_t busy_at;
    int     quiet;
} chaos_quiet;

static void quiet_busy(chaos_quiet *q)
{
    q->busy_at = clock_mono_ms();
    q->quiet = 0;
}

static void quiet_empty(chaos_quiet *q, int64_t pop_started_ms)
{
    if (pop_started_ms - q->busy_at > CHAOS_LEASE_S * 1000 + 500) q->quiet++;
}

/* A lease left behind by a lost reply or a failed ack expired before the
 * two quiet pops started, so its batch would have come back to them. */
static bool quiet_done(const chaos_quiet *q, const chaos_run *run)
{
    return chaos_past(run->t_drain_ms) || (run->producers_left == 0 && q->quiet >= 2);
}

void chaos_consume(http_client *h, const chaos_run *run, const char *group, long p, _Atomic uint64_t *pops,
                   _Atomic uint64_t *pops_failed, chaos_batch_fn batch, void *ctx)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/pop/queue/%s/partition/p%ld?consumerGroup=%s"
             "&batch=%d&wait=true&timeout=1000&subscriptionMode=all", run->queue, p, group, CHAOS_POP_BATCH);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    chaos_quiet q;
    quiet_busy(&q);
    while (!quiet_done(&q, run)) {
        int64_t started = clock_mono_ms();
        (*pops)++;
        if (chaos_call(h, "GET", path, NULL, &r, &d) < 0) {
            (*pops_failed)++;
            quiet_busy(&q);
            chaos_sleep_ms(CHAOS_BACKOFF_MS);
        } else if (batch(ctx, &d) > 0) {
            quiet_busy(&q);
        } else {
            quiet_empty(&q, started);
        }
    }
    json_doc_fini(&d);
    http_response_fini(&r);
}

static void *consumer_main(void *arg)
{
    consumer c = { .w = arg };
    chaos_run *run = c.w->run;
    buf_init(&c.body);
    chaos_consume(c.w->http, run, CHAOS_GROUP, c.w->index, &run->n.pops, &run->n.pops_failed, consume_batch, &c);
    buf_fini(&c.body);
    return NULL;
}

/* ---- setup, read-back, report ---- */

int chaos_configure(http_client *h, const char *queue, int64_t deadline)
{
    buf body;
    buf_init(&body);
    buf_printf(&body, "{\"queue\":\"%s\",\"options\":{\"leaseTime\":%d}}", queue, CHAOS_LEASE_S);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    int rc = chaos_call_until(h, "POST", "/api/v1/configure", &body, deadline, &r, &d);
    if (rc < 0) cli_error("chaos: could not configure queue %s (%s, HTTP %d)", queue, http_client_error(h), r.status);
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body);
    return rc;
}

/* Message i was pushed by producer i / share (producer_main's ranges). */
long chaos_producer_of(const chaos_run *run, long i)
{
    long share = run->messages / run->producers, k = share > 0 ? i / share : 0;
    return k < run->producers ? k : run->producers - 1;
}

/* Each producer's messages must come back in the order it pushed them. */
static void note_stored(chaos_run *run, long p, long i)
{
    long *last = &run->last_read[p * run->producers + chaos_producer_of(run, i)];
    if (i <= *last) run->n.out_of_order++;
    *last = i;
    if (run->msgs[i].stored < 255) run->msgs[i].stored++;
}

int chaos_read_partition(http_client *h, const char *queue, const char *group, long p, long messages,
                         chaos_seen_fn seen, void *ctx)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/pop/queue/%s/partition/p%ld?consumerGroup=%s&batch=%d"
             "&autoAck=true&subscriptionMode=all", queue, p, group, CHAOS_READ_BATCH);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    int rc = 0;
    while (rc == 0) {
        if (chaos_call(h, "GET", path, NULL, &r, &d) < 0) { rc = -1; break; }
        int msgs = d.ntokens ? json_get(&d, 0, "messages") : -1;
        if (r.status == 204 || msgs < 0 || d.tokens[msgs].count == 0) break;
        for (uint32_t k = 0; k < d.tokens[msgs].count; k++)
            seen(ctx, p, chaos_msg_index(&d, json_get(&d, (uint32_t)json_at(&d, (uint32_t)msgs, k), "transactionId"),
                                         messages));
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    return rc;
}

static void seen_upstream(void *ctx, long p, long i)
{
    chaos_run *run = ctx;
    if (i < 0) run->n.foreign++;
    else note_stored(run, p, i);
}

static int read_back(chaos_run *run, http_client *h)
{
    for (int attempt = 1; !chaos_past(run->t_drain_ms + 60000); attempt++) {
        char group[64];
        snprintf(group, sizeof group, "chaos-verify-%d", attempt);
        for (long i = 0; i < run->messages; i++) run->msgs[i].stored = 0;
        for (long k = 0; k < run->partitions * run->producers; k++) run->last_read[k] = -1;
        run->n.out_of_order = 0;
        long p = 0;
        while (p < run->partitions &&
               chaos_read_partition(h, run->queue, group, p, run->messages, seen_upstream, run) == 0)
            p++;
        if (p == run->partitions) return 0;
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    }
    cli_error("chaos: could not read the queue back (%s)", http_client_error(h));
    return -1;
}

typedef struct chaos_tally {
    uint64_t acked, unknown, unsent, stored, lost, stored_dups, skipped, unknown_stored, delivered_not_stored;
} chaos_tally;

static void tally(const chaos_run *run, chaos_tally *t)
{
    memset(t, 0, sizeof *t);
    for (long i = 0; i < run->messages; i++) {
        const chaos_msg *m = &run->msgs[i];
        t->acked += m->push == CHAOS_ACKED;
        t->unknown += m->push == CHAOS_UNKNOWN;
        t->unsent += m->push == CHAOS_UNSENT;
        t->stored += m->stored > 0;
        t->lost += m->push == CHAOS_ACKED && m->stored == 0;
        t->stored_dups += m->stored > 1;
        t->skipped += m->stored > 0 && m->deliveries == 0;
        t->unknown_stored += m->push == CHAOS_UNKNOWN && m->stored > 0;
        t->delivered_not_stored += m->stored == 0 && m->deliveries > 0;
    }
}

static bool report_messages(const chaos_run *run)
{
    chaos_tally t;
    tally(run, &t);
    const chaos_counts *n = &run->n;
    printf("chaos: queue %s, %ld partitions, %ld producers, batch %ld\n",
           run->queue, run->partitions, run->producers, run->batch);
    printf("  pushes:   %" PRIu64 " messages acknowledged, %" PRIu64 " unknown at the end (%" PRIu64
           " of them stored), %" PRIu64 " never sent\n", t.acked, t.unknown, t.unknown_stored, t.unsent);
    printf("            %" PRIu64 " requests, %" PRIu64 " failed or unanswered, %" PRIu64
           " resent, %" PRIu64 " items answered duplicate\n",
           (uint64_t)n->push_requests, (uint64_t)n->push_failed, (uint64_t)n->push_resent, (uint64_t)n->push_dup_items);
    printf("  consumer: %" PRIu64 " pops (%" PRIu64 " failed), %" PRIu64 " acks (%" PRIu64
           " unanswered, %" PRIu64 " answered without success)\n",
           (uint64_t)n->pops, (uint64_t)n->pops_failed, (uint64_t)n->acks, (uint64_t)n->acks_failed,
           (uint64_t)n->acks_refused);
    printf("  redelivered after an ack not answered 2xx: %" PRIu64 "\n", (uint64_t)n->redelivered_excused);
    printf("  stored:   %" PRIu64 " messages\n", t.stored);
    printf("  lost (acknowledged, not stored):        %" PRIu64 "\n", t.lost);
    printf("  stored duplicates:                      %" PRIu64 "\n", t.stored_dups);
    printf("  skipped (stored, never delivered):      %" PRIu64 "\n", t.skipped);
    printf("  redelivered after a 2xx ack:            %" PRIu64 "\n", (uint64_t)n->redelivered_after_ack);
    printf("  delivered but not stored:               %" PRIu64 "\n", t.delivered_not_stored);
    printf("  foreign transactionIds:                 %" PRIu64 "\n", (uint64_t)n->foreign);
    printf("  out of a producer's order:              %" PRIu64 "\n", n->out_of_order);
    return t.lost == 0 && t.stored_dups == 0 && t.skipped == 0 && n->redelivered_after_ack == 0 &&
           t.delivered_not_stored == 0 && n->foreign == 0 && n->out_of_order == 0 && t.acked > 0;
}

static void run_threads(chaos_run *run)
{
    pthread_t th[2 * CHAOS_MAX_THREADS];
    chaos_worker w[2 * CHAOS_MAX_THREADS];
    long n = 0;
    for (long k = 0; k < run->producers + run->partitions; k++, n++) {
        bool producer = k < run->producers;
        const char *url = producer || !run->consumer_url ? run->url : run->consumer_url;
        w[n] = (chaos_worker){ run, producer ? k : k - run->producers, http_client_new(url) };
        http_client_set_timeout(w[n].http, CHAOS_TIMEOUT_MS);
        if (pthread_create(&th[n], NULL, producer ? producer_main : consumer_main, &w[n]) != 0) abort();
    }
    for (long k = 0; k < n; k++) {
        pthread_join(th[k], NULL);
        http_client_free(w[k].http);
    }
}

static int check_opts(const cli_cmd *cmd, const chaos_run *run, const chaos_opts *o)
{
    if (run->producers < 1 || run->producers > CHAOS_MAX_THREADS)
        return cli_usage_error(cmd, "--producers must be 1..%d", CHAOS_MAX_THREADS);
    if (run->partitions < 1 || run->partitions > CHAOS_MAX_PARTS)
        return cli_usage_error(cmd, "--partitions must be 1..%d", CHAOS_MAX_PARTS);
    if (run->batch < 1 || run->batch > 1000) return cli_usage_error(cmd, "--batch must be 1..1000");
    if (run->messages < run->producers || run->messages > 100000000)
        return cli_usage_error(cmd, "--messages must be --producers..100000000");
    if (o->tasks < 0 || o->tasks > 10000000) return cli_usage_error(cmd, "--tasks must be 0..10000000");
    if (o->tasks && (!o->task_queue || !*o->task_queue || !o->task_runs || !*o->task_runs))
        return cli_usage_error(cmd, "--tasks needs --task-queue and --task-runs");
    if (o->workflows > 100000) return cli_usage_error(cmd, "--workflows must be 0..100000");
    if (o->workflows && (!o->workflow_queue || !*o->workflow_queue || !o->task_runs || !*o->task_runs))
        return cli_usage_error(cmd, "--workflows needs --workflow-queue and --task-runs");
    if (o->schedule && (!o->schedule_queue || !*o->schedule_queue || !o->task_runs || !*o->task_runs))
        return cli_usage_error(cmd, "--schedule needs --schedule-queue and --task-runs");
    return 0;
}

/* The parts beside the message log, started with the workload. */
typedef struct chaos_parts {
    chaos_mover       *mover;
    chaos_tasks       *tasks;
    chaos_http_worker *worker;
    chaos_workflows   *workflows;
    chaos_schedule    *schedule;
} chaos_parts;

/* The HTTP worker serves every task queue of the run, beside the `silt
 * worker` processes, on the consumers' server (where those run too). */
static void parts_start(chaos_run *run, const chaos_opts *o, chaos_parts *p)
{
    int64_t give_up = run->t_drain_ms + CHAOS_GRACE_MS;
    p->mover = chaos_mover_new(run);
    chaos_mover_start(p->mover);
    const char *queues[3];
    int nq = 0;
    if (o->tasks) queues[nq++] = o->task_queue;
    if (o->workflows) queues[nq++] = o->workflow_queue;
    if (o->schedule) queues[nq++] = o->schedule_queue;
    if (nq)
        p->worker = chaos_http_worker_start(run->consumer_url ? run->consumer_url : run->url, queues, nq,
                                            o->task_runs, give_up);
    if (o->tasks) {
        p->tasks = chaos_tasks_new(run->url, o->task_queue, o->tasks);
        chaos_tasks_start(p->tasks, run->t_end_ms, run->t_drain_ms);
    }
    if (o->workflows) {
        p->workflows = chaos_workflows_new(run->url, o->workflow_queue, o->workflows);
        chaos_workflows_start(p->workflows, run->t_end_ms, run->t_drain_ms);
    }
    if (o->schedule) p->schedule = chaos_schedule_watch(run->url, o->schedule, o->schedule_queue, give_up);
}

/* Every task-like part waits for its ends while the HTTP worker still
 * runs; the runs file is read once every end is in. */
static bool parts_check(chaos_parts *p, const chaos_opts *o)
{
    if (p->tasks) chaos_tasks_await(p->tasks);
    if (p->workflows) chaos_workflows_await(p->workflows);
    if (p->schedule) chaos_schedule_await(p->schedule);
    chaos_http_worker_stop(p->worker);
    p->worker = NULL;
    if (!o->task_runs) return true;
    chaos_runs *runs = chaos_runs_load(o->task_runs);
    bool ok = true;
    if (p->tasks && !chaos_tasks_report(p->tasks, runs)) ok = false;
    if (p->workflows && !chaos_workflows_report(p->workflows, runs)) ok = false;
    if (p->schedule && !chaos_schedule_report(p->schedule, runs)) ok = false;
    chaos_runs_free(runs);
    return ok;
}

static void parts_free(chaos_parts *p)
{
    chaos_mover_free(p->mover);
    chaos_tasks_free(p->tasks);
    chaos_workflows_free(p->workflows);
    chaos_schedule_free(p->schedule);
}

static bool run_workload(chaos_run *run, const chaos_opts *o, http_client *h)
{
    chaos_parts parts = { 0 };
    run->producers_left = (int)run->producers;
    parts_start(run, o, &parts);
    run_threads(run);
    chaos_mover_join(parts.mover);
    if (parts.tasks) chaos_tasks_join(parts.tasks);
    if (parts.workflows) chaos_workflows_join(parts.workflows);
    bool ok = read_back(run, h) == 0 && report_messages(run);
    if (!chaos_mover_check(parts.mover, h)) ok = false;
    if (!parts_check(&parts, o)) ok = false;
    parts_free(&parts);
    return ok;
}

static int chaos_main(chaos_run *run, const chaos_opts *o)
{
    http_client *h = http_client_new(run->url), *consumers = run->consumer_url ? http_client_new(run->consumer_url) : NULL;
    bool bad_consumer_url = run->consumer_url && !consumers;
    http_client_free(consumers);   /* only checked: each consumer thread makes its own */
    if (!h || bad_consumer_url) {
        cli_error("chaos: bad server URL %s", !h ? run->url : run->consumer_url);
        http_client_free(h);
        return CLI_EXIT_USAGE;
    }
    http_client_set_timeout(h, CHAOS_TIMEOUT_MS);
    uint8_t raw[16];
    char id[IDS_UUID_TEXT];
    ids_uuid7(raw);
    ids_uuid_format(raw, id);
    snprintf(run->queue, sizeof run->queue, "chaos-%s", id + 24);   /* the random tail */
    int code = CLI_EXIT_FAILED;
    if (chaos_configure(h, run->queue, clock_mono_ms() + 60000) == 0) {
        run->msgs = xcalloc((size_t)run->messages, sizeof *run->msgs);
        run->last_read = xcalloc((size_t)(run->partitions * run->producers), sizeof *run->last_read);
        run->t_end_ms = clock_mono_ms() + run->seconds * 1000;
        run->t_drain_ms = run->t_end_ms + run->drain * 1000;
        bool ok = run_workload(run, o, h);
        printf("chaos: %s\n", ok ? "ok" : "FAILED");
        if (ok) code = CLI_EXIT_OK;
        free(run->last_read);
        free(run->msgs);
    }
    http_client_free(h);
    return code;
}

int cli_chaos(int argc, char **argv)
{
    chaos_run run = { .url = cli_server_url(), .seconds = 60, .messages = 200000, .producers = 4,
                      .partitions = 4, .batch = 20, .drain = 120 };
    chaos_opts o = { 0 };
    const cli_opt opts[] = {
        { "url", CLI_OPT_STR, &run.url },                 { "consumer-url", CLI_OPT_STR, &run.consumer_url },
        { "seconds", CLI_OPT_INT, &run.seconds },         { "messages", CLI_OPT_INT, &run.messages },
        { "producers", CLI_OPT_INT, &run.producers },     { "partitions", CLI_OPT_INT, &run.partitions },
        { "batch", CLI_OPT_INT, &run.batch },             { "drain", CLI_OPT_INT, &run.drain },
        { "tasks", CLI_OPT_INT, &o.tasks },               { "task-queue", CLI_OPT_STR, &o.task_queue },
        { "task-runs", CLI_OPT_STR, &o.task_runs },       { "workflows", CLI_OPT_INT, &o.workflows },
        { "workflow-queue", CLI_OPT_STR, &o.workflow_queue }, { "schedule", CLI_OPT_STR, &o.schedule },
        { "schedule-queue", CLI_OPT_STR, &o.schedule_queue },
    };
    const cli_cmd cmd = { "chaos", chaos_usage, opts, sizeof opts / sizeof opts[0], 0, 0 };
    cli_args args;
    int code;
    int parsed = cli_parse(&cmd, argc, argv, &args, &code);
    cli_args_fini(&args);
    if (parsed < 0) return code;
    if ((code = check_opts(&cmd, &run, &o)) != 0) return code;
    return chaos_main(&run, &o);
}

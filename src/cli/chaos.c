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
 * Exit 0 when all hold, 1 otherwise.
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
#define CHAOS_LEASE_S      3       /* the queue's leaseTime: expired leases redeliver soon */
#define CHAOS_POP_BATCH    100
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
    "  --task-runs FILE  the file the workers' command appends to (required with --tasks)\n"
    "  --help            show this help\n";

/* What happened to message i. Each byte has one writer: push the producer
 * that owns i, deliveries and ack_ok the consumer of i's partition, stored
 * the read-back (after every thread has been joined). */
typedef struct chaos_msg {
    uint8_t push;         /* CHAOS_UNSENT, CHAOS_UNKNOWN or CHAOS_ACKED */
    uint8_t deliveries;   /* to the consumer group, saturating at 255 */
    uint8_t ack_ok;       /* the latest delivery's ack was answered 2xx, success */
    uint8_t stored;       /* times the read-back saw it, saturating */
} chaos_msg;

enum { CHAOS_UNSENT, CHAOS_UNKNOWN, CHAOS_ACKED };

typedef struct chaos_counts {
    _Atomic uint64_t push_requests, push_failed, push_resent, push_dup_items;
    _Atomic uint64_t pops, pops_failed, acks, acks_failed, acks_refused;
    _Atomic uint64_t redelivered_excused, redelivered_after_ack, foreign;
    uint64_t out_of_order;   /* the read-back's: a producer's message stored before one it pushed earlier */
} chaos_counts;

typedef struct chaos_run {
    const char   *url, *consumer_url;
    long          tasks;         /* --tasks: sent to task_queue, run by workers chaos.sh starts */
    const char   *task_queue, *task_runs;
    long          seconds, messages, producers, partitions, batch, drain;
    char          queue[48];
    chaos_msg    *msgs;          /* [messages] */
    long         *last_read;     /* [partitions * producers]: the read-back's last index of each producer */
    chaos_counts  n;
    int64_t       t_end_ms;      /* monotonic: the workload stops */
    int64_t       t_drain_ms;    /* monotonic: everything gives up */
    atomic_int    producers_left;
} chaos_run;

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

/* ---- producers ---- */

static void push_body(const chaos_run *run, long first, long n, buf *b)
{
    buf_reset(b);
    buf_puts(b, "{\"items\":[");
    for (long i = first; i < first + n; i++)
        buf_printf(b, "%s{\"queue\":\"%s\",\"partition\":\"p%ld\",\"transactionId\":\"m%ld\","
                   "\"payload\":{\"i\":%ld,\"s\":\"chaos\"}}",
                   i > first ? "," : "", run->queue, i % run->partitions, i, i);
    buf_puts(b, "]}");
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

/* Message number of a transactionId "m<i>" of this run, or -1. */
static long msg_index(const chaos_run *run, const json_doc *d, int tok)
{
    if (tok < 0 || d->tokens[tok].type != JSON_STRING) return -1;
    size_t n;
    const char *s = json_span(d, (uint32_t)tok, &n);
    if (n < 4 || s[1] != 'm') return -1;
    char *end;
    long i = strtol(s + 2, &end, 10);
    return end == s + n - 1 && i >= 0 && i < run->messages ? i : -1;
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

/* Handles one popped batch: 1 when it held messages, 0 when empty. */
static int consume_batch(chaos_worker *w, const json_doc *d, buf *body)
{
    chaos_run *run = w->run;
    int msgs = d->ntokens ? json_get(d, 0, "messages") : -1;
    if (msgs < 0 || d->tokens[msgs].type != JSON_ARRAY || d->tokens[msgs].count == 0) return 0;
    uint32_t count = d->tokens[msgs].count;
    long *seen = xmalloc(count * sizeof *seen);
    for (uint32_t k = 0; k < count; k++) {
        seen[k] = msg_index(run, d, json_get(d, (uint32_t)json_at(d, (uint32_t)msgs, k), "transactionId"));
        if (seen[k] < 0) run->n.foreign++;
        else note_delivery(run, seen[k]);
    }
    bool ok = ack_batch(w, d, json_at(d, (uint32_t)msgs, count - 1), body);
    for (uint32_t k = 0; k < count; k++)
        if (seen[k] >= 0) run->msgs[seen[k]].ack_ok = ok;
    free(seen);
    return 1;
}

/* Consumes until the producers are done and two pops that started more
 * than a lease after the last delivery or failure found nothing (a lease
 * left behind by a lost reply or a failed ack expired before they started,
 * so its batch would have come back), or until the drain deadline. */
static void *consumer_main(void *arg)
{
    chaos_worker *w = arg;
    chaos_run *run = w->run;
    char path[256];
    snprintf(path, sizeof path, "/api/v1/pop/queue/%s/partition/p%ld?consumerGroup=" CHAOS_GROUP
             "&batch=%d&wait=true&timeout=1000&subscriptionMode=all", run->queue, w->index, CHAOS_POP_BATCH);
    http_response r;
    json_doc d;
    buf body;
    http_response_init(&r);
    json_doc_init(&d);
    buf_init(&body);
    int64_t busy_at = clock_mono_ms();
    int quiet = 0;   /* empty pops started a lease (and a margin) after busy_at */
    while (!chaos_past(run->t_drain_ms) && !(run->producers_left == 0 && quiet >= 2)) {
        int64_t started = clock_mono_ms();
        run->n.pops++;
        if (chaos_call(w->http, "GET", path, NULL, &r, &d) < 0) {
            run->n.pops_failed++;
            busy_at = clock_mono_ms();
            quiet = 0;
            chaos_sleep_ms(CHAOS_BACKOFF_MS);
        } else if (consume_batch(w, &d, &body) > 0) {
            busy_at = clock_mono_ms();
            quiet = 0;
        } else if (started - busy_at > CHAOS_LEASE_S * 1000 + 500) {
            quiet++;
        }
    }
    buf_fini(&body);
    json_doc_fini(&d);
    http_response_fini(&r);
    return NULL;
}

/* ---- setup, read-back, report ---- */

static int configure_queue(chaos_run *run, http_client *h)
{
    buf body;
    buf_init(&body);
    buf_printf(&body, "{\"queue\":\"%s\",\"options\":{\"leaseTime\":%d}}", run->queue, CHAOS_LEASE_S);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    int rc = -1;
    int64_t deadline = clock_mono_ms() + 60000;
    while (rc < 0 && !chaos_past(deadline))
        if ((rc = chaos_call(h, "POST", "/api/v1/configure", &body, &r, &d)) < 0) chaos_sleep_ms(CHAOS_BACKOFF_MS);
    if (rc < 0) cli_error("chaos: could not configure queue %s (%s, HTTP %d)", run->queue,
                          http_client_error(h), r.status);
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body);
    return rc;
}

/* Message i was pushed by producer i / share (producer_main's ranges). */
static long producer_of(const chaos_run *run, long i)
{
    long share = run->messages / run->producers, k = share > 0 ? i / share : 0;
    return k < run->producers ? k : run->producers - 1;
}

/* Each producer's messages must come back in the order it pushed them. */
static void note_stored(chaos_run *run, long p, long i)
{
    long *last = &run->last_read[p * run->producers + producer_of(run, i)];
    if (i <= *last) run->n.out_of_order++;
    *last = i;
    if (run->msgs[i].stored < 255) run->msgs[i].stored++;
}

/* Reads one partition whole with group; -1 on any failure (autoAck: a reply
 * lost on the way would hide messages, so the caller starts over). */
static int read_partition(chaos_run *run, http_client *h, const char *group, long p)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/pop/queue/%s/partition/p%ld?consumerGroup=%s&batch=%d"
             "&autoAck=true&subscriptionMode=all", run->queue, p, group, CHAOS_READ_BATCH);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    int rc = 0;
    while (rc == 0) {
        if (chaos_call(h, "GET", path, NULL, &r, &d) < 0) { rc = -1; break; }
        int msgs = d.ntokens ? json_get(&d, 0, "messages") : -1;
        if (r.status == 204 || msgs < 0 || d.tokens[msgs].count == 0) break;
        for (uint32_t k = 0; k < d.tokens[msgs].count; k++) {
            long i = msg_index(run, &d, json_get(&d, (uint32_t)json_at(&d, (uint32_t)msgs, k), "transactionId"));
            if (i < 0) run->n.foreign++;
            else note_stored(run, p, i);
        }
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    return rc;
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
        while (p < run->partitions && read_partition(run, h, group, p) == 0) p++;
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
    run->producers_left = (int)run->producers;
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

static int check_opts(const cli_cmd *cmd, const chaos_run *run)
{
    if (run->producers < 1 || run->producers > CHAOS_MAX_THREADS)
        return cli_usage_error(cmd, "--producers must be 1..%d", CHAOS_MAX_THREADS);
    if (run->partitions < 1 || run->partitions > CHAOS_MAX_PARTS)
        return cli_usage_error(cmd, "--partitions must be 1..%d", CHAOS_MAX_PARTS);
    if (run->batch < 1 || run->batch > 1000) return cli_usage_error(cmd, "--batch must be 1..1000");
    if (run->messages < run->producers || run->messages > 100000000)
        return cli_usage_error(cmd, "--messages must be --producers..100000000");
    if (run->tasks < 0 || run->tasks > 10000000) return cli_usage_error(cmd, "--tasks must be 0..10000000");
    if (run->tasks && (!run->task_queue || !*run->task_queue || !run->task_runs || !*run->task_runs))
        return cli_usage_error(cmd, "--tasks needs --task-queue and --task-runs");
    return 0;
}

static int chaos_main(chaos_run *run)
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
    if (configure_queue(run, h) == 0) {
        run->msgs = xcalloc((size_t)run->messages, sizeof *run->msgs);
        run->last_read = xcalloc((size_t)(run->partitions * run->producers), sizeof *run->last_read);
        run->t_end_ms = clock_mono_ms() + run->seconds * 1000;
        run->t_drain_ms = run->t_end_ms + run->drain * 1000;
        chaos_tasks *tasks = run->tasks ? chaos_tasks_new(run->url, run->task_queue, run->tasks, run->task_runs) : NULL;
        if (tasks) chaos_tasks_start(tasks, run->t_end_ms, run->t_drain_ms);
        run_threads(run);
        if (tasks) chaos_tasks_join(tasks);
        bool ok = read_back(run, h) == 0 && report_messages(run);
        if (tasks && !chaos_tasks_check(tasks)) ok = false;
        printf("chaos: %s\n", ok ? "ok" : "FAILED");
        if (ok) code = CLI_EXIT_OK;
        chaos_tasks_free(tasks);
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
    const cli_opt opts[] = {
        { "url", CLI_OPT_STR, &run.url },             { "consumer-url", CLI_OPT_STR, &run.consumer_url },             { "seconds", CLI_OPT_INT, &run.seconds },
        { "messages", CLI_OPT_INT, &run.messages },   { "producers", CLI_OPT_INT, &run.producers },
        { "partitions", CLI_OPT_INT, &run.partitions }, { "batch", CLI_OPT_INT, &run.batch },
        { "drain", CLI_OPT_INT, &run.drain },         { "tasks", CLI_OPT_INT, &run.tasks },
        { "task-queue", CLI_OPT_STR, &run.task_queue }, { "task-runs", CLI_OPT_STR, &run.task_runs },
    };
    const cli_cmd cmd = { "chaos", chaos_usage, opts, sizeof opts / sizeof opts[0], 0, 0 };
    cli_args args;
    int code;
    int parsed = cli_parse(&cmd, argc, argv, &args, &code);
    cli_args_fini(&args);
    if (parsed < 0) return code;
    if ((code = check_opts(&cmd, &run)) != 0) return code;
    return chaos_main(&run);
}

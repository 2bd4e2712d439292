/* bench: `silt bench`, a load generator in the manner of redis-benchmark and
 * pgbench, usable against any deployment. Each scenario runs for --seconds
 * after a one-second warm-up that is not counted:
 *   push1/push10/push100  pushes of 1, 10 or 100 small JSON payloads over
 *                         --connections keep-alive connections, one request
 *                         in flight on each, items spread over --partitions;
 *   push10-1p/push100-1p  the same, but each request's items all into one
 *                         partition (the next of --partitions per request),
 *                         as Queen's clients usually send;
 *   push1@50%/push10@50%  the same pushes offered, open-loop, at half the
 *                         rate push1/push10 just measured flat out: the
 *                         latency at half of the maximum load (issue 15);
 *   popack                --consumers loops of pop (batch 100) then one batch
 *                         ack, on a queue preloaded beforehand;
 *   tasks                 8 producers sending tasks (25 per request, holding
 *                         off beyond 1,000 waiting) and 8 workers claiming
 *                         up to 100 at a time, started with the claim,
 *                         completed in one request (bench_tasks.c); latency
 *                         is each task's, send to completion.
 * It ends with the server's resident memory from /metrics/prometheus. Queues
 * get fresh names (bench-push-<random>, bench-pop-<random>) so runs never see
 * each other's messages. The load itself is bench_load's. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/bench_load.h"
#include "cli/bench_tasks.h"
#include "base/ids.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_WARMUP_S      1.0
#define BENCH_TIMEOUT_S     60
#define BENCH_PRELOAD_BATCH 1000
#define BENCH_POP_BATCH     100
#define BENCH_WIDE_PARTITIONS 100000   /* the queue of the *-100k scenarios */
#define BENCH_WIDE_PRELOAD    200000   /* two messages in each of its partitions */
#define BENCH_MAX_TOKENS    (1u << 20)

static const char bench_usage[] =
    "usage: silt bench [options]\n"
    "\n"
    "Measures a running server: push throughput at batch 1, 10 and 100, the latency\n"
    "of push batch 1 and 10 at half the rate each just reached, pop+ack throughput,\n"
    "tasks sent, claimed and completed by 8 workers (latency: each task's, from its\n"
    "send to its completion), and the server's resident memory. Each scenario runs\n"
    "for --seconds after a 1 s warm-up. Latencies are per request (for pop+ack, each\n"
    "pop and each ack). pop+ack first preloads its queue; if the consumers drain it\n"
    "before the time is up, the rate covers the time until then and a note says so.\n"
    "A paced load (push1@50%, push10@50%, --rate) is open-loop: requests are due on\n"
    "a fixed schedule and each one's latency counts from when it was due, waiting\n"
    "for a free connection included. The offered column shows the paced rate.\n"
    "Exits 1 if any request failed (transport error, non-2xx, or a refused item).\n"
    "\n"
    "options:\n"
    "  --url URL          server (default SILT_URL, else " CLI_DEFAULT_URL ")\n"
    "  --seconds N        measured seconds per scenario (default 10)\n"
    "  --connections N    concurrent push connections (default 50)\n"
    "  --partitions N     partitions p0..pN-1 the items are spread over (default 10)\n"
    "  --consumers N      concurrent pop+ack consumers (default 10)\n"
    "  --preload N        messages pushed before pop+ack (default 1000000)\n"
    "  --scenarios LIST   comma-separated subset of push1, push1@50%, push10,\n"
    "                     push10@50%, push100, push10-1p, push100-1p, popack, tasks,\n"
    "                     workflow, push1-100k, popack-100k (default all twelve;\n"
    "                     without the @50% two when --rate is given), or\n"
    "                     health: GET /health, the ceiling of\n"
    "                     this client and the server's HTTP layer. pushN@50% offers\n"
    "                     half of what pushN measured and so runs pushN first. The\n"
    "                     -100k scenarios use one queue of 100,000 partitions, made\n"
    "                     first with 200,000 messages (two per partition) whatever\n"
    "                     --preload says\n"
    "  --keep             do not delete the benchmark queues afterwards\n"
    "  --json             machine-readable output\n"
    "  --rate N           push scenarios offer N msg/s (a steady, open-loop load)\n"
    "                     instead of as many as the server takes\n"
    "  --queue NAME       push scenarios use this queue (kept afterwards) instead of\n"
    "                     a fresh one, e.g. one configured with retention\n"
    "  --help             show this help\n";

typedef struct bench_opts {
    const char *url;
    long        seconds;
    long        connections;
    long        partitions;
    long        consumers;
    long        preload;
    const char *scenarios;
    const char *queue;        /* --queue: push into this queue instead of a fresh one */
    long        rate;         /* --rate: messages per second for push scenarios; 0: flat out */
    bool        keep;
    bool        json;
} bench_opts;

/* One scenario's outcome, as reported. */
typedef struct bench_result {
    const char *key;          /* "push1" */
    const char *name;         /* "push batch=1" */
    bool        ran;
    double      offered;      /* messages per second offered; 0: flat out */
    double      rate;         /* messages per second */
    double      p50_ms, p99_ms;
    uint64_t    msgs, requests, errors, item_errors;
    double      seconds;      /* measured */
    char        note[160];    /* e.g. the queue ran dry */
    char        first_error[512];
} bench_result;

typedef struct bench_run {
    const bench_opts *o;
    http_url server;          /* --url, read as every command reads it */
    char  suffix[16];         /* random part of the queue names */
    char  push_queue[64];
    char  pop_queue[64];
    char  task_queue[64];
    char  workflow_queue[64];
    char  wide_queue[64];     /* BENCH_WIDE_PARTITIONS partitions */
    bool  pushed, popped;     /* which queues exist, for the clean-up */
    bool  wide;               /* wide_queue made and preloaded */
    uint64_t wide_preloaded;  /* messages that preload put there */
    double rate;              /* msg/s the push scenario about to run offers; 0: flat out */
} bench_run;

/* ---- push ---- */

typedef struct push_ctx {
    const char *queue;
    int         batch;        /* items per request */
    long        partitions;
    bool        per_request;  /* one partition per request, not per item */
    uint64_t    seq;          /* items built so far: picks partition and payload */
    uint64_t    requests;     /* requests built so far: picks a per_request partition */
    uint64_t    limit;        /* items to send in total; 0: until the deadline */
    uint64_t    queued;       /* items the server accepted */
    json_doc    doc;
} push_ctx;

static void push_put_item(buf *b, push_ctx *c, uint64_t request)
{
    uint64_t n = c->seq++;
    buf_printf(b, "{\"queue\":\"%s\",\"partition\":\"p%u\",\"payload\":"
               "{\"n\":%u,\"s\":\"abcdefghij\"}}",
               c->queue, (unsigned)((c->per_request ? request : n) % (uint64_t)c->partitions),
               (unsigned)(10000 + n % 90000));
}

static bool push_next(bench_worker *w, void *ctx)
{
    push_ctx *c = ctx;
    int n = c->batch;
    if (c->limit) {
        if (c->seq >= c->limit) return false;
        if (c->limit - c->seq < (uint64_t)n) n = (int)(c->limit - c->seq);
    }
    w->method = BENCH_POST;
    buf_reset(&w->path);
    buf_puts(&w->path, "/api/v1/push");
    buf_reset(&w->body);
    buf_puts(&w->body, "{\"items\":[");
    uint64_t request = c->requests++;
    for (int i = 0; i < n; i++) {
        if (i) buf_putc(&w->body, ',');
        push_put_item(&w->body, c, request);
    }
    buf_puts(&w->body, "]}");
    return true;
}

static void item_error(bench_worker *w, const char *what, const char *body, size_t len)
{
    bench_stats *s = bench_load_stats(w->load);
    s->item_errors++;
    bench_stats_note(s, "%s: %s in reply: %.*s%s", w->path.data, what,
                     (int)(len < 200 ? len : 200), body, len > 200 ? "..." : "");
}

/* What a reply of one result per item sent (a top-level array) says. */
typedef struct item_reply {
    const char *malformed;   /* noted when the reply is not such an array */
    const char *failed;      /* noted for each item that did not succeed */
    bool      (*succeeded)(const json_doc *d, uint32_t item);
} item_reply;

/* Counts the items of the reply in d that succeeded, noting the others. */
static long count_succeeded(bench_worker *w, json_doc *d, const item_reply *how, const char *body, size_t len)
{
    if (json_parse(d, body, len, BENCH_MAX_TOKENS) < 0 || d->tokens[0].type != JSON_ARRAY) {
        item_error(w, how->malformed, body, len);
        return 0;
    }
    long ok = 0;
    for (uint32_t i = 0, t = 1; i < d->tokens[0].count; i++, t = d->tokens[t].next) {
        if (how->succeeded(d, t)) ok++;
        else item_error(w, how->failed, body + d->tokens[t].start, d->tokens[t].end - d->tokens[t].start);
    }
    return ok;
}

static bool push_succeeded(const json_doc *d, uint32_t item)
{
    int st = json_get(d, item, "status");
    return st >= 0 && !json_str_eq(d, (uint32_t)st, "failed");
}

static bool ack_succeeded(const json_doc *d, uint32_t item)
{
    int s = json_get(d, item, "success");
    return s >= 0 && d->tokens[s].type == JSON_TRUE;
}

/* Counts the accepted items of a push reply. */
static long push_done(bench_worker *w, void *ctx, int status, const char *body, size_t len)
{
    static const item_reply push_reply = { "malformed push reply", "item failed", push_succeeded };
    push_ctx *c = ctx;
    (void)status;
    long ok = count_succeeded(w, &c->doc, &push_reply, body, len);
    c->queued += (uint64_t)ok;
    return ok;
}

static const bench_ops push_ops = { push_next, push_done };

/* ---- pop + ack ---- */

typedef struct popack_ctx {
    buf       pop_path;
    uint64_t  target;         /* messages preloaded: all acked means dry */
    uint64_t  acked;          /* over the whole run, warm-up included */
    double    dry_at;         /* seconds into the measured window; < 0 in warm-up */
    bool      dry;
    json_doc  doc;
} popack_ctx;

enum { PHASE_POP = 0, PHASE_ACK = 1 };

static bool popack_next(bench_worker *w, void *ctx)
{
    popack_ctx *c = ctx;
    buf_reset(&w->path);
    if (w->phase == PHASE_ACK) {
        w->method = BENCH_POST;
        buf_puts(&w->path, "/api/v1/ack/batch");
    } else {
        w->method = BENCH_GET;
        buf_append(&w->path, c->pop_path.data, c->pop_path.len);
    }
    return true;
}

static void popack_check_dry(bench_worker *w, popack_ctx *c)
{
    if (c->dry || c->acked < c->target) return;
    c->dry = true;
    c->dry_at = bench_load_elapsed(w->load);
    bench_load_stop(w->load);
}

/* Copies "key":<value> of obj, verbatim, when present. */
static void put_member(buf *b, const json_doc *d, int obj, const char *key)
{
    int t = json_get(d, (uint32_t)obj, key);
    if (t < 0) return;
    size_t n;
    const char *s = json_span(d, (uint32_t)t, &n);
    buf_printf(b, "\"%s\":%.*s,", key, (int)n, s);
}

/* Turns a pop reply into the batch ack of every message in it. */
static long pop_done(bench_worker *w, popack_ctx *c, const char *body, size_t len)
{
    json_doc *d = &c->doc;
    int msgs;
    if (json_parse(d, body, len, BENCH_MAX_TOKENS) < 0
        || (msgs = json_get(d, 0, "messages")) < 0 || d->tokens[msgs].type != JSON_ARRAY) {
        item_error(w, "malformed pop reply", body, len);
        return 0;
    }
    buf_reset(&w->body);
    buf_puts(&w->body, "{\"acknowledgments\":[");
    uint32_t n = d->tokens[msgs].count;
    for (uint32_t i = 0, m = (uint32_t)msgs + 1; i < n; i++, m = d->tokens[m].next) {
        buf_puts(&w->body, i ? ",{" : "{");
        put_member(&w->body, d, (int)m, "transactionId");
        put_member(&w->body, d, (int)m, "partitionId");
        put_member(&w->body, d, (int)m, "leaseId");
        buf_puts(&w->body, "\"status\":\"completed\"}");
    }
    buf_puts(&w->body, "]}");
    if (n) w->phase = PHASE_ACK;
    return 0;
}

/* Counts the items of a batch-ack reply that succeeded. */
static long ack_done(bench_worker *w, popack_ctx *c, const char *body, size_t len)
{
    static const item_reply ack_reply = { "malformed ack reply", "ack item failed", ack_succeeded };
    w->phase = PHASE_POP;
    long ok = count_succeeded(w, &c->doc, &ack_reply, body, len);
    c->acked += (uint64_t)ok;
    popack_check_dry(w, c);
    return ok;
}

static long popack_done(bench_worker *w, void *ctx, int status, const char *body, size_t len)
{
    popack_ctx *c = ctx;
    if (w->phase == PHASE_ACK) return ack_done(w, c, body, len);
    if (status == 204) {
        popack_check_dry(w, c);
        return 0;
    }
    return pop_done(w, c, body, len);
}

static const bench_ops popack_ops = { popack_next, popack_done };

/* ---- scenarios ---- */

static bench_config run_config(const bench_run *r, long workers, double warmup, double measure)
{
    return (bench_config){ .server = &r->server, .workers = (int)workers,
                           .warmup_s = warmup, .measure_s = measure,
                           .timeout_s = BENCH_TIMEOUT_S };
}

/* Folds a finished load's statistics into the result. */
static void result_take(bench_result *res, bench_stats *s)
{
    res->ran = true;
    res->msgs += s->msgs;
    res->requests += s->requests;
    res->errors += s->errors;
    res->item_errors += s->item_errors;
    res->seconds = s->seconds;
    res->rate = s->seconds > 0 ? (double)s->msgs / s->seconds : 0;
    res->p50_ms = bench_stats_pct_ms(s, 50);
    res->p99_ms = bench_stats_pct_ms(s, 99);
    if (!res->first_error[0]) memcpy(res->first_error, s->first_error, sizeof s->first_error);
}

static int run_load(const bench_config *cfg, const bench_ops *ops, void *ctx, bench_result *res)
{
    bench_stats s;
    bench_stats_init(&s);
    int rc = bench_load_run(cfg, ops, ctx, &s);
    result_take(res, &s);
    bench_stats_fini(&s);
    return rc;
}

static int run_push_into(bench_run *r, const char *queue, long partitions, bool per_request, int batch,
                         bench_result *res)
{
    push_ctx c = { .queue = queue, .batch = batch, .partitions = partitions, .per_request = per_request };
    json_doc_init(&c.doc);
    bench_config cfg = run_config(r, r->o->connections, BENCH_WARMUP_S, (double)r->o->seconds);
    cfg.rate = r->rate / batch;
    int rc = run_load(&cfg, &push_ops, &c, res);
    json_doc_fini(&c.doc);
    return rc;
}

static int run_push(bench_run *r, int batch, bench_result *res)
{
    r->pushed = true;
    return run_push_into(r, r->push_queue, r->o->partitions, false, batch, res);
}

static int run_push_per_request(bench_run *r, int batch, bench_result *res)
{
    r->pushed = true;
    return run_push_into(r, r->push_queue, r->o->partitions, true, batch, res);
}

static int run_push1(bench_run *r, bench_result *res) { return run_push(r, 1, res); }
static int run_push10(bench_run *r, bench_result *res) { return run_push(r, 10, res); }
static int run_push100(bench_run *r, bench_result *res) { return run_push(r, 100, res); }
static int run_push10_1p(bench_run *r, bench_result *res) { return run_push_per_request(r, 10, res); }
static int run_push100_1p(bench_run *r, bench_result *res) { return run_push_per_request(r, 100, res); }

/* Pushes count messages over partitions p0.. of queue in batches of 1000;
 * returns how many were accepted. */
static uint64_t run_preload(bench_run *r, const char *queue, long partitions, long count, bench_result *res)
{
    push_ctx c = { .queue = queue, .batch = BENCH_PRELOAD_BATCH,
                   .partitions = partitions, .limit = (uint64_t)count };
    json_doc_init(&c.doc);
    long workers = (count + BENCH_PRELOAD_BATCH - 1) / BENCH_PRELOAD_BATCH;
    if (workers > r->o->connections) workers = r->o->connections;
    bench_config cfg = run_config(r, workers, 0, 0);
    fprintf(stderr, "silt bench: preloading %ld messages into %s\n", count, queue);
    bench_result pre = { .name = "preload" };
    if (run_load(&cfg, &push_ops, &c, &pre) == 0)
        fprintf(stderr, "silt bench: preloaded %" PRIu64 " messages in %.1f s (%.0f msg/s)\n",
                c.queued, pre.seconds, pre.rate);
    res->errors += pre.errors;
    res->item_errors += pre.item_errors;
    memcpy(res->first_error, pre.first_error, sizeof pre.first_error);
    json_doc_fini(&c.doc);
    return c.queued;
}

static void popack_note(bench_result *res, const popack_ctx *c, long seconds)
{
    if (!c->dry) return;
    if (c->dry_at <= 0)
        snprintf(res->note, sizeof res->note,
                 "queue ran dry during the warm-up; raise --preload");
    else
        snprintf(res->note, sizeof res->note,
                 "queue ran dry after %.1f s of %ld; raise --preload", c->dry_at, seconds);
}

/* Pops (batch 100) and acks what queue holds, target messages in all. */
static int run_popack_from(bench_run *r, const char *queue, uint64_t target, bench_result *res)
{
    popack_ctx c = { .dry_at = 0, .target = target };
    buf_init(&c.pop_path);
    buf_printf(&c.pop_path, "/api/v1/pop/queue/%s?batch=%d", queue, BENCH_POP_BATCH);
    json_doc_init(&c.doc);
    bench_config cfg = run_config(r, r->o->consumers, BENCH_WARMUP_S, (double)r->o->seconds);
    int rc = run_load(&cfg, &popack_ops, &c, res);
    popack_note(res, &c, r->o->seconds);
    json_doc_fini(&c.doc);
    buf_fini(&c.pop_path);
    return rc;
}

static int run_popack(bench_run *r, bench_result *res)
{
    r->popped = true;
    uint64_t preloaded = run_preload(r, r->pop_queue, r->o->partitions, r->o->preload, res);
    return run_popack_from(r, r->pop_queue, preloaded, res);
}

/* ---- one queue of 100,000 partitions ---- */

/* The wide queue, made once by whichever -100k scenario runs first: every
 * partition created (two messages each) before anything is measured. */
static uint64_t wide_queue_ready(bench_run *r, bench_result *res)
{
    if (!r->wide) {
        r->wide = true;
        r->wide_preloaded = run_preload(r, r->wide_queue, BENCH_WIDE_PARTITIONS, BENCH_WIDE_PRELOAD, res);
    }
    return r->wide_preloaded;
}

static int run_push1_wide(bench_run *r, bench_result *res)
{
    wide_queue_ready(r, res);
    return run_push_into(r, r->wide_queue, BENCH_WIDE_PARTITIONS, false, 1, res);
}

static int run_popack_wide(bench_run *r, bench_result *res)
{
    uint64_t target = wide_queue_ready(r, res);
    return run_popack_from(r, r->wide_queue, target, res);
}

/* ---- tasks: send, claim and start, complete ---- */

static int run_task_load(bench_run *r, bench_result *res, bool workflows)
{
    int producers = workflows ? BENCH_WORKFLOW_PRODUCERS : BENCH_TASK_PRODUCERS;
    bench_config cfg = run_config(r, producers + BENCH_TASK_WORKERS, BENCH_WARMUP_S, (double)r->o->seconds);
    bench_stats s;
    bench_stats_init(&s);
    bench_tasks_result t = { 0 };
    int rc = bench_tasks_run(&cfg, producers, workflows ? r->workflow_queue : r->task_queue, workflows, &s, &t);
    result_take(res, &s);
    if (!workflows) {   /* a task's, send to completion, not a request's */
        res->p50_ms = t.p50_ms;
        res->p99_ms = t.p99_ms;
    }
    bench_stats_fini(&s);
    return rc;
}

static int run_tasks(bench_run *r, bench_result *res) { return run_task_load(r, res, false); }
static int run_workflow(bench_run *r, bench_result *res) { return run_task_load(r, res, true); }

/* ---- the HTTP baseline: what the client and the server's HTTP layer can do ---- */

static bool health_next(bench_worker *w, void *ctx)
{
    (void)ctx;
    w->method = BENCH_GET;
    buf_reset(&w->path);
    buf_puts(&w->path, "/health");
    return true;
}

static long health_done(bench_worker *w, void *ctx, int status, const char *body, size_t len)
{
    (void)w; (void)ctx; (void)status; (void)body; (void)len;
    return 1;
}

static const bench_ops health_ops = { health_next, health_done };

static int run_health(bench_run *r, bench_result *res)
{
    bench_config cfg = run_config(r, r->o->connections, BENCH_WARMUP_S, (double)r->o->seconds);
    return run_load(&cfg, &health_ops, NULL, res);
}

typedef struct bench_scenario {
    const char *key;
    const char *name;
    int (*run)(bench_run *r, bench_result *res);
    bool        by_default;   /* run when --scenarios is not given */
    const char *half_of;      /* the key of an earlier row: runs at half the rate
                                 that one measured flat out, and selects it too */
} bench_scenario;

static const bench_scenario bench_scenarios[] = {
    { "push1",   "push batch=1",      run_push1,   true, NULL },
    { "push1@50%", "push batch=1 @50%", run_push1, true, "push1" },
    { "push10",  "push batch=10",     run_push10,  true, NULL },
    { "push10@50%", "push batch=10 @50%", run_push10, true, "push10" },
    { "push100", "push batch=100",    run_push100, true, NULL },
    { "push10-1p", "push batch=10 1p/req", run_push10_1p, true, NULL },
    { "push100-1p", "push batch=100 1p/req", run_push100_1p, true, NULL },
    { "popack",  "pop+ack batch=100", run_popack,  true, NULL },
    { "tasks",   "tasks send->complete", run_tasks, true, NULL },
    { "workflow", "workflow nodes",   run_workflow, true, NULL },
    { "push1-100k", "push batch=1 @100k", run_push1_wide, true, NULL },
    { "popack-100k", "pop+ack @100k",  run_popack_wide, true, NULL },
    { "health",  "GET /health",       run_health,  false, NULL },
};
#define BENCH_NSCEN (sizeof bench_scenarios / sizeof bench_scenarios[0])

/* ---- options and the server ---- */

static size_t scenario_find(const char *name, size_t n)
{
    size_t i = 0;
    while (i < BENCH_NSCEN && !(strlen(bench_scenarios[i].key) == n
                                && strncmp(bench_scenarios[i].key, name, n) == 0))
        i++;
    return i;
}

static size_t scenario_index(const char *key)
{
    return scenario_find(key, strlen(key));
}

/* Without --scenarios: every default row, but with --rate no half-load row
 * (the flat-out rows it would halve are paced then). */
static void select_default(const bench_opts *o, bool sel[BENCH_NSCEN])
{
    for (size_t i = 0; i < BENCH_NSCEN; i++)
        sel[i] = bench_scenarios[i].by_default && !(o->rate && bench_scenarios[i].half_of);
}

/* A half-load row needs the rate of its flat-out row: selecting it selects that. */
static int select_flat_outs(const cli_cmd *cmd, const bench_opts *o, bool sel[BENCH_NSCEN])
{
    for (size_t i = 0; i < BENCH_NSCEN; i++) {
        const char *of = bench_scenarios[i].half_of;
        if (!sel[i] || !of) continue;
        if (o->rate)
            return cli_usage_error(cmd, "--rate does not go with %s (it offers half of what "
                                   "%s measured flat out)", bench_scenarios[i].key, of);
        sel[scenario_index(of)] = true;
    }
    return 0;
}

static int select_scenarios(const cli_cmd *cmd, const bench_opts *o, bool sel[BENCH_NSCEN])
{
    const char *list = o->scenarios;
    if (!list) select_default(o, sel);
    else memset(sel, 0, BENCH_NSCEN * sizeof sel[0]);
    for (const char *p = list; p && *p; ) {
        size_t n = strcspn(p, ","), i = scenario_find(p, n);
        if (i == BENCH_NSCEN)
            return cli_usage_error(cmd, "unknown scenario \"%.*s\" (choose from push1, push1@50%%, "
                                   "push10, push10@50%%, push100, push10-1p, push100-1p, popack, tasks, workflow, push1-100k, "
                                   "popack-100k, health)", (int)n, p);
        sel[i] = true;
        p += n + (p[n] == ',');
    }
    for (size_t i = 0; i < BENCH_NSCEN; i++)
        if (sel[i]) return select_flat_outs(cmd, o, sel);
    return cli_usage_error(cmd, "--scenarios names no scenario");
}

static int check_range(const cli_cmd *cmd, const char *name, long v, long lo, long hi)
{
    if (v >= lo && v <= hi) return 0;
    return cli_usage_error(cmd, "--%s must be between %ld and %ld", name, lo, hi);
}

static int bench_check(const cli_cmd *cmd, const bench_opts *o, bool sel[BENCH_NSCEN])
{
    int rc = check_range(cmd, "seconds", o->seconds, 1, 86400);
    if (!rc) rc = check_range(cmd, "connections", o->connections, 1, 10000);
    if (!rc) rc = check_range(cmd, "partitions", o->partitions, 1, 100000);
    if (!rc) rc = check_range(cmd, "consumers", o->consumers, 1, 10000);
    if (!rc) rc = check_range(cmd, "preload", o->preload, 1, 1000000000L);
    if (!rc) rc = select_scenarios(cmd, o, sel);
    return rc;
}

static int parse_target(const cli_cmd *cmd, bench_run *r, const char *url)
{
    if (http_url_parse(url, &r->server) == 0) return 0;
    return cli_usage_error(cmd, "the server URL must look like http://host[:port], not \"%s\"",
                           url);
}

/* One blocking request outside the measurement. 0 with the reply in resp. */
static int server_call(const char *url, const char *method, const char *path,
                       http_response *resp)
{
    http_client *c = cli_http_client(url);
    if (!c) return -1;
    http_client_set_timeout(c, BENCH_TIMEOUT_S * 1000);
    int rc = http_request(c, method, path, NULL, 0, resp);
    if (rc < 0) cli_error("%s %s%s: %s", method, url, path, http_client_error(c));
    http_client_free(c);
    return rc;
}

static int server_ready(const char *url)
{
    http_response resp;
    http_response_init(&resp);
    int rc = server_call(url, "GET", "/health", &resp);
    if (rc == 0 && resp.status != 200) {
        cli_error("server at %s is not ready: GET /health answered HTTP %d: %s", url,
                  resp.status, resp.body.data ? resp.body.data : "");
        rc = -1;
    }
    http_response_fini(&resp);
    return rc;
}

/* The value of a Prometheus sample line "name value"; -1 when absent. */
static double prom_value(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ') return strtod(p + n + 1, NULL);
    return -1;
}

/* The server's resident memory in bytes; -1 when it does not say. */
static double server_rss(const char *url)
{
    http_response resp;
    http_response_init(&resp);
    double rss = -1;
    if (server_call(url, "GET", "/metrics/prometheus", &resp) == 0 && resp.status == 200
        && resp.body.data)
        rss = prom_value(resp.body.data, "process_resident_memory_bytes");
    http_response_fini(&resp);
    return rss;
}

/* Best effort: a server without the delete route keeps the queues. */
static void server_drop_queue(const char *url, const char *queue)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/resources/queues/%s", queue);
    http_client *c = cli_http_client(url);
    http_response resp;
    http_response_init(&resp);
    if (c && http_request(c, "DELETE", path, NULL, 0, &resp) < 0) { /* ignored */ }
    http_response_fini(&resp);
    http_client_free(c);
}

static void names_init(bench_run *r)
{
    uint8_t id[16];
    char text[IDS_UUID_TEXT];
    ids_uuid7(id);
    ids_uuid_format(id, text);
    snprintf(r->suffix, sizeof r->suffix, "%.8s", text + 28);   /* random bits */
    if (r->o->queue) snprintf(r->push_queue, sizeof r->push_queue, "%s", r->o->queue);
    else snprintf(r->push_queue, sizeof r->push_queue, "bench-push-%s", r->suffix);
    snprintf(r->pop_queue, sizeof r->pop_queue, "bench-pop-%s", r->suffix);
    snprintf(r->task_queue, sizeof r->task_queue, "bench-tasks-%s", r->suffix);
    snprintf(r->workflow_queue, sizeof r->workflow_queue, "bench-wf-%s", r->suffix);
    snprintf(r->wide_queue, sizeof r->wide_queue, "bench-wide-%s", r->suffix);
}

/* ---- output ---- */

static uint64_t result_failures(const bench_result *res)
{
    return res->errors + res->item_errors;
}

/* The offered column: the paced rate, or "-" for a scenario run flat out. */
static void print_offered(const bench_result *res)
{
    if (res->offered > 0) printf(" %10.0f", res->offered);
    else printf(" %10s", "-");
}

static void print_table(const bench_result *res, double rss)
{
    printf("%-20s %10s %10s %8s %8s %8s\n", "scenario", "offered/s", "msg/s", "p50 ms",
           "p99 ms", "errors");
    for (size_t i = 0; i < BENCH_NSCEN; i++) {
        if (!res[i].ran) continue;
        printf("%-20s", res[i].name);
        print_offered(&res[i]);
        printf(" %10.0f %8.2f %8.2f %8" PRIu64 "\n", res[i].rate, res[i].p50_ms,
               res[i].p99_ms, result_failures(&res[i]));
    }
    if (rss >= 0) printf("%-20s %10.1f MiB\n", "server RSS", rss / 1048576.0);
    else printf("%-20s %10s\n", "server RSS", "unknown");
    for (size_t i = 0; i < BENCH_NSCEN; i++) {
        if (res[i].note[0]) printf("note: %s: %s\n", res[i].name, res[i].note);
        if (res[i].first_error[0]) printf("first error in %s: %s\n", res[i].name,
                                          res[i].first_error);
    }
}

static void json_result(buf *b, const bench_result *r)
{
    buf_puts(b, "{\"scenario\":");
    json_put_cstr(b, r->key);
    buf_puts(b, ",\"name\":");
    json_put_cstr(b, r->name);
    if (r->offered > 0) buf_printf(b, ",\"offeredMsgPerSec\":%.1f", r->offered);
    else buf_puts(b, ",\"offeredMsgPerSec\":null");
    buf_printf(b, ",\"msgPerSec\":%.1f,\"p50Ms\":%.3f,\"p99Ms\":%.3f,\"messages\":%" PRIu64
               ",\"requests\":%" PRIu64 ",\"seconds\":%.3f,\"errors\":%" PRIu64
               ",\"itemErrors\":%" PRIu64 ",\"note\":", r->rate, r->p50_ms, r->p99_ms,
               r->msgs, r->requests, r->seconds, r->errors, r->item_errors);
    json_put_cstr(b, r->note[0] ? r->note : NULL);
    buf_puts(b, ",\"firstError\":");
    json_put_cstr(b, r->first_error[0] ? r->first_error : NULL);
    buf_putc(b, '}');
}

static void print_json(const bench_run *run, const bench_result *res, double rss,
                       uint64_t failures)
{
    const bench_opts *o = run->o;
    buf b;
    buf_init(&b);
    buf_puts(&b, "{\"url\":");
    json_put_cstr(&b, o->url);
    buf_printf(&b, ",\"seconds\":%ld,\"connections\":%ld,\"partitions\":%ld,\"consumers\":%ld,"
               "\"preload\":%ld,\"results\":[", o->seconds, o->connections, o->partitions,
               o->consumers, o->preload);
    for (size_t i = 0, n = 0; i < BENCH_NSCEN; i++) {
        if (!res[i].ran) continue;
        if (n++) buf_putc(&b, ',');
        json_result(&b, &res[i]);
    }
    if (rss >= 0) buf_printf(&b, "],\"serverRssBytes\":%.0f", rss);
    else buf_puts(&b, "],\"serverRssBytes\":null");
    buf_printf(&b, ",\"errors\":%" PRIu64 "}", failures);
    cli_print_json(b.data, b.len);
    buf_fini(&b);
}

/* ---- the command ---- */

/* The msg/s scenario i offers: half of what its flat-out row measured, or --rate. */
static double offered_rate(const bench_run *r, size_t i, const bench_result *res)
{
    const char *of = bench_scenarios[i].half_of;
    return of ? res[scenario_index(of)].rate / 2 : (double)r->o->rate;
}

/* Runs scenario i into all[i]; all holds the rows run before it. */
static void run_one(bench_run *r, size_t i, bench_result *all)
{
    const bench_scenario *sc = &bench_scenarios[i];
    bench_result *res = &all[i];
    r->rate = offered_rate(r, i, all);
    if (sc->half_of && r->rate <= 0) {
        snprintf(res->note, sizeof res->note, "not run: %s measured no rate to halve", sc->half_of);
        return;
    }
    res->offered = r->rate;
    if (r->rate > 0) fprintf(stderr, "silt bench: %s for %ld s, offering %.0f msg/s\n", sc->name,
                             r->o->seconds, r->rate);
    else fprintf(stderr, "silt bench: %s for %ld s\n", sc->name, r->o->seconds);
    if (sc->run(r, res) < 0) res->errors++;
    fprintf(stderr, "silt bench: %s: %.0f msg/s, p50 %.2f ms, p99 %.2f ms, %" PRIu64
            " errors\n", sc->name, res->rate, res->p50_ms, res->p99_ms, result_failures(res));
}

static int bench_main(bench_run *r, const bool sel[BENCH_NSCEN])
{
    if (server_ready(r->o->url) < 0) return CLI_EXIT_FAILED;
    names_init(r);
    bench_result res[BENCH_NSCEN];
    uint64_t failures = 0;
    for (size_t i = 0; i < BENCH_NSCEN; i++) {
        res[i] = (bench_result){ .key = bench_scenarios[i].key, .name = bench_scenarios[i].name };
        if (sel[i]) run_one(r, i, res);
        failures += result_failures(&res[i]);
    }
    double rss = server_rss(r->o->url);
    if (!r->o->keep && !r->o->queue && r->pushed) server_drop_queue(r->o->url, r->push_queue);
    if (!r->o->keep && r->popped) server_drop_queue(r->o->url, r->pop_queue);
    if (!r->o->keep && r->wide) server_drop_queue(r->o->url, r->wide_queue);
    if (r->o->json) print_json(r, res, rss, failures);
    else print_table(res, rss);
    return failures ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

int cli_bench(int argc, char **argv)
{
    bench_opts o = { .seconds = 10, .connections = 50, .partitions = 10, .consumers = 10,
                     .preload = 1000000 };
    const cli_opt opts[] = {
        { "url",         CLI_OPT_STR,  &o.url },
        { "seconds",     CLI_OPT_INT,  &o.seconds },
        { "connections", CLI_OPT_INT,  &o.connections },
        { "partitions",  CLI_OPT_INT,  &o.partitions },
        { "consumers",   CLI_OPT_INT,  &o.consumers },
        { "preload",     CLI_OPT_INT,  &o.preload },
        { "scenarios",   CLI_OPT_STR,  &o.scenarios },
        { "queue",       CLI_OPT_STR,  &o.queue },
        { "rate",        CLI_OPT_INT,  &o.rate },
        { "keep",        CLI_OPT_FLAG, &o.keep },
        { "json",        CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "bench", bench_usage, opts, sizeof opts / sizeof opts[0], 0, 0 };
    bool sel[BENCH_NSCEN];
    bench_run r = { .o = &o };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) {
        if (!o.url) o.url = cli_server_url();
        rc = bench_check(&cmd, &o, sel);
        if (rc == 0) rc = parse_target(&cmd, &r, o.url);
        if (rc == 0) rc = bench_main(&r, sel);
    }
    cli_args_fini(&a);
    return rc;
}

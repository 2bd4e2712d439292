/* bench: `silt bench`, a load generator in the manner of redis-benchmark and
 * pgbench, usable against any deployment. Each scenario runs for --seconds
 * after a one-second warm-up that is not counted:
 *   push1/push10/push100  pushes of 1, 10 or 100 small JSON payloads over
 *                         --connections keep-alive connections, one request
 *                         in flight on each, items spread over --partitions;
 *   popack                --consumers loops of pop (batch 100) then one batch
 *                         ack, on a queue preloaded beforehand.
 * It ends with the server's resident memory from /metrics/prometheus. Queues
 * get fresh names (bench-push-<random>, bench-pop-<random>) so runs never see
 * each other's messages. The load itself is bench_load's. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/bench_load.h"
#include "base/ids.h"
#include <event2/http.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_WARMUP_S      1.0
#define BENCH_TIMEOUT_S     60
#define BENCH_PRELOAD_BATCH 1000
#define BENCH_POP_BATCH     100
#define BENCH_MAX_TOKENS    (1u << 20)

static const char bench_usage[] =
    "usage: silt bench [options]\n"
    "\n"
    "Measures a running server: push throughput at batch 1, 10 and 100, pop+ack\n"
    "throughput, and the server's resident memory. Each scenario runs for --seconds\n"
    "after a 1 s warm-up. Exits 1 if any request failed.\n"
    "\n"
    "options:\n"
    "  --url URL          server (default SILT_URL, else " CLI_DEFAULT_URL ")\n"
    "  --seconds N        measured seconds per scenario (default 10)\n"
    "  --connections N    concurrent push connections (default 50)\n"
    "  --partitions N     partitions p0..pN-1 the items are spread over (default 10)\n"
    "  --consumers N      concurrent pop+ack consumers (default 10)\n"
    "  --preload N        messages pushed before pop+ack (default 1000000)\n"
    "  --scenarios LIST   comma-separated subset of push1,push10,push100,popack\n"
    "  --keep             do not delete the benchmark queues afterwards\n"
    "  --json             machine-readable output\n"
    "  --help             show this help\n";

typedef struct bench_opts {
    const char *url;
    long        seconds;
    long        connections;
    long        partitions;
    long        consumers;
    long        preload;
    const char *scenarios;
    bool        keep;
    bool        json;
} bench_opts;

/* One scenario's outcome, as reported. */
typedef struct bench_result {
    const char *key;          /* "push1" */
    const char *name;         /* "push batch=1" */
    bool        ran;
    double      rate;         /* messages per second */
    double      p50_ms, p99_ms;
    uint64_t    msgs, requests, errors, item_errors;
    double      seconds;      /* measured */
    char        note[160];    /* e.g. the queue ran dry */
    char        first_error[512];
} bench_result;

typedef struct bench_run {
    const bench_opts *o;
    char  host[256];
    int   port;
    char  suffix[16];         /* random part of the queue names */
    char  push_queue[64];
    char  pop_queue[64];
    bool  pushed, popped;     /* which queues exist, for the clean-up */
} bench_run;

/* ---- push ---- */

typedef struct push_ctx {
    const char *queue;
    int         batch;        /* items per request */
    long        partitions;
    uint64_t    seq;          /* items built so far: picks partition and payload */
    uint64_t    limit;        /* items to send in total; 0: until the deadline */
    uint64_t    queued;       /* items the server accepted */
    json_doc    doc;
} push_ctx;

static void push_put_item(buf *b, push_ctx *c)
{
    uint64_t n = c->seq++;
    buf_printf(b, "{\"queue\":\"%s\",\"partition\":\"p%u\",\"payload\":"
               "{\"n\":%u,\"s\":\"abcdefghij\"}}",
               c->queue, (unsigned)(n % (uint64_t)c->partitions),
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
    for (int i = 0; i < n; i++) {
        if (i) buf_putc(&w->body, ',');
        push_put_item(&w->body, c);
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

/* Counts the accepted items of a push reply (a top-level array). */
static long push_done(bench_worker *w, void *ctx, int status, const char *body, size_t len)
{
    push_ctx *c = ctx;
    json_doc *d = &c->doc;
    (void)status;
    if (json_parse(d, body, len, BENCH_MAX_TOKENS) < 0 || d->tokens[0].type != JSON_ARRAY) {
        item_error(w, "malformed push reply", body, len);
        return 0;
    }
    long ok = 0;
    for (uint32_t i = 0, t = 1; i < d->tokens[0].count; i++, t = d->tokens[t].next) {
        int st = json_get(d, t, "status");
        if (st >= 0 && !json_str_eq(d, (uint32_t)st, "failed")) ok++;
        else item_error(w, "item failed", body + d->tokens[t].start,
                        d->tokens[t].end - d->tokens[t].start);
    }
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
    json_doc *d = &c->doc;
    w->phase = PHASE_POP;
    if (json_parse(d, body, len, BENCH_MAX_TOKENS) < 0 || d->tokens[0].type != JSON_ARRAY) {
        item_error(w, "malformed ack reply", body, len);
        return 0;
    }
    long ok = 0;
    for (uint32_t i = 0, t = 1; i < d->tokens[0].count; i++, t = d->tokens[t].next) {
        int s = json_get(d, t, "success");
        if (s >= 0 && d->tokens[s].type == JSON_TRUE) ok++;
        else item_error(w, "ack item failed", body + d->tokens[t].start,
                        d->tokens[t].end - d->tokens[t].start);
    }
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
    return (bench_config){ .host = r->host, .port = r->port, .workers = (int)workers,
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

static int run_push(bench_run *r, int batch, bench_result *res)
{
    push_ctx c = { .queue = r->push_queue, .batch = batch, .partitions = r->o->partitions };
    json_doc_init(&c.doc);
    bench_config cfg = run_config(r, r->o->connections, BENCH_WARMUP_S, (double)r->o->seconds);
    r->pushed = true;
    int rc = run_load(&cfg, &push_ops, &c, res);
    json_doc_fini(&c.doc);
    return rc;
}

static int run_push1(bench_run *r, bench_result *res) { return run_push(r, 1, res); }
static int run_push10(bench_run *r, bench_result *res) { return run_push(r, 10, res); }
static int run_push100(bench_run *r, bench_result *res) { return run_push(r, 100, res); }

/* Pushes --preload messages in batches of 1000; returns how many were accepted. */
static uint64_t run_preload(bench_run *r, bench_result *res)
{
    push_ctx c = { .queue = r->pop_queue, .batch = BENCH_PRELOAD_BATCH,
                   .partitions = r->o->partitions, .limit = (uint64_t)r->o->preload };
    json_doc_init(&c.doc);
    long workers = (r->o->preload + BENCH_PRELOAD_BATCH - 1) / BENCH_PRELOAD_BATCH;
    if (workers > r->o->connections) workers = r->o->connections;
    bench_config cfg = run_config(r, workers, 0, 0);
    r->popped = true;
    fprintf(stderr, "silt bench: preloading %ld messages into %s\n", r->o->preload, r->pop_queue);
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

static int run_popack(bench_run *r, bench_result *res)
{
    popack_ctx c = { .dry_at = 0 };
    c.target = run_preload(r, res);
    buf_init(&c.pop_path);
    buf_printf(&c.pop_path, "/api/v1/pop/queue/%s?batch=%d", r->pop_queue, BENCH_POP_BATCH);
    json_doc_init(&c.doc);
    bench_config cfg = run_config(r, r->o->consumers, BENCH_WARMUP_S, (double)r->o->seconds);
    int rc = run_load(&cfg, &popack_ops, &c, res);
    popack_note(res, &c, r->o->seconds);
    json_doc_fini(&c.doc);
    buf_fini(&c.pop_path);
    return rc;
}

typedef struct bench_scenario {
    const char *key;
    const char *name;
    int (*run)(bench_run *r, bench_result *res);
} bench_scenario;

static const bench_scenario bench_scenarios[] = {
    { "push1",   "push batch=1",      run_push1 },
    { "push10",  "push batch=10",     run_push10 },
    { "push100", "push batch=100",    run_push100 },
    { "popack",  "pop+ack batch=100", run_popack },
};
#define BENCH_NSCEN (sizeof bench_scenarios / sizeof bench_scenarios[0])

/* bench_tasks: send -> claim (and start) -> complete (see bench_tasks.h). */
#include "cli/bench_tasks.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/json.h"

#define BENCH_TASK_TOKENS (1u << 20)
#define BENCH_IDLE_HOLD_S 0.001   /* between a waiting producer's GET /health */

typedef struct tasks_ctx {
    const char *queue;
    int         producers;
    buf         workflow;      /* the workflow each send starts; empty: send tasks */
    uint64_t    sent, completed;
    json_doc    doc;
    bench_stats latency;   /* per task, send to completion */
} tasks_ctx;

enum { PHASE_CLAIM = 0, PHASE_FINISH = 1, PHASE_SEND = 2, PHASE_IDLE = 3 };

/* A fan-out/fan-in of BENCH_WORKFLOW_FAN no-op nodes between a root and a
 * sink, on the scenario's queue. */
static void workflow_body(buf *b, const char *queue)
{
    buf_printf(b, "{\"name\":\"bench\",\"output\":\"sink\",\"nodes\":[{\"id\":\"root\",\"task\":\"noop\","
               "\"queue\":\"%s\"}", queue);
    for (int i = 0; i < BENCH_WORKFLOW_FAN; i++)
        buf_printf(b, ",{\"id\":\"n%d\",\"task\":\"noop\",\"queue\":\"%s\",\"waitsFor\":[\"root\"]}", i, queue);
    buf_printf(b, ",{\"id\":\"sink\",\"task\":\"noop\",\"queue\":\"%s\",\"waitsFor\":[", queue);
    for (int i = 0; i < BENCH_WORKFLOW_FAN; i++) buf_printf(b, "%s\"n%d\"", i ? "," : "", i);
    buf_puts(b, "]}]}");
}

static void producer_next(bench_worker *w, tasks_ctx *c)
{
    w->method = BENCH_POST;
    if (c->workflow.len) {
        buf_puts(&w->path, "/api/v1/workflows");
        buf_reset(&w->body);
        buf_append(&w->body, c->workflow.data, c->workflow.len);
        return;
    }
    buf_puts(&w->path, "/api/v1/tasks");
    buf_reset(&w->body);
    buf_puts(&w->body, "{\"tasks\":[");
    /* args carry the send time, so the worker that completes a task knows its age */
    double now_s = (double)clock_mono_us() / 1e6;
    for (int i = 0; i < BENCH_TASK_SEND_BATCH; i++)
        buf_printf(&w->body, "%s{\"name\":\"noop\",\"queue\":\"%s\",\"args\":{\"t\":%.6f}}", i ? "," : "", c->queue,
                   now_s);
    buf_puts(&w->body, "]}");
}

static bool tasks_next(bench_worker *w, void *ctx)
{
    tasks_ctx *c = ctx;
    buf_reset(&w->path);
    uint64_t backlog = c->workflow.len ? BENCH_WORKFLOW_BACKLOG : BENCH_TASK_BACKLOG;
    if (w->id < c->producers && c->sent - c->completed >= backlog) {
        /* enough waiting: a cheap request instead, so the latency measured is
         * the engine's, not a queue's; a millisecond apart, so that producers
         * waiting for room do not take the server's CPU from the workers */
        w->hold_s = BENCH_IDLE_HOLD_S;
        w->method = BENCH_GET;
        buf_puts(&w->path, "/health");
        w->phase = PHASE_IDLE;
        return true;
    }
    if (w->id < c->producers) { producer_next(w, c); w->phase = PHASE_SEND; return true; }
    w->method = BENCH_POST;
    buf_printf(&w->path, "/api/v1/workers/bench-%d/%s", w->id, w->phase == PHASE_FINISH ? "finish" : "claim");
    if (w->phase == PHASE_CLAIM) {
        buf_reset(&w->body);
        buf_printf(&w->body, "{\"queues\":[\"%s\"],\"max\":%d,\"start\":true,\"waitMs\":1000}", c->queue,
                   BENCH_TASK_CLAIM);
    }
    return true;
}

/* A claim reply becomes the finish request for every task in it. */
static void claimed(bench_worker *w, tasks_ctx *c, const char *body, size_t len)
{
    json_doc *d = &c->doc;
    int tasks;
    if (json_parse(d, body, len, BENCH_TASK_TOKENS) < 0 || (tasks = json_get(d, 0, "tasks")) < 0) {
        bench_stats_note(bench_load_stats(w->load), "malformed claim reply: %.*s", (int)(len > 200 ? 200 : len), body);
        bench_load_stats(w->load)->item_errors++;
        return;
    }
    uint32_t n = d->tokens[tasks].count;
    if (n == 0) return;
    buf_reset(&w->body);
    buf_puts(&w->body, "{\"tasks\":[");
    for (uint32_t i = 0; i < n; i++) {
        int t = json_at(d, (uint32_t)tasks, i);
        size_t idn, cln;
        const char *id = json_span(d, (uint32_t)json_get(d, (uint32_t)t, "id"), &idn);
        const char *claim = json_span(d, (uint32_t)json_get(d, (uint32_t)t, "claimId"), &cln);
        buf_printf(&w->body, "%s{\"id\":%.*s,\"claimId\":%.*s,\"result\":", i ? "," : "", (int)idn, id, (int)cln, claim);
        size_t an;
        const char *args = json_span(d, (uint32_t)json_get(d, (uint32_t)t, "args"), &an);
        buf_append(&w->body, args, an);   /* the send time rides back in the result */
        buf_puts(&w->body, "}");
    }
    buf_puts(&w->body, "]}");
    w->phase = PHASE_FINISH;
}

/* A finish reply: the tasks it completed. Latency comes from the finish
 * request's own body (each result is the task's args, holding its send time). */
static long finished(bench_worker *w, tasks_ctx *c, const char *body, size_t len)
{
    w->phase = PHASE_CLAIM;
    json_doc *d = &c->doc;
    double now_s = (double)clock_mono_us() / 1e6;
    if (json_parse(d, w->body.data, w->body.len, BENCH_TASK_TOKENS) < 0) return 0;
    int sent_tasks = json_get(d, 0, "tasks");
    for (uint32_t i = 0; i < d->tokens[sent_tasks].count; i++) {
        int t = json_at(d, (uint32_t)sent_tasks, i);
        int r = json_get(d, (uint32_t)t, "result"), ts = r >= 0 ? json_get(d, (uint32_t)r, "t") : -1;
        if (ts < 0) continue;
        size_t n;
        const char *text = json_span(d, (uint32_t)ts, &n);
        double sent_s = strtod(text, NULL);
        bench_stats *l = &c->latency;
        if (l->nlat == l->caplat) {
            l->caplat = l->caplat ? l->caplat * 2 : 4096;
            l->lat_us = realloc(l->lat_us, l->caplat * sizeof *l->lat_us);
            if (!l->lat_us) abort();
        }
        if (bench_load_elapsed(w->load) >= 0) l->lat_us[l->nlat++] = (uint32_t)((now_s - sent_s) * 1e6);
    }
    if (json_parse(d, body, len, BENCH_TASK_TOKENS) < 0) return 0;
    long ok = 0;
    int tasks = json_get(d, 0, "tasks");
    for (uint32_t i = 0; tasks >= 0 && i < d->tokens[tasks].count; i++) {
        int st = json_get(d, (uint32_t)json_at(d, (uint32_t)tasks, i), "status");
        if (st >= 0 && json_str_eq(d, (uint32_t)st, "COMPLETED")) ok++;
        else bench_load_stats(w->load)->item_errors++;
    }
    c->completed += (uint64_t)ok;
    return ok;
}

static long tasks_done(bench_worker *w, void *ctx, int status, const char *body, size_t len)
{
    tasks_ctx *c = ctx;
    (void)status;
    if (w->id < c->producers) {
        if (w->phase == PHASE_SEND) c->sent += c->workflow.len ? BENCH_WORKFLOW_FAN + 2 : BENCH_TASK_SEND_BATCH;
        return 0;
    }
    if (w->phase == PHASE_FINISH) return finished(w, c, body, len);
    claimed(w, c, body, len);
    return 0;
}

static const bench_ops tasks_ops = { tasks_next, tasks_done };

int bench_tasks_run(const bench_config *cfg, int producers, const char *queue, bool workflows, bench_stats *stats,
                    bench_tasks_result *out)
{
    tasks_ctx c = { .queue = queue, .producers = producers };
    buf_init(&c.workflow);
    if (workflows) workflow_body(&c.workflow, queue);
    json_doc_init(&c.doc);
    bench_stats_init(&c.latency);
    int rc = bench_load_run(cfg, &tasks_ops, &c, stats);
    out->sent = c.sent;
    out->completed = c.completed;
    out->p50_ms = bench_stats_pct_ms(&c.latency, 50);
    out->p99_ms = bench_stats_pct_ms(&c.latency, 99);
    bench_stats_fini(&c.latency);
    json_doc_fini(&c.doc);
    buf_fini(&c.workflow);
    return rc;
}

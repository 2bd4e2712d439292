/* engine: retention passes (see engine.h). A pass is a small state machine
 * driven by database replies: claim, candidates, steps, cleanup. Up to
 * RETENTION_CONCURRENCY steps run side by side, each on its own partition
 * and its own connection, each its own transaction. */
#include "retention/engine.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/ids.h"
#include "base/json.h"
#include "base/log.h"
#include <time.h>

#define LEASE_SECONDS 60      /* a pass lease outlives a crashed runner by at most this */
#define RENEW_AFTER_US (20 * 1000000LL)   /* steps renew the claim this often */

typedef struct candidate {
    char id[37];
    char queue[256], partition[256];
    bool sidecar;
} candidate;

typedef struct pass {
    retention_engine *e;
    bool              dry;
    candidate        *cands;
    size_t            ncands, next;   /* next: first candidate no slot has taken */
    int               inflight;       /* steps running */
    bool              stop;           /* no new steps: limit, busy or error */
    bool              busy;           /* another server holds the pass */
    char             *error;
    int64_t           claimed_us;     /* when the claim was last made */
    int64_t           steps;
    buf               report;        /* "deleted": [...] entries */
    int64_t           sidecar_rows, partitions_removed;
    retention_done_fn done;
    void             *arg;
} pass;

struct retention_engine {
    struct event_base *base;
    db_pool           *pool;
    retention_settings settings;
    struct event      *timer, *again;
    char               runner[37];
    pass              *running;
    bool               stopping;
    retention_totals   totals;
};

static void next_step(pass *p);
static void cleanup_step(pass *p);

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Claims (or renews) the pass for this server: the one write that decides
 * which replica runs, under a transaction-level advisory lock. */
static void claim(pass *p, db_done_fn done)
{
    char lease[16];
    snprintf(lease, sizeof lease, "%d", LEASE_SECONDS);
    const char *values[2] = { p->e->runner, lease };
    db_job *job = db_job_new(done, p);
    db_job_call(job, STMT_RET_CLAIM, values, NULL, NULL);
    db_submit(p->e->pool, job);
}

/* ---- the end of a pass ---- */

static void release_done(void *arg, const db_reply *reply)
{
    (void)arg; (void)reply;
}

static void finish(pass *p, const char *error)
{
    retention_engine *e = p->e;
    if (!p->dry) {
        const char *values[1] = { e->runner };
        db_job *job = db_job_new(release_done, NULL);
        db_job_call(job, STMT_RET_RELEASE, values, NULL, NULL);
        db_submit(e->pool, job);
    }
    buf out;
    buf_init(&out);
    buf_printf(&out, "{\"dryRun\":%s,\"busy\":%s,\"steps\":%lld,\"deleted\":[%s],\"sidecarRowsPurged\":%lld,"
               "\"partitionsRemoved\":%lld}", p->dry ? "true" : "false", p->busy ? "true" : "false", (long long)p->steps,
               p->report.data ? p->report.data : "", (long long)p->sidecar_rows, (long long)p->partitions_removed);
    e->totals.passes++;
    e->running = NULL;
    /* A pass that stopped at a limit leaves work: the next one starts at once. */
    bool limited = p->steps >= e->settings.max_steps || (p->ncands > 0 && p->ncands >= (size_t)e->settings.max_steps);
    if (!p->dry && !error && limited && !e->stopping && e->timer) event_active(e->again, EV_TIMEOUT, 0);
    if (p->done) p->done(p->arg, out.data, error);
    buf_fini(&out);
    buf_fini(&p->report);
    free(p->error);
    free(p->cands);
    free(p);
}

/* ---- partition cleanup ---- */

static void cleanup_done(void *arg, const db_reply *reply)
{
    pass *p = arg;
    if (reply->error) { finish(p, reply->error); return; }
    const PGresult *r = reply->results[0];
    int removed = atoi(PQgetvalue(r, 0, 1));
    p->steps++;
    p->partitions_removed += removed;
    p->e->totals.partitions_removed += (uint64_t)removed;
    if (strcmp(PQgetvalue(r, 0, 0), "removed") == 0 && p->steps < p->e->settings.max_steps && !p->e->stopping) {
        cleanup_step(p);   /* more may be waiting */
        return;
    }
    finish(p, NULL);
}

static void cleanup_step(pass *p)
{
    retention_engine *e = p->e;
    char days[24], batch[24];
    snprintf(days, sizeof days, "%lld", (long long)e->settings.cleanup_days);
    snprintf(batch, sizeof batch, "%lld", (long long)e->settings.batch);
    const char *values[3] = { e->runner, days, batch };
    db_job *job = db_job_new(cleanup_done, p);
    db_job_call(job, STMT_RET_CLEANUP, values, NULL, NULL);
    db_submit(e->pool, job);
}

/* ---- segment and sidecar steps ---- */

static void report_step(pass *p, const candidate *c, const PGresult *r)
{
    retention_engine *e = p->e;
    const char *rule = PQgetvalue(r, 0, 1);
    long long dropped = atoll(PQgetvalue(r, 0, 4)), leased = atoll(PQgetvalue(r, 0, 5));
    if (p->report.len) buf_putc(&p->report, ',');
    buf_printf(&p->report, "{\"partitionId\":\"%s\",\"queue\":", c->id);
    json_put_cstr(&p->report, c->queue);
    buf_puts(&p->report, ",\"partition\":");
    json_put_cstr(&p->report, c->partition);
    buf_printf(&p->report, ",\"rule\":\"%s\",\"fromOffset\":%s,\"toOffset\":%s,\"offsets\":%lld,"
               "\"leasedOffsets\":%lld,\"segments\":%s}", rule, PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3),
               dropped, leased, PQgetvalue(r, 0, 6));
    if (p->dry) return;
    int k = strcmp(rule, "retention") == 0 ? 0 : strcmp(rule, "completed_retention") == 0 ? 1 : 2;
    e->totals.dropped[k] += (uint64_t)dropped;
    e->totals.leased_evicted += (uint64_t)leased;
    if (leased) log_warn("retention: maxWaitTimeSeconds evicted %lld leased offsets of %s/%s", leased, c->queue, c->partition);
}

/* One step slot: works on candidate c until the partition has nothing more. */
typedef struct slot {
    pass   *p;
    size_t  c;
} slot;

static void run_step(slot *sl);
static void fill_slots(pass *p);

static void steps_over(pass *p)
{
    if (p->inflight > 0) return;   /* the last running step ends the phase */
    if (p->error || p->stop || p->dry || !p->e->settings.cleanup_enabled) { finish(p, p->error); return; }
    cleanup_step(p);
}

static void step_done(void *arg, const db_reply *reply)
{
    slot *sl = arg;
    pass *p = sl->p;
    p->inflight--;
    if (reply->error) {
        if (!p->error) p->error = strdup(reply->error);
        p->stop = true;
    } else {
        const PGresult *r = reply->results[0];
        candidate *c = &p->cands[sl->c];
        const char *status = PQgetvalue(r, 0, 0);
        bool more = false;
        p->steps++;
        p->e->totals.steps++;
        if (strcmp(status, "busy") == 0) p->stop = p->busy = true;
        else if (c->sidecar && strcmp(status, "purged") == 0) {
            int n = atoi(PQgetvalue(r, 0, 1));
            p->sidecar_rows += n;
            p->e->totals.sidecar_rows += (uint64_t)n;
            more = n >= p->e->settings.batch;
        } else if (!c->sidecar && (strcmp(status, "deleted") == 0 || strcmp(status, "would_delete") == 0)) {
            report_step(p, c, r);
            more = !p->dry;   /* a real step may leave more below the boundary */
        }
        if (more && !p->stop && p->steps < p->e->settings.max_steps) { p->inflight++; run_step(sl); return; }
    }
    free(sl);
    fill_slots(p);
    steps_over(p);
}

static void run_step(slot *sl)
{
    pass *p = sl->p;
    retention_engine *e = p->e;
    candidate *c = &p->cands[sl->c];
    char batch[24], recheck[24];
    snprintf(batch, sizeof batch, "%lld", (long long)e->settings.batch);
    /* a partition held back by a consumer group is looked at again a pass later */
    snprintf(recheck, sizeof recheck, "%lld", (long long)(e->settings.interval_ms > 1000 ? e->settings.interval_ms / 1000 : 1));
    db_job *job = db_job_new(step_done, sl);
    if (c->sidecar) {
        const char *values[3] = { e->runner, c->id, batch };
        db_job_call(job, STMT_RET_SIDECAR_STEP, values, NULL, NULL);
    } else {
        const char *values[5] = { e->runner, c->id, batch, p->dry ? "t" : "f", recheck };
        db_job_call(job, STMT_RET_STEP, values, NULL, NULL);
    }
    db_submit(e->pool, job);
}

static void renew_done(void *arg, const db_reply *reply)
{
    pass *p = arg;
    p->inflight--;
    if (reply->error || PQgetvalue(reply->results[0], 0, 0)[0] != 't') p->stop = p->busy = true;
    fill_slots(p);
    steps_over(p);
}

/* Starts steps on untaken candidates while slots are free. */
static void fill_slots(pass *p)
{
    retention_engine *e = p->e;
    if (p->stop || e->stopping || p->steps >= e->settings.max_steps) { p->stop = true; return; }
    if (!p->dry && now_us() - p->claimed_us > RENEW_AFTER_US && p->inflight == 0) {
        p->claimed_us = now_us();
        p->inflight++;
        claim(p, renew_done);
        return;
    }
    while (p->inflight < e->settings.concurrency && p->next < p->ncands) {
        size_t c = p->next++;
        if (p->cands[c].sidecar && p->dry) continue;
        slot *sl = calloc(1, sizeof *sl);
        if (!sl) abort();
        sl->p = p;
        sl->c = c;
        p->inflight++;
        run_step(sl);
    }
}

static void next_step(pass *p)
{
    fill_slots(p);
    steps_over(p);
}

/* ---- candidates ---- */

static void copy_value(char *out, size_t cap, const PGresult *r, int row, int col)
{
    snprintf(out, cap, "%s", PQgetvalue(r, row, col));
}

static void candidates_done(void *arg, const db_reply *reply)
{
    pass *p = arg;
    if (reply->error) { finish(p, reply->error); return; }
    const PGresult *r = reply->results[0];
    p->ncands = (size_t)PQntuples(r);
    p->cands = calloc(p->ncands + 1, sizeof *p->cands);
    if (!p->cands) abort();
    for (size_t i = 0; i < p->ncands; i++) {
        candidate *c = &p->cands[i];
        copy_value(c->id, sizeof c->id, r, (int)i, 0);
        copy_value(c->queue, sizeof c->queue, r, (int)i, 1);
        copy_value(c->partition, sizeof c->partition, r, (int)i, 2);
        c->sidecar = strcmp(PQgetvalue(r, (int)i, 3), "sidecar") == 0;
    }
    next_step(p);
}

static void find_candidates(pass *p)
{
    char limit[24];
    snprintf(limit, sizeof limit, "%lld", (long long)p->e->settings.max_steps);
    const char *values[1] = { limit };
    db_job *job = db_job_new(candidates_done, p);
    db_job_call(job, STMT_RET_CANDIDATES, values, NULL, NULL);
    db_submit(p->e->pool, job);
}

static void claimed(void *arg, const db_reply *reply)
{
    pass *p = arg;
    if (reply->error) { finish(p, reply->error); return; }
    if (PQgetvalue(reply->results[0], 0, 0)[0] != 't') { p->busy = true; finish(p, NULL); return; }   /* another server's pass */
    find_candidates(p);
}

int retention_run(retention_engine *e, bool dry_run, retention_done_fn done, void *arg)
{
    if (e->running || e->stopping) return -1;
    pass *p = calloc(1, sizeof *p);
    if (!p) abort();
    p->e = e;
    p->dry = dry_run;
    p->done = done;
    p->arg = arg;
    buf_init(&p->report);
    e->running = p;
    p->claimed_us = now_us();
    if (dry_run) find_candidates(p);
    else claim(p, claimed);
    return 0;
}

/* ---- the timer ---- */

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    retention_engine *e = arg;
    if (db_pool_ready(e->pool) && retention_run(e, false, NULL, NULL) < 0)
        log_debug("retention: previous pass still running");
}

retention_engine *retention_engine_new(struct event_base *base, db_pool *pool, retention_settings settings)
{
    retention_engine *e = calloc(1, sizeof *e);
    if (!e) abort();
    e->base = base;
    e->pool = pool;
    e->settings = settings;
    uint8_t id[16];
    ids_uuid7(id);
    ids_uuid_format(id, e->runner);
    e->again = event_new(base, -1, 0, on_timer, e);
    if (settings.interval_ms > 0) {
        e->timer = event_new(base, -1, EV_PERSIST, on_timer, e);
        struct timeval tv = { settings.interval_ms / 1000, (settings.interval_ms % 1000) * 1000 };
        event_add(e->timer, &tv);
    }
    return e;
}

void retention_engine_free(retention_engine *e)
{
    if (!e) return;
    if (e->timer) event_free(e->timer);
    event_free(e->again);
    free(e);
}

void retention_engine_stop(retention_engine *e)
{
    e->stopping = true;
    if (e->timer) event_del(e->timer);
}

const retention_totals *retention_engine_totals(const retention_engine *e) { return &e->totals; }

bool retention_engine_idle(const retention_engine *e) { return e->running == NULL; }

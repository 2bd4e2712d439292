/* engine: retention passes (see engine.h). A pass is a small state machine
 * driven by database replies: candidates, then steps, then cleanup. */
#include "retention/engine.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/ids.h"
#include "base/json.h"
#include "base/log.h"

#define LEASE_SECONDS 60      /* a pass lease outlives a crashed runner by at most this */
#define CANDIDATE_LIMIT 1000  /* candidates per kind and queue in one pass */

typedef struct candidate {
    char id[37];
    char queue[256], partition[256];
    bool sidecar;
} candidate;

typedef struct pass {
    retention_engine *e;
    bool              dry;
    candidate        *cands;
    size_t            ncands, next;
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
    struct event      *timer;
    char               runner[37];
    pass              *running;
    bool               stopping;
    retention_totals   totals;
};

static void next_step(pass *p);

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
    buf_printf(&out, "{\"dryRun\":%s,\"steps\":%lld,\"deleted\":[%s],\"sidecarRowsPurged\":%lld,"
               "\"partitionsRemoved\":%lld}", p->dry ? "true" : "false", (long long)p->steps,
               p->report.data ? p->report.data : "", (long long)p->sidecar_rows, (long long)p->partitions_removed);
    e->totals.passes++;
    e->running = NULL;
    if (p->done) p->done(p->arg, out.data, error);
    buf_fini(&out);
    buf_fini(&p->report);
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
    if (strcmp(PQgetvalue(r, 0, 0), "removed") == 0 && p->steps < p->e->settings.max_steps) {
        next_step(p);   /* next_step goes on with cleanup while it removes */
        return;
    }
    finish(p, NULL);
}

static void cleanup_step(pass *p)
{
    retention_engine *e = p->e;
    char lease[16], days[24], batch[24];
    snprintf(lease, sizeof lease, "%d", LEASE_SECONDS);
    snprintf(days, sizeof days, "%lld", (long long)e->settings.cleanup_days);
    snprintf(batch, sizeof batch, "%lld", (long long)e->settings.batch);
    const char *values[4] = { e->runner, lease, days, batch };
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

static void step_done(void *arg, const db_reply *reply)
{
    pass *p = arg;
    if (reply->error) { finish(p, reply->error); return; }
    const PGresult *r = reply->results[0];
    const char *status = PQgetvalue(r, 0, 0);
    candidate *c = &p->cands[p->next];
    p->steps++;
    p->e->totals.steps++;
    if (strcmp(status, "busy") == 0) { finish(p, NULL); return; }
    bool more = false;
    if (c->sidecar && strcmp(status, "purged") == 0) {
        int n = atoi(PQgetvalue(r, 0, 1));
        p->sidecar_rows += n;
        p->e->totals.sidecar_rows += (uint64_t)n;
        more = n >= p->e->settings.batch;
    } else if (!c->sidecar && (strcmp(status, "deleted") == 0 || strcmp(status, "would_delete") == 0)) {
        report_step(p, c, r);
        more = !p->dry;   /* a real step may leave more below the boundary */
    }
    if (!more) p->next++;
    next_step(p);
}

static void next_step(pass *p)
{
    retention_engine *e = p->e;
    if (p->steps >= e->settings.max_steps || e->stopping) { finish(p, NULL); return; }
    if (p->next >= p->ncands) {
        if (!p->dry && e->settings.cleanup_enabled) cleanup_step(p);
        else finish(p, NULL);
        return;
    }
    candidate *c = &p->cands[p->next];
    if (c->sidecar && p->dry) { p->next++; next_step(p); return; }
    char lease[16], batch[24];
    snprintf(lease, sizeof lease, "%d", LEASE_SECONDS);
    snprintf(batch, sizeof batch, "%lld", (long long)e->settings.batch);
    db_job *job = db_job_new(step_done, p);
    if (c->sidecar) {
        const char *values[4] = { e->runner, lease, c->id, batch };
        db_job_call(job, STMT_RET_SIDECAR_STEP, values, NULL, NULL);
    } else {
        char recheck[24];   /* a partition held back by a consumer group is looked at again a pass later */
        snprintf(recheck, sizeof recheck, "%lld", (long long)(e->settings.interval_ms > 1000 ? e->settings.interval_ms / 1000 : 1));
        const char *values[6] = { e->runner, lease, c->id, batch, p->dry ? "t" : "f", recheck };
        db_job_call(job, STMT_RET_STEP, values, NULL, NULL);
    }
    db_submit(e->pool, job);
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
    char limit[16];
    snprintf(limit, sizeof limit, "%d", CANDIDATE_LIMIT);
    const char *values[1] = { limit };
    db_job *job = db_job_new(candidates_done, p);
    db_job_call(job, STMT_RET_CANDIDATES, values, NULL, NULL);
    db_submit(e->pool, job);
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
    free(e);
}

void retention_engine_stop(retention_engine *e)
{
    e->stopping = true;
    if (e->timer) event_del(e->timer);
}

const retention_totals *retention_engine_totals(const retention_engine *e) { return &e->totals; }

bool retention_engine_idle(const retention_engine *e) { return e->running == NULL; }

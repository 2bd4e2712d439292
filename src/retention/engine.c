/* engine: retention passes (see engine.h). A pass is a small state machine
 * driven by database replies: claim, candidates, steps, cleanup, release,
 * report. Up to RETENTION_CONCURRENCY steps run side by side, each on its
 * own partition and its own connection, each its own transaction.
 *
 * The claim belongs to the pass, not to the server: each pass claims under
 * a token of its own, so nothing another pass does (a late release, say)
 * can take it away, and a pass replies and lets the next one start only
 * after its release has committed. */
#include "retention/engine.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/emit.h"
#include "base/ids.h"
#include "base/json.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/result.h"

#define LEASE_SECONDS 60      /* a pass lease outlives a crashed runner by at most this */
#define RENEW_AFTER_US (20 * 1000000LL)   /* steps renew the claim this often */

typedef struct candidate {
    char id[37];
    char queue[256], partition[256];
    bool sidecar;
} candidate;

typedef struct pass {
    retention_engine *e;
    char              token[64];      /* this pass's claim: "<server>:<pass>" */
    bool              dry;
    candidate        *cands;
    size_t            ncands, next;   /* next: first candidate no slot has taken */
    int               inflight;       /* database calls running */
    int64_t           started;        /* steps started: never more than max_steps */
    bool              stop;           /* no new steps: busy, error or shutdown */
    bool              busy;           /* another server holds the pass */
    bool              limited;        /* the step limit left work undone */
    bool              progress;       /* something was deleted, purged or removed */
    char             *error;
    int64_t           claimed_us;     /* when the claim was last made */
    bool              renewing;       /* a renewal is in flight */
    int64_t           deleting, idle, sidecar;   /* steps by outcome */
    buf               report;         /* the "deleted" array */
    emit              deleted;        /* writes report */
    int64_t           sidecar_rows, partitions_removed;
    retention_done_fn done;
    void             *arg;
} pass;

struct retention_engine {
    db_pool           *pool;
    retention_settings settings;
    struct event      *timer, *again;
    char               server[37];     /* this server's id, the first half of its passes' tokens */
    uint64_t           seq;            /* passes started: alternates which kind goes first */
    pass              *running;
    bool               stopping;
    retention_totals   totals;
};

static void fmt_i64(char out[24], int64_t v)
{
    snprintf(out, 24, "%lld", (long long)v);
}

/* Claims (or renews) the pass under its token: the one write that decides
 * which replica runs, under a transaction-level advisory lock. */
static void claim(pass *p, db_done_fn done)
{
    char lease[24];
    fmt_i64(lease, LEASE_SECONDS);
    const char *values[2] = { p->token, lease };
    db_submit_stmt(p->e->pool, STMT_RET_CLAIM, values, done, p);
}

/* ---- the end of a pass: release, then report, then maybe the next ---- */

static void report(pass *p, buf *out)
{
    emit_end(&p->deleted);
    emit e;
    emit_init(&e, out);
    emit_object(&e);
    emit_key(&e, "dryRun"); emit_bool(&e, p->dry);
    emit_key(&e, "busy"); emit_bool(&e, p->busy);
    emit_key(&e, "limited"); emit_bool(&e, p->limited);
    emit_key(&e, "steps"); emit_int(&e, (int64_t)(p->deleting + p->idle + p->sidecar));
    emit_key(&e, "deletingSteps"); emit_int(&e, (int64_t)p->deleting);
    emit_key(&e, "idleSteps"); emit_int(&e, (int64_t)p->idle);
    emit_key(&e, "sidecarSteps"); emit_int(&e, (int64_t)p->sidecar);
    emit_key(&e, "deleted"); emit_raw(&e, p->report.data, p->report.len);
    emit_key(&e, "sidecarRowsPurged"); emit_int(&e, (int64_t)p->sidecar_rows);
    emit_key(&e, "partitionsRemoved"); emit_int(&e, (int64_t)p->partitions_removed);
    emit_end(&e);
}

static void pass_free(pass *p)
{
    buf_fini(&p->report);
    free(p->error);
    free(p->cands);
    free(p);
}

static void conclude(pass *p)
{
    retention_engine *e = p->e;
    buf out;
    buf_init(&out);
    report(p, &out);
    log_debug("retention pass: %s", out.data);
    e->totals.passes++;
    e->running = NULL;
    /* Work left by the step limit is taken up at once, but only after a pass
     * that got something done: a pass that only found pinned partitions
     * waits for the timer, so no setting makes passes spin. */
    if (!p->dry && !p->error && !p->busy && p->limited && p->progress && !e->stopping && e->timer)
        event_active(e->again, EV_TIMEOUT, 0);
    if (p->done) p->done(p->arg, out.data, p->error);
    buf_fini(&out);
    pass_free(p);
}

static void released(void *arg, const db_reply *reply)
{
    pass *p = arg;
    if (reply->error && !p->error) p->error = xstrdup(reply->error);
    conclude(p);
}

static void finish(pass *p, const char *error)
{
    if (error && !p->error) p->error = xstrdup(error);
    if (p->dry) { conclude(p); return; }
    const char *values[1] = { p->token };
    db_job *job = db_job_new(released, p);
    db_job_call(job, STMT_RET_RELEASE, values, NULL, NULL);
    db_job_commit(job);
    db_job_call(job, STMT_READY_PRUNE, NULL, NULL, NULL);   /* the write rows pops have taken in (sql/031) */
    db_submit(p->e->pool, job);
}

/* ---- partition cleanup: one bounded step per pass ---- */

static void cleanup_done(void *arg, const db_reply *reply)
{
    pass *p = arg;
    if (reply->error) { finish(p, reply->error); return; }
    const PGresult *r = reply->results[0];
    int removed = (int)db_int(r, 0, 1);
    if (strcmp(db_str(r, 0, 0), "busy") == 0) p->busy = true;
    p->partitions_removed += removed;
    if (removed > 0) p->progress = true;
    if (db_bool(r, 0, 2)) p->limited = true;
    if (!p->dry) p->e->totals.partitions_removed += (uint64_t)removed;
    finish(p, NULL);
}

static void cleanup_step(pass *p)
{
    retention_engine *e = p->e;
    char days[24], batch[24];
    fmt_i64(days, e->settings.cleanup_days);
    fmt_i64(batch, e->settings.batch);
    const char *values[4] = { p->token, days, batch, p->dry ? "t" : "f" };
    db_submit_stmt(e->pool, STMT_RET_CLEANUP, values, cleanup_done, p);
}

/* ---- segment and sidecar steps ---- */

static void report_step(pass *p, const candidate *c, const PGresult *r)
{
    retention_engine *e = p->e;
    const char *rule = db_str(r, 0, 1);
    long long dropped = db_int(r, 0, 4), leased = db_int(r, 0, 5);
    emit *w = &p->deleted;
    emit_object(w);
    emit_key(w, "partitionId"); emit_str(w, c->id);
    emit_key(w, "queue"); emit_str(w, c->queue);
    emit_key(w, "partition"); emit_str(w, c->partition);
    emit_key(w, "rule"); emit_str(w, rule);
    emit_key(w, "fromOffset"); emit_int(w, db_int(r, 0, 2));
    emit_key(w, "toOffset"); emit_int(w, db_int(r, 0, 3));
    emit_key(w, "offsets"); emit_int(w, dropped);
    emit_key(w, "leasedOffsets"); emit_int(w, leased);
    emit_key(w, "segments"); emit_int(w, db_int(r, 0, 6));
    emit_end(w);
    log_debug("retention: %s/%s %s offsets %lld..%lld (%lld, %lld leased)%s", c->queue, c->partition, rule,
              (long long)db_int(r, 0, 2), (long long)db_int(r, 0, 3), dropped, leased, p->dry ? " (dry run)" : "");
    if (p->dry) return;
    int k = strcmp(rule, "retention") == 0 ? 0 : strcmp(rule, "completed_retention") == 0 ? 1 : 2;
    e->totals.dropped[k] += (uint64_t)dropped;
    e->totals.leased_evicted += (uint64_t)leased;
    if (leased) log_warn("retention: %s removed %lld leased offsets of %s/%s", rule, leased, c->queue, c->partition);
}

/* One step slot: works on candidate c until the partition has nothing more
 * (or the pass has no steps left). from: a dry pass's simulated watermark,
 * -1 for the partition's own. */
typedef struct slot {
    pass   *p;
    size_t  c;
    int64_t from;
} slot;

static void run_step(slot *sl);
static void fill_slots(pass *p);

static void steps_over(pass *p)
{
    if (p->inflight > 0) return;   /* the last running step ends the phase */
    if (p->next < p->ncands && !p->stop) p->limited = true;   /* candidates the limit left untaken */
    if (p->error || p->stop || !p->e->settings.cleanup_enabled) { finish(p, NULL); return; }
    cleanup_step(p);
}

/* Reads a segment step's reply; true when the partition has more. */
static bool segment_step_done(pass *p, slot *sl, const PGresult *r)
{
    const char *status = db_str(r, 0, 0);
    if (strcmp(status, "deleted") != 0 && strcmp(status, "would_delete") != 0) { p->idle++; return false; }
    p->deleting++;
    p->progress = true;
    report_step(p, &p->cands[sl->c], r);
    sl->from = db_int(r, 0, 3);
    return db_bool(r, 0, 7);
}

static bool sidecar_step_done(pass *p, slot *sl, const PGresult *r)
{
    int n = (int)db_int(r, 0, 1);
    p->sidecar++;
    p->sidecar_rows += n;
    if (n > 0) p->progress = true;
    if (!p->dry) p->e->totals.sidecar_rows += (uint64_t)n;
    sl->from = db_int(r, 0, 2);
    return db_bool(r, 0, 3);
}

static void step_done(void *arg, const db_reply *reply)
{
    slot *sl = arg;
    pass *p = sl->p;
    p->inflight--;
    if (reply->error) {
        if (!p->error) p->error = xstrdup(reply->error);
        p->stop = true;
    } else if (strcmp(db_str(reply->results[0], 0, 0), "busy") == 0) {
        p->stop = p->busy = true;
    } else {
        const PGresult *r = reply->results[0];
        bool more = p->cands[sl->c].sidecar ? sidecar_step_done(p, sl, r) : segment_step_done(p, sl, r);
        p->e->totals.steps += p->dry ? 0 : 1;
        if (more && !p->stop && !p->e->stopping && p->started < p->e->settings.max_steps) {
            run_step(sl);
            return;
        }
        if (more) p->limited = true;
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
    char batch[24], recheck[24], from[24];
    fmt_i64(batch, e->settings.batch);
    /* a partition held back by a consumer group is looked at again a pass later */
    fmt_i64(recheck, e->settings.interval_ms > 1000 ? e->settings.interval_ms / 1000 : 1);
    fmt_i64(from, sl->from);
    const char *from_v = sl->from >= 0 ? from : NULL, *dry = p->dry ? "t" : "f";
    p->started++;
    p->inflight++;
    db_job *job = db_job_new(step_done, sl);
    if (c->sidecar) {
        const char *values[5] = { p->token, c->id, batch, dry, from_v };
        db_job_call(job, STMT_RET_SIDECAR_STEP, values, NULL, NULL);
    } else {
        const char *values[6] = { p->token, c->id, batch, dry, recheck, from_v };
        db_job_call(job, STMT_RET_STEP, values, NULL, NULL);
    }
    db_submit(e->pool, job);
}

static void renew_done(void *arg, const db_reply *reply)
{
    pass *p = arg;
    p->inflight--;
    p->renewing = false;
    if (reply->error || !db_bool(reply->results[0], 0, 0)) p->stop = p->busy = true;
    fill_slots(p);
    steps_over(p);
}

/* Starts steps on untaken candidates while slots and steps are left. */
static void fill_slots(pass *p)
{
    retention_engine *e = p->e;
    if (p->stop || e->stopping) { p->stop = true; return; }
    /* renewed beside the running steps: they only read the claim */
    if (!p->dry && !p->renewing && clock_mono_us() - p->claimed_us > RENEW_AFTER_US) {
        p->claimed_us = clock_mono_us();
        p->renewing = true;
        p->inflight++;
        claim(p, renew_done);
    }
    while (p->inflight < e->settings.concurrency && p->next < p->ncands && p->started < e->settings.max_steps) {
        slot *sl = xcalloc(1, sizeof *sl);
        sl->p = p;
        sl->c = p->next++;
        sl->from = -1;
        run_step(sl);
    }
}

/* ---- candidates ---- */

static bool is_sidecar(const PGresult *r, int row)
{
    return strcmp(db_str(r, row, 3), "sidecar") == 0;
}

static void copy_candidate(candidate *c, const PGresult *r, int row)
{
    ids_uuid_format(db_uuid(r, row, 0), c->id);
    snprintf(c->queue, sizeof c->queue, "%s", db_str(r, row, 1));
    snprintf(c->partition, sizeof c->partition, "%s", db_str(r, row, 2));
    c->sidecar = is_sidecar(r, row);
}

/* Segment and sidecar candidates alternate (each kind due-first), and
 * passes alternate which kind leads, so partitions pinned by a consumer
 * group can never use up every pass's steps and starve the sidecar. */
static void order_candidates(pass *p, const PGresult *r)
{
    int n = PQntuples(r), row[2] = { 0, 0 }, turn = (int)(p->e->seq & 1);   /* row[kind]: next unread */
    p->cands = xcalloc((size_t)n + 1, sizeof *p->cands);
    while (p->ncands < (size_t)n) {
        int *at = &row[turn];
        while (*at < n && (int)is_sidecar(r, *at) != turn) (*at)++;
        if (*at < n) copy_candidate(&p->cands[p->ncands++], r, (*at)++);
        turn ^= 1;
    }
}

static void candidates_done(void *arg, const db_reply *reply)
{
    pass *p = arg;
    if (reply->error) { finish(p, reply->error); return; }
    order_candidates(p, reply->results[0]);
    fill_slots(p);
    steps_over(p);
}

/* One more of each kind than the pass may take tells whether the limit
 * leaves work undone. */
static void find_candidates(pass *p)
{
    char limit[24];
    fmt_i64(limit, p->e->settings.max_steps + 1);
    const char *values[1] = { limit };
    db_submit_stmt(p->e->pool, STMT_RET_CANDIDATES, values, candidates_done, p);
}

static void claimed(void *arg, const db_reply *reply)
{
    pass *p = arg;
    if (reply->error) { finish(p, reply->error); return; }
    if (!db_bool(reply->results[0], 0, 0)) { p->busy = true; finish(p, NULL); return; }   /* another server's pass */
    find_candidates(p);
}

int retention_run(retention_engine *e, bool dry_run, retention_done_fn done, void *arg)
{
    if (e->running || e->stopping) return -1;
    pass *p = xcalloc(1, sizeof *p);
    e->seq++;
    snprintf(p->token, sizeof p->token, "%s:%llu", e->server, (unsigned long long)e->seq);
    p->e = e;
    p->dry = dry_run;
    p->done = done;
    p->arg = arg;
    buf_init(&p->report);
    emit_init(&p->deleted, &p->report);
    emit_array(&p->deleted);
    e->running = p;
    p->claimed_us = clock_mono_us();
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
    retention_engine *e = xcalloc(1, sizeof *e);
    e->pool = pool;
    e->settings = settings;
    uint8_t id[16];
    ids_uuid7(id);
    ids_uuid_format(id, e->server);
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

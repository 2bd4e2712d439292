/* pool: asynchronous libpq connections in pipeline mode (see pool.h).
 *
 * Each connection keeps a FIFO of jobs it has sent. Results arrive in the same
 * order: every call yields its result(s) and then a NULL, and the job's Sync
 * yields PGRES_PIPELINE_SYNC, which completes the job. A new job goes to the
 * ready connection with the fewest jobs in flight, up to the pipeline depth;
 * beyond that it waits in the pool's queue. */
#include "db/pool.h"
#include "db/connect.h"
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/log.h"
#include "base/xalloc.h"

typedef enum conn_state { CONN_DOWN, CONN_CONNECTING, CONN_PREPARING, CONN_READY } conn_state;

typedef struct db_call {
    db_stmt stmt;
    int     nparams;
    char   *values[DB_MAX_PARAMS];
    int     lengths[DB_MAX_PARAMS];
    int     formats[DB_MAX_PARAMS];
    bool    commit_after;     /* a Sync follows: what came before commits on its own */
} db_call;

struct db_job {
    db_done_fn done;
    void      *arg;
    db_call   *calls;
    int        ncalls, cap;
    int        current;           /* call whose results are being read */
    int        syncs_left;        /* Syncs sent and not yet read back */
    PGresult **results;
    char      *error, *sqlstate, *detail;
    int        failed_call;
    bool       unavailable;
    bool       abandoned;         /* dropped unsent (db_job_abandon_when) */
    const bool *gone;             /* the requester's "gave up" flag; NULL: always wanted */
    bool      *sent;              /* set true as the job is sent (db_job_note_sent); NULL: none */
    db_job    *next;
};

typedef struct db_conn {
    db_pool     *pool;
    PGconn      *pg;
    conn_state   state;
    struct event *io, *wr, *retry;
    db_job      *head, *tail;     /* jobs sent, oldest first */
    int          inflight;
    int          backoff_ms;
} db_conn;

struct db_pool {
    struct event_base *base;
    char        *conninfo;
    db_conn     *conns;
    int          size, depth;
    db_job      *wait_head, *wait_tail;   /* submitted, not yet sent */
    db_job      *done_head, *done_tail;   /* finished, callbacks pending */
    struct event *deliver;
    struct event *reap;                   /* db_pool_reap's pass, once per loop turn */
    int          busy;
    uint64_t     abandoned;               /* jobs dropped unsent */
    bool         ever_ready;              /* a connection has been ready since the start */
};

static void conn_connect(db_conn *c);
static void pool_dispatch(db_pool *pool);

/* ---- jobs ---- */

db_job *db_job_new(db_done_fn done, void *arg)
{
    db_job *job = xcalloc(1, sizeof *job);
    job->done = done;
    job->arg = arg;
    job->failed_call = -1;
    return job;
}

static void set_param(db_call *call, int i, const char *value, const int *lengths, const int *formats)
{
    call->lengths[i] = lengths && formats && formats[i] ? lengths[i] : (int)strlen(value);
    call->formats[i] = formats ? formats[i] : 0;
}

static void copy_param(db_call *call, int i, const char *value, const int *lengths, const int *formats)
{
    set_param(call, i, value, lengths, formats);
    size_t len = (size_t)call->lengths[i];
    call->values[i] = xmalloc(len + 1);
    memcpy(call->values[i], value, len);
    call->values[i][len] = '\0';
}

static db_call *new_call(db_job *job, db_stmt stmt)
{
    if (job->ncalls == job->cap) {
        job->cap = job->cap ? job->cap * 2 : 4;
        job->calls = xrealloc(job->calls, (size_t)job->cap * sizeof *job->calls);
    }
    db_call *call = &job->calls[job->ncalls++];
    memset(call, 0, sizeof *call);
    call->stmt = stmt;
    call->nparams = db_statements[stmt].nparams;
    if (call->nparams > DB_MAX_PARAMS) {   /* a statement added beyond the arrays' size: a programming error */
        log_error("statement %s takes %d parameters, more than DB_MAX_PARAMS", db_statements[stmt].name, call->nparams);
        abort();
    }
    return call;
}

void db_job_call(db_job *job, db_stmt stmt, const char *const *values, const int *lengths, const int *formats)
{
    db_call *call = new_call(job, stmt);
    for (int i = 0; i < call->nparams; i++)
        if (values[i]) copy_param(call, i, values[i], lengths, formats);
}

void db_job_call_taking(db_job *job, db_stmt stmt, const char *const *values, const int *lengths, const int *formats,
                        unsigned taken)
{
    db_call *call = new_call(job, stmt);
    for (int i = 0; i < call->nparams; i++) {
        if (!values[i]) continue;
        if (!(taken & (1u << i))) { copy_param(call, i, values[i], lengths, formats); continue; }
        set_param(call, i, values[i], lengths, formats);
        call->values[i] = (char *)values[i];   /* a malloc'd block: ours to free */
    }
}

void db_job_commit(db_job *job)
{
    if (job->ncalls > 0) job->calls[job->ncalls - 1].commit_after = true;
}

int db_job_ncalls(const db_job *job) { return job->ncalls; }

void db_job_abandon_when(db_job *job, const bool *gone) { job->gone = gone; }

void db_job_note_sent(db_job *job, bool *sent) { job->sent = sent; }

static bool job_unwanted(const db_job *job) { return job->gone && *job->gone; }

bool db_reply_retryable(const db_reply *reply)
{
    return reply->error && (strcmp(reply->sqlstate, "40P01") == 0 || strcmp(reply->sqlstate, "40001") == 0);
}

static void job_free(db_job *job)
{
    for (int i = 0; i < job->ncalls && job->calls; i++) {
        for (int p = 0; p < job->calls[i].nparams; p++) free(job->calls[i].values[p]);
        if (job->results) PQclear(job->results[i]);
    }
    free(job->calls);
    free(job->results);
    free(job->error);
    free(job->sqlstate);
    free(job->detail);
    free(job);
}

static void job_set_error(db_job *job, const char *msg, const char *state, const char *detail)
{
    if (job->error) return;
    job->error = xstrdup(msg ? msg : "database error");
    job->sqlstate = xstrdup(state ? state : "");
    job->detail = xstrdup(detail ? detail : "");
    job->failed_call = job->current;
}

/* Callbacks run from a deferred event, never inside db_submit or in the middle
 * of reading a connection, so they may submit new jobs freely. */
static void job_finish(db_pool *pool, db_job *job)
{
    job->next = NULL;
    if (pool->done_tail) pool->done_tail->next = job; else pool->done_head = job;
    pool->done_tail = job;
    event_active(pool->deliver, EV_TIMEOUT, 0);
}

static void pool_deliver(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    db_pool *pool = arg;
    db_job *job = pool->done_head;
    pool->done_head = pool->done_tail = NULL;
    while (job) {
        db_job *next = job->next;
        db_reply reply = { job->results, job->ncalls, job->error, job->sqlstate ? job->sqlstate : "",
                           job->detail ? job->detail : "", job->failed_call, job->unavailable, job->abandoned };
        pool->busy--;
        job->done(job->arg, &reply);
        job_free(job);
        job = next;
    }
    pool_dispatch(pool);
}

static void job_fail_as(db_pool *pool, db_job *job, const char *msg, const char *sqlstate)
{
    /* A job failed before it was sent has no results yet; callbacks read
     * results[0] (as a NULL PGresult) before looking at the error, so every
     * reply carries the array (fuzz_http found the NULL one). */
    if (!job->results) job->results = xcalloc((size_t)(job->ncalls ? job->ncalls : 1), sizeof *job->results);
    job_set_error(job, msg, sqlstate, "");
    job_finish(pool, job);
}

static void job_fail(db_pool *pool, db_job *job, const char *msg, bool unavailable)
{
    job->unavailable = unavailable;
    job_fail_as(pool, job, msg, "08006");
}

/* 57014 is PostgreSQL's query_canceled: no retry logic takes it for a
 * deadlock or a duplicate, so every owner just ends. */
static void job_abandon(db_pool *pool, db_job *job)
{
    pool->abandoned++;
    job->abandoned = true;
    log_debug("pool: a waiting job dropped unsent: its requester gave up");
    job_fail_as(pool, job, DB_ABANDONED_ERROR, DB_ABANDONED_SQLSTATE);
}

/* ---- connections ---- */

static void conn_fail_jobs(db_conn *c, const char *msg)
{
    db_job *job = c->head;
    c->head = c->tail = NULL;
    c->inflight = 0;
    while (job) {
        db_job *next = job->next;
        if (job->done) job_fail(c->pool, job, msg, true);
        else job_free(job);   /* the connection's own statement preparation */
        job = next;
    }
}

static void conn_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    conn_connect(arg);
}

static void conn_lost(db_conn *c, const char *why)
{
    if (c->state == CONN_READY || c->state == CONN_PREPARING)
        log_warn("database connection lost: %s", why);
    if (c->wr) { event_free(c->wr); c->wr = NULL; }
    db_close(&c->pg, &c->io);
    c->state = CONN_DOWN;
    log_debug("pool: connection down, %d jobs on it fail; retry in %d ms", c->inflight,
              c->backoff_ms ? (c->backoff_ms * 2 > 2000 ? 2000 : c->backoff_ms * 2) : 100);
    conn_fail_jobs(c, "database connection lost");
    c->backoff_ms = c->backoff_ms ? (c->backoff_ms * 2 > 2000 ? 2000 : c->backoff_ms * 2) : 100;
    struct timeval tv = { c->backoff_ms / 1000, (c->backoff_ms % 1000) * 1000 };
    evtimer_add(c->retry, &tv);
    pool_dispatch(c->pool);
}

static void conn_flush(db_conn *c)
{
    int rc = PQflush(c->pg);
    if (rc < 0) { conn_lost(c, PQerrorMessage(c->pg)); return; }
    if (rc == 1) event_add(c->wr, NULL);
    else event_del(c->wr);
}

/* Queues the job on the connection, then sends it. A send libpq refuses
 * (the connection broke, or out of memory) loses the connection, which
 * fails every job queued on it, this one included: none waits forever. */
static void conn_send(db_conn *c, db_job *job)
{
    job->results = xcalloc((size_t)(job->ncalls ? job->ncalls : 1), sizeof *job->results);
    if (job->sent) *job->sent = true;   /* before the bytes leave: a send half done may still commit */
    job->next = NULL;
    if (c->tail) c->tail->next = job; else c->head = job;
    c->tail = job;
    c->inflight++;
    bool sent = true;
    job->syncs_left = 1;
    for (int i = 0; sent && i < job->ncalls; i++) {
        db_call *call = &job->calls[i];
        sent = PQsendQueryPrepared(c->pg, db_statements[call->stmt].name, call->nparams,
                                   (const char *const *)call->values, call->lengths, call->formats,
                                   1) == 1;   /* results always binary: db/result.h reads them */
        if (sent && call->commit_after && i < job->ncalls - 1) {
            sent = PQpipelineSync(c->pg) == 1;
            job->syncs_left++;
        }
    }
    if (!sent || PQpipelineSync(c->pg) != 1) conn_lost(c, PQerrorMessage(c->pg));
}

static void job_take_result(db_job *job, PGresult *r)
{
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_FATAL_ERROR)
        job_set_error(job, PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY),
                      PQresultErrorField(r, PG_DIAG_SQLSTATE), PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL));
    if (job->current < job->ncalls && job->results && !job->results[job->current])
        job->results[job->current] = r;
    else
        PQclear(r);
}

/* Reads every result that has fully arrived. */
static void conn_read_results(db_conn *c)
{
    while (c->head && !PQisBusy(c->pg)) {
        db_job *job = c->head;
        PGresult *r = PQgetResult(c->pg);
        if (!r) { job->current++; continue; }
        if (PQresultStatus(r) != PGRES_PIPELINE_SYNC) { job_take_result(job, r); continue; }
        PQclear(r);
        if (--job->syncs_left > 0) continue;   /* a commit point inside the job (db_job_commit) */
        c->head = job->next;
        if (!c->head) c->tail = NULL;
        c->inflight--;
        if (c->state == CONN_PREPARING) {
            bool ok = !job->error;
            job_free(job);
            if (!ok) { conn_lost(c, "could not prepare statements"); return; }
            if (c->backoff_ms) log_info("database connection restored");
            log_debug("pool: a connection is ready (%d statements prepared)", STMT_COUNT);
            c->state = CONN_READY;
            c->pool->ever_ready = true;
            c->backoff_ms = 0;
            continue;
        }
        job_finish(c->pool, job);
    }
}

static void conn_io(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    db_conn *c = arg;
    if (what & EV_WRITE) { conn_flush(c); if (!c->pg) return; }
    if (!(what & EV_READ)) return;
    if (!PQconsumeInput(c->pg)) { conn_lost(c, PQerrorMessage(c->pg)); return; }
    conn_read_results(c);
    if (c->pg && PQstatus(c->pg) == CONNECTION_BAD) { conn_lost(c, PQerrorMessage(c->pg)); return; }
    if (c->pg) pool_dispatch(c->pool);
}

static void conn_prepare(db_conn *c)
{
    if (PQsetnonblocking(c->pg, 1) != 0 || !PQenterPipelineMode(c->pg)) {
        conn_lost(c, "cannot enter non-blocking pipeline mode");
        return;
    }
    int fd = PQsocket(c->pg);
    c->io = event_new(c->pool->base, fd, EV_READ | EV_PERSIST, conn_io, c);
    c->wr = event_new(c->pool->base, fd, EV_WRITE | EV_PERSIST, conn_io, c);
    event_add(c->io, NULL);
    db_job *job = db_job_new(NULL, NULL);
    job->next = NULL;
    c->head = c->tail = job;   /* queued first, so that a failed send frees it */
    c->inflight = 1;
    c->state = CONN_PREPARING;
    bool sent = true;
    for (int i = 0; sent && i < STMT_COUNT; i++, job->ncalls++)
        sent = PQsendPrepare(c->pg, db_statements[i].name, db_statements[i].sql, db_statements[i].nparams, NULL) == 1;
    if (!sent || PQpipelineSync(c->pg) != 1) { conn_lost(c, PQerrorMessage(c->pg)); return; }
    conn_flush(c);
}

static void conn_poll(evutil_socket_t fd, short what, void *arg);

static void conn_wait(db_conn *c, PostgresPollingStatusType st)
{
    db_await_socket(&c->io, c->pool->base, c->pg, st == PGRES_POLLING_WRITING ? EV_WRITE : EV_READ, conn_poll, c);
}

static void conn_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    db_conn *c = arg;
    PostgresPollingStatusType st = PQconnectPoll(c->pg);
    if (st == PGRES_POLLING_FAILED) { conn_lost(c, PQerrorMessage(c->pg)); return; }
    if (st != PGRES_POLLING_OK) { conn_wait(c, st); return; }
    event_free(c->io);
    c->io = NULL;
    conn_prepare(c);
}

static void conn_connect(db_conn *c)
{
    c->pg = db_connect_start(c->pool->conninfo, "silt");
    if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD) {
        conn_lost(c, c->pg ? PQerrorMessage(c->pg) : "out of memory");
        return;
    }
    c->state = CONN_CONNECTING;
    conn_wait(c, PGRES_POLLING_WRITING);
}

/* ---- the pool ---- */

static db_conn *pool_pick(db_pool *pool)
{
    db_conn *best = NULL;
    for (int i = 0; i < pool->size; i++) {
        db_conn *c = &pool->conns[i];
        if (c->state != CONN_READY || c->inflight >= pool->depth) continue;
        if (!best || c->inflight < best->inflight) best = c;
    }
    return best;
}

/* A pool that has not been ready yet and still has a first connection on
 * its way: the server listens before its connections have prepared their
 * statements, and a request arriving in those milliseconds waits for them
 * rather than fail with "database unavailable" (issue 14). Jobs wait no
 * longer than a connection attempt in progress: when none is (every attempt
 * failed), they fail as before; after the first ready connection, a pool
 * without one fails them at once. */
static bool pool_starting(const db_pool *pool)
{
    if (pool->ever_ready) return false;
    for (int i = 0; i < pool->size; i++)
        if (pool->conns[i].state == CONN_CONNECTING || pool->conns[i].state == CONN_PREPARING) return true;
    return false;
}

/* Sends waiting jobs to connections with room; without any usable
 * connection, waiting jobs fail at once rather than hang (except at the
 * start, see pool_starting). */
static db_job *wait_shift(db_pool *pool)
{
    db_job *job = pool->wait_head;
    pool->wait_head = job->next;
    if (!pool->wait_head) pool->wait_tail = NULL;
    return job;
}

static void pool_dispatch(db_pool *pool)
{
    while (pool->wait_head) {
        if (job_unwanted(pool->wait_head)) { job_abandon(pool, wait_shift(pool)); continue; }
        db_conn *c = pool_pick(pool);
        if (!c) break;
        conn_send(c, wait_shift(pool));
        if (c->pg) conn_flush(c);
    }
    if (pool->wait_head && !db_pool_ready(pool) && !pool_starting(pool)) {
        db_job *job = pool->wait_head;
        pool->wait_head = pool->wait_tail = NULL;
        while (job) {
            db_job *next = job->next;
            job_fail(pool, job, "database unavailable", true);
            job = next;
        }
    }
}

void db_submit_stmt(db_pool *pool, db_stmt stmt, const char *const *values, db_done_fn done, void *arg)
{
    db_job *job = db_job_new(done, arg);
    db_job_call(job, stmt, values, NULL, NULL);
    db_submit(pool, job);
}

void db_submit(db_pool *pool, db_job *job)
{
    job->next = NULL;
    pool->busy++;
    if (pool->wait_tail) pool->wait_tail->next = job; else pool->wait_head = job;
    pool->wait_tail = job;
    pool_dispatch(pool);
}

/* The whole queue in one pass: jobs behind a locked table may wait for
 * minutes, and their requesters left long before their turn. */
static void pool_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    db_pool *pool = arg;
    db_job **link = &pool->wait_head, *last = NULL;
    while (*link) {
        db_job *job = *link;
        if (!job_unwanted(job)) { last = job; link = &job->next; continue; }
        *link = job->next;
        job_abandon(pool, job);
    }
    pool->wait_tail = last;
}

void db_pool_reap(db_pool *pool)
{
    if (pool->wait_head) event_active(pool->reap, EV_TIMEOUT, 0);
}

void db_job_abandon(db_pool *pool, db_job *job)
{
    pool->busy++;   /* as db_submit: pool_deliver counts it out */
    job_abandon(pool, job);
}

uint64_t db_pool_abandoned(const db_pool *pool) { return pool->abandoned; }

bool db_pool_ready(const db_pool *pool)
{
    for (int i = 0; i < pool->size; i++)
        if (pool->conns[i].state == CONN_READY) return true;
    return false;
}

int db_pool_busy(const db_pool *pool) { return pool->busy; }

db_pool *db_pool_new(struct event_base *base, const char *conninfo, int size, int pipeline_depth)
{
    db_pool *pool = xcalloc(1, sizeof *pool);
    pool->base = base;
    pool->conninfo = xstrdup(conninfo);
    pool->size = size;
    pool->depth = pipeline_depth;
    pool->conns = xcalloc((size_t)size, sizeof *pool->conns);
    pool->deliver = event_new(base, -1, 0, pool_deliver, pool);
    pool->reap = event_new(base, -1, 0, pool_reap, pool);
    for (int i = 0; i < size; i++) {
        db_conn *c = &pool->conns[i];
        c->pool = pool;
        c->retry = evtimer_new(base, conn_retry, c);
        conn_connect(c);
    }
    return pool;
}

void db_pool_free(db_pool *pool)
{
    if (!pool) return;
    for (int i = 0; i < pool->size; i++) {
        db_conn *c = &pool->conns[i];
        if (c->wr) event_free(c->wr);
        db_close(&c->pg, &c->io);
        event_free(c->retry);
        for (db_job *j = c->head, *n; j; j = n) { n = j->next; job_free(j); }
    }
    for (db_job *j = pool->done_head, *n; j; j = n) { n = j->next; job_free(j); }
    for (db_job *j = pool->wait_head, *n; j; j = n) { n = j->next; job_free(j); }
    event_free(pool->deliver);
    event_free(pool->reap);
    free(pool->conns);
    free(pool->conninfo);
    free(pool);
}

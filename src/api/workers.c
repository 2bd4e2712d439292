/* workers: the worker protocol over HTTP.
 *   POST /api/v1/workers                       register
 *   GET  /api/v1/workers                       list
 *   POST /api/v1/workers/:workerId/claim       claim (long-poll: waitMs)
 *   POST /api/v1/workers/:workerId/heartbeat   heartbeats; says what was cancelled or lost
 *   POST /api/v1/workers/:workerId/release     hand claimed, unstarted tasks back
 *   POST /api/v1/tasks/:id/start|complete|fail under the claim's claimId
 * Every call about a task names the claimId its claim returned: a claim
 * recovery took back (or cancel ended) no longer matches, and the call is
 * refused with 409, changing nothing (fencing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"
#include "tasks/tasks.h"

#define WORKER_ID_MAX     200
#define CLAIM_MAX_WAIT_MS 60000
#define MAX_CONCURRENCY   10000
#define MAX_QUEUES        64
#define TASK_MESSAGE_MAX  4096

static void reply_emitted(httpd_req *req, int status, buf *out) { httpd_reply_buf(req, status, out); }

/* Shortens a message to at most max bytes at a character boundary: a cut
 * inside a UTF-8 sequence would make PostgreSQL refuse the whole report. */
static void shorten_message(char *s, size_t max)
{
    if (!s || strlen(s) <= max) return;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;   /* s[n] continues a character: cut before it */
    s[n] = '\0';
}

static int read_worker_id(httpd_req *req, const char *id)
{
    if (strlen(id) > WORKER_ID_MAX) {
        httpd_error_field(req, 400, "field", "workerId", "workerId must be at most %d characters", WORKER_ID_MAX);
        return -1;
    }
    return 0;
}

/* Claim order between queues: the declared priority (1 first), then name. */
static int by_priority(const void *a, const void *b, void *hub)
{
    const char *qa = *(char *const *)a, *qb = *(char *const *)b;
    bool known;
    const task_queue_policy *pa = task_hub_queue(hub, qa, &known), *pb = task_hub_queue(hub, qb, &known);
    int ra = pa ? pa->priority : TASK_PRIORITY_DEFAULT, rb = pb ? pb->priority : TASK_PRIORITY_DEFAULT;
    return ra != rb ? (ra < rb ? -1 : 1) : strcmp(qa, qb);
}

/* queues: a non-empty array of queue names, each declared (when the
 * configuration declares any); in claim order, with their caps. */
static int read_queues(httpd_req *req, server *srv, const json_doc *d, db_array *names, db_array *caps,
                       char ***list, size_t *n)
{
    int v = json_get(d, 0, "queues");
    if (v < 0 || d->tokens[v].type != JSON_ARRAY || d->tokens[v].count == 0 || d->tokens[v].count > MAX_QUEUES) {
        httpd_error_field(req, 400, "field", "queues", "queues must be an array of 1 to %d queue names", MAX_QUEUES);
        return -1;
    }
    *n = d->tokens[v].count;
    *list = xcalloc(*n, sizeof **list);
    for (uint32_t i = 0; i < *n; i++) {
        int e = json_at(d, (uint32_t)v, i);
        bool known;
        if (d->tokens[e].type != JSON_STRING || d->tokens[e].end - d->tokens[e].start <= 2) {
            httpd_error_field(req, 400, "field", "queues", "queues[%u] must be a non-empty string", i);
            return -1;
        }
        (*list)[i] = json_str_dup(d, (uint32_t)e);
        if (strlen((*list)[i]) > TASK_NAME_MAX) {
            httpd_error_field(req, 400, "field", "queues", "queues[%u] must be at most %d characters", i, TASK_NAME_MAX);
            return -1;
        }
        task_hub_queue(srv->tasks, (*list)[i], &known);
        if (!known) {
            httpd_error_field(req, 400, "field", "queues", "queues[%u]: queue \"%s\" is not declared in the"
                              " configuration file", i, (*list)[i]);
            return -1;
        }
    }
    qsort_r(*list, *n, sizeof **list, by_priority, srv->tasks);
    for (size_t i = 0; i < *n; i++) {
        bool known;
        const task_queue_policy *q = task_hub_queue(srv->tasks, (*list)[i], &known);
        if (names) db_array_text(names, (*list)[i]);
        if (caps) db_array_int(caps, q ? q->max_concurrency : 0);
    }
    return 0;
}

static void free_list(char **list, size_t n)
{
    for (size_t i = 0; list && i < n; i++) free(list[i]);
    free(list);
}

/* ---- register and list ---- */

typedef struct reg_call {
    httpd_req *req;
    server    *srv;
    char      *worker;
} reg_call;

static void registered(void *arg, const db_reply *reply)
{
    reg_call *c = arg;
    if (reply->error) api_db_error(c->req, reply);
    else {
        const task_settings *s = task_hub_settings(c->srv->tasks);
        buf out;
        buf_init(&out);
        emit e;
        emit_init(&e, &out);
        emit_object(&e);
        emit_key(&e, "workerId"); emit_str(&e, c->worker);
        emit_key(&e, "registeredAt"); api_emit_time_col(&e, reply->results[0], 0, 0);
        emit_key(&e, "claimerHeartbeatIntervalMs"); emit_int(&e, s->claimer_heartbeat_interval_ms);
        emit_key(&e, "runnerHeartbeatIntervalMs"); emit_int(&e, s->runner_heartbeat_interval_ms);
        emit_end(&e);
        reply_emitted(c->req, 201, &out);
    }
    free(c->worker);
    free(c);
}

static int read_registration(httpd_req *req, server *srv, const json_doc *d, char **worker, char **host,
                             int64_t *pid, int64_t *concurrency, db_array *queues)
{
    char **list = NULL;
    size_t n = 0;
    int rc = api_opt_string(req, d, 0, "workerId", worker) < 0 || api_opt_string(req, d, 0, "hostname", host) < 0 ||
             api_member_int(req, d, 0, "", "pid", 0, 4194304, pid) < 0 ||
             api_member_int(req, d, 0, "", "concurrency", 1, MAX_CONCURRENCY, concurrency) < 0 ||
             read_queues(req, srv, d, queues, NULL, &list, &n) < 0 ? -1 : 0;
    free_list(list, n);
    if (rc == 0 && *worker && read_worker_id(req, *worker) < 0) rc = -1;
    if (rc == 0 && *host && strlen(*host) > WORKER_ID_MAX) {
        httpd_error_field(req, 400, "field", "hostname", "hostname must be at most %d characters", WORKER_ID_MAX);
        rc = -1;
    }
    return rc;
}

void api_worker_register(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    char *worker = NULL, *host = NULL;
    int64_t pid = 0, concurrency = 1;
    db_array queues;
    db_array_init(&queues);
    if (api_read_object(req, srv, &d) == 0 &&
        read_registration(req, srv, &d, &worker, &host, &pid, &concurrency, &queues) == 0) {
        if (!worker) {   /* none given: one is made */
            uint8_t id[16];
            worker = xmalloc(IDS_UUID_TEXT);
            ids_uuid7(id);
            ids_uuid_format(id, worker);
        }
        char pids[24], conc[24];
        snprintf(pids, sizeof pids, "%lld", (long long)pid);
        snprintf(conc, sizeof conc, "%lld", (long long)concurrency);
        reg_call *c = xcalloc(1, sizeof *c);
        c->req = req;
        c->srv = srv;
        c->worker = worker;
        worker = NULL;
        const char *values[5] = { c->worker, host ? host : "", pids, db_array_literal(&queues), conc };
        db_job *job = db_job_new(registered, c);
        db_job_call(job, STMT_WORKER_REGISTER, values, NULL, NULL);
        db_submit(srv->pool, job);
    }
    free(worker);
    free(host);
    db_array_fini(&queues);
    json_doc_fini(&d);
}

static void workers_listed(void *arg, const db_reply *reply)
{
    httpd_req *req = arg;
    if (reply->error) { api_db_error(req, reply); return; }
    const PGresult *r = reply->results[0];
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    emit_object(&e);
    emit_key(&e, "workers"); emit_array(&e);
    for (int row = 0; row < PQntuples(r); row++) {
        size_t n;
        const char *queues = db_json(r, row, 3, &n);
        emit_object(&e);
        emit_key(&e, "workerId"); api_emit_text_col(&e, r, row, 0);
        emit_key(&e, "hostname"); api_emit_text_col(&e, r, row, 1);
        emit_key(&e, "pid"); emit_int(&e, db_int(r, row, 2));
        emit_key(&e, "queues");
        if (emit_json(&e, queues, n) < 0) emit_null(&e);
        emit_key(&e, "concurrency"); emit_int(&e, db_int(r, row, 4));
        emit_key(&e, "registeredAt"); api_emit_time_col(&e, r, row, 5);
        emit_key(&e, "lastSeenAt"); api_emit_time_col(&e, r, row, 6);
        emit_key(&e, "claimed"); emit_int(&e, db_int(r, row, 7));
        emit_key(&e, "running"); emit_int(&e, db_int(r, row, 8));
        emit_end(&e);
    }
    emit_end(&e);
    emit_end(&e);
    reply_emitted(req, 200, &out);
}

void api_worker_list(httpd_req *req, server *srv)
{
    db_job *job = db_job_new(workers_listed, req);
    db_job_call(job, STMT_WORKER_LIST, NULL, NULL, NULL);
    db_submit(srv->pool, job);
}

/* ---- claim ---- */

typedef struct claim_call {
    httpd_req *req;
    server    *srv;
    char      *worker;
    char     **queues;
    size_t     nqueues;
    char      *names, *caps;   /* array literals */
    int64_t    max;
    bool       start;          /* claim and start in one: RUNNING at once */
    int64_t    deadline_us;
    task_park *park;
    bool       querying;       /* a claim of it is with the database */
    bool       gone;           /* the client hung up */
} claim_call;

static void claim_now(claim_call *c);

static void claim_free(claim_call *c)
{
    free(c->worker);
    free_list(c->queues, c->nqueues);
    free(c->names);
    free(c->caps);
    free(c);
}

static void emit_claimed(emit *e, const PGresult *r, int row)
{
    size_t n;
    const char *args = db_json(r, row, 4, &n);
    bool running = strcmp(db_str(r, row, 10), "RUNNING") == 0;
    emit_object(e);
    emit_key(e, "id"); api_emit_uuid_col(e, r, row, 1);
    emit_key(e, "name"); api_emit_text_col(e, r, row, 2);
    emit_key(e, "queue"); api_emit_text_col(e, r, row, 3);
    emit_key(e, "args"); emit_raw(e, args, n);
    emit_key(e, "priority"); emit_int(e, db_int(r, row, 5));
    emit_key(e, "claimId"); api_emit_uuid_col(e, r, row, 6);
    emit_key(e, "status"); api_emit_text_col(e, r, row, 10);
    /* the attempt a start begins (CLAIMED), or has begun (RUNNING) */
    emit_key(e, "attempt"); emit_int(e, db_int(r, row, 7) + (running ? 0 : 1));
    emit_key(e, "retryCount"); emit_int(e, db_int(r, row, 8));
    emit_key(e, "timeoutMs");
    if (db_null(r, row, 9)) emit_null(e); else emit_int(e, db_int(r, row, 9));
    emit_end(e);
}

static void claim_reply(claim_call *c, const PGresult *r, int first, int n)
{
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    emit_object(&e);
    emit_key(&e, "tasks"); emit_array(&e);
    for (int row = first; row < first + n; row++) emit_claimed(&e, r, row);
    emit_end(&e);
    emit_end(&e);
    reply_emitted(c->req, 200, &out);
}

static void on_claim_wake(void *arg, bool timed_out)
{
    claim_call *c = arg;
    (void)timed_out;
    c->park = NULL;
    claim_now(c);
}

static void unclaimed(void *arg, const db_reply *reply)
{
    server *srv = arg;
    if (reply->error) { log_warn("taking back a claim nobody read: %s", reply->error); return; }
    const PGresult *r = reply->results[0];
    for (int row = 0; row < PQntuples(r); row++) task_hub_announce_sent(srv->tasks, db_str(r, row, 0));
}

/* The client hung up before this reply reached it: what the claim took goes
 * back to its queue, untouched (tasks.unclaim). */
static void give_back(claim_call *c, const PGresult *r, int first, int n)
{
    db_array ids, claims;
    db_array_init(&ids);
    db_array_init(&claims);
    for (int row = first; row < first + n; row++) {
        char id[IDS_UUID_TEXT], claim[IDS_UUID_TEXT];
        ids_uuid_format(db_uuid(r, row, 1), id);
        ids_uuid_format(db_uuid(r, row, 6), claim);
        db_array_text(&ids, id);
        db_array_text(&claims, claim);
    }
    const char *values[2] = { db_array_literal(&ids), db_array_literal(&claims) };
    db_job *job = db_job_new(unclaimed, c->srv);
    db_job_call(job, STMT_TASK_UNCLAIM, values, NULL, NULL);
    db_submit(c->srv->pool, job);
    db_array_fini(&ids);
    db_array_fini(&claims);
}

static void claimed(void *arg, const db_reply *reply, const PGresult *r, int first, int n)
{
    claim_call *c = arg;
    c->querying = false;
    bool waiting = c->park && !c->gone && c->deadline_us > clock_mono_us() && !c->srv->draining;
    if (reply->error || n > 0 || !waiting) {
        if (c->park) task_park_cancel(c->park);
        if (c->gone && !reply->error && n > 0) give_back(c, r, first, n);
        c->req->on_gone = NULL;
        if (reply->error) api_db_error(c->req, reply);
        else claim_reply(c, r, first, n);   /* dropped when the client is gone */
        claim_free(c);
        return;
    }
    task_park_arm(c->park);
}

/* A long-polling claimer hung up: parked, it ends now; with a claim in
 * flight, when that returns (and gives back what it took). */
static void claim_gone(httpd_req *req, void *arg)
{
    (void)req;
    claim_call *c = arg;
    c->gone = true;
    c->srv->stats.claims_abandoned++;
    if (c->querying) return;
    if (c->park) task_park_cancel(c->park);
    c->req->on_gone = NULL;
    httpd_reply(c->req, 204, NULL, 0);   /* nobody reads it: frees the request */
    claim_free(c);
}

static void claim_now(claim_call *c)
{
    if (c->srv->draining) {   /* a stopping server claims nothing more */
        if (c->park) task_park_cancel(c->park);
        c->park = NULL;
        c->req->on_gone = NULL;
        claim_reply(c, NULL, 0, 0);
        claim_free(c);
        return;
    }
    int64_t left_ms = (c->deadline_us - clock_mono_us()) / 1000;
    if (left_ms > 0)
        c->park = task_park_sent(c->srv->tasks, c->queues, c->nqueues, left_ms, on_claim_wake, c);
    c->querying = true;
    gather *g = task_hub_claims(c->srv->tasks);
    db_array *a = gather_arrays(g);
    db_array_text(&a[0], c->worker);
    db_array_text(&a[1], c->names);
    db_array_text(&a[2], c->caps);
    db_array_int(&a[3], c->max);
    db_array_bool(&a[4], c->start);
    gather_add(g, 1, claimed, c);
}

void api_worker_claim(httpd_req *req, server *srv)
{
    if (read_worker_id(req, req->params[0]) < 0) return;
    json_doc d;
    json_doc_init(&d);
    claim_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    c->srv = srv;
    c->max = 1;
    int64_t wait_ms = 0;
    db_array names, caps;
    db_array_init(&names);
    db_array_init(&caps);
    int rc = api_read_object(req, srv, &d) < 0 ||
             read_queues(req, srv, &d, &names, &caps, &c->queues, &c->nqueues) < 0 ||
             api_member_int(req, &d, 0, "", "max", 1, TASK_MAX_CLAIM, &c->max) < 0 ||
             api_member_int(req, &d, 0, "", "waitMs", 0, CLAIM_MAX_WAIT_MS, &wait_ms) < 0 ? -1 : 0;
    c->names = xstrdup(db_array_literal(&names));
    c->caps = xstrdup(db_array_literal(&caps));
    db_array_fini(&names);
    db_array_fini(&caps);
    if (rc < 0) { json_doc_fini(&d); claim_free(c); return; }
    int st = json_get(&d, 0, "start");
    bool bad_start = st >= 0 && d.tokens[st].type != JSON_TRUE && d.tokens[st].type != JSON_FALSE &&
                     d.tokens[st].type != JSON_NULL;
    c->start = st >= 0 && d.tokens[st].type == JSON_TRUE;
    json_doc_fini(&d);
    if (bad_start) {
        httpd_error_field(req, 400, "field", "start", "start must be true or false");
        claim_free(c);
        return;
    }
    c->worker = xstrdup(req->params[0]);
    c->deadline_us = clock_mono_us() + wait_ms * 1000;
    if (wait_ms > 0) {
        req->on_gone = claim_gone;
        req->gone_arg = c;
        httpd_watch_close(req);
    }
    claim_now(c);
}

/* ---- calls under a claim: start, complete, fail ---- */

typedef struct run_call {
    httpd_req  *req;
    server     *srv;
    char        id[IDS_UUID_TEXT];
    const char *what;   /* "start", "complete", "fail" */
} run_call;

static void started(void *arg, const db_reply *reply)
{
    run_call *c = arg;
    const PGresult *r = reply->error ? NULL : reply->results[0];
    if (reply->error) api_db_error(c->req, reply);
    else if (db_null(r, 0, 0))
        httpd_error(c->req, 409, "cannot %s task %s: the claim is not its current one (recovered, cancelled or"
                    " finished)", c->what, c->id);
    else {
        buf out;
        buf_init(&out);
        emit e;
        emit_init(&e, &out);
        emit_object(&e);
        emit_key(&e, "id"); emit_str(&e, c->id);
        emit_key(&e, "status"); emit_str(&e, "RUNNING");
        emit_key(&e, "attempt"); emit_int(&e, db_int(r, 0, 0));
        emit_end(&e);
        reply_emitted(c->req, 200, &out);
    }
    free(c);
}

/* The task in the path and the claimId in the body. */
static run_call *read_claim(httpd_req *req, server *srv, const json_doc *d, const char *what,
                            char claim[IDS_UUID_TEXT])
{
    run_call *c = xcalloc(1, sizeof *c);
    char *text = NULL;
    c->req = req;
    c->srv = srv;
    c->what = what;
    int rc = api_read_uuid(req, req->params[0], c->id, "id");
    if (rc == 0) rc = api_opt_string(req, d, 0, "claimId", &text);
    if (rc == 0 && !text) { httpd_error_field(req, 400, "field", "claimId", "claimId is required"); rc = -1; }
    if (rc == 0) rc = api_read_uuid(req, text, claim, "claimId");
    free(text);
    if (rc < 0) { free(c); return NULL; }
    return c;
}

void api_task_start(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    char claim[IDS_UUID_TEXT];
    run_call *c = api_read_object(req, srv, &d) == 0 ? read_claim(req, srv, &d, "start", claim) : NULL;
    json_doc_fini(&d);
    if (!c) return;
    const char *values[2] = { c->id, claim };
    db_job *job = db_job_new(started, c);
    db_job_call(job, STMT_TASK_START, values, NULL, NULL);
    db_submit(srv->pool, job);
}

/* A row of tasks.finish_many (idx, id, status, queue): what others must hear. */
static void announce_end(server *srv, const PGresult *r, int row)
{
    if (db_null(r, row, 2)) return;
    if (strcmp(db_str(r, row, 2), "PENDING") == 0) task_hub_announce_sent(srv->tasks, db_str(r, row, 3));
    else if (task_status_terminal(db_str(r, row, 2)))
        task_hub_announce_end(srv->tasks, db_uuid(r, row, 1), db_str(r, row, 3));
}

static void ended(void *arg, const db_reply *reply, const PGresult *r, int first, int n)
{
    run_call *c = arg;
    (void)n;
    if (reply->error) api_db_error(c->req, reply);
    else if (db_null(r, first, 2))
        httpd_error(c->req, 409, "cannot %s task %s: the claim is not its current one (recovered, cancelled or"
                    " finished)", c->what, c->id);
    else {
        announce_end(c->srv, r, first);
        buf out;
        buf_init(&out);
        emit e;
        emit_init(&e, &out);
        emit_object(&e);
        emit_key(&e, "id"); emit_str(&e, c->id);
        emit_key(&e, "status"); api_emit_text_col(&e, r, first, 2);
        emit_end(&e);
        reply_emitted(c->req, 200, &out);
    }
    free(c);
}

/* One end of an attempt into the finish gather's arrays. */
static void add_end(db_array *a, const char *id, const char *claim, const char *outcome, const char *result,
                    const char *code, const char *message)
{
    db_array_text(&a[0], id);
    db_array_text(&a[1], claim);
    db_array_text(&a[2], outcome);
    db_array_text(&a[3], result);
    db_array_text(&a[4], code);
    db_array_text(&a[5], message);
}

static void finish(server *srv, run_call *c, const char *claim, const char *outcome, const char *result,
                   const char *code, const char *message)
{
    gather *g = task_hub_finishes(srv->tasks);
    add_end(gather_arrays(g), c->id, claim, outcome, result, code, message);
    gather_add(g, 1, ended, c);
}

void api_task_complete(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    char claim[IDS_UUID_TEXT];
    run_call *c = api_read_object(req, srv, &d) == 0 ? read_claim(req, srv, &d, "complete", claim) : NULL;
    if (c) {
        int v = json_get(&d, 0, "result");
        size_t n = 4;
        const char *text = v >= 0 ? json_span(&d, (uint32_t)v, &n) : "null";
        char *result = xstrndup(text, n);
        finish(srv, c, claim, "COMPLETED", result, NULL, NULL);
        free(result);
    }
    json_doc_fini(&d);
}

void api_task_fail(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    char claim[IDS_UUID_TEXT];
    char *code = NULL, *message = NULL;
    run_call *c = api_read_object(req, srv, &d) == 0 ? read_claim(req, srv, &d, "fail", claim) : NULL;
    if (c && (api_opt_string(req, &d, 0, "errorCode", &code) < 0 ||
              api_opt_string(req, &d, 0, "errorMessage", &message) < 0)) {
        free(c);
        c = NULL;
    }
    if (c && (!code || strlen(code) > TASK_CODE_MAX)) {
        httpd_error_field(req, 400, "field", "errorCode", "errorCode is required, at most %d characters", TASK_CODE_MAX);
        free(c);
        c = NULL;
    }
    if (c) shorten_message(message, TASK_MESSAGE_MAX);   /* kept, shortened */
    if (c) finish(srv, c, claim, "FAILED", NULL, code, message);
    free(code);
    free(message);
    json_doc_fini(&d);
}

/* ---- heartbeat and release: a list of (id, claimId) ---- */

typedef struct held_call {
    httpd_req *req;
    server    *srv;
    bool       release;
} held_call;

static int read_held(httpd_req *req, const json_doc *d, db_array *ids, db_array *claims)
{
    int v = json_get(d, 0, "tasks");
    if (v < 0 || d->tokens[v].type != JSON_ARRAY || d->tokens[v].count > TASK_MAX_CLAIM) {
        httpd_error_field(req, 400, "field", "tasks", "tasks must be an array of at most %d {id, claimId}",
                          TASK_MAX_CLAIM);
        return -1;
    }
    for (uint32_t i = 0; i < d->tokens[v].count; i++) {
        uint32_t e = (uint32_t)json_at(d, (uint32_t)v, i);
        char where[32], *id = NULL, *claim = NULL, idn[IDS_UUID_TEXT], claimn[IDS_UUID_TEXT];
        snprintf(where, sizeof where, "tasks[%u]: ", i);
        int rc = d->tokens[e].type == JSON_OBJECT ? 0 : -1;
        if (rc < 0) httpd_error(req, 400, "%stask must be an object with id and claimId", where);
        if (rc == 0) rc = api_member_string(req, d, e, where, "id", &id);
        if (rc == 0) rc = api_member_string(req, d, e, where, "claimId", &claim);
        if (rc == 0 && (!id || !claim)) { httpd_error(req, 400, "%sid and claimId are required", where); rc = -1; }
        if (rc == 0) rc = api_read_uuid(req, id, idn, "id");
        if (rc == 0) rc = api_read_uuid(req, claim, claimn, "claimId");
        free(id);
        free(claim);
        if (rc < 0) return -1;
        db_array_text(ids, idn);
        db_array_text(claims, claimn);
    }
    return 0;
}

static void held_done(void *arg, const db_reply *reply)
{
    held_call *c = arg;
    if (reply->error) { api_db_error(c->req, reply); free(c); return; }
    const PGresult *r = reply->results[0];
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    emit_object(&e);
    if (c->release) {
        int64_t released = 0;
        for (int row = 0; row < PQntuples(r); row++) {
            released += db_int(r, row, 1);
            task_hub_announce_sent(c->srv->tasks, db_str(r, row, 0));
        }
        emit_key(&e, "released"); emit_int(&e, released);
    } else {
        emit_key(&e, "tasks"); emit_array(&e);
        for (int row = 0; row < PQntuples(r); row++) {
            emit_object(&e);
            emit_key(&e, "id"); api_emit_uuid_col(&e, r, row, 0);
            emit_key(&e, "state"); api_emit_text_col(&e, r, row, 1);
            emit_end(&e);
        }
        emit_end(&e);
    }
    emit_end(&e);
    reply_emitted(c->req, 200, &out);
    free(c);
}

static void held_call_run(httpd_req *req, server *srv, bool release)
{
    if (read_worker_id(req, req->params[0]) < 0) return;
    json_doc d;
    json_doc_init(&d);
    db_array ids, claims;
    db_array_init(&ids);
    db_array_init(&claims);
    if (api_read_object(req, srv, &d) == 0 && read_held(req, &d, &ids, &claims) == 0) {
        held_call *c = xcalloc(1, sizeof *c);
        c->req = req;
        c->srv = srv;
        c->release = release;
        const char *values[3] = { req->params[0], db_array_literal(&ids), db_array_literal(&claims) };
        db_job *job = db_job_new(held_done, c);
        db_job_call(job, release ? STMT_TASK_RELEASE : STMT_TASK_HEARTBEAT, values, NULL, NULL);
        db_submit(srv->pool, job);
    }
    db_array_fini(&ids);
    db_array_fini(&claims);
    json_doc_fini(&d);
}

void api_worker_heartbeat(httpd_req *req, server *srv) { held_call_run(req, srv, false); }
void api_worker_release(httpd_req *req, server *srv) { held_call_run(req, srv, true); }

/* ---- many ends at once: POST /api/v1/workers/:workerId/finish ---- */

typedef struct finish_many_call {
    httpd_req *req;
    server    *srv;
} finish_many_call;

static void ended_many(void *arg, const db_reply *reply, const PGresult *r, int first, int n)
{
    finish_many_call *c = arg;
    if (reply->error) { api_db_error(c->req, reply); free(c); return; }
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    emit_object(&e);
    emit_key(&e, "tasks"); emit_array(&e);
    for (int row = first; row < first + n; row++) {
        announce_end(c->srv, r, row);
        emit_object(&e);
        emit_key(&e, "id"); api_emit_uuid_col(&e, r, row, 1);
        emit_key(&e, "status"); api_emit_text_col(&e, r, row, 2);
        if (db_null(r, row, 2)) {
            emit_key(&e, "error"); emit_str(&e, "the claim is not the task's current one (recovered, cancelled or finished)");
        }
        emit_end(&e);
    }
    emit_end(&e);
    emit_end(&e);
    reply_emitted(c->req, 200, &out);
    free(c);
}

/* One item of a finish batch: {"id", "claimId", "result"} completes;
 * {"id", "claimId", "errorCode", "errorMessage"} fails. */
static int read_end(httpd_req *req, const json_doc *d, uint32_t e, const char *where, db_array *a)
{
    char *id = NULL, *claim = NULL, *code = NULL, *message = NULL, idn[IDS_UUID_TEXT], claimn[IDS_UUID_TEXT];
    int rc = d->tokens[e].type == JSON_OBJECT ? 0 : -1;
    if (rc < 0) httpd_error(req, 400, "%stask must be an object", where);
    if (rc == 0) rc = api_member_string(req, d, e, where, "id", &id);
    if (rc == 0) rc = api_member_string(req, d, e, where, "claimId", &claim);
    if (rc == 0) rc = api_member_string(req, d, e, where, "errorCode", &code);
    if (rc == 0) rc = api_member_string(req, d, e, where, "errorMessage", &message);
    if (rc == 0 && (!id || !claim)) { httpd_error(req, 400, "%sid and claimId are required", where); rc = -1; }
    if (rc == 0 && code && strlen(code) > TASK_CODE_MAX) {
        httpd_error(req, 400, "%serrorCode must be at most %d characters", where, TASK_CODE_MAX);
        rc = -1;
    }
    if (rc == 0) rc = api_read_uuid(req, id, idn, "id");
    if (rc == 0) rc = api_read_uuid(req, claim, claimn, "claimId");
    if (rc == 0) {
        int v = json_get(d, e, "result");
        size_t n = 4;
        const char *text = v >= 0 ? json_span(d, (uint32_t)v, &n) : "null";
        char *result = code ? NULL : xstrndup(text, n);
        shorten_message(message, TASK_MESSAGE_MAX);
        add_end(a, idn, claimn, code ? "FAILED" : "COMPLETED", result, code, message);
        free(result);
    }
    free(id);
    free(claim);
    free(code);
    free(message);
    return rc;
}

void api_worker_finish(httpd_req *req, server *srv)
{
    if (read_worker_id(req, req->params[0]) < 0) return;
    json_doc d;
    json_doc_init(&d);
    int v = -1;
    int rc = api_read_object(req, srv, &d);
    if (rc == 0) {
        v = json_get(&d, 0, "tasks");
        if (v < 0 || d.tokens[v].type != JSON_ARRAY || d.tokens[v].count == 0 || d.tokens[v].count > TASK_MAX_CLAIM) {
            httpd_error_field(req, 400, "field", "tasks", "tasks must be an array of 1 to %d ends", TASK_MAX_CLAIM);
            rc = -1;
        }
    }
    /* Checked whole before any item reaches the gather: a bad item writes nothing. */
    db_array a[TASK_FINISH_ARRAYS];
    for (int i = 0; i < TASK_FINISH_ARRAYS; i++) db_array_init(&a[i]);
    uint32_t count = rc == 0 ? d.tokens[v].count : 0;
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        char where[32];
        snprintf(where, sizeof where, "tasks[%u]: ", i);
        rc = read_end(req, &d, (uint32_t)json_at(&d, (uint32_t)v, i), where, a);
    }
    if (rc == 0) {
        gather *g = task_hub_finishes(srv->tasks);
        db_array *ga = gather_arrays(g);
        for (int i = 0; i < TASK_FINISH_ARRAYS; i++) db_array_append(&ga[i], &a[i]);
        finish_many_call *c = xcalloc(1, sizeof *c);
        c->req = req;
        c->srv = srv;
        gather_add(g, (int)count, ended_many, c);
    }
    for (int i = 0; i < TASK_FINISH_ARRAYS; i++) db_array_fini(&a[i]);
    json_doc_fini(&d);
}

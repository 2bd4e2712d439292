/* workers: the registry of workers and their heartbeats.
 *   POST /api/v1/workers                       register
 *   GET  /api/v1/workers                       list
 *   POST /api/v1/workers/:workerId/heartbeat   heartbeats, with running tasks' progress; says what
 *                                              was cancelled or lost
 *   POST /api/v1/workers/:workerId/release     hand claimed, unstarted tasks back
 * Claims are claims.c; the calls that start and end attempts attempts.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "api/task_input.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"
#include "tasks/tasks.h"

#define MAX_CONCURRENCY 10000

/* ---- register and list ---- */

/* The call's name: the worker id. */
static void registered(void *arg, const db_reply *reply)
{
    api_named_call *c = arg;
    if (reply->error) api_db_error(c->req, reply);
    else {
        const conf_recovery *s = task_hub_recovery(c->srv->tasks);
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "workerId"); emit_str(e, c->name);
        emit_key(e, "registeredAt"); api_emit_time_col(e, reply->results[0], 0, 0);
        emit_key(e, "claimerHeartbeatIntervalMs"); emit_int(e, s->claimer_heartbeat_interval_ms);
        emit_key(e, "runnerHeartbeatIntervalMs"); emit_int(e, s->runner_heartbeat_interval_ms);
        api_reply_send(&out, c->req, 201);
    }
    api_named_call_free(c);
}

static int read_registration(httpd_req *req, server *srv, const json_doc *d, char **worker, char **host,
                             int64_t *pid, int64_t *concurrency, db_array *queues)
{
    char **list = NULL;
    size_t n = 0;
    int rc = api_opt_string(req, d, 0, "workerId", worker) < 0 || api_opt_string(req, d, 0, "hostname", host) < 0 ||
             api_member_int(req, d, 0, "", "pid", 0, 4194304, pid) < 0 ||
             api_member_int(req, d, 0, "", "concurrency", 1, MAX_CONCURRENCY, concurrency) < 0 ||
             api_task_queues(req, srv, d, queues, NULL, &list, &n) < 0 ? -1 : 0;
    api_task_queues_free(list, n);
    if (rc == 0 && *worker && api_task_worker_id(req, *worker) < 0) rc = -1;
    if (rc == 0 && *host && strlen(*host) > TASK_WORKER_ID_MAX) {
        httpd_error_field(req, 400, "field", "hostname", "hostname must be at most %d characters", TASK_WORKER_ID_MAX);
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
        api_named_call *c = api_named_call_new(req, srv, &worker);
        const char *values[5] = { c->name, host ? host : "", pids, db_array_literal(&queues), conc };
        api_submit_stmt(req, srv, STMT_WORKER_REGISTER, values, registered, c);
    }
    free(worker);
    free(host);
    db_array_fini(&queues);
    json_doc_fini(&d);
}

static void emit_worker(emit *e, const PGresult *r, int row)
{
    size_t n;
    const char *queues = db_json(r, row, 3, &n);
    emit_object(e);
    emit_key(e, "workerId"); api_emit_text_col(e, r, row, 0);
    emit_key(e, "hostname"); api_emit_text_col(e, r, row, 1);
    emit_key(e, "pid"); emit_int(e, db_int(r, row, 2));
    emit_key(e, "queues");
    if (emit_json(e, queues, n) < 0) emit_null(e);
    emit_key(e, "concurrency"); emit_int(e, db_int(r, row, 4));
    emit_key(e, "registeredAt"); api_emit_time_col(e, r, row, 5);
    emit_key(e, "lastSeenAt"); api_emit_time_col(e, r, row, 6);
    emit_key(e, "claimed"); emit_int(e, db_int(r, row, 7));
    emit_key(e, "running"); emit_int(e, db_int(r, row, 8));
    emit_key(e, "heartbeatIntervalMs"); emit_int(e, db_int(r, row, 9));
    emit_key(e, "lastSeenAgeMs"); emit_int(e, db_int(r, row, 10));
    emit_key(e, "late"); emit_bool(e, db_bool(r, row, 11));
    emit_end(e);
}

/* Each worker with the heartbeat interval it was given (the runner's while
 * it runs a task, else the claimer's: [recovery]) and whether it is late:
 * holding tasks, unseen for two intervals, before recovery's stale
 * thresholds act on its tasks. */
void api_worker_list(httpd_req *req, server *srv)
{
    const conf_recovery *s = task_hub_recovery(srv->tasks);
    char claimer[24], runner[24];
    snprintf(claimer, sizeof claimer, "%d", s->claimer_heartbeat_interval_ms);
    snprintf(runner, sizeof runner, "%d", s->runner_heartbeat_interval_ms);
    const char *values[2] = { claimer, runner };
    api_rows_call(req, srv, STMT_WORKER_LIST, values, "workers", emit_worker);
}

/* ---- heartbeat and release: a list of (id, claimId) ---- */

/* A heartbeat item's progress report, one array per field (tasks.heartbeat):
 * whether the item reports, its number and its JSON value. */
typedef struct held_reports {
    db_array reported, progress, infos;
    bool     any;   /* some item reports: else the arrays go as NULL */
} held_reports;

static void held_reports_init(held_reports *h)
{
    db_array_init(&h->reported);
    db_array_init(&h->progress);
    db_array_init(&h->infos);
    h->any = false;
}

static void held_reports_fini(held_reports *h)
{
    db_array_fini(&h->reported);
    db_array_fini(&h->progress);
    db_array_fini(&h->infos);
}

/* "progress": a finite number (sent as %.17g, which float8 reads back
 * exactly), or null. Out of double's range is refused, not rounded to
 * infinity. */
static int read_progress_number(httpd_req *req, const json_doc *d, int v, const char *where, char out[32])
{
    out[0] = '\0';
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    double x = 0;
    if (d->tokens[v].type == JSON_NUMBER) {
        size_t n;
        const char *span = json_span(d, (uint32_t)v, &n);
        char text[64];
        if (n < sizeof text) {
            memcpy(text, span, n);
            text[n] = '\0';
            errno = 0;
            x = strtod(text, NULL);
            if (errno == 0 && isfinite(x)) { snprintf(out, 32, "%.17g", x); return 0; }
        }
    }
    httpd_error_field(req, 400, "field", "progress", "%sprogress must be a finite number or null", where);
    return -1;
}

/* "progressInfo": any JSON value of at most TASK_PROGRESS_INFO_MAX bytes
 * as sent (stored byte for byte, like args); null stores none. */
static int read_progress_info(httpd_req *req, const json_doc *d, int v, const char *where, const char **info,
                              size_t *n)
{
    *info = NULL;
    if (v < 0 || d->tokens[v].type == JSON_NULL) return 0;
    *info = json_span(d, (uint32_t)v, n);
    if (*n <= TASK_PROGRESS_INFO_MAX) return 0;
    httpd_error_field(req, 400, "field", "progressInfo", "%sprogressInfo must be at most %d bytes of JSON", where,
                      TASK_PROGRESS_INFO_MAX);
    return -1;
}

/* An item reports when it names progress or progressInfo (null included:
 * a report of nothing clears the last one). */
static int read_report(httpd_req *req, const json_doc *d, uint32_t e, const char *where, held_reports *h)
{
    int p = json_get(d, e, "progress"), i = json_get(d, e, "progressInfo");
    char number[32];
    const char *info;
    size_t n = 0;
    if (read_progress_number(req, d, p, where, number) < 0 || read_progress_info(req, d, i, where, &info, &n) < 0)
        return -1;
    bool reported = p >= 0 || i >= 0;
    h->any = h->any || reported;
    db_array_bool(&h->reported, reported);
    db_array_text(&h->progress, number[0] ? number : NULL);
    if (!info) { db_array_text(&h->infos, NULL); return 0; }
    char *copy = xstrndup(info, n);
    db_array_text(&h->infos, copy);
    free(copy);
    return 0;
}

static int read_held(httpd_req *req, const json_doc *d, db_array *ids, db_array *claims, held_reports *reports)
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
        if (rc == 0 && reports) rc = read_report(req, d, e, where, reports);
        free(id);
        free(claim);
        if (rc < 0) return -1;
        db_array_text(ids, idn);
        db_array_text(claims, claimn);
    }
    return 0;
}

static void held_done(emit *e, server *srv, const PGresult *r, bool release)
{
    if (release) {
        int64_t released = 0;
        for (int row = 0; row < PQntuples(r); row++) {
            released += db_int(r, row, 1);
            task_hub_announce_sent(srv->tasks, db_str(r, row, 0));
        }
        emit_key(e, "released"); emit_int(e, released);
    } else {
        emit_key(e, "tasks"); emit_array(e);
        for (int row = 0; row < PQntuples(r); row++) {
            emit_object(e);
            emit_key(e, "id"); api_emit_uuid_col(e, r, row, 0);
            emit_key(e, "state"); api_emit_text_col(e, r, row, 1);
            emit_end(e);
        }
        emit_end(e);
    }
}

static void held_call_run(httpd_req *req, server *srv, bool release)
{
    if (api_task_worker_id(req, req->params[0]) < 0) return;
    json_doc d;
    json_doc_init(&d);
    db_array ids, claims;
    db_array_init(&ids);
    db_array_init(&claims);
    held_reports reports;
    held_reports_init(&reports);
    if (api_read_object(req, srv, &d) == 0 && read_held(req, &d, &ids, &claims, release ? NULL : &reports) == 0) {
        bool any = reports.any;
        const char *values[6] = { req->params[0], db_array_literal(&ids), db_array_literal(&claims),
                                  any ? db_array_literal(&reports.reported) : NULL,
                                  any ? db_array_literal(&reports.progress) : NULL,
                                  any ? db_array_literal(&reports.infos) : NULL };
        api_object_call(req, srv, release ? STMT_TASK_RELEASE : STMT_TASK_HEARTBEAT, values, held_done, release);
    }
    held_reports_fini(&reports);
    db_array_fini(&ids);
    db_array_fini(&claims);
    json_doc_fini(&d);
}

void api_worker_heartbeat(httpd_req *req, server *srv) { held_call_run(req, srv, false); }
void api_worker_release(httpd_req *req, server *srv) { held_call_run(req, srv, true); }

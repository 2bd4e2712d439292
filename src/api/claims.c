/* claims: POST /api/v1/workers/:workerId/claim {"queues", "max", "waitMs",
 * "start"}. A claim with nothing to take parks until a send on any server
 * (or its wait ends); concurrent claims are gathered into one statement
 * (tasks.claim_many). A long-polling claimer that hangs up takes nothing:
 * whatever its claim took goes back (tasks.unclaim). */
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

#define CLAIM_MAX_WAIT_MS 60000

/* ---- claim ---- */

typedef struct claim_call {
    httpd_req *req;
    server    *srv;
    char      *worker;
    char     **queues;
    size_t     nqueues;
    char      *names, *caps;   /* array literals */
    char      *rates;          /* the queues' rate limits (api_task_rates), NULL: none has one */
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
    api_task_queues_free(c->queues, c->nqueues);
    free(c->names);
    free(c->caps);
    free(c->rates);
    free(c);
}

static void emit_claimed(emit *e, const PGresult *r, int row)
{
    bool running = strcmp(db_str(r, row, 10), "RUNNING") == 0;
    emit_object(e);
    emit_key(e, "id"); api_emit_uuid_col(e, r, row, 1);
    emit_key(e, "name"); api_emit_text_col(e, r, row, 2);
    emit_key(e, "queue"); api_emit_text_col(e, r, row, 3);
    emit_key(e, "args"); api_emit_stored_json_col(e, r, row, 4);
    emit_key(e, "priority"); emit_int(e, db_int(r, row, 5));
    emit_key(e, "claimId"); api_emit_uuid_col(e, r, row, 6);
    emit_key(e, "status"); api_emit_text_col(e, r, row, 10);
    /* the attempt a start begins (CLAIMED), or has begun (RUNNING) */
    emit_key(e, "attempt"); emit_int(e, db_int(r, row, 7) + (running ? 0 : 1));
    emit_key(e, "retryCount"); emit_int(e, db_int(r, row, 8));
    emit_key(e, "timeoutMs"); api_emit_int_col(e, r, row, 9);
    emit_end(e);
}

static void claim_reply(claim_call *c, const PGresult *r, int first, int n)
{
    api_reply out;
    emit *e = api_reply_list(&out, "tasks");
    for (int row = first; row < first + n; row++) emit_claimed(e, r, row);
    api_reply_send(&out, c->req, 200);
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
    db_submit_stmt(c->srv->pool, STMT_TASK_UNCLAIM, values, unclaimed, c->srv);
    db_array_fini(&ids);
    db_array_fini(&claims);
}

/* Ends the call with what its claim took (n tasks from row first), or an
 * empty list when r is NULL. */
static void claim_end(claim_call *c, const db_reply *reply, const PGresult *r, int first, int n)
{
    if (c->park) task_park_cancel(c->park);
    c->req->on_gone = NULL;
    if (c->gone && r && n > 0) give_back(c, r, first, n);
    /* A client that half-closed still reads: it is told it took nothing. */
    if (reply && reply->error) api_db_error(c->req, reply);
    else if (c->gone) httpd_reply(c->req, 204, NULL, 0);
    else claim_reply(c, r, first, n);
    claim_free(c);
}

/* The park looks again when the earliest delayed task of its queues is due
 * (at most TASK_RECHECK_MS from now, as it was made), not a second later:
 * a few milliseconds after, since a timer may fire a millisecond early, and
 * a look just before the task is due would find it neither claimable nor
 * still delayed, and wait the whole recheck. */
#define CLAIM_DUE_SLACK_MS 5
static void next_run_known(void *arg, const db_reply *reply)
{
    claim_call *c = arg;
    c->querying = false;
    if (c->gone) { claim_end(c, NULL, NULL, 0, 0); return; }
    const PGresult *r = reply->error ? NULL : reply->results[0];
    if (r && PQntuples(r) == 1 && !db_null(r, 0, 0)) task_park_shorten(c->park, db_int(r, 0, 0) + CLAIM_DUE_SLACK_MS);
    task_park_arm(c->park);
}

/* Whether a queue of the claim has a concurrency cap (caps is the array
 * literal of the queues' caps, 0 for none). A capped queue at its cap
 * claims nothing while a backlog waits, and looking for its next delayed
 * task would read that whole backlog at every look: its claims keep the
 * periodic look instead. */
static bool any_cap(const char *caps)
{
    for (const char *p = caps; *p; p++)
        if (*p >= '1' && *p <= '9') return true;
    return false;
}

/* When a claim naming a rate-limited queue should look again: the moment a
 * full window of one of its queues reopens, or the next delayed task of the
 * others is due (tasks.claim_wake_at). */
static void look_again_at_reopening(claim_call *c)
{
    c->querying = true;
    const char *values[3] = { c->names, c->caps, c->rates };
    db_submit_stmt(c->srv->pool, STMT_TASK_CLAIM_WAKE, values, next_run_known, c);
}

static void claimed(void *arg, const db_reply *reply, const PGresult *r, int first, int n)
{
    claim_call *c = arg;
    c->querying = false;
    bool waiting = c->park && !c->gone && c->deadline_us > clock_mono_us() && !c->srv->draining;
    if (reply->error || n > 0 || !waiting) {
        claim_end(c, reply, reply->error ? NULL : r, first, n);
        return;
    }
    if (c->rates) {
        look_again_at_reopening(c);
        return;
    }
    if (any_cap(c->caps)) {   /* see any_cap */
        task_park_arm(c->park);
        return;
    }
    c->querying = true;
    const char *values[1] = { c->names };
    db_submit_stmt(c->srv->pool, STMT_TASK_NEXT_RUN, values, next_run_known, c);
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
        claim_end(c, NULL, NULL, 0, 0);
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
    db_array_text(&a[5], c->rates);
    gather_add(g, 1, NULL, NULL, claimed, c);   /* a claim whose client left hands back what it took (claimed) */
}

void api_worker_claim(httpd_req *req, server *srv)
{
    if (api_task_worker_id(req, req->params[0]) < 0) return;
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
             api_task_queues(req, srv, &d, &names, &caps, &c->queues, &c->nqueues) < 0 ||
             api_member_int(req, &d, 0, "", "max", 1, TASK_MAX_CLAIM, &c->max) < 0 ||
             api_member_int(req, &d, 0, "", "waitMs", 0, CLAIM_MAX_WAIT_MS, &wait_ms) < 0 ? -1 : 0;
    c->names = xstrdup(db_array_literal(&names));
    c->caps = xstrdup(db_array_literal(&caps));
    if (rc == 0) c->rates = api_task_rates(srv, (const char *const *)c->queues, c->nqueues, false);
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

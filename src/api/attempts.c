/* attempts: the calls that start and end an attempt, each under the
 * claimId its claim returned:
 *   POST /api/v1/tasks/:id/start|complete|fail
 *   POST /api/v1/workers/:workerId/finish      many ends at once
 * A claim recovery took back (or cancel ended) no longer matches, and the
 * call is refused with 409, changing nothing (fencing). Ends are gathered
 * into one tasks.finish_many per batch. */
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

#define TASK_MESSAGE_MAX 4096

/* Shortens a message to at most max bytes at a character boundary: a cut
 * inside a UTF-8 sequence would make PostgreSQL refuse the whole report. */
static void shorten_message(char *s, size_t max)
{
    if (!s || strlen(s) <= max) return;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;   /* s[n] continues a character: cut before it */
    s[n] = '\0';
}

/* ---- calls under a claim: start, complete, fail ---- */

typedef struct run_call {
    httpd_req  *req;
    server     *srv;
    char        id[IDS_UUID_TEXT];
    const char *what;   /* "start", "complete", "fail" */
} run_call;

/* A call under a claim that is no longer the task's changes nothing. */
static void refuse_stale(run_call *c)
{
    httpd_error(c->req, 409, "cannot %s task %s: the claim is not its current one (recovered, cancelled or finished)",
                c->what, c->id);
}

static void started(void *arg, const db_reply *reply)
{
    run_call *c = arg;
    const PGresult *r = reply->error ? NULL : reply->results[0];
    if (reply->error) api_db_error(c->req, reply);
    else if (db_null(r, 0, 0))
        refuse_stale(c);
    else {
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "id"); emit_str(e, c->id);
        emit_key(e, "status"); emit_str(e, "RUNNING");
        emit_key(e, "attempt"); emit_int(e, db_int(r, 0, 0));
        api_reply_send(&out, c->req, 200);
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
    api_submit_stmt(req, srv, STMT_TASK_START, values, started, c);
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
        refuse_stale(c);
    else {
        announce_end(c->srv, r, first);
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "id"); emit_str(e, c->id);
        emit_key(e, "status"); api_emit_text_col(e, r, first, 2);
        api_reply_send(&out, c->req, 200);
    }
    free(c);
}

/* One end of an attempt into the finish gather's arrays. */
static void add_end(db_array *a, const char *id, const char *claim, const char *outcome, const char *result,
                    const char *code, const char *message)
{
    db_array_uuid(&a[0], id);
    db_array_uuid(&a[1], claim);
    db_array_str(&a[2], outcome);
    db_array_str(&a[3], result);
    db_array_str(&a[4], code);
    db_array_str(&a[5], message);
}

static void finish(server *srv, run_call *c, const char *claim, const char *outcome, const char *result,
                   const char *code, const char *message)
{
    gather *g = task_hub_finishes(srv->tasks);
    add_end(gather_arrays(g), c->id, claim, outcome, result, code, message);
    gather_add(g, 1, &c->req->left, &c->req->sent, ended, c);   /* req is freed by the reply in ended */
}

void api_task_complete(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    char claim[IDS_UUID_TEXT];
    run_call *c = api_read_object(req, srv, &d) == 0 ? read_claim(req, srv, &d, "complete", claim) : NULL;
    if (c) {
        char *result = api_member_json(&d, 0, "result");
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

/* ---- many ends at once: POST /api/v1/workers/:workerId/finish ---- */

static void ended_many(void *arg, const db_reply *reply, const PGresult *r, int first, int n)
{
    api_call *c = arg;
    if (reply->error) { api_db_error(c->req, reply); free(c); return; }
    api_reply out;
    emit *e = api_reply_list(&out, "tasks");
    for (int row = first; row < first + n; row++) {
        announce_end(c->srv, r, row);
        emit_object(e);
        emit_key(e, "id"); api_emit_uuid_col(e, r, row, 1);
        emit_key(e, "status"); api_emit_text_col(e, r, row, 2);
        if (db_null(r, row, 2)) {
            emit_key(e, "error"); emit_str(e, "the claim is not the task's current one (recovered, cancelled or finished)");
        }
        emit_end(e);
    }
    api_reply_send(&out, c->req, 200);
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
        char *result = code ? NULL : api_member_json(d, e, "result");
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
    if (api_task_worker_id(req, req->params[0]) < 0) return;
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
        api_call *c = api_call_new(req, srv);
        gather_add(g, (int)count, &req->left, &req->sent, ended_many, c);   /* req is freed by the reply in ended_many */
    }
    for (int i = 0; i < TASK_FINISH_ARRAYS; i++) db_array_fini(&a[i]);
    json_doc_fini(&d);
}

/* tasks: POST /api/v1/tasks (one task or {"tasks": [...]}), GET
 * /api/v1/tasks/:id (?wait=MS: until it is terminal), GET /api/v1/tasks
 * (?queue=&status=&limit=&cursor=), GET /api/v1/tasks/:id/attempts (?wait=MS
 * as the task's), POST /api/v1/tasks/:id/cancel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "api/held_get.h"
#include "api/task_input.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "tasks/send.h"

#define TASK_MAX_WAIT_MS  60000

/* ---- one task as JSON ---- */

void api_emit_task(emit *e, const PGresult *r, int row)
{
    emit_object(e);
    emit_key(e, "id"); api_emit_uuid_col(e, r, row, TASK_C_ID);
    emit_key(e, "name"); api_emit_text_col(e, r, row, TASK_C_NAME);
    emit_key(e, "queue"); api_emit_text_col(e, r, row, TASK_C_QUEUE);
    emit_key(e, "status"); api_emit_text_col(e, r, row, TASK_C_STATUS);
    emit_key(e, "args"); api_emit_stored_json_col(e, r, row, TASK_C_ARGS);
    emit_key(e, "priority"); api_emit_int_col(e, r, row, TASK_C_PRIORITY);
    emit_key(e, "attempt"); api_emit_int_col(e, r, row, TASK_C_ATTEMPT);
    emit_key(e, "retryCount"); api_emit_int_col(e, r, row, TASK_C_RETRIES);
    emit_key(e, "maxRetries"); api_emit_int_col(e, r, row, TASK_C_MAX_RETRIES);
    emit_key(e, "sentAt"); api_emit_time_col(e, r, row, TASK_C_SENT);
    emit_key(e, "runAt"); api_emit_time_col(e, r, row, TASK_C_RUN_AT);
    emit_key(e, "goodUntil"); api_emit_time_col(e, r, row, TASK_C_GOOD_UNTIL);
    emit_key(e, "timeoutMs"); api_emit_int_col(e, r, row, TASK_C_TIMEOUT);
    emit_key(e, "workerId"); api_emit_text_col(e, r, row, TASK_C_WORKER);
    emit_key(e, "claimedAt"); api_emit_time_col(e, r, row, TASK_C_CLAIMED);
    emit_key(e, "startedAt"); api_emit_time_col(e, r, row, TASK_C_STARTED);
    emit_key(e, "finishedAt"); api_emit_time_col(e, r, row, TASK_C_FINISHED);
    emit_key(e, "cancelRequested"); emit_bool(e, db_bool(r, row, TASK_C_CANCEL));
    emit_key(e, "result"); api_emit_stored_json_col(e, r, row, TASK_C_RESULT);
    emit_key(e, "errorCode"); api_emit_text_col(e, r, row, TASK_C_CODE);
    emit_key(e, "errorMessage"); api_emit_text_col(e, r, row, TASK_C_MESSAGE);
    emit_key(e, "idempotencyKey"); api_emit_text_col(e, r, row, TASK_C_KEY);
    emit_key(e, "retentionClassKey"); api_emit_text_col(e, r, row, TASK_C_CLASS);
    emit_key(e, "rerunOf"); api_emit_uuid_col(e, r, row, TASK_C_RERUN_OF);
    emit_key(e, "progress"); api_emit_stored_json_col(e, r, row, TASK_C_PROGRESS);   /* to_json(float8) */
    emit_key(e, "progressInfo"); api_emit_stored_json_col(e, r, row, TASK_C_PROGRESS_INFO);
    emit_key(e, "progressAt"); api_emit_time_col(e, r, row, TASK_C_PROGRESS_AT);
    emit_key(e, "rateKey"); api_emit_text_col(e, r, row, TASK_C_RATE_KEY);
    emit_end(e);
}

/* ---- send ---- */

typedef struct sent_key {
    uint8_t id[16];
    char   *idempotency_key;   /* owned; NULL: none */
} sent_key;

typedef struct send_call {
    httpd_req *req;
    server    *srv;
    bool       batch;
    char     **queues;   /* distinct, to announce once committed */
    size_t     nqueues;
    sent_key  *keys;     /* per task, for a 504 (resend_keys) */
    size_t     nkeys;
} send_call;

static void send_call_free(send_call *c)
{
    for (size_t i = 0; i < c->nqueues; i++) free(c->queues[i]);
    for (size_t i = 0; i < c->nkeys; i++) free(c->keys[i].idempotency_key);
    free(c->queues);
    free(c->keys);
    free(c);
}

static void emit_key_of(emit *e, const sent_key *k)
{
    emit_key(e, "id"); emit_uuid(e, k->id);
    emit_key(e, "idempotencyKey");
    if (k->idempotency_key) emit_str(e, k->idempotency_key); else emit_null(e);
}

/* The request timed out after its batch reached PostgreSQL (net/httpd.c):
 * the ids the tasks have if they commit, in the shape a 201 would have, and
 * their idempotencyKeys: a send again with the same key returns the first
 * task, so it is safe; a task without a key can only be looked up by its
 * id once the batch has ended. */
static void send_resend_keys(httpd_req *req, void *arg, emit *e)
{
    (void)req;
    send_call *c = arg;
    if (!c->batch) { emit_key_of(e, &c->keys[0]); return; }
    emit_key(e, "tasks"); emit_array(e);
    for (size_t i = 0; i < c->nkeys; i++) { emit_object(e); emit_key_of(e, &c->keys[i]); emit_end(e); }
    emit_end(e);
}

static void emit_sent(emit *e, const PGresult *r, int row)
{
    emit_key(e, "id"); api_emit_uuid_col(e, r, row, 1);
    emit_key(e, "created"); emit_bool(e, db_bool(r, row, 2));
    if (!PQgetisnull(r, row, 3)) { emit_key(e, "changed"); emit_bool(e, db_bool(r, row, 3)); }   /* sent with "unique" */
}

/* A task tasks.enqueue refused (22023, DETAIL "<index>:<field>"): the
 * 400 names the field, and the task when the request was a batch. Alone
 * in its call by then (a batch that fails is sent again request by request:
 * tasks/gather.c), so the index is the request's. */
static void refused(send_call *c, const db_reply *reply)
{
    const char *colon = strchr(reply->detail, ':');
    if (strcmp(reply->sqlstate, "22023") != 0 || !colon) { api_db_error(c->req, reply); return; }
    char where[32] = "";
    if (c->batch) snprintf(where, sizeof where, "tasks[%.*s]: ", (int)(colon - reply->detail), reply->detail);
    httpd_error_field(c->req, 400, "field", colon + 1, "%s%s", where, reply->error);
}

static void sent(void *arg, const db_reply *reply, const PGresult *r, int first, int n)
{
    send_call *c = arg;
    if (reply->error) { refused(c, reply); send_call_free(c); return; }
    for (size_t i = 0; i < c->nqueues; i++) task_hub_announce_sent(c->srv->tasks, c->queues[i]);
    api_reply out;
    emit *e = api_reply_object(&out);
    if (c->batch) {
        emit_key(e, "tasks"); emit_array(e);
        for (int row = first; row < first + n; row++) { emit_object(e); emit_sent(e, r, row); emit_end(e); }
        emit_end(e);
    } else {
        emit_sent(e, r, first);
    }
    api_reply_send(&out, c->req, 201);
    send_call_free(c);
}

static void note_queue(send_call *c, const char *queue)
{
    for (size_t i = 0; i < c->nqueues; i++)
        if (strcmp(c->queues[i], queue) == 0) return;
    c->queues = xrealloc(c->queues, (c->nqueues + 1) * sizeof *c->queues);
    c->queues[c->nqueues++] = xstrdup(queue);
}

/* The tasks of the body: {"tasks": [...]} or one task object. */
static int read_specs(httpd_req *req, server *srv, const json_doc *d, task_spec **specs, size_t *n, bool *batch)
{
    int arr = json_get(d, 0, "tasks");
    *batch = arr >= 0;
    uint32_t count = *batch ? d->tokens[arr].count : 1;
    if (*batch && (d->tokens[arr].type != JSON_ARRAY || count == 0 || count > TASK_MAX_BATCH)) {
        httpd_error_field(req, 400, "field", "tasks", "tasks must be an array of 1 to %d tasks", TASK_MAX_BATCH);
        return -1;
    }
    *specs = xcalloc(count, sizeof **specs);
    *n = count;
    for (uint32_t i = 0; i < count; i++) {
        char where[32] = "";
        if (*batch) snprintf(where, sizeof where, "tasks[%u]: ", i);
        task_spec_init(&(*specs)[i]);
        uint32_t obj = *batch ? (uint32_t)json_at(d, (uint32_t)arr, i) : 0;
        if (api_task_spec(req, srv, d, obj, where, &(*specs)[i]) < 0) return -1;
    }
    return 0;
}

static void free_specs(task_spec *specs, size_t n)
{
    for (size_t i = 0; i < n; i++) task_spec_fini(&specs[i]);
    free(specs);
}

void api_task_send(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    task_spec *specs = NULL;
    size_t n = 0;
    bool batch;
    if (api_read_object(req, srv, &d) == 0 && read_specs(req, srv, &d, &specs, &n, &batch) == 0) {
        send_call *c = xcalloc(1, sizeof *c);
        c->req = req;
        c->srv = srv;
        c->batch = batch;
        c->keys = xcalloc(n, sizeof *c->keys);
        c->nkeys = n;
        gather *g = task_hub_sends(srv->tasks);
        for (size_t i = 0; i < n; i++) {
            task_send_add(gather_arrays(g), &specs[i]);
            note_queue(c, specs[i].queue);
            memcpy(c->keys[i].id, specs[i].id, sizeof c->keys[i].id);
            if (specs[i].idempotency_key) c->keys[i].idempotency_key = xstrdup(specs[i].idempotency_key);
        }
        req->resend_keys = send_resend_keys;
        req->resend_arg = c;
        gather_add(g, (int)n, &req->left, &req->sent, sent, c);   /* req is freed by the reply in sent */
    }
    free_specs(specs, n);
    json_doc_fini(&d);
}

/* ---- get, waiting for the end ---- */

static void read_task(db_job *job, const char *const *id)
{
    db_job_call(job, STMT_TASK_GET, id, NULL, NULL);
}

static bool task_ended(const db_reply *reply)
{
    return task_status_terminal(db_str(reply->results[0], 0, TASK_C_STATUS));
}

static void reply_task(httpd_req *req, const db_reply *reply)
{
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    api_emit_task(&e, reply->results[0], 0);
    httpd_reply_buf(req, 200, &out);
}

void api_task_get(httpd_req *req, server *srv)
{
    static const held_get_ops ops = { "task", TASK_MAX_WAIT_MS, read_task, task_ended, reply_task };
    api_held_get(req, srv, &ops);
}

/* ---- its attempts ---- */

/* The task is read with its attempts, in one round trip: the task read
 * decides 404 as GET /api/v1/tasks/:id does (live, or its record still in
 * history), and a task that never started answers []. */
static void read_attempts(db_job *job, const char *const *id)
{
    db_job_call(job, STMT_TASK_GET, id, NULL, NULL);
    db_job_call(job, STMT_TASK_ATTEMPTS, id, NULL, NULL);
}

enum { A_ATTEMPT, A_WORKER, A_CLAIM, A_STARTED, A_FINISHED, A_OUTCOME, A_CODE, A_MESSAGE };

static void emit_attempt(emit *e, const PGresult *r, int row)
{
    emit_object(e);
    emit_key(e, "attempt"); api_emit_int_col(e, r, row, A_ATTEMPT);
    emit_key(e, "workerId"); api_emit_text_col(e, r, row, A_WORKER);
    emit_key(e, "claimId"); api_emit_uuid_col(e, r, row, A_CLAIM);
    emit_key(e, "startedAt"); api_emit_time_col(e, r, row, A_STARTED);
    emit_key(e, "finishedAt"); api_emit_time_col(e, r, row, A_FINISHED);
    emit_key(e, "outcome"); api_emit_text_col(e, r, row, A_OUTCOME);
    emit_key(e, "errorCode"); api_emit_text_col(e, r, row, A_CODE);
    emit_key(e, "errorMessage"); api_emit_text_col(e, r, row, A_MESSAGE);
    emit_end(e);
}

static void reply_attempts(httpd_req *req, const db_reply *reply)
{
    const PGresult *r = reply->results[1];
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "taskId"); api_emit_uuid_col(e, reply->results[0], 0, TASK_C_ID);
    emit_key(e, "attempts"); emit_array(e);
    for (int row = 0; row < PQntuples(r); row++) emit_attempt(e, r, row);
    api_reply_send(&out, req, 200);
}

void api_task_attempts(httpd_req *req, server *srv)
{
    static const held_get_ops ops = { "task", TASK_MAX_WAIT_MS, read_attempts, task_ended, reply_attempts };
    api_held_get(req, srv, &ops);
}

/* ---- list ---- */

static int check_status(httpd_req *req, const char *const *filters)
{
    if (!filters[1] || task_status_valid(filters[1])) return 0;
    httpd_error_field(req, 400, "field", "status", "status must be one of PENDING, CLAIMED, RUNNING, COMPLETED,"
                      " FAILED, CANCELLED, EXPIRED");
    return -1;
}

/* ?order=asc (oldest first, the default) or desc (newest first): ids are
 * UUIDv7, so id order is the order tasks were sent in; ?search= a
 * substring of the task's name. */
void api_task_list(httpd_req *req, server *srv)
{
    static const api_page oldest = { "tasks", STMT_TASK_LIST, TASK_C_ID, api_emit_task, check_status,
                                     true, STMT_TASK_COUNT };
    static const api_page newest = { "tasks", STMT_TASK_LIST_DESC, TASK_C_ID, api_emit_task, check_status,
                                     true, STMT_TASK_COUNT };
    const char *order = httpd_query(req, "order"), *search = httpd_query(req, "search");
    if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
        httpd_error_field(req, 400, "field", "order", "order must be asc or desc");
        return;
    }
    if (search && !*search) search = NULL;
    if (search && api_check_name(req, "", "search", search) < 0) return;
    const char *filters[] = { httpd_query(req, "queue"), httpd_query(req, "status"), search };
    api_list_page(req, srv, order && strcmp(order, "desc") == 0 ? &newest : &oldest, filters, 3);
}

/* ---- cancel ---- */

typedef struct cancel_call {
    httpd_req *req;
    server    *srv;
    char       id[IDS_UUID_TEXT];
    uint8_t    raw[16];
} cancel_call;

static void cancelled(void *arg, const db_reply *reply)
{
    cancel_call *c = arg;
    const PGresult *r = reply->error ? NULL : reply->results[0];
    if (reply->error) api_db_error(c->req, reply);
    else if (db_null(r, 0, 0)) httpd_error(c->req, 404, "no task %s", c->id);
    else {
        const char *status = db_str(r, 0, 0);
        if (strcmp(status, "CANCELLED") == 0) task_hub_announce_done(c->srv->tasks, c->raw);
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "id"); emit_str(e, c->id);
        emit_key(e, "status"); emit_str(e, status);
        /* RUNNING: its worker is told on its next heartbeat. */
        emit_key(e, "cancelled"); emit_bool(e, strcmp(status, "CANCELLED") == 0);
        emit_key(e, "cancelRequested"); emit_bool(e, strcmp(status, "RUNNING") == 0);
        api_reply_send(&out, c->req, 200);
    }
    free(c);
}

void api_task_cancel(httpd_req *req, server *srv)
{
    cancel_call *c = xcalloc(1, sizeof *c);
    if (api_read_uuid(req, req->params[0], c->id, "id") < 0) { free(c); return; }
    if (ids_uuid_parse(c->id, strlen(c->id), c->raw) < 0) abort();   /* api_read_uuid checked it */
    c->req = req;
    c->srv = srv;
    const char *values[1] = { c->id };
    api_submit_stmt(req, srv, STMT_TASK_CANCEL, values, cancelled, c);
}

/* task_rerun: POST /api/v1/tasks/:id/rerun (one finished task) and POST
 * /api/v1/tasks/rerun (finished tasks chosen by a filter, a bounded number
 * per request, or only counted with dryRun). A rerun is a new task naming
 * the one it reruns (rerunOf), sent like any other (tasks.send) with the
 * original's name, queue, args, priority, retry policy, timeout and
 * retention class unless the request overrides them; a task is rerun at
 * most once, so a request made again sends nothing twice
 * (sql/functions/tasks_rerun.sql). A workflow node's task is rerun into its
 * node, and the workflow goes on from there (tasks.node_reopen). Every
 * field is checked before anything is written: a bad one is a 400 naming
 * it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "api/task_input.h"
#include "base/retention_class.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"

#define RERUN_LIMIT_DEFAULT 100
#define RERUN_LIMIT_MAX     TASK_MAX_BATCH
#define RERUN_OVERRIDES     10   /* the values every rerun statement ends with */

/* What a request asks of its reruns; NULL or 0: the original's. */
typedef struct rerun_input {
    bool        completed;       /* includeCompleted */
    char       *name, *queue, *args;   /* overrides of one task's rerun */
    int64_t     priority, timeout_ms;
    bool        retry_set;       /* retry given: it replaces the original's policy whole */
    task_retry  retry;
    const char *class_key;       /* owned by silt.conf */
    char        texts[6][32];    /* priority, timeout, maxRetries, baseMs, capMs, jitter as text */
    db_array    delays, codes;
} rerun_input;

static void input_init(rerun_input *in)
{
    memset(in, 0, sizeof *in);
    db_array_init(&in->delays);
    db_array_init(&in->codes);
}

static void input_fini(rerun_input *in)
{
    free(in->name);
    free(in->queue);
    free(in->args);
    for (int i = 0; i < in->retry.nretry_on; i++) free(in->retry.retry_on[i]);
    db_array_fini(&in->delays);
    db_array_fini(&in->codes);
}

static int bad(httpd_req *req, const char *field, const char *msg)
{
    httpd_error_field(req, 400, "field", field, "%s %s", field, msg);
    return -1;
}

/* retentionClassKey: absent, the original's; null, forever; else a key of
 * this server's silt.conf. */
static int read_class(httpd_req *req, server *srv, const json_doc *d, rerun_input *in)
{
    int v = json_get(d, 0, "retentionClassKey");
    if (v < 0) return 0;
    if (d->tokens[v].type != JSON_NULL && d->tokens[v].type != JSON_STRING)
        return bad(req, "retentionClassKey", "must be a retention class key or null");
    char *key = d->tokens[v].type == JSON_STRING ? json_str_dup(d, (uint32_t)v) : NULL;
    char err[512];
    in->class_key = retention_class_for(&srv->conf.retention, "", key ? RETENTION_ASK_KEY : RETENTION_ASK_NONE, key,
                                        err, sizeof err);
    free(key);
    if (!in->class_key) { httpd_error_field(req, 400, "field", "retentionClassKey", "%s", err); return -1; }
    return 0;
}

/* The overrides both kinds of rerun take. */
static int read_overrides(httpd_req *req, server *srv, const json_doc *d, rerun_input *in)
{
    int r = json_get(d, 0, "retry");
    in->retry_set = r >= 0 && d->tokens[r].type != JSON_NULL;
    if (api_member_int(req, d, 0, "", "priority", TASK_PRIORITY_MIN, TASK_PRIORITY_MAX, &in->priority) < 0 ||
        api_member_int(req, d, 0, "", "timeoutMs", 1, TASK_MAX_TIMEOUT_MS, &in->timeout_ms) < 0 ||
        api_task_retry(req, d, 0, "", &in->retry) < 0 || read_class(req, srv, d, in) < 0 ||
        api_member_bool(req, d, 0, "", "includeCompleted", &in->completed) < 0)
        return -1;
    return 0;
}

static const char *int_or_null(char *text, int64_t v)
{
    if (v <= 0) return NULL;
    snprintf(text, 32, "%lld", (long long)v);
    return text;
}

/* The RERUN_OVERRIDES values every statement ends with (see tasks.rerun). */
static void override_values(rerun_input *in, const char **v)
{
    const task_retry *r = &in->retry;
    v[0] = int_or_null(in->texts[0], in->priority);
    v[1] = int_or_null(in->texts[1], in->timeout_ms);
    v[2] = in->retry_set ? "true" : "false";
    snprintf(in->texts[2], 32, "%d", r->max_retries);
    v[3] = in->texts[2];
    for (int i = 0; i < r->ndelays; i++) db_array_int(&in->delays, r->delays_ms[i]);
    v[4] = r->ndelays ? db_array_literal(&in->delays) : NULL;
    v[5] = int_or_null(in->texts[3], r->base_ms);
    v[6] = int_or_null(in->texts[4], r->base_ms ? r->cap_ms : 0);
    snprintf(in->texts[5], 32, "%.6f", r->jitter);
    v[7] = in->texts[5];
    for (int i = 0; i < r->nretry_on; i++) db_array_text(&in->codes, r->retry_on[i]);
    v[8] = r->nretry_on ? db_array_literal(&in->codes) : NULL;
    v[9] = in->class_key;
}

/* ---- one task ---- */

static const char *const one_fields[] = {
    "name", "queue", "args", "priority", "timeoutMs", "retry", "retentionClassKey", "includeCompleted", NULL,
};

/* name, queue (declared, when silt.conf declares queues) and args of the
 * rerun, each only when given. */
static int read_what(httpd_req *req, server *srv, const json_doc *d, rerun_input *in)
{
    if (api_member_string(req, d, 0, "", "name", &in->name) < 0 ||
        (in->name && api_check_name(req, "", "name", in->name) < 0) ||
        api_member_string(req, d, 0, "", "queue", &in->queue) < 0 ||
        (in->queue && api_check_name(req, "", "queue", in->queue) < 0))
        return -1;
    bool known = true;
    if (in->queue) task_hub_queue(srv->tasks, in->queue, &known);
    if (!known) {
        httpd_error_field(req, 400, "field", "queue", "queue \"%s\" is not declared in the configuration file",
                          in->queue);
        return -1;
    }
    if (json_get(d, 0, "args") >= 0) in->args = api_member_json(d, 0, "args");
    return 0;
}

typedef struct rerun_call {
    httpd_req *req;
    server    *srv;
    char       id[IDS_UUID_TEXT];
} rerun_call;

enum { R_STATUS, R_WORKFLOW, R_WORKFLOW_STATUS, R_REFUSED, R_ID, R_CREATED, R_QUEUE };

/* Why a task that exists was not rerun (tasks.rerun's refused): a 409
 * saying so. */
static void refuse(rerun_call *c, const PGresult *r)
{
    const char *why = db_str(r, 0, R_REFUSED), *status = db_str(r, 0, R_STATUS);
    char wf[IDS_UUID_TEXT] = "";
    if (!db_null(r, 0, R_WORKFLOW)) ids_uuid_format(db_uuid(r, 0, R_WORKFLOW), wf);
    if (strcmp(why, "live") == 0)
        httpd_error(c->req, 409, "task %s is %s: only a finished task can be rerun", c->id, status);
    else if (strcmp(why, "completed") == 0)
        httpd_error(c->req, 409, "task %s is COMPLETED: a completed task is rerun only with includeCompleted",
                    c->id);
    else if (strcmp(why, "node_completed") == 0)
        httpd_error(c->req, 409, "task %s is a workflow node's and COMPLETED: its dependents ran on its result, so "
                    "it is not rerun", c->id);
    else if (strcmp(why, "workflow_gone") == 0)
        httpd_error(c->req, 409, "task %s was a node of workflow %s, whose record is gone: it cannot be rerun", c->id,
                    wf);
    else if (strcmp(why, "workflow_ended") == 0)
        httpd_error(c->req, 409, "task %s is a node of workflow %s, which is %s: only a running, paused or failed "
                    "workflow's node is rerun", c->id, wf, db_str(r, 0, R_WORKFLOW_STATUS));
    else if (strcmp(why, "not_current") == 0)
        httpd_error(c->req, 409, "task %s is no longer its workflow node's task: rerun the node's current one "
                    "(GET /api/v1/workflows/%s)", c->id, wf);
    else if (strcmp(why, "waiting") == 0)
        httpd_error(c->req, 409, "task %s's workflow node waits for predecessors that have not ended (a rerun "
                    "upstream reopened them): rerun it once they have", c->id);
    else
        httpd_error(c->req, 409, "task %s's workflow node has not taken its end yet (recovery's outbox, within one "
                    "check interval): try again", c->id);
}

static void rerun_done(void *arg, const db_reply *reply)
{
    rerun_call *c = arg;
    const PGresult *r = reply->error ? NULL : reply->results[0];
    if (reply->error) api_db_error(c->req, reply);
    else if (db_null(r, 0, R_STATUS)) httpd_error(c->req, 404, "no task %s", c->id);
    else if (!db_null(r, 0, R_REFUSED)) refuse(c, r);
    else {
        bool created = db_bool(r, 0, R_CREATED);
        if (created) task_hub_announce_sent(c->srv->tasks, db_str(r, 0, R_QUEUE));
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "id"); api_emit_uuid_col(e, r, 0, R_ID);
        emit_key(e, "rerunOf"); emit_str(e, c->id);
        emit_key(e, "created"); emit_bool(e, created);
        emit_key(e, "workflowId"); api_emit_uuid_col(e, r, 0, R_WORKFLOW);
        emit_key(e, "workflowStatus"); api_emit_text_col(e, r, 0, R_WORKFLOW_STATUS);
        api_reply_send(&out, c->req, created ? 201 : 200);
    }
    free(c);
}

static int read_one(httpd_req *req, server *srv, json_doc *d, rerun_input *in)
{
    if (req->body_len == 0) return 0;   /* no body: the original as it was */
    if (api_read_object(req, srv, d) < 0 || api_only_known(req, d, 0, "", "a rerun", one_fields) < 0 ||
        read_what(req, srv, d, in) < 0 || read_overrides(req, srv, d, in) < 0)
        return -1;
    return 0;
}

void api_task_rerun(httpd_req *req, server *srv)
{
    rerun_call *c = xcalloc(1, sizeof *c);
    json_doc d;
    json_doc_init(&d);
    rerun_input in;
    input_init(&in);
    if (api_read_uuid(req, req->params[0], c->id, "id") < 0 || read_one(req, srv, &d, &in) < 0) {
        free(c);
    } else {
        c->req = req;
        c->srv = srv;
        const char *v[5 + RERUN_OVERRIDES] = { c->id, in.completed ? "true" : "false", in.name, in.queue, in.args };
        override_values(&in, v + 5);
        api_submit_stmt(req, srv, STMT_TASK_RERUN, v, rerun_done, c);
    }
    input_fini(&in);
    json_doc_fini(&d);
}

/* ---- by filter ---- */

static const char *const many_fields[] = {
    "queue", "name", "errorCode", "status", "finishedAfter", "finishedBefore", "includeCompleted", "limit",
    "dryRun", "priority", "timeoutMs", "retry", "retentionClassKey", NULL,
};

/* The filters, in the order of the statements' first values. */
typedef struct rerun_filter {
    char   *queue, *name, *code, *status, *after, *before;
    int64_t limit;
    bool    dry_run;
    char    limit_text[24];
} rerun_filter;

static void filter_fini(rerun_filter *f)
{
    free(f->queue);
    free(f->name);
    free(f->code);
    free(f->status);
    free(f->after);
    free(f->before);
}

static int check_status(httpd_req *req, const char *status)
{
    if (!status || (task_status_terminal(status))) return 0;
    return bad(req, "status", "must be one of FAILED, CANCELLED, EXPIRED, COMPLETED");
}

static int read_filter(httpd_req *req, const json_doc *d, rerun_filter *f)
{
    f->limit = RERUN_LIMIT_DEFAULT;
    if (api_member_string(req, d, 0, "", "queue", &f->queue) < 0 ||
        (f->queue && api_check_name(req, "", "queue", f->queue) < 0) ||
        api_member_string(req, d, 0, "", "name", &f->name) < 0 ||
        (f->name && api_check_name(req, "", "name", f->name) < 0) ||
        api_member_string(req, d, 0, "", "errorCode", &f->code) < 0 ||
        api_member_string(req, d, 0, "", "status", &f->status) < 0 || check_status(req, f->status) < 0 ||
        api_member_string(req, d, 0, "", "finishedAfter", &f->after) < 0 ||
        api_check_time(req, "finishedAfter", f->after) < 0 ||
        api_member_string(req, d, 0, "", "finishedBefore", &f->before) < 0 ||
        api_check_time(req, "finishedBefore", f->before) < 0 ||
        api_member_int(req, d, 0, "", "limit", 1, RERUN_LIMIT_MAX, &f->limit) < 0 ||
        api_member_bool(req, d, 0, "", "dryRun", &f->dry_run) < 0)
        return -1;
    if (f->code && strlen(f->code) > TASK_CODE_MAX) return bad(req, "errorCode", "must be at most 64 characters");
    snprintf(f->limit_text, sizeof f->limit_text, "%lld", (long long)f->limit);
    return 0;
}

static void counted(emit *e, server *srv, const PGresult *r, bool dry_run)
{
    (void)srv;
    emit_key(e, "dryRun"); emit_bool(e, dry_run);
    emit_key(e, "count"); emit_int(e, db_int(r, 0, 0));
    emit_key(e, "more"); emit_bool(e, db_bool(r, 0, 1));
}

enum { M_RERUN_OF, M_ID, M_CREATED, M_QUEUE, M_MORE };

/* Each queue that got a task announced once. */
static void announce_queues(server *srv, const PGresult *r)
{
    int n = PQntuples(r);
    for (int row = 0; row < n; row++) {
        if (!db_bool(r, row, M_CREATED)) continue;
        bool seen = false;
        for (int k = 0; k < row && !seen; k++)
            seen = db_bool(r, k, M_CREATED) && strcmp(db_str(r, k, M_QUEUE), db_str(r, row, M_QUEUE)) == 0;
        if (!seen) task_hub_announce_sent(srv->tasks, db_str(r, row, M_QUEUE));
    }
}

static void rerun_many_done(emit *e, server *srv, const PGresult *r, bool dry_run)
{
    int n = PQntuples(r), created = 0;
    announce_queues(srv, r);
    emit_key(e, "dryRun"); emit_bool(e, dry_run);
    for (int row = 0; row < n; row++) created += db_bool(r, row, M_CREATED);
    emit_key(e, "count"); emit_int(e, created);
    emit_key(e, "more"); emit_bool(e, n > 0 && db_bool(r, 0, M_MORE));
    emit_key(e, "tasks"); emit_array(e);
    for (int row = 0; row < n; row++) {
        emit_object(e);
        emit_key(e, "id"); api_emit_uuid_col(e, r, row, M_ID);
        emit_key(e, "rerunOf"); api_emit_uuid_col(e, r, row, M_RERUN_OF);
        emit_key(e, "created"); emit_bool(e, db_bool(r, row, M_CREATED));
        emit_end(e);
    }
}

static void submit_many(httpd_req *req, server *srv, rerun_filter *f, rerun_input *in)
{
    const char *v[8 + RERUN_OVERRIDES] = {
        f->queue, f->name, f->code, f->status, f->after, f->before, in->completed ? "true" : "false", f->limit_text,
    };
    if (f->dry_run) {
        api_object_call(req, srv, STMT_TASK_RERUN_COUNT, v, counted, true);
        return;
    }
    override_values(in, v + 8);
    api_object_call(req, srv, STMT_TASK_RERUN_MANY, v, rerun_many_done, false);
}

void api_task_rerun_many(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    rerun_input in;
    input_init(&in);
    rerun_filter f;
    memset(&f, 0, sizeof f);
    if (api_read_object(req, srv, &d) == 0 && api_only_known(req, &d, 0, "", "a bulk rerun", many_fields) == 0 &&
        read_filter(req, &d, &f) == 0 && read_overrides(req, srv, &d, &in) == 0)
        submit_many(req, srv, &f, &in);
    filter_fini(&f);
    input_fini(&in);
    json_doc_fini(&d);
}

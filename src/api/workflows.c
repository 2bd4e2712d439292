/* workflows: POST /api/v1/workflows (start one), GET /api/v1/workflows/:id
 * (its nodes; ?wait=MS until it ends), GET /api/v1/workflows (?status=
 * &name=&limit=&cursor=), POST /api/v1/workflows/:id/pause|resume|cancel.
 * A definition is checked whole before anything is written
 * (tasks/workflow_check.c): every problem is listed in one 400. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "api/held_get.h"
#include "api/task_input.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"
#include "tasks/send.h"
#include "tasks/workflow_check.h"

#define WF_MAX_NODES    1000
#define WF_NODE_ID_MAX  64
#define WF_MAX_WAIT_MS  60000

static const char *const node_fields[] = {
    "id", "task", "queue", "args", "priority", "goodUntil", "timeoutMs", "retry", "waitsFor", "join", "minSuccess",
    "allowFailedDeps", "argsFrom", "retentionClassKey", NULL,
};
static const task_form node_form = { "a node", "task", node_fields, false };
static const char *const workflow_fields[] = { "name", "onError", "output", "nodes", NULL };

/* One node as read: its task, and its place in the graph. */
typedef struct wf_input_node {
    task_spec spec;
    char     *id;
    char    **waits;
    size_t    nwaits;
    char     *join;
    int64_t   min_success;
    bool      allow_failed;
    char    **from_nodes;     /* argsFrom's values, for the checks */
    size_t    nfrom;
    char     *args_from;      /* argsFrom as sent (JSON object), NULL when none */
} wf_input_node;

typedef struct wf_input {
    char          *name, *on_error, *output;
    wf_input_node *nodes;
    size_t         n;
} wf_input;

static void strings_free(char **s, size_t n)
{
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s);
}

static void input_free(wf_input *in)
{
    for (size_t i = 0; i < in->n; i++) {
        wf_input_node *v = &in->nodes[i];
        task_spec_fini(&v->spec);
        free(v->id);
        strings_free(v->waits, v->nwaits);
        free(v->join);
        strings_free(v->from_nodes, v->nfrom);
        free(v->args_from);
    }
    free(in->nodes);
    free(in->name);
    free(in->on_error);
    free(in->output);
}

/* waitsFor: an array of node ids (strings). */
static int read_waits(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, wf_input_node *v)
{
    int w = json_get(d, obj, "waitsFor");
    if (w < 0 || d->tokens[w].type == JSON_NULL) return 0;
    if (d->tokens[w].type != JSON_ARRAY || d->tokens[w].count > WF_MAX_NODES) {
        httpd_error_field(req, 400, "field", "waitsFor", "%swaitsFor must be an array of node ids", where);
        return -1;
    }
    v->waits = xcalloc(d->tokens[w].count + 1, sizeof *v->waits);
    for (uint32_t i = 0; i < d->tokens[w].count; i++) {
        int e = json_at(d, (uint32_t)w, i);
        if (d->tokens[e].type != JSON_STRING) {
            httpd_error_field(req, 400, "field", "waitsFor", "%swaitsFor must be an array of node ids", where);
            return -1;
        }
        v->waits[v->nwaits++] = json_str_dup(d, (uint32_t)e);
    }
    return 0;
}

/* argsFrom: {"parameter": "predecessor node id", ...}, kept as sent. */
static int read_args_from(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, wf_input_node *v)
{
    int f = json_get(d, obj, "argsFrom");
    if (f < 0 || d->tokens[f].type == JSON_NULL) return 0;
    if (d->tokens[f].type != JSON_OBJECT) {
        httpd_error_field(req, 400, "field", "argsFrom", "%sargsFrom must be an object of parameter: node id", where);
        return -1;
    }
    v->from_nodes = xcalloc(d->tokens[f].count + 1, sizeof *v->from_nodes);
    uint32_t k = (uint32_t)f + 1;
    for (uint32_t i = 0; i < d->tokens[f].count; i++, k = d->tokens[k + 1].next) {
        if (d->tokens[k + 1].type != JSON_STRING) {
            httpd_error_field(req, 400, "field", "argsFrom", "%sargsFrom must be an object of parameter: node id", where);
            return -1;
        }
        v->from_nodes[v->nfrom++] = json_str_dup(d, k + 1);
    }
    size_t n;
    const char *text = json_span(d, (uint32_t)f, &n);
    v->args_from = xstrndup(text, n);
    return 0;
}

static int read_node(httpd_req *req, server *srv, const json_doc *d, uint32_t obj, const char *where, wf_input_node *v)
{
    task_spec_init(&v->spec);
    if (api_task_read(req, srv, d, obj, where, &node_form, &v->spec) < 0 ||
        api_member_string(req, d, obj, where, "id", &v->id) < 0 ||
        api_member_string(req, d, obj, where, "join", &v->join) < 0 ||
        api_member_int(req, d, obj, where, "minSuccess", 0, WF_MAX_NODES, &v->min_success) < 0 ||
        read_waits(req, d, obj, where, v) < 0 || read_args_from(req, d, obj, where, v) < 0)
        return -1;
    if (!v->id || strlen(v->id) > WF_NODE_ID_MAX) {
        httpd_error_field(req, 400, "field", "id", "%sid is required, at most %d characters", where, WF_NODE_ID_MAX);
        return -1;
    }
    if (!v->join) v->join = xstrdup("all");
    if (v->args_from && json_get(d, obj, "args") < 0) {   /* argsFrom alone: its parameters are the args */
        free(v->spec.args);
        v->spec.args = xstrdup("{}");
    }
    int a = json_get(d, obj, "allowFailedDeps");
    v->allow_failed = a >= 0 && d->tokens[a].type == JSON_TRUE;
    return 0;
}

static int read_input(httpd_req *req, server *srv, const json_doc *d, wf_input *in)
{
    if (api_only_known(req, d, 0, "", "a workflow", workflow_fields) < 0) return -1;
    if (api_opt_string(req, d, 0, "name", &in->name) < 0 || api_opt_string(req, d, 0, "onError", &in->on_error) < 0 ||
        api_opt_string(req, d, 0, "output", &in->output) < 0)
        return -1;
    if (!in->name) { httpd_error_field(req, 400, "field", "name", "name is required"); return -1; }
    if (!in->on_error) in->on_error = xstrdup("FAIL");
    int nodes = json_get(d, 0, "nodes");
    if (nodes < 0 || d->tokens[nodes].type != JSON_ARRAY || d->tokens[nodes].count > WF_MAX_NODES) {
        httpd_error_field(req, 400, "field", "nodes", "nodes must be an array of at most %d nodes", WF_MAX_NODES);
        return -1;
    }
    in->nodes = xcalloc(d->tokens[nodes].count + 1, sizeof *in->nodes);
    for (uint32_t i = 0; i < d->tokens[nodes].count; i++) {
        char where[32];
        snprintf(where, sizeof where, "nodes[%u]: ", i);
        in->n++;
        if (read_node(req, srv, d, (uint32_t)json_at(d, (uint32_t)nodes, i), where, &in->nodes[i]) < 0) return -1;
    }
    return 0;
}

/* The graph checks; 0, or -1 after a 400 listing every problem. */
static int check_input(httpd_req *req, const wf_input *in)
{
    wf_node *g = xcalloc(in->n + 1, sizeof *g);
    for (size_t i = 0; i < in->n; i++) {
        const wf_input_node *v = &in->nodes[i];
        bool object = v->spec.args && v->spec.args[0] == '{';
        g[i] = (wf_node){ v->id, (const char *const *)v->waits, v->nwaits, v->join, (int)v->min_success,
                          (const char *const *)v->from_nodes, v->nfrom, object };
    }
    wf_problems p = { 0 };
    size_t n = workflow_check(g, in->n, in->on_error, in->output, &p);
    free(g);
    if (n == 0) return 0;
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "error"); emit_str(e, n == 1 ? p.items[0] : "the workflow has several problems: see problems");
    emit_key(e, "problems"); emit_array(e);
    for (size_t i = 0; i < p.n; i++) emit_str(e, p.items[i]);
    emit_end(e);
    emit_end(e);
    wf_problems_fini(&p);
    api_reply_send(&out, req, 400);
    return -1;
}

/* ---- start ---- */

/* A start or a control: the request and the workflow's id. */
typedef struct wf_call {
    httpd_req *req;
    char       id[IDS_UUID_TEXT];
} wf_call;

/* {"id","status"}: what a start and a control answer. */
static void reply_status(httpd_req *req, int code, const char *id, const PGresult *r)
{
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "id"); emit_str(e, id);
    emit_key(e, "status"); api_emit_text_col(e, r, 0, 0);
    api_reply_send(&out, req, code);
}

static void started(void *arg, const db_reply *reply)
{
    wf_call *c = arg;
    if (reply->error) api_db_error(c->req, reply);
    else reply_status(c->req, 201, c->id, reply->results[0]);
    free(c);
}

/* A start: the workflow and its nodes written and started, in one call. */
static void start_call(db_job *job, const char *id, const wf_input *in)
{
    enum { N_ID, N_TASK, N_QUEUE, N_ARGS, N_WAITS, N_JOIN, N_MIN, N_ALLOW, N_FROM, O_PRIORITY, O_TIMEOUT, O_RETRIES,
           O_DELAYS, O_BASE, O_CAP, O_JITTER, O_RETRY_ON, O_GOOD_UNTIL, O_CLASS, N_ARRAYS };
    db_array a[N_ARRAYS];
    for (int i = 0; i < N_ARRAYS; i++) db_array_init(&a[i]);
    for (size_t i = 0; i < in->n; i++) {
        const wf_input_node *v = &in->nodes[i];
        db_array waits;
        db_array_init(&waits);
        for (size_t k = 0; k < v->nwaits; k++) db_array_text(&waits, v->waits[k]);
        char jitter[32];
        snprintf(jitter, sizeof jitter, "%.6f", v->spec.retry.jitter);
        db_array_text(&a[N_ID], v->id);
        db_array_text(&a[N_TASK], v->spec.name);
        db_array_text(&a[N_QUEUE], v->spec.queue);
        db_array_text(&a[N_ARGS], v->spec.args);
        db_array_text(&a[N_WAITS], db_array_literal(&waits));
        db_array_text(&a[N_JOIN], v->join);
        task_add_optional_int(&a[N_MIN], v->min_success);
        db_array_bool(&a[N_ALLOW], v->allow_failed);
        db_array_text(&a[N_FROM], v->args_from);
        db_array_int(&a[O_PRIORITY], v->spec.priority);
        task_add_optional_int(&a[O_TIMEOUT], v->spec.timeout_ms);
        db_array_int(&a[O_RETRIES], v->spec.retry.max_retries);
        task_add_delays(&a[O_DELAYS], &v->spec.retry);
        task_add_optional_int(&a[O_BASE], v->spec.retry.base_ms);
        task_add_optional_int(&a[O_CAP], v->spec.retry.cap_ms);
        db_array_text(&a[O_JITTER], jitter);
        task_add_retry_on(&a[O_RETRY_ON], &v->spec.retry);
        db_array_text(&a[O_GOOD_UNTIL], v->spec.good_until);
        db_array_text(&a[O_CLASS], v->spec.retention_class);
        db_array_fini(&waits);
    }
    const char *create[4 + N_ARRAYS] = { id, in->name, in->on_error, in->output };
    for (int i = 0; i < N_ARRAYS; i++) create[4 + i] = db_array_literal(&a[i]);
    db_job_call(job, STMT_WF_CREATE, create, NULL, NULL);
    for (int i = 0; i < N_ARRAYS; i++) db_array_fini(&a[i]);
}

void api_workflow_start(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    wf_input in = { 0 };
    if (api_read_object(req, srv, &d) == 0 && read_input(req, srv, &d, &in) == 0 && check_input(req, &in) == 0) {
        wf_call *c = xcalloc(1, sizeof *c);
        c->req = req;
        uint8_t raw[16];
        ids_uuid7(raw);
        ids_uuid_format(raw, c->id);
        db_job *job = db_job_new(started, c);
        start_call(job, c->id, &in);
        api_submit(req, srv, job);
    }
    input_free(&in);
    json_doc_fini(&d);
}

/* ---- one workflow and its nodes ---- */

/* A result, as the worker sent it (stored verbatim, returned verbatim). */
static void emit_result_col(emit *e, const PGresult *r, int row, int col)
{
    if (db_null(r, row, col)) { emit_null(e); return; }
    size_t n;
    const char *text = db_json(r, row, col, &n);
    emit_raw(e, text, n);
}

/* JSON PostgreSQL built (to_json), in the API's one voice. */
static void emit_json_col(emit *e, const PGresult *r, int row, int col)
{
    if (db_null(r, row, col)) { emit_null(e); return; }
    size_t n;
    const char *text = db_json(r, row, col, &n);
    if (emit_json(e, text, n) < 0) emit_null(e);
}

static void emit_workflow(emit *e, const PGresult *r, int row)
{
    emit_key(e, "id"); api_emit_uuid_col(e, r, row, 0);
    emit_key(e, "name"); api_emit_text_col(e, r, row, 1);
    emit_key(e, "status"); api_emit_text_col(e, r, row, 2);
    emit_key(e, "onError"); api_emit_text_col(e, r, row, 3);
    emit_key(e, "output"); api_emit_text_col(e, r, row, 4);
    emit_key(e, "createdAt"); api_emit_time_col(e, r, row, 5);
    emit_key(e, "startedAt"); api_emit_time_col(e, r, row, 6);
    emit_key(e, "pausedAt"); api_emit_time_col(e, r, row, 7);
    emit_key(e, "finishedAt"); api_emit_time_col(e, r, row, 8);
    emit_key(e, "result"); emit_result_col(e, r, row, 9);
    emit_key(e, "errorCode"); api_emit_text_col(e, r, row, 10);
    emit_key(e, "errorMessage"); api_emit_text_col(e, r, row, 11);
}

static void emit_nodes(emit *e, const PGresult *r)
{
    emit_key(e, "nodes"); emit_array(e);
    for (int row = 0; row < PQntuples(r); row++) {
        emit_object(e);
        emit_key(e, "id"); api_emit_text_col(e, r, row, 0);
        emit_key(e, "task"); api_emit_text_col(e, r, row, 1);
        emit_key(e, "queue"); api_emit_text_col(e, r, row, 2);
        emit_key(e, "status"); api_emit_text_col(e, r, row, 3);
        emit_key(e, "taskId"); api_emit_uuid_col(e, r, row, 4);
        emit_key(e, "waitsFor"); emit_json_col(e, r, row, 5);
        emit_key(e, "join"); api_emit_text_col(e, r, row, 6);
        emit_key(e, "result"); emit_result_col(e, r, row, 7);
        emit_key(e, "errorCode"); api_emit_text_col(e, r, row, 8);
        emit_key(e, "errorMessage"); api_emit_text_col(e, r, row, 9);
        emit_key(e, "finishedAt"); api_emit_time_col(e, r, row, 10);
        emit_end(e);
    }
    emit_end(e);
}

static bool workflow_ended(const char *status)
{
    return strcmp(status, "PENDING") != 0 && strcmp(status, "RUNNING") != 0 && strcmp(status, "PAUSED") != 0;
}

static void read_workflow(db_job *job, const char *const *id)
{
    db_job_call(job, STMT_WF_GET, id, NULL, NULL);
    db_job_call(job, STMT_WF_NODES, id, NULL, NULL);
}

static bool workflow_reply_ended(const db_reply *reply)
{
    return workflow_ended(db_str(reply->results[0], 0, 2));
}

static void reply_workflow(httpd_req *req, const db_reply *reply)
{
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_workflow(e, reply->results[0], 0);
    emit_nodes(e, reply->results[1]);
    api_reply_send(&out, req, 200);
}

/* A workflow's end is announced as done:<its id> (sql/020). */
void api_workflow_get(httpd_req *req, server *srv)
{
    static const held_get_ops ops = { "workflow", WF_MAX_WAIT_MS, read_workflow, workflow_reply_ended,
                                      reply_workflow };
    api_held_get(req, srv, &ops);
}

/* ---- list ---- */

static void emit_workflow_row(emit *e, const PGresult *r, int row)
{
    emit_object(e);
    emit_workflow(e, r, row);
    emit_end(e);
}

static int check_status(httpd_req *req, const char *const *filters)
{
    static const char *const statuses[] = { "PENDING", "RUNNING", "PAUSED", "COMPLETED", "FAILED", "CANCELLED",
                                            "EXPIRED" };
    const char *status = filters[0];
    bool known = !status;
    for (size_t i = 0; !known && i < sizeof statuses / sizeof statuses[0]; i++) known = strcmp(status, statuses[i]) == 0;
    if (known) return 0;
    httpd_error_field(req, 400, "field", "status", "status must be a workflow status");
    return -1;
}

void api_workflow_list(httpd_req *req, server *srv)
{
    static const api_page page = { "workflows", STMT_WF_LIST, 0, emit_workflow_row, check_status, false, STMT_COUNT };
    const char *filters[] = { httpd_query(req, "status"), httpd_query(req, "name") };
    api_list_page(req, srv, &page, filters, 2);
}

/* ---- pause, resume, cancel ---- */

static void controlled(void *arg, const db_reply *reply)
{
    wf_call *c = arg;
    const PGresult *r = reply->error ? NULL : reply->results[0];
    if (reply->error) api_db_error(c->req, reply);
    else if (db_null(r, 0, 0)) httpd_error(c->req, 404, "no workflow %s", c->id);
    else reply_status(c->req, 200, c->id, r);
    free(c);
}

static void control(httpd_req *req, server *srv, const char *action)
{
    wf_call *c = xcalloc(1, sizeof *c);
    if (api_read_uuid(req, req->params[0], c->id, "id") < 0) { free(c); return; }
    c->req = req;
    const char *values[2] = { c->id, action };
    api_submit_stmt(req, srv, STMT_WF_CONTROL, values, controlled, c);
}

void api_workflow_pause(httpd_req *req, server *srv) { control(req, srv, "pause"); }
void api_workflow_resume(httpd_req *req, server *srv) { control(req, srv, "resume"); }
void api_workflow_cancel(httpd_req *req, server *srv) { control(req, srv, "cancel"); }

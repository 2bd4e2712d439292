/* task_sweep: POST /api/v1/system/task-retention/sweep, a round of the
 * row-delete sweep now (tasks/sweep.h), answered with what it did. The
 * timer runs the same rounds every retention_sweep_interval_s. */
#include "api/api.h"

static void swept(void *arg, const sweep_result *r)
{
    httpd_req *req = arg;
    if (r->failed) { httpd_error(req, 500, "the task sweep failed: the server's log says why"); return; }
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "workflowsDeleted"); emit_int(e, r->workflows_deleted);
    emit_key(e, "workerStatesDeleted"); emit_int(e, r->worker_states_deleted);
    emit_key(e, "workflowsExpired"); emit_int(e, r->workflows_expired);
    emit_key(e, "uniqueKeysDeleted"); emit_int(e, r->unique_keys_deleted);
    emit_key(e, "yielded"); emit_bool(e, r->yielded);   /* another server was sweeping */
    api_reply_send(&out, req, 200);
}

void api_task_sweep(httpd_req *req, server *srv)
{
    if (task_sweeper_run(srv->sweeper, swept, req) < 0)
        httpd_error(req, 409, "a task sweep is already running on this server");
}

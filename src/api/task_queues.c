/* task_queues: GET /api/v1/task-queues — the task queues the answering
 * server's silt.conf declares, each with its priority and concurrency cap,
 * and how loaded it is now: tasks claimed or running (what the cap counts)
 * and whether a task is due. A queue at its cap with a task due is held
 * back by the cap (heldBack), which the dashboard's workers page says:
 * idle workers and waiting tasks are then not a fault of the workers. */
#include "api/api.h"
#include "base/emit.h"
#include "db/array.h"
#include "db/result.h"
#include "tasks/hub.h"

static void emit_queue(emit *e, const conf_queue *q, const PGresult *r, int row)
{
    int64_t held = db_int(r, row, 1);
    bool waiting = db_bool(r, row, 2);
    bool at_cap = q->max_concurrency > 0 && held >= q->max_concurrency;
    emit_object(e);
    emit_key(e, "queue"); emit_str(e, q->name);
    emit_key(e, "priority"); emit_int(e, q->priority);
    emit_key(e, "maxConcurrency"); emit_int(e, q->max_concurrency);
    emit_key(e, "claimedOrRunning"); emit_int(e, held);
    emit_key(e, "due"); emit_bool(e, waiting);
    emit_key(e, "atCap"); emit_bool(e, at_cap);
    emit_key(e, "heldBack"); emit_bool(e, at_cap && waiting);
    emit_end(e);
}

static void loaded(void *arg, const db_reply *reply)
{
    httpd_req *req;
    server *srv;
    if (api_call_end(arg, reply, &req, &srv) < 0) return;
    const PGresult *r = reply->results[0];
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "queues");
    emit_array(e);
    for (int row = 0; row < PQntuples(r); row++) {
        bool known;
        const conf_queue *q = task_hub_queue(srv->tasks, db_str(r, row, 0), &known);
        if (q) emit_queue(e, q, r, row);
    }
    emit_end(e);
    api_reply_send(&out, req, 200);
}

void api_task_queue_list(httpd_req *req, server *srv)
{
    db_array names;
    db_array_init(&names);
    for (size_t i = 0; i < srv->conf.nqueues; i++) db_array_text(&names, srv->conf.queues[i].name);
    const char *values[1] = { db_array_literal(&names) };
    api_submit_stmt(req, srv, STMT_TASK_QUEUES, values, loaded, api_call_new(req, srv));
    db_array_fini(&names);
}

/* task_queues: pausing and resuming a task queue (GET /api/v1/task-queues,
 * POST /api/v1/task-queues/:queue/pause and /resume). A paused queue
 * accepts sends and hands nothing out; what is claimed or running goes on.
 * The state is a row of tasks.paused_queues (sql/functions/tasks_pause.sql),
 * so every server sees it and it outlives restarts; the server that changed
 * it tells the others (task_hub_announce_paused), and a resume wakes the
 * queue's parked claimers on every server. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "db/result.h"

enum { P_QUEUE, P_PAUSED, P_AT, P_CHANGED };

static void paused(emit *e, server *srv, const PGresult *r, bool pause)
{
    /* announced even when unchanged: a server that missed it hears it now */
    task_hub_announce_paused(srv->tasks, db_str(r, 0, P_QUEUE), pause);
    emit_key(e, "queue"); api_emit_text_col(e, r, 0, P_QUEUE);
    emit_key(e, "paused"); emit_bool(e, db_bool(r, 0, P_PAUSED));
    emit_key(e, "pausedAt"); api_emit_time_col(e, r, 0, P_AT);
    emit_key(e, "changed"); emit_bool(e, db_bool(r, 0, P_CHANGED));
}

/* A queue named in the path: within the name limit and, when silt.conf
 * declares queues, one of them (sends to any other are refused too). */
static int read_queue(httpd_req *req, server *srv, const char *queue)
{
    if (api_check_name(req, "", "queue", queue) < 0) return -1;
    bool known;
    task_hub_queue(srv->tasks, queue, &known);
    if (known) return 0;
    httpd_error(req, 404, "task queue \"%s\" is not declared in the configuration file", queue);
    return -1;
}

static void pause_or_resume(httpd_req *req, server *srv, bool pause)
{
    if (read_queue(req, srv, req->params[0]) < 0) return;
    const char *values[2] = { req->params[0], pause ? "true" : "false" };
    api_object_call(req, srv, STMT_TASK_PAUSE, values, paused, pause);
}

void api_task_queue_pause(httpd_req *req, server *srv) { pause_or_resume(req, srv, true); }
void api_task_queue_resume(httpd_req *req, server *srv) { pause_or_resume(req, srv, false); }

static void emit_paused(emit *e, const PGresult *r, int row)
{
    emit_object(e);
    emit_key(e, "queue"); api_emit_text_col(e, r, row, 0);
    emit_key(e, "pausedAt"); api_emit_time_col(e, r, row, 1);
    emit_end(e);
}

void api_task_queue_list(httpd_req *req, server *srv)
{
    api_rows_call(req, srv, STMT_TASK_PAUSED, NULL, "paused", emit_paused);
}

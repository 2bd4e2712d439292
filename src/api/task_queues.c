/* task_queues: the task queues and their state (GET /api/v1/task-queues),
 * pausing and resuming one (POST /api/v1/task-queues/:queue/pause and
 * /resume).
 *
 * The list gives each queue the answering server's silt.conf declares, with
 * its priority and concurrency cap and how loaded it is now: tasks claimed
 * or running (what the cap counts) and whether a task is due. A queue at
 * its cap with a task due is held back by the cap (heldBack), which the
 * dashboard's workers page says: idle workers and waiting tasks are then
 * not a fault of the workers; so is a queue whose rate window is full now
 * with a task due (heldBackByRateLimit). "paused" lists every paused queue.
 *
 * A paused queue accepts sends and hands nothing out; what is claimed or
 * running goes on. The state is a row of tasks.paused_queues
 * (sql/functions/tasks_pause.sql), so every server sees it and it outlives
 * restarts; the server that changed it tells the others
 * (task_hub_announce_paused), and a resume wakes the queue's parked
 * claimers on every server. */
#include <stdlib.h>
#include "api/api.h"
#include "api/task_input.h"
#include "base/emit.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"
#include "tasks/hub.h"

enum { L_QUEUE, L_HELD, L_WAITING, L_PAUSED_AT, L_RATE_FULL };

/* {"limit", "periodMs"}, or null for none. */
static void emit_rate(emit *e, rate_limit rate)
{
    if (rate.limit == 0) { emit_null(e); return; }
    emit_object(e);
    emit_key(e, "limit"); emit_int(e, rate.limit);
    emit_key(e, "periodMs"); emit_int(e, rate.period_ms);
    emit_end(e);
}

static void emit_queue(emit *e, const conf_queue *q, const PGresult *r, int row)
{
    int64_t held = db_int(r, row, L_HELD);
    bool waiting = db_bool(r, row, L_WAITING);
    bool at_cap = q->max_concurrency > 0 && held >= q->max_concurrency;
    emit_object(e);
    emit_key(e, "queue"); emit_str(e, q->name);
    emit_key(e, "priority"); emit_int(e, q->priority);
    emit_key(e, "maxConcurrency"); emit_int(e, q->max_concurrency);
    emit_key(e, "claimedOrRunning"); emit_int(e, held);
    emit_key(e, "due"); emit_bool(e, waiting);
    emit_key(e, "atCap"); emit_bool(e, at_cap);
    emit_key(e, "heldBack"); emit_bool(e, at_cap && waiting);
    bool at_rate = !db_null(r, row, L_RATE_FULL) && db_bool(r, row, L_RATE_FULL);
    emit_key(e, "rateLimit"); emit_rate(e, q->rate);
    emit_key(e, "rateLimitPerKey"); emit_rate(e, q->rate_per_key);
    emit_key(e, "atRateLimit"); emit_bool(e, at_rate);
    emit_key(e, "heldBackByRateLimit"); emit_bool(e, at_rate && waiting);
    emit_key(e, "paused"); emit_bool(e, !db_null(r, row, L_PAUSED_AT));
    emit_end(e);
}

static void emit_paused(emit *e, const PGresult *r)
{
    emit_key(e, "paused");
    emit_array(e);
    for (int row = 0; row < PQntuples(r); row++) {
        if (db_null(r, row, L_PAUSED_AT)) continue;
        emit_object(e);
        emit_key(e, "queue"); api_emit_text_col(e, r, row, L_QUEUE);
        emit_key(e, "pausedAt"); api_emit_time_col(e, r, row, L_PAUSED_AT);
        emit_end(e);
    }
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
        const conf_queue *q = task_hub_queue(srv->tasks, db_str(r, row, L_QUEUE), &known);
        if (q) emit_queue(e, q, r, row);
    }
    emit_end(e);
    emit_paused(e, r);
    api_reply_send(&out, req, 200);
}

void api_task_queue_list(httpd_req *req, server *srv)
{
    db_array names;
    db_array_init(&names);
    const char **list = xcalloc(srv->conf.nqueues + 1, sizeof *list);
    for (size_t i = 0; i < srv->conf.nqueues; i++) {
        db_array_text(&names, srv->conf.queues[i].name);
        list[i] = srv->conf.queues[i].name;
    }
    char *rates = api_task_rates(srv, list, srv->conf.nqueues, true);
    const char *values[2] = { db_array_literal(&names), rates };
    api_submit_stmt(req, srv, STMT_TASK_QUEUES, values, loaded, api_call_new(req, srv));
    db_array_fini(&names);
    free(rates);
    free(list);
}

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

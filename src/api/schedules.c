/* schedules: the schedules and where each stands (GET /api/v1/schedules,
 * /api/v1/schedules/:name), and those made at run time: create (POST
 * /api/v1/schedules), change (PATCH /api/v1/schedules/:name), pause,
 * resume (POST .../pause, .../resume) and delete (DELETE .../:name).
 *
 * Every schedule is a row of tasks.schedules with its origin: `config`
 * (silt.conf's, written by each server at start; the API refuses to
 * change, pause or delete it: 409) or `api`. The definition is checked
 * whole before anything is written (schedule_input.c); the write and the
 * schedule as it then stands are one round trip. The other servers need no
 * word: their schedulers read the definitions every tick (tasks/schedule.h). */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "api/schedule_input.h"
#include "base/clock.h"
#include "base/cron.h"
#include "base/names.h"
#include "base/xalloc.h"
#include "db/result.h"

enum { L_NAME, L_ORIGIN, L_CRON, L_TIMEZONE, L_TASK, L_QUEUE, L_ARGS, L_CATCH_UP, L_PRIORITY, L_CLASS, L_PAUSED_AT,
       L_VERSION, L_CREATED, L_UPDATED, L_LAST_SLOT, L_LAST_FIRED, L_LAST_TASK };

/* The first slot after the last one taken (after now for a schedule never
 * run); none while paused. */
static void emit_next_fire(emit *e, const PGresult *r, int row)
{
    cron_expr expr;
    int64_t from = db_null(r, row, L_LAST_SLOT) ? clock_wall_us() / 1000000 : db_time_us(r, row, L_LAST_SLOT) / 1000000;
    int64_t next = -1;
    if (db_null(r, row, L_PAUSED_AT) && cron_parse(db_str(r, row, L_CRON), &expr, NULL, 0) == 0)
        next = cron_next(&expr, db_str(r, row, L_TIMEZONE), from);
    if (next >= 0) emit_time(e, next * 1000000); else emit_null(e);
}

static void schedule_members(emit *e, const PGresult *r, int row)
{
    emit_key(e, "name"); api_emit_text_col(e, r, row, L_NAME);
    emit_key(e, "origin"); api_emit_text_col(e, r, row, L_ORIGIN);
    emit_key(e, "paused"); emit_bool(e, !db_null(r, row, L_PAUSED_AT));
    emit_key(e, "pausedAt"); api_emit_time_col(e, r, row, L_PAUSED_AT);
    emit_key(e, "cron"); api_emit_text_col(e, r, row, L_CRON);
    emit_key(e, "timezone"); api_emit_text_col(e, r, row, L_TIMEZONE);
    emit_key(e, "task"); api_emit_text_col(e, r, row, L_TASK);
    emit_key(e, "queue"); api_emit_text_col(e, r, row, L_QUEUE);
    emit_key(e, "args"); api_emit_stored_json_col(e, r, row, L_ARGS);
    emit_key(e, "catchUp"); api_emit_int_col(e, r, row, L_CATCH_UP);
    emit_key(e, "priority"); api_emit_int_col(e, r, row, L_PRIORITY);
    emit_key(e, "retentionClassKey"); api_emit_text_col(e, r, row, L_CLASS);
    emit_key(e, "createdAt"); api_emit_time_col(e, r, row, L_CREATED);
    emit_key(e, "updatedAt"); api_emit_time_col(e, r, row, L_UPDATED);
    emit_key(e, "lastSlot"); api_emit_time_col(e, r, row, L_LAST_SLOT);
    emit_key(e, "lastFiredAt"); api_emit_time_col(e, r, row, L_LAST_FIRED);
    emit_key(e, "lastTaskId"); api_emit_uuid_col(e, r, row, L_LAST_TASK);
    emit_key(e, "nextFire"); emit_next_fire(e, r, row);
}

static void emit_schedule(emit *e, const PGresult *r, int row)
{
    emit_object(e);
    schedule_members(e, r, row);
    emit_end(e);
}

void api_schedule_list(httpd_req *req, server *srv)
{
    const char *values[1] = { NULL };
    api_rows_call(req, srv, STMT_SCHEDULE_LIST, values, "schedules", emit_schedule);
}

/* ---- one schedule: read, or changed and then read ---- */

static void refuse_config(httpd_req *req, const char *name)
{
    httpd_error_field(req, 409, "field", "name",
                      "schedule \"%s\" is declared in silt.conf: the API cannot change, pause or delete it "
                      "(edit the file and restart the servers)", name);
}

/* The reply of a job whose last call is STMT_SCHEDULE_LIST of the name:
 * the outcome of the call before it, if any, then the schedule. */
static void answered(void *arg, const db_reply *reply)
{
    api_named_call *c = arg;
    const char *outcome = reply->error || reply->ncalls < 2 ? "" : db_str(reply->results[0], 0, 0);
    const PGresult *r = reply->error ? NULL : reply->results[reply->ncalls - 1];
    if (reply->error) api_db_error(c->req, reply);
    else if (strcmp(outcome, "exists") == 0)
        httpd_error_field(c->req, 409, "field", "name", "schedule \"%s\" already exists", c->name);
    else if (strcmp(outcome, "config") == 0) refuse_config(c->req, c->name);
    else if (strcmp(outcome, "not_found") == 0 || PQntuples(r) == 0)
        httpd_error(c->req, 404, "no schedule \"%s\"", c->name);
    else {
        api_reply out;
        schedule_members(api_reply_object(&out), r, 0);
        api_reply_send(&out, c->req, strcmp(outcome, "created") == 0 ? 201 : 200);
    }
    api_named_call_free(c);
}

/* Runs stmt (none: STMT_COUNT) with values, then reads the schedule
 * *name back; the call takes *name. */
static void run_then_read(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, char **name)
{
    api_named_call *c = api_named_call_new(req, srv, name);
    const char *read[1] = { c->name };
    db_job *job = db_job_new(answered, c);
    if (stmt != STMT_COUNT) db_job_call(job, stmt, values, NULL, NULL);
    db_job_call(job, STMT_SCHEDULE_LIST, read, NULL, NULL);
    api_submit(req, srv, job);
}

void api_schedule_get(httpd_req *req, server *srv)
{
    char *name = xstrdup(req->params[0]);
    run_then_read(req, srv, STMT_COUNT, NULL, &name);
}

/* Reads the body's definition as read (create or change) reads it, then
 * write writes it: the body and the definition live for the handler alone. */
static void with_definition(httpd_req *req, server *srv,
                            int (*read)(httpd_req *, server *, const json_doc *, schedule_input *),
                            void (*write)(httpd_req *, server *, schedule_input *))
{
    json_doc d;
    json_doc_init(&d);
    schedule_input in;
    schedule_input_init(&in);
    if (api_read_object(req, srv, &d) == 0 && read(req, srv, &d, &in) == 0) write(req, srv, &in);
    schedule_input_fini(&in);
    json_doc_fini(&d);
}

static void create(httpd_req *req, server *srv, schedule_input *in)
{
    /* refused before its row is written */
    if (conffile_schedule(&srv->conf, in->name)) { refuse_config(req, in->name); return; }
    const char *v[10] = { in->name, in->cron, in->timezone, in->task, in->queue, in->args, in->catch_up,
                          *in->priority ? in->priority : NULL, in->class_key, in->paused ? "true" : "false" };
    run_then_read(req, srv, STMT_SCHEDULE_CREATE, v, &in->name);
}

static void change(httpd_req *req, server *srv, schedule_input *in)
{
    in->name = xstrdup(req->params[0]);
    const char *v[10] = { in->name, db_array_literal(&in->set), in->cron, in->timezone, in->task, in->queue, in->args,
                          in->catch_up, *in->priority ? in->priority : NULL, in->class_key };
    run_then_read(req, srv, STMT_SCHEDULE_CHANGE, v, &in->name);
}

void api_schedule_create(httpd_req *req, server *srv) { with_definition(req, srv, schedule_input_create, create); }
void api_schedule_change(httpd_req *req, server *srv) { with_definition(req, srv, schedule_input_change, change); }

static void pause_or_resume(httpd_req *req, server *srv, bool pause)
{
    char *name = xstrdup(req->params[0]);
    const char *v[2] = { name, pause ? "true" : "false" };
    run_then_read(req, srv, STMT_SCHEDULE_PAUSE, v, &name);
}

void api_schedule_pause(httpd_req *req, server *srv) { pause_or_resume(req, srv, true); }
void api_schedule_resume(httpd_req *req, server *srv) { pause_or_resume(req, srv, false); }

static void deleted(void *arg, const db_reply *reply)
{
    api_named_call *c = arg;
    const char *outcome = reply->error ? "" : db_str(reply->results[0], 0, 0);
    if (reply->error) api_db_error(c->req, reply);
    else if (strcmp(outcome, "config") == 0) refuse_config(c->req, c->name);
    else if (strcmp(outcome, "not_found") == 0) httpd_error(c->req, 404, "no schedule \"%s\"", c->name);
    else {
        api_reply out;
        emit *e = api_reply_object(&out);
        emit_key(e, "name"); emit_str(e, c->name);
        emit_key(e, "deleted"); emit_bool(e, true);
        api_reply_send(&out, c->req, 200);
    }
    api_named_call_free(c);
}

void api_schedule_delete(httpd_req *req, server *srv)
{
    char *name = xstrdup(req->params[0]);
    api_named_call *c = api_named_call_new(req, srv, &name);
    const char *v[1] = { c->name };
    api_submit_stmt(req, srv, STMT_SCHEDULE_DELETE, v, deleted, c);
}

/* schedules: GET /api/v1/schedules — the schedules of silt.conf with where
 * they stand: the last slot taken (fired or passed over), when the last
 * fire was and its task, and the next fire. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "base/cron.h"

static int state_row(const PGresult *r, const char *name)
{
    for (int row = 0; row < PQntuples(r); row++)
        if (strcmp(db_str(r, row, 0), name) == 0) return row;
    return -1;
}

static void emit_schedule(emit *e, const conf_schedule *c, const PGresult *r)
{
    int row = state_row(r, c->name);
    cron_expr expr;
    char err[128];
    int64_t from = row >= 0 ? db_time_us(r, row, 1) / 1000000 : clock_wall_us() / 1000000;
    int64_t next = cron_parse(c->cron, &expr, err, sizeof err) == 0 ? cron_next(&expr, c->timezone, from) : -1;
    emit_object(e);
    emit_key(e, "name"); emit_str(e, c->name);
    emit_key(e, "cron"); emit_str(e, c->cron);
    emit_key(e, "timezone"); emit_str(e, c->timezone);
    emit_key(e, "task"); emit_str(e, c->task);
    emit_key(e, "queue"); emit_str(e, c->queue);
    emit_key(e, "catchUp"); emit_int(e, c->catch_up);
    emit_key(e, "lastSlot");
    if (row >= 0) api_emit_time_col(e, r, row, 1); else emit_null(e);
    emit_key(e, "lastFiredAt");
    if (row >= 0) api_emit_time_col(e, r, row, 2); else emit_null(e);
    emit_key(e, "lastTaskId");
    if (row >= 0) api_emit_uuid_col(e, r, row, 3); else emit_null(e);
    emit_key(e, "nextFire");
    if (next >= 0) emit_time(e, next * 1000000); else emit_null(e);
    emit_end(e);
}

static void listed(void *arg, const db_reply *reply)
{
    httpd_req *req;
    server *srv;
    if (api_call_end(arg, reply, &req, &srv) < 0) return;
    api_reply out;
    emit *e = api_reply_list(&out, "schedules");
    for (size_t i = 0; i < srv->conf.nschedules; i++) emit_schedule(e, &srv->conf.schedules[i], reply->results[0]);
    api_reply_send(&out, req, 200);
}

void api_schedule_list(httpd_req *req, server *srv)
{
    api_call *c = api_call_new(req, srv);
    api_submit_stmt(req, srv, STMT_SCHEDULE_STATE, NULL, listed, c);
}

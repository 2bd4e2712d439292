/* task_retention: what the partition pass keeps and drops, for operators
 * (tasks/partition_pass.h, sql/025).
 *
 *   POST /api/v1/system/task-retention/run   a partition pass now, answered with its report
 *   GET  /api/v1/task-retention/classes      every class: duration, leaves, bytes, records
 *   GET  /api/v1/task-retention/leaves       every leaf (?class=K: one class's): day, size, drop date, state
 *   GET  /api/v1/task-retention/coverage     the health surface: 200 healthy, 503 red
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/clock.h"
#include "base/duration.h"
#include "base/xalloc.h"
#include "db/result.h"

/* ---- run ----------------------------------------------------------------- */

static void ran(void *arg, const char *report)
{
    httpd_req *req = arg;
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    if (emit_json(&e, report, strlen(report)) < 0) {
        buf_fini(&out);
        httpd_error(req, 500, "the pass report is not JSON");
        return;
    }
    httpd_reply_buf(req, 200, &out);
}

void api_task_retention_run(httpd_req *req, server *srv)
{
    if (partition_pass_run(srv->partitions, ran, req) < 0)
        httpd_error(req, 409, "a partition pass is already running on this server");
}

/* ---- reads --------------------------------------------------------------- */

/* A leaf bound; the forever leaf's are infinite and read null. */
static void emit_bound(emit *e, const PGresult *r, int row, int col)
{
    int64_t us = db_null(r, row, col) ? INT64_MAX : db_time_us(r, row, col);
    if (us == INT64_MAX || us == INT64_MIN) emit_null(e);
    else emit_time(e, us);
}

static void emit_duration_col(emit *e, const PGresult *r, int row, int col)
{
    if (db_null(r, row, col)) { emit_null(e); return; }   /* forever */
    char text[DURATION_TEXT_BYTES];
    duration_format(db_int(r, row, col), text);
    emit_str(e, text);
}

static void emit_class(emit *e, const PGresult *r, int i)
{
    emit_object(e);
    emit_key(e, "classKey"); api_emit_text_col(e, r, i, 0);
    emit_key(e, "duration"); emit_duration_col(e, r, i, 1);
    emit_key(e, "origin"); api_emit_text_col(e, r, i, 2);
    emit_key(e, "registeredAt"); api_emit_time_col(e, r, i, 3);
    emit_key(e, "leaves"); api_emit_int_col(e, r, i, 4);
    emit_key(e, "bytes"); api_emit_int_col(e, r, i, 5);
    emit_key(e, "records"); api_emit_int_col(e, r, i, 6);   /* as the statistics count them */
    emit_key(e, "oldestLeaf"); emit_bound(e, r, i, 7);
    emit_key(e, "nextDropAt"); emit_bound(e, r, i, 8);
    emit_end(e);
}

void api_task_retention_classes(httpd_req *req, server *srv)
{
    api_rows_call(req, srv, STMT_TR_CLASSES, NULL, "classes", emit_class);
}

static void emit_leaf(emit *e, const PGresult *r, int i)
{
    emit_object(e);
    emit_key(e, "leaf"); api_emit_text_col(e, r, i, 0);
    emit_key(e, "classKey"); api_emit_text_col(e, r, i, 1);
    emit_key(e, "day"); api_emit_text_col(e, r, i, 2);
    emit_key(e, "from"); emit_bound(e, r, i, 3);
    emit_key(e, "to"); emit_bound(e, r, i, 4);
    emit_key(e, "bytes"); api_emit_int_col(e, r, i, 5);
    emit_key(e, "dropsAt"); emit_bound(e, r, i, 6);
    emit_key(e, "state"); api_emit_text_col(e, r, i, 7);
    emit_end(e);
}

void api_task_retention_leaves(httpd_req *req, server *srv)
{
    const char *values[1] = { httpd_query(req, "class") };
    api_rows_call(req, srv, STMT_TR_LEAVES, values, "leaves", emit_leaf);
}

/* Why the surface is red, each problem in words; none: healthy. The last
 * pass must have been ok and recent (a pass that hangs or cannot reach the
 * database is never recorded, so an old ok must not stand for coverage),
 * no cataloged leaf may have lost its relation, and leaves must lie ahead
 * of writes: a day of history, an hour of heartbeats. */
static void coverage_problems(const PGresult *r, const conf_retention *conf, buf *problems)
{
    emit e;
    emit_init(&e, problems);
    emit_array(&e);
    int64_t now = clock_wall_us();
    char text[200];
    if (db_null(r, 0, 0)) {
        emit_str(&e, "no partition pass has run yet");
    } else {
        if (strcmp(db_str(r, 0, 4), "ok") != 0) {
            snprintf(text, sizeof text, "the last pass was %s", db_str(r, 0, 4));
            emit_str(&e, text);
        }
        int64_t age_s = (now - db_time_us(r, 0, 3)) / 1000000;
        if (age_s > 2 * conf->partition_maintenance_interval_s + 60) {
            snprintf(text, sizeof text, "no partition pass has finished for %lld s (every %lld s expected)",
                     (long long)age_s, (long long)conf->partition_maintenance_interval_s);
            emit_str(&e, text);
        }
    }
    size_t n;
    if (strcmp(db_json(r, 0, 6, &n), "[]") != 0) emit_str(&e, "cataloged leaves have no relation");
    if (db_null(r, 0, 7) || db_time_us(r, 0, 7) < now + 86400 * INT64_C(1000000))
        emit_str(&e, "history leaves do not reach a day ahead");
    if (db_null(r, 0, 8) || db_time_us(r, 0, 8) < now + 3600 * INT64_C(1000000))
        emit_str(&e, "heartbeat leaves do not reach an hour ahead");
    emit_end(&e);
}

static void coverage_read(void *arg, const db_reply *reply)
{
    httpd_req *req;
    server *srv;
    if (api_call_end(arg, reply, &req, &srv) < 0) return;
    const PGresult *r = reply->results[0];
    buf problems;
    buf_init(&problems);
    coverage_problems(r, &srv->conf.retention, &problems);
    bool healthy = strcmp(problems.data, "[]") == 0;
    size_t absent_len;
    const char *absent = db_json(r, 0, 6, &absent_len);
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "healthy"); emit_bool(e, healthy);
    emit_key(e, "problems"); emit_raw(e, problems.data, problems.len);
    emit_key(e, "outcome"); api_emit_text_col(e, r, 0, 4);
    emit_key(e, "absent_leaves");   /* the document's name, kept as it writes it */
    if (emit_json(e, absent, absent_len) < 0) {   /* jsonb's text, in the emitter's form */
        buf_fini(&problems);
        buf_fini(&out.body);
        httpd_error(req, 500, "absent leaves are not JSON");
        return;
    }
    emit_key(e, "historyCoveredThrough"); emit_bound(e, r, 0, 7);
    emit_key(e, "heartbeatsCoveredThrough"); emit_bound(e, r, 0, 8);
    emit_key(e, "lastPass");
    if (!db_null(r, 0, 0)) {
        size_t n;
        const char *report = db_json(r, 0, 5, &n);
        emit_raw(e, report, n);   /* written by the pass through the emitter */
    } else {
        emit_null(e);
    }
    buf_fini(&problems);
    api_reply_send(&out, req, healthy ? 200 : 503);
}

void api_task_retention_coverage(httpd_req *req, server *srv)
{
    api_call *c = api_call_new(req, srv);
    api_submit_stmt(req, srv, STMT_TR_COVERAGE, NULL, coverage_read, c);
}

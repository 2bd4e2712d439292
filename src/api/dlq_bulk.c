/* dlq_bulk: POST /api/v1/dlq/replay and POST /api/v1/dlq/delete — the dead
 * letters a filter matches, replayed or deleted a bounded number per call
 * (limit, oldest failure first, "more" while some are left), or with
 * dryRun counted and sampled. One dead letter's replay is the single
 * route's (dead_letters.c): the same item, the same push plan, the same
 * take in the same transaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "api/dead_letters.h"
#include "api/task_input.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"
#include "streams/push_plan.h"

#define BULK_LIMIT_DEFAULT 100
#define BULK_LIMIT_MAX     1000
#define BULK_SAMPLE        10     /* dead letters a dry run shows */
#define BULK_ATTEMPTS      3      /* a replay's job, sent again after a duplicate or encryption refusal */

static const char *const bulk_fields[] = {
    "queue", "partition", "consumerGroup", "error", "from", "to", "limit", "dryRun", NULL,
};

/* The filter, in queen.dlq_matching's order, then the limit. */
enum { F_QUEUE, F_PARTITION, F_GROUP, F_ERROR, F_FROM, F_TO, F_COUNT };

typedef struct bulk_call {
    httpd_req  *req;
    server     *srv;
    char       *filter[F_COUNT];
    int64_t     limit;
    char        limit_text[24], fetch_text[24];
    bool        dry_run, replay;
    push_item  *items;       /* replay: one per dead letter read */
    push_item **pending;     /* replay: those whose payload opened */
    size_t      nitems, npending, skipped;
    bool        more;
    db_array    ids;         /* replay: the dead letters taken */
    push_plan   plan;
    int         attempt;
} bulk_call;

static void call_free(bulk_call *c)
{
    for (int i = 0; i < F_COUNT; i++) free(c->filter[i]);
    for (size_t i = 0; i < c->nitems; i++) api_dlq_item_free(&c->items[i]);
    free(c->items);
    free(c->pending);
    db_array_fini(&c->ids);
    push_plan_fini(&c->plan);
    free(c);
}

static int read_name(httpd_req *req, const json_doc *d, const char *key, char **out)
{
    if (api_member_string(req, d, 0, "", key, out) < 0) return -1;
    return *out ? api_check_name(req, "", key, *out) : 0;
}

static int read_time(httpd_req *req, const json_doc *d, const char *key, char **out)
{
    if (api_member_string(req, d, 0, "", key, out) < 0) return -1;
    return api_check_time(req, key, *out);
}

static int read_filter(httpd_req *req, server *srv, json_doc *d, bulk_call *c)
{
    c->limit = BULK_LIMIT_DEFAULT;
    if (api_read_object(req, srv, d) < 0 ||
        api_only_known(req, d, 0, "", c->replay ? "a bulk replay" : "a bulk delete", bulk_fields) < 0 ||
        read_name(req, d, "queue", &c->filter[F_QUEUE]) < 0 || read_name(req, d, "partition", &c->filter[F_PARTITION]) < 0 ||
        read_name(req, d, "consumerGroup", &c->filter[F_GROUP]) < 0 ||
        api_member_string(req, d, 0, "", "error", &c->filter[F_ERROR]) < 0 ||
        read_time(req, d, "from", &c->filter[F_FROM]) < 0 || read_time(req, d, "to", &c->filter[F_TO]) < 0 ||
        api_member_int(req, d, 0, "", "limit", 1, BULK_LIMIT_MAX, &c->limit) < 0 ||
        api_member_bool(req, d, 0, "", "dryRun", &c->dry_run) < 0)
        return -1;
    if (c->filter[F_ERROR] && strlen(c->filter[F_ERROR]) > 1024) {
        httpd_error_field(req, 400, "field", "error", "error must be at most 1024 bytes");
        return -1;
    }
    snprintf(c->limit_text, sizeof c->limit_text, "%lld", (long long)c->limit);
    snprintf(c->fetch_text, sizeof c->fetch_text, "%lld", (long long)c->limit + 1);   /* one more: is there more? */
    return 0;
}

/* The statement's values: the filter, then text (a limit), if any. */
static void values_of(const bulk_call *c, const char *limit, const char *out[F_COUNT + 1])
{
    for (int i = 0; i < F_COUNT; i++) out[i] = c->filter[i];
    out[F_COUNT] = limit;
}

/* ---- dry run: how many match, and the first few ---- */

static void previewed(void *arg, const db_reply *reply)
{
    bulk_call *c = arg;
    if (reply->error) { api_db_error(c->req, reply); call_free(c); return; }
    int64_t matching = db_int(reply->results[0], 0, 0);
    const PGresult *sample = reply->results[1];
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "dryRun"); emit_bool(e, true);
    emit_key(e, "matching"); emit_int(e, matching);
    emit_key(e, "count"); emit_int(e, matching < c->limit ? matching : c->limit);
    emit_key(e, "more"); emit_bool(e, matching > c->limit);
    emit_key(e, "sample"); emit_array(e);
    for (int row = 0; row < PQntuples(sample); row++) api_dlq_row_json(e, sample, row);
    emit_end(e);
    api_reply_send(&out, c->req, 200);
    call_free(c);
}

static void preview(bulk_call *c)
{
    const char *values[F_COUNT + 1];
    char sample[8];
    snprintf(sample, sizeof sample, "%d", BULK_SAMPLE);
    values_of(c, sample, values);
    db_job *job = db_job_new(previewed, c);
    db_job_call(job, STMT_DLQ_MATCH_COUNT, values, NULL, NULL);
    db_job_call(job, STMT_DLQ_MATCH_PAGE, values, NULL, NULL);
    api_submit(c->req, c->srv, job);
}

/* ---- delete ---- */

static void deleted(emit *e, server *srv, const PGresult *r, bool flag)
{
    (void)srv;
    (void)flag;
    emit_key(e, "dryRun"); emit_bool(e, false);
    emit_key(e, "count"); emit_int(e, db_int(r, 0, 0));
    emit_key(e, "more"); emit_bool(e, db_bool(r, 0, 1));
}

/* ---- replay ---- */

static void replay_send(bulk_call *c);

static void replay_answer(bulk_call *c)
{
    size_t replayed = 0, duplicates = 0;
    for (size_t i = 0; i < c->npending; i++) {
        push_item *it = c->pending[i];
        if (it->status == PUSH_DUPLICATE) { duplicates++; continue; }
        replayed++;
        const char *partition[1] = { it->partition };
        server_log_appended(c->srv, it->queue, partition, 1);
    }
    c->srv->stats.pushed += replayed;
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "dryRun"); emit_bool(e, false);
    emit_key(e, "count"); emit_int(e, (int64_t)replayed);
    /* their dlq:<id> was already in the log: the dead letter went, nothing was pushed */
    emit_key(e, "duplicates"); emit_int(e, (int64_t)duplicates);
    /* payloads this server cannot open (QUEEN_ENCRYPTION_KEY): left in place */
    emit_key(e, "skipped"); emit_int(e, (int64_t)c->skipped);
    emit_key(e, "more"); emit_bool(e, c->more);
    api_reply_send(&out, c->req, 200);
}

static void replay_done(void *arg, const db_reply *reply)
{
    bulk_call *c = arg;
    if (!reply->error) {
        push_plan_resolve(&c->plan, reply);
        replay_answer(c);
    } else if (++c->attempt < BULK_ATTEMPTS &&
               (push_plan_take_duplicates(&c->plan, reply) || push_plan_take_encryption(&c->plan, reply))) {
        replay_send(c);
        return;
    } else if (strcmp(reply->sqlstate, "SLN01") == 0) {
        httpd_error(c->req, 409, "a matching dead letter was replayed or deleted by another call meanwhile: "
                                 "nothing was replayed, try again");
    } else {
        api_db_error(c->req, reply);
    }
    call_free(c);
}

/* The pushes of the items not yet known duplicates and the take of every
 * dead letter read, in one transaction: both or neither. */
static void replay_send(bulk_call *c)
{
    push_plan_build(&c->plan, c->pending, c->npending);
    db_job *job = db_job_new(replay_done, c);
    if (c->plan.nitems > 0) push_plan_calls(&c->plan, job, (int)c->srv->cfg.zstd_level);
    const char *ids[1] = { db_array_literal(&c->ids) };
    db_job_call(job, STMT_DLQ_TAKE_MANY, ids, NULL, NULL);
    api_submit(c->req, c->srv, job);
}

static void replay_fetched(void *arg, const db_reply *reply)
{
    bulk_call *c = arg;
    if (reply->error) { api_db_error(c->req, reply); call_free(c); return; }
    const PGresult *r = reply->results[0];
    int rows = PQntuples(r);
    c->more = rows > c->limit;
    c->nitems = (size_t)(c->more ? c->limit : rows);
    c->items = xcalloc(c->nitems ? c->nitems : 1, sizeof *c->items);
    c->pending = xcalloc(c->nitems ? c->nitems : 1, sizeof *c->pending);
    for (size_t i = 0; i < c->nitems; i++) {
        if (api_dlq_replay_item(r, (int)i, &c->items[i]) < 0) { c->skipped++; continue; }
        c->pending[c->npending++] = &c->items[i];
        char id[IDS_UUID_TEXT];
        ids_uuid_format(db_uuid(r, (int)i, 0), id);   /* DLQ_COLUMNS: the id first */
        db_array_text(&c->ids, id);
    }
    if (c->npending == 0) { replay_answer(c); call_free(c); return; }
    replay_send(c);
}

/* ---- the routes ---- */

static void bulk(httpd_req *req, server *srv, bool replay)
{
    bulk_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    c->srv = srv;
    c->replay = replay;
    db_array_init(&c->ids);
    push_plan_init(&c->plan);
    json_doc d;
    json_doc_init(&d);
    int rc = read_filter(req, srv, &d, c);
    json_doc_fini(&d);
    if (rc < 0) { call_free(c); return; }
    const char *values[F_COUNT + 1];
    if (c->dry_run) {
        preview(c);
    } else if (!replay) {
        values_of(c, c->limit_text, values);
        api_object_call(req, srv, STMT_DLQ_DELETE_MATCHING, values, deleted, false);
        call_free(c);
    } else {
        values_of(c, c->fetch_text, values);
        api_submit_stmt(req, srv, STMT_DLQ_MATCH_PAGE, values, replay_fetched, c);
    }
}

void api_dlq_replay_matching(httpd_req *req, server *srv) { bulk(req, srv, true); }

void api_dlq_delete_matching(httpd_req *req, server *srv) { bulk(req, srv, false); }

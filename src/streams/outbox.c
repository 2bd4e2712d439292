/* outbox: moving pushes made from SQL into the log (see outbox.h).
 *
 * One move at a time per server: read (a job of its own, no locks), then
 * take-and-append (one job: queen.push_outbox_take, then the plan's
 * push_flush). A duplicate or encryption refusal of the flush rolls the
 * take back too; the plan notes it and the same move is sent again, as
 * push fusion does. A move that filled its batch is followed at once by
 * another; a kick that came while a move was in flight starts one after
 * it, since its rows may have committed after the read. */
#include "streams/outbox.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/log.h"
#include "base/xalloc.h"
#include "db/array.h"
#include "db/result.h"
#include "streams/push_plan.h"

#define OUTBOX_TAKEN_SQLSTATE "SLO01"
#define OUTBOX_MAX_ATTEMPTS 64

typedef enum outbox_col { C_ID, C_QUEUE, C_PARTITION, C_TXN, C_CLIENT_TXN, C_TRACE, C_PAYLOAD } outbox_col;

struct outbox {
    db_pool           *pool;
    outbox_limits      limits;
    push_commit_fn     appended;
    void              *arg;
    struct event      *timer;
    bool               busy, again, stopped;
    uint64_t           moved;
};

/* One move: the rows read, as push items, and the plan writing them. */
typedef struct move {
    outbox     *o;
    push_item  *items;
    push_item **ptrs;
    size_t      n;
    char       *payloads;   /* every item's payload, which points into it */
    db_array    ids;        /* the rows' ids, for the take */
    bool        full;       /* the read filled its batch: more may wait */
    push_plan   plan;
    int         attempt;
} move;

static void read_rows(outbox *o);

static void move_free(move *m)
{
    push_plan_fini(&m->plan);
    push_items_free(m->items, m->n);
    free(m->ptrs);
    free(m->payloads);
    db_array_fini(&m->ids);
    free(m);
}

static void schedule(outbox *o)
{
    if (o->stopped) return;
    struct timeval tv = { (time_t)(o->limits.interval_ms / 1000), (suseconds_t)(o->limits.interval_ms % 1000) * 1000 };
    evtimer_add(o->timer, &tv);
}

/* The move (or the read) is over: again now if more may wait. */
static void finish(outbox *o, bool more)
{
    o->busy = false;
    bool now = more || o->again;
    o->again = false;
    if (now && !o->stopped) read_rows(o);
    else schedule(o);
}

/* ---- take and append ---- */

static void send_move(move *m);

static void moved(void *arg, const db_reply *reply)
{
    move *m = arg;
    outbox *o = m->o;
    if (!reply->error) {
        push_plan_resolve(&m->plan, reply);
        push_plan_announce(&m->plan, o->appended, o->arg);
        o->moved += m->n;
        log_debug("outbox: %zu messages moved into the log", m->n);
        bool more = m->full;
        move_free(m);
        finish(o, more);
        return;
    }
    if (strcmp(reply->sqlstate, OUTBOX_TAKEN_SQLSTATE) == 0) {   /* another server moved some: look again */
        move_free(m);
        finish(o, true);
        return;
    }
    if (++m->attempt < OUTBOX_MAX_ATTEMPTS &&
        (push_plan_take_duplicates(&m->plan, reply) || push_plan_take_encryption(&m->plan, reply) ||
         db_reply_retryable(reply))) {
        send_move(m);
        return;
    }
    log_warn("outbox: %zu messages pushed from SQL not moved yet: %s", m->n, reply->error);
    move_free(m);
    finish(o, false);   /* the rows stay: the next look tries again */
}

/* The take first: its lock orders the movers before any partition lock. */
static void send_move(move *m)
{
    db_job *job = db_job_new(moved, m);
    const char *values[1] = { db_array_literal(&m->ids) };
    db_job_call(job, STMT_OUTBOX_TAKE, values, NULL, NULL);
    push_plan_build(&m->plan, m->ptrs, m->n);
    if (m->plan.nitems > 0) push_plan_calls(&m->plan, job, m->o->limits.zstd_level);
    else m->plan.call = -1;   /* every row a duplicate: the take alone */
    db_submit(m->o->pool, job);
}

/* ---- read ---- */

static void take_row(move *m, const PGresult *r, int row, char **at)
{
    push_item *it = &m->items[row];
    size_t len;
    const char *payload = db_json(r, row, C_PAYLOAD, &len);
    memcpy(*at, payload, len);
    it->payload = *at;
    it->payload_len = len;
    *at += len;
    it->queue = xstrdup(db_str(r, row, C_QUEUE));
    it->partition = xstrdup(db_str(r, row, C_PARTITION));
    it->txn = xstrdup(db_str(r, row, C_TXN));
    it->txn_given = db_bool(r, row, C_CLIENT_TXN);
    it->has_trace = !db_null(r, row, C_TRACE);
    if (it->has_trace) memcpy(it->trace_id, db_uuid(r, row, C_TRACE), 16);
    push_item_prepare(it);
    m->ptrs[row] = it;
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)db_int(r, row, C_ID));
    db_array_text(&m->ids, id);
}

static move *move_of(outbox *o, const PGresult *r)
{
    int rows = PQntuples(r);
    move *m = xcalloc(1, sizeof *m);
    m->o = o;
    m->n = (size_t)rows;
    m->items = xcalloc(m->n, sizeof *m->items);
    m->ptrs = xcalloc(m->n, sizeof *m->ptrs);
    size_t bytes = 1, len;
    for (int row = 0; row < rows; row++) bytes += (db_json(r, row, C_PAYLOAD, &len), len);
    m->payloads = xmalloc(bytes);
    char *at = m->payloads;
    db_array_init(&m->ids);
    push_plan_init(&m->plan);
    for (int row = 0; row < rows; row++) take_row(m, r, row, &at);
    m->full = rows >= o->limits.batch_messages || (int64_t)bytes > o->limits.batch_bytes;
    return m;
}

static void rows_read(void *arg, const db_reply *reply)
{
    outbox *o = arg;
    if (reply->error) {
        log_warn("outbox: cannot read the pushes made from SQL: %s", reply->error);
        finish(o, false);
        return;
    }
    const PGresult *r = reply->results[0];
    if (PQntuples(r) == 0 || o->stopped) { finish(o, false); return; }
    send_move(move_of(o, r));
}

static void read_rows(outbox *o)
{
    if (o->busy) { o->again = true; return; }
    o->busy = true;
    evtimer_del(o->timer);
    char limit[24], bytes[24];
    snprintf(limit, sizeof limit, "%d", o->limits.batch_messages);
    snprintf(bytes, sizeof bytes, "%lld", (long long)o->limits.batch_bytes);
    const char *values[2] = { limit, bytes };
    db_submit_stmt(o->pool, STMT_OUTBOX_READ, values, rows_read, o);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    read_rows(arg);
}

void outbox_kick(outbox *o)
{
    if (!o->stopped) read_rows(o);
}

outbox *outbox_new(struct event_base *base, db_pool *pool, outbox_limits limits, push_commit_fn appended, void *arg)
{
    outbox *o = xcalloc(1, sizeof *o);
    o->pool = pool;
    o->limits = limits;
    o->appended = appended;
    o->arg = arg;
    o->timer = evtimer_new(base, on_timer, o);
    schedule(o);
    return o;
}

void outbox_free(outbox *o)
{
    if (!o) return;
    event_free(o->timer);
    free(o);
}

void outbox_stop(outbox *o)
{
    o->stopped = true;
    evtimer_del(o->timer);
}

bool outbox_idle(const outbox *o) { return !o->busy; }

uint64_t outbox_moved(const outbox *o) { return o->moved; }

int outbox_store_settings(PGconn *pg, int64_t max_payload_bytes, int64_t max_items, buf *err)
{
    char payload[24], items[24];
    snprintf(payload, sizeof payload, "%lld", (long long)max_payload_bytes);
    snprintf(items, sizeof items, "%lld", (long long)max_items);
    const char *values[2] = { payload, items };
    PGresult *res = PQexecParams(pg, "SELECT queen.push_settings_store($1::bigint, $2::integer)", 2, NULL, values,
                                 NULL, NULL, 1);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0) buf_printf(err, "cannot store the settings of pushes: %s", PQerrorMessage(pg));
    PQclear(res);
    return rc;
}

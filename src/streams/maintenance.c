/* maintenance: the state copy and the buffer drain (see maintenance.h). */
#include "streams/maintenance.h"
#include <stdlib.h>
#include "base/log.h"
#include "base/xalloc.h"
#include "db/result.h"
#include "db/statements.h"

/* Buffered segments moved per drain transaction: each is one partition's
 * share of a flush, so a batch commits in milliseconds. */
#define MAINTENANCE_DRAIN_SEGMENTS "100"

struct maintenance {
    db_pool          *pool;
    push_commit_fn    appended;   /* told each queue the drain filled */
    void             *arg;
    struct event     *timer;
    struct timeval    every;
    maintenance_state state;
    bool              refreshing, draining, stopped;
    uint64_t          drained;   /* messages moved into the log by this server */
};

static void drain(maintenance *m);

static void schedule(maintenance *m)
{
    if (!m->stopped) evtimer_add(m->timer, &m->every);
}

void maintenance_observe(maintenance *m, const PGresult *r)
{
    if (!r || PQntuples(r) != 1) return;
    maintenance_state *s = &m->state;
    s->known = true;
    s->enabled = db_bool(r, 0, 0);
    s->draining = db_bool(r, 0, 1);
    s->buffered = db_int(r, 0, 2);
    s->oldest_buffered_us = db_null(r, 0, 3) ? 0 : db_time_us(r, 0, 3);
    s->updated_us = db_time_us(r, 0, 4);
    if (!s->enabled && s->buffered > 0) drain(m);
}

static void refreshed(void *arg, const db_reply *reply)
{
    maintenance *m = arg;
    m->refreshing = false;
    if (reply->error) log_warn("maintenance state: %s", reply->error);
    else maintenance_observe(m, reply->results[0]);
    schedule(m);
}

static void refresh(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    maintenance *m = arg;
    if (m->stopped || m->refreshing || m->draining || !db_pool_ready(m->pool)) { schedule(m); return; }
    m->refreshing = true;
    db_submit_stmt(m->pool, STMT_MAINT_STATUS, NULL, refreshed, m);
}

/* Rows: each queue appended to and its messages. None: nothing was left
 * (or another server holds the drain, or maintenance is back on). */
static void drained(void *arg, const db_reply *reply)
{
    maintenance *m = arg;
    m->draining = false;
    if (reply->error) { log_warn("maintenance drain: %s", reply->error); return; }
    const PGresult *r = reply->results[0];
    for (int i = 0; i < PQntuples(r); i++) {
        log_debug("maintenance: delivered %lld buffered messages of %s", (long long)db_int(r, i, 1),
                  db_str(r, i, 0));
        m->drained += (uint64_t)db_int(r, i, 1);
        m->appended(m->arg, db_str(r, i, 0), NULL, 0);   /* partitions not told: every pop looks */
    }
    if (PQntuples(r) > 0) drain(m);
    else refresh(-1, 0, m);   /* the state after the drain, "draining" gone */
}

static void drain(maintenance *m)
{
    if (m->stopped || m->draining) return;
    m->draining = true;
    const char *values[1] = { MAINTENANCE_DRAIN_SEGMENTS };
    db_submit_stmt(m->pool, STMT_MAINT_DRAIN, values, drained, m);
}

maintenance *maintenance_new(struct event_base *base, db_pool *pool, push_commit_fn appended, void *arg,
                             int64_t refresh_ms)
{
    maintenance *m = xcalloc(1, sizeof *m);
    m->pool = pool;
    m->appended = appended;
    m->arg = arg;
    m->every.tv_sec = (time_t)(refresh_ms / 1000);
    m->every.tv_usec = (suseconds_t)(refresh_ms % 1000) * 1000;
    m->timer = evtimer_new(base, refresh, m);
    schedule(m);   /* not at once: the pool is still connecting */
    return m;
}

void maintenance_stop(maintenance *m)
{
    m->stopped = true;
    evtimer_del(m->timer);
}

bool maintenance_idle(const maintenance *m) { return !m->refreshing && !m->draining; }

void maintenance_free(maintenance *m)
{
    if (!m) return;
    event_free(m->timer);
    free(m);
}

const maintenance_state *maintenance_current(const maintenance *m) { return &m->state; }

uint64_t maintenance_drained_total(const maintenance *m) { return m->drained; }

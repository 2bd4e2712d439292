/* listener: LISTEN on one connection (see listener.h). Connecting and the
 * LISTEN itself are asynchronous, driven by the event loop like the pool's
 * connections: a database that is slow or unreachable never holds the loop. */
#include "db/listener.h"
#include "db/connect.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "base/buf.h"
#include "base/log.h"
#include "base/xalloc.h"

#define LISTENER_RETRY_MIN_MS 100
#define LISTENER_RETRY_MAX_MS 5000

typedef enum listener_state { L_IDLE, L_CONNECTING, L_SUBSCRIBING, L_READY } listener_state;

struct db_listener {
    struct event_base *base;
    char              *conninfo, *channel;
    db_notify_fn       fn;
    void              *arg;
    PGconn            *pg;
    listener_state     state;
    struct event      *io, *retry;
    int                backoff_ms;
};

static void on_io(evutil_socket_t fd, short what, void *arg);

static void schedule_retry(db_listener *l)
{
    struct timeval tv = { l->backoff_ms / 1000, (l->backoff_ms % 1000) * 1000 };
    evtimer_add(l->retry, &tv);
    l->backoff_ms = l->backoff_ms * 2 > LISTENER_RETRY_MAX_MS ? LISTENER_RETRY_MAX_MS : l->backoff_ms * 2;
}

static void drop(db_listener *l, const char *why)
{
    log_warn("listener on %s: %s; reconnecting", l->channel, why && *why ? why : "connection lost");
    db_close(&l->pg, &l->io);
    l->state = L_IDLE;
    schedule_retry(l);
}

/* Waits for the socket to become readable or writable, as libpq asks. */
static void await(db_listener *l, short what)
{
    db_await_socket(&l->io, l->base, l->pg, what, on_io, l);
}

static void subscribe(db_listener *l)
{
    char *ident = PQescapeIdentifier(l->pg, l->channel, strlen(l->channel));
    buf sql;
    buf_init(&sql);
    buf_printf(&sql, "LISTEN %s", ident ? ident : "");
    PQfreemem(ident);
    int sent = PQsetnonblocking(l->pg, 1) == 0 && PQsendQuery(l->pg, sql.data) == 1;
    buf_fini(&sql);
    if (!sent) { drop(l, PQerrorMessage(l->pg)); return; }
    l->state = L_SUBSCRIBING;
    if (PQflush(l->pg) < 0) { drop(l, PQerrorMessage(l->pg)); return; }
    await(l, EV_READ | EV_PERSIST);
}

static void connect_step(db_listener *l)
{
    switch (PQconnectPoll(l->pg)) {
    case PGRES_POLLING_READING: await(l, EV_READ); break;
    case PGRES_POLLING_WRITING: await(l, EV_WRITE); break;
    case PGRES_POLLING_OK:      subscribe(l); break;
    default:                    drop(l, PQerrorMessage(l->pg)); break;
    }
}

/* The LISTEN's result: ready once it is COMMAND_OK and the last one read. */
static void subscribed(db_listener *l)
{
    PGresult *r;
    bool ok = true;
    while (!PQisBusy(l->pg) && (r = PQgetResult(l->pg)) != NULL) {
        ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    if (!ok) { drop(l, PQerrorMessage(l->pg)); return; }
    if (PQisBusy(l->pg)) return;
    l->state = L_READY;
    l->backoff_ms = LISTENER_RETRY_MIN_MS;
    l->fn(l->arg, NULL);   /* anything sent while we were not listening: look again */
}

static void deliver(db_listener *l)
{
    PGnotify *n;
    while ((n = PQnotifies(l->pg)) != NULL) {
        l->fn(l->arg, n->extra);
        PQfreemem(n);
    }
}

static void on_io(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    db_listener *l = arg;
    if (l->state == L_CONNECTING) { connect_step(l); return; }
    if (!PQconsumeInput(l->pg)) { drop(l, PQerrorMessage(l->pg)); return; }
    if (l->state == L_SUBSCRIBING) subscribed(l);
    if (l->state == L_READY) deliver(l);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    db_listener *l = arg;
    l->pg = db_connect_start(l->conninfo, "silt listener");
    if (!l->pg || PQstatus(l->pg) == CONNECTION_BAD) { drop(l, l->pg ? PQerrorMessage(l->pg) : "out of memory"); return; }
    l->state = L_CONNECTING;
    connect_step(l);
}

db_listener *db_listener_new(struct event_base *base, const char *conninfo, const char *channel,
                             db_notify_fn fn, void *arg)
{
    db_listener *l = xcalloc(1, sizeof *l);
    l->base = base;
    l->conninfo = xstrdup(conninfo);
    l->channel = xstrdup(channel);
    l->fn = fn;
    l->arg = arg;
    l->backoff_ms = LISTENER_RETRY_MIN_MS;
    l->retry = evtimer_new(base, on_retry, l);
    struct timeval now = { 0, 0 };
    evtimer_add(l->retry, &now);
    return l;
}

void db_listener_free(db_listener *l)
{
    if (!l) return;
    db_close(&l->pg, &l->io);
    event_free(l->retry);
    free(l->conninfo);
    free(l->channel);
    free(l);
}

bool db_listener_ready(const db_listener *l) { return l && l->state == L_READY; }

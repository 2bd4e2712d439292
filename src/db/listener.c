/* listener: LISTEN on one connection (see listener.h). */
#include "db/listener.h"
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "base/buf.h"
#include "base/log.h"
#include "base/xalloc.h"

#define LISTENER_RETRY_MIN_MS 100
#define LISTENER_RETRY_MAX_MS 5000

struct db_listener {
    struct event_base *base;
    char              *conninfo, *channel;
    db_notify_fn       fn;
    void              *arg;
    PGconn            *pg;
    struct event      *readable, *retry;
    int                backoff_ms;
};

static void connect_now(db_listener *l);

static void schedule_retry(db_listener *l)
{
    struct timeval tv = { l->backoff_ms / 1000, (l->backoff_ms % 1000) * 1000 };
    evtimer_add(l->retry, &tv);
    l->backoff_ms = l->backoff_ms * 2 > LISTENER_RETRY_MAX_MS ? LISTENER_RETRY_MAX_MS : l->backoff_ms * 2;
}

static void drop(db_listener *l, const char *why)
{
    log_warn("listener on %s: %s; reconnecting", l->channel, why);
    if (l->readable) { event_free(l->readable); l->readable = NULL; }
    PQfinish(l->pg);
    l->pg = NULL;
    schedule_retry(l);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    db_listener *l = arg;
    if (!PQconsumeInput(l->pg)) { drop(l, PQerrorMessage(l->pg)); return; }
    PGnotify *n;
    while ((n = PQnotifies(l->pg)) != NULL) {
        l->fn(l->arg, n->extra);
        PQfreemem(n);
    }
    if (PQstatus(l->pg) != CONNECTION_OK) drop(l, "connection lost");
}

/* A blocking connect and LISTEN: rare (start and reconnects), and short. */
static int listen_on(db_listener *l)
{
    l->pg = PQconnectdb(l->conninfo);
    if (PQstatus(l->pg) != CONNECTION_OK) return -1;
    buf sql;
    buf_init(&sql);
    char *ident = PQescapeIdentifier(l->pg, l->channel, strlen(l->channel));
    buf_printf(&sql, "LISTEN %s", ident);
    PQfreemem(ident);
    PGresult *r = PQexec(l->pg, sql.data);
    buf_fini(&sql);
    int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
    PQclear(r);
    if (rc == 0 && PQsetnonblocking(l->pg, 1) != 0) rc = -1;
    return rc;
}

static void connect_now(db_listener *l)
{
    if (listen_on(l) < 0) { drop(l, PQerrorMessage(l->pg)); return; }
    l->backoff_ms = LISTENER_RETRY_MIN_MS;
    l->readable = event_new(l->base, PQsocket(l->pg), EV_READ | EV_PERSIST, on_readable, l);
    event_add(l->readable, NULL);
    l->fn(l->arg, NULL);   /* anything sent while we were not listening: look again */
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    connect_now(arg);
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
    if (l->readable) event_free(l->readable);
    event_free(l->retry);
    PQfinish(l->pg);
    free(l->conninfo);
    free(l->channel);
    free(l);
}

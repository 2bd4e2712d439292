/* session: one dedicated connection, one statement at a time (see
 * session.h). Driven by the event loop like the listener: connecting,
 * sending and reading never block it. */
#include "db/session.h"
#include "db/connect.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/log.h"
#include "base/xalloc.h"

typedef enum session_state { S_CLOSED, S_CONNECTING, S_READY, S_BUSY } session_state;

struct db_session {
    struct event_base *base;
    char              *conninfo, *application_name;
    PGconn            *pg;
    session_state      state;
    struct event      *io, *later;
    /* the statement waiting for the connection, or in flight */
    char              *sql;
    char             **values;
    int                nparams;
    bool               simple;
    db_session_fn      fn;
    void              *arg;
    /* its outcome, handed over from the event loop (never inside a call) */
    PGresult          *res;
    buf                error;
    char               sqlstate[6];
};

static void on_io(evutil_socket_t fd, short what, void *arg);

static void forget_statement(db_session *s)
{
    free(s->sql);
    for (int i = 0; i < s->nparams; i++) free(s->values[i]);
    free(s->values);
    s->sql = NULL;
    s->values = NULL;
    s->nparams = 0;
}

/* Hands the outcome to the caller on the next turn of the loop. */
static void finish_later(db_session *s)
{
    struct timeval now = { 0, 0 };
    evtimer_add(s->later, &now);
}

static void on_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    db_session *s = arg;
    db_session_fn fn = s->fn;
    void *fn_arg = s->arg;
    PGresult *res = s->res;
    char *error = s->error.len ? xstrdup(s->error.data) : NULL;
    char sqlstate[6];
    memcpy(sqlstate, s->sqlstate, sizeof sqlstate);
    s->fn = NULL;
    s->res = NULL;
    buf_reset(&s->error);
    s->sqlstate[0] = '\0';
    if (s->state == S_BUSY) s->state = S_READY;
    fn(fn_arg, error ? NULL : res, error, sqlstate);
    PQclear(res);
    free(error);
}

static void fail(db_session *s, const char *why)
{
    buf_reset(&s->error);
    buf_printf(&s->error, "%s", why && *why ? why : "connection lost");
    db_close(&s->pg, &s->io);
    s->state = S_CLOSED;
    forget_statement(s);
    finish_later(s);
}

static void await(db_session *s, short what)
{
    db_await_socket(&s->io, s->base, s->pg, what, on_io, s);
}

static void send_statement(db_session *s)
{
    int sent = s->simple ? PQsendQuery(s->pg, s->sql)
                         : PQsendQueryParams(s->pg, s->sql, s->nparams, NULL, (const char *const *)s->values,
                                             NULL, NULL, 1);
    forget_statement(s);
    if (!sent) { fail(s, PQerrorMessage(s->pg)); return; }
    s->state = S_BUSY;
    int flushed = PQflush(s->pg);
    if (flushed < 0) { fail(s, PQerrorMessage(s->pg)); return; }
    await(s, flushed == 1 ? EV_READ | EV_WRITE | EV_PERSIST : EV_READ | EV_PERSIST);
}

static void connect_step(db_session *s)
{
    switch (PQconnectPoll(s->pg)) {
    case PGRES_POLLING_READING: await(s, EV_READ); break;
    case PGRES_POLLING_WRITING: await(s, EV_WRITE); break;
    case PGRES_POLLING_OK:
        if (PQsetnonblocking(s->pg, 1) != 0) { fail(s, PQerrorMessage(s->pg)); break; }
        s->state = S_READY;
        send_statement(s);
        break;
    default: fail(s, PQerrorMessage(s->pg)); break;
    }
}

/* Reads every result of the statement; the last one (or the first error)
 * is its outcome. */
static void read_results(db_session *s)
{
    while (!PQisBusy(s->pg)) {
        PGresult *r = PQgetResult(s->pg);
        if (!r) {
            event_free(s->io);
            s->io = NULL;
            finish_later(s);
            return;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_FATAL_ERROR) {
            if (!s->error.len) {
                const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                snprintf(s->sqlstate, sizeof s->sqlstate, "%s", code ? code : "");
                buf_printf(&s->error, "%s", PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                                                ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                                                : PQresultErrorMessage(r));
            }
            PQclear(r);
            continue;
        }
        PQclear(s->res);
        s->res = r;
    }
}

static void on_io(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    db_session *s = arg;
    if (s->state == S_CONNECTING) { connect_step(s); return; }
    if (what & EV_WRITE) {
        int flushed = PQflush(s->pg);
        if (flushed < 0) { fail(s, PQerrorMessage(s->pg)); return; }
        if (flushed == 0) await(s, EV_READ | EV_PERSIST);
    }
    if (!(what & EV_READ)) return;
    if (!PQconsumeInput(s->pg)) { fail(s, PQerrorMessage(s->pg)); return; }
    read_results(s);
}

static void start(db_session *s, const char *sql, int nparams, const char *const *values, bool simple,
                  db_session_fn fn, void *arg)
{
    if (s->fn) log_error("db session: a statement while another is in flight (a bug): %s", sql);
    s->fn = fn;
    s->arg = arg;
    s->sql = xstrdup(sql);
    s->simple = simple;
    s->nparams = nparams;
    s->values = nparams ? xcalloc((size_t)nparams, sizeof *s->values) : NULL;
    for (int i = 0; i < nparams; i++) s->values[i] = values[i] ? xstrdup(values[i]) : NULL;
    if (s->state == S_READY) { send_statement(s); return; }
    s->pg = db_connect_start(s->conninfo, s->application_name);
    if (!s->pg || PQstatus(s->pg) == CONNECTION_BAD) {
        fail(s, s->pg ? PQerrorMessage(s->pg) : "out of memory");
        return;
    }
    s->state = S_CONNECTING;
    connect_step(s);
}

db_session *db_session_new(struct event_base *base, const char *conninfo, const char *application_name)
{
    db_session *s = xcalloc(1, sizeof *s);
    s->base = base;
    s->conninfo = xstrdup(conninfo);
    s->application_name = xstrdup(application_name);
    buf_init(&s->error);
    s->later = evtimer_new(base, on_later, s);
    return s;
}

void db_session_call(db_session *s, const char *sql, int nparams, const char *const *values,
                     db_session_fn fn, void *arg)
{
    start(s, sql, nparams, values, false, fn, arg);
}

void db_session_command(db_session *s, const char *sql, db_session_fn fn, void *arg)
{
    start(s, sql, 0, NULL, true, fn, arg);
}

void db_session_free(db_session *s)
{
    if (!s) return;
    db_close(&s->pg, &s->io);
    event_free(s->later);
    PQclear(s->res);
    forget_statement(s);
    buf_fini(&s->error);
    free(s->conninfo);
    free(s->application_name);
    free(s);
}

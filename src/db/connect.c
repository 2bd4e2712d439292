/* connect: the start of every asynchronous connection (see connect.h). */
#include "db/connect.h"

PGconn *db_connect_start(const char *conninfo, const char *application_name)
{
    static const char *const keys[] = { "dbname", "application_name", "options", "connect_timeout", NULL };
    const char *values[] = { conninfo, application_name, "-c TimeZone=UTC -c DateStyle=ISO", "10", NULL };
    return PQconnectStartParams(keys, values, 1);
}

void db_close(PGconn **pg, struct event **io)
{
    if (*io) event_free(*io);
    *io = NULL;
    PQfinish(*pg);   /* NULL is allowed */
    *pg = NULL;
}

void db_await_socket(struct event **io, struct event_base *base, PGconn *pg, short what,
                     event_callback_fn cb, void *arg)
{
    if (*io) event_free(*io);
    *io = event_new(base, PQsocket(pg), what, cb, arg);
    event_add(*io, NULL);
}

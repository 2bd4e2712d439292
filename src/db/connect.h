/* connect: how every asynchronous connection of silt starts (the pool's,
 * the listener's, a session's): the same session settings everywhere, so a
 * value PostgreSQL formats reads the same whichever connection it came
 * from. Then how each waits on its socket and ends, written once. */
#ifndef SILT_CONNECT_H
#define SILT_CONNECT_H
#include <event2/event.h>
#include <libpq-fe.h>

/* PQconnectStartParams on conninfo (keywords or a URL) as application_name,
 * in UTC with ISO dates, giving up on connecting after 10 s. NULL or a
 * CONNECTION_BAD connection as libpq returns them. */
PGconn *db_connect_start(const char *conninfo, const char *application_name);

/* Waits for pg's socket to become what libpq asks (EV_READ, EV_WRITE,
 * with EV_PERSIST or not), calling cb(arg): *io, the connection's socket
 * event, is replaced by one for what (its socket may have changed since:
 * a connection attempt moves on to the next host). */
void db_await_socket(struct event **io, struct event_base *base, PGconn *pg, short what,
                     event_callback_fn cb, void *arg);
/* Ends a connection and the event on its socket, which go together (the
 * socket is gone once pg is finished): both set to NULL; either may be
 * NULL already. */
void db_close(PGconn **pg, struct event **io);

#endif

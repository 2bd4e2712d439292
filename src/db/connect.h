/* connect: how every asynchronous connection of silt starts (the pool's,
 * the listener's, a session's): the same session settings everywhere, so a
 * value PostgreSQL formats reads the same whichever connection it came
 * from. */
#ifndef SILT_CONNECT_H
#define SILT_CONNECT_H
#include <libpq-fe.h>

/* PQconnectStartParams on conninfo (keywords or a URL) as application_name,
 * in UTC with ISO dates, giving up on connecting after 10 s. NULL or a
 * CONNECTION_BAD connection as libpq returns them. */
PGconn *db_connect_start(const char *conninfo, const char *application_name);

#endif

/* connect: the start of every asynchronous connection (see connect.h). */
#include "db/connect.h"

PGconn *db_connect_start(const char *conninfo, const char *application_name)
{
    static const char *const keys[] = { "dbname", "application_name", "options", "connect_timeout", NULL };
    const char *values[] = { conninfo, application_name, "-c TimeZone=UTC -c DateStyle=ISO", "10", NULL };
    return PQconnectStartParams(keys, values, 1);
}

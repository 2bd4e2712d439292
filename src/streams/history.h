/* history: the per-minute rollup behind the dashboard's 24-hour charts
 * (GET /api/v1/stats/history, sql/functions/history.sql). Every server
 * runs a roller; a little after each minute starts it asks the database
 * to roll the minute that ended. The first server to ask does it from the
 * database's own counters (offsets written, cursors moved, dead letters),
 * the others find it done: the history is the cluster's, counted once,
 * and the push, pop and ack paths do nothing for it. */
#ifndef SILT_HISTORY_H
#define SILT_HISTORY_H
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include "db/periodic.h"
#include "db/pool.h"

typedef struct history_roller history_roller;

history_roller *history_roller_new(struct event_base *base, db_pool *pool);
uint64_t        history_rolls(const history_roller *h);   /* minutes this server rolled, for /metrics */
/* Its timer and flags, for the server's drain: periodic_stop (no new
 * roll), then periodic_idle. */
periodic       *history_roller_periodic(history_roller *h);
void            history_roller_free(history_roller *h);

#endif

/* history: the once-a-minute rollup (see history.h). */
#include "streams/history.h"
#include <stdlib.h>
#include <sys/time.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/periodic.h"
#include "db/result.h"

#define HISTORY_AFTER_MS 2000   /* into the minute: the one before it has ended on every clock near ours */
#define HISTORY_RETRY_MS 5000   /* the database not ready: look again */

struct history_roller {
    db_pool      *pool;
    periodic      tick;
    uint64_t      rolls;
};

/* Until HISTORY_AFTER_MS past the next minute of the wall clock. */
static void arm_next_minute(history_roller *h)
{
    int64_t now_ms = clock_wall_us() / 1000;
    periodic_arm(&h->tick, 60000 - now_ms % 60000 + HISTORY_AFTER_MS);
}

static void rolled(void *arg, const db_reply *reply)
{
    history_roller *h = arg;
    periodic_end(&h->tick);
    if (reply->error) log_warn("history rollup: %s", reply->error);
    else if (db_int(reply->results[0], 0, 0) >= 0) h->rolls++;   /* -1: another server rolled it */
    arm_next_minute(h);
}

/* The timer's roll, once the database answers. */
static void due(void *owner)
{
    history_roller *h = owner;
    if (!db_pool_ready(h->pool)) { periodic_arm(&h->tick, HISTORY_RETRY_MS); return; }
    periodic_begin(&h->tick);
    db_submit_stmt(h->pool, STMT_HISTORY_ROLL, NULL, rolled, h);
}

history_roller *history_roller_new(struct event_base *base, db_pool *pool)
{
    history_roller *h = xcalloc(1, sizeof *h);
    h->pool = pool;
    periodic_init(&h->tick, base, due, h);
    arm_next_minute(h);
    return h;
}

uint64_t history_rolls(const history_roller *h) { return h->rolls; }

periodic *history_roller_periodic(history_roller *h) { return &h->tick; }

void history_roller_free(history_roller *h)
{
    if (!h) return;
    periodic_fini(&h->tick);
    free(h);
}

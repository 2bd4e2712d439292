/* history: the once-a-minute rollup (see history.h). */
#include "streams/history.h"
#include <stdlib.h>
#include <sys/time.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/result.h"

#define HISTORY_AFTER_MS 2000   /* into the minute: the one before it has ended on every clock near ours */
#define HISTORY_RETRY_MS 5000   /* the database not ready: look again */

struct history_roller {
    db_pool      *pool;
    struct event *timer;
    bool          running, stopped;
    uint64_t      rolls;
};

static void arm(history_roller *h, int64_t ms)
{
    if (h->stopped) return;
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
    evtimer_add(h->timer, &tv);
}

/* Until HISTORY_AFTER_MS past the next minute of the wall clock. */
static void arm_next_minute(history_roller *h)
{
    int64_t now_ms = clock_wall_us() / 1000;
    arm(h, 60000 - now_ms % 60000 + HISTORY_AFTER_MS);
}

static void rolled(void *arg, const db_reply *reply)
{
    history_roller *h = arg;
    h->running = false;
    if (reply->error) log_warn("history rollup: %s", reply->error);
    else if (db_int(reply->results[0], 0, 0) >= 0) h->rolls++;   /* -1: another server rolled it */
    arm_next_minute(h);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    history_roller *h = arg;
    if (h->running || h->stopped) return;
    if (!db_pool_ready(h->pool)) { arm(h, HISTORY_RETRY_MS); return; }
    h->running = true;
    db_submit_stmt(h->pool, STMT_HISTORY_ROLL, NULL, rolled, h);
}

history_roller *history_roller_new(struct event_base *base, db_pool *pool)
{
    history_roller *h = xcalloc(1, sizeof *h);
    h->pool = pool;
    h->timer = evtimer_new(base, on_timer, h);
    arm_next_minute(h);
    return h;
}

uint64_t history_rolls(const history_roller *h) { return h->rolls; }

void history_roller_stop(history_roller *h)
{
    if (!h) return;
    h->stopped = true;
    evtimer_del(h->timer);
}

bool history_roller_idle(const history_roller *h) { return !h || !h->running; }

void history_roller_free(history_roller *h)
{
    if (!h) return;
    event_free(h->timer);
    free(h);
}

/* periodic: see periodic.h. */
#include "db/periodic.h"
#include <sys/time.h>

static void fired(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    periodic *p = arg;
    if (periodic_may_start(p)) p->due(p->owner);
}

void periodic_init(periodic *p, struct event_base *base, void (*due)(void *owner), void *owner)
{
    p->timer = evtimer_new(base, fired, p);
    p->running = p->stopped = false;
    p->due = due;
    p->owner = owner;
}

void periodic_fini(periodic *p)
{
    event_free(p->timer);
}

void periodic_arm(periodic *p, int64_t ms)
{
    if (p->stopped) return;
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000 };
    evtimer_add(p->timer, &tv);
}

bool periodic_may_start(const periodic *p)
{
    return !p->running && !p->stopped;
}

void periodic_begin(periodic *p)
{
    evtimer_del(p->timer);
    p->running = true;
}

void periodic_end(periodic *p)
{
    p->running = false;
}

void periodic_stop(periodic *p)
{
    p->stopped = true;
    evtimer_del(p->timer);
}

bool periodic_idle(const periodic *p)
{
    return !p->running;
}

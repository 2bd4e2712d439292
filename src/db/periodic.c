/* periodic: see periodic.h. */
#include "db/periodic.h"
#include <sys/time.h>

void periodic_init(periodic *p, struct event_base *base, event_callback_fn fire, void *arg)
{
    p->timer = evtimer_new(base, fire, arg);
    p->running = p->stopped = false;
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

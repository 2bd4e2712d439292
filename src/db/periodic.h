/* periodic: the timer and the two flags of a chore a server runs now and
 * then on its event loop (the task sweep, the partition pass, the history
 * rollup). The rules they share live here once: one round at a time, a
 * round started early (by hand) takes back the armed timer, and nothing is
 * armed or started once stopped, so a server shutting down stops every
 * chore and then only waits for the round under way (periodic_idle).
 * Embedded in its owner: periodic_init / periodic_fini; the owner lends it
 * to the server for the drain. */
#ifndef SILT_PERIODIC_H
#define SILT_PERIODIC_H
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>

typedef struct periodic {
    struct event *timer;          /* armed by periodic_arm */
    bool          running;        /* a round is under way */
    bool          stopped;        /* periodic_stop called */
    void        (*due)(void *owner);
    void         *owner;
} periodic;

/* due(owner) runs when the timer armed by periodic_arm expires and a round
 * may begin (none under way, not stopped): it begins one, or arms again. */
void periodic_init(periodic *p, struct event_base *base, void (*due)(void *owner), void *owner);
void periodic_fini(periodic *p);
/* The timer fires in ms milliseconds; nothing once stopped. */
void periodic_arm(periodic *p, int64_t ms);
/* Neither a round under way nor stopped: one may begin. */
bool periodic_may_start(const periodic *p);
/* A round begins: the armed timer taken back (a round run by hand comes
 * before it), running set. periodic_end clears it. */
void periodic_begin(periodic *p);
void periodic_end(periodic *p);
/* No round begins or is armed any more; the one under way ends as it does. */
void periodic_stop(periodic *p);
/* No round under way: once stopped, the chore is done. */
bool periodic_idle(const periodic *p);

#endif

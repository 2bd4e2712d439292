/* listener: one dedicated PostgreSQL connection that LISTENs on a channel
 * and hands each notification's payload to a callback on the event loop.
 * It is how servers wake each other: a task sent through one server wakes
 * the claimers parked on every server, a completion wakes every waiter.
 * The connection reconnects with backoff when lost; on every (re)connect
 * the callback gets payload NULL, meaning "notifications may have been
 * missed: look again", so nothing stays parked on a lost wake-up. */
#ifndef SILT_LISTENER_H
#define SILT_LISTENER_H
#include <stdbool.h>
#include <event2/event.h>

typedef struct db_listener db_listener;
typedef void (*db_notify_fn)(void *arg, const char *payload);

db_listener *db_listener_new(struct event_base *base, const char *conninfo, const char *channel,
                             db_notify_fn fn, void *arg);
void         db_listener_free(db_listener *l);
/* LISTENing now (the "look again" callback for this connection has run). */
bool         db_listener_ready(const db_listener *l);

#endif

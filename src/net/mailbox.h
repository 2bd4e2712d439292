/* mailbox: hands items from any thread to one event loop. A poster appends
 * under a mutex and, when the box was empty, wakes the loop through an
 * eventfd; the loop takes everything posted so far in one swap and calls fn
 * for each, in the order posted. Nothing of libevent is shared between
 * threads: each loop only ever touches its own base. */
#ifndef SILT_MAILBOX_H
#define SILT_MAILBOX_H
#include <stddef.h>
#include <event2/event.h>

typedef struct mailbox mailbox;
typedef void (*mailbox_fn)(int kind, void *item, void *arg);

/* Runs fn on base's thread; NULL with errno when the eventfd cannot be made. */
mailbox *mailbox_new(struct event_base *base, mailbox_fn fn, void *arg);
/* Any thread. */
void     mailbox_post(mailbox *m, int kind, void *item);
/* Delivers what is in the box now, on the calling thread (the loop's, or
 * any once the loop's thread has ended); how many were delivered. */
size_t   mailbox_flush(mailbox *m);
/* The loop's thread, once no thread posts any more. */
void     mailbox_free(mailbox *m);

#endif

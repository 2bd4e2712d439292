/* mailbox: see mailbox.h. */
#include "net/mailbox.h"
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "base/xalloc.h"

typedef struct letter {
    int   kind;
    void *item;
} letter;

typedef struct letters {
    letter *at;
    size_t  n, cap;
} letters;

struct mailbox {
    pthread_mutex_t lock;
    letters         posted;    /* under lock */
    letters         taking;    /* the loop's: the last swap, being delivered */
    int             fd;        /* eventfd: readable while letters wait */
    struct event   *ready;
    mailbox_fn      fn;
    void           *arg;
};

static void append(letters *l, int kind, void *item)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->at = xrealloc(l->at, l->cap * sizeof *l->at);
    }
    l->at[l->n++] = (letter){ kind, item };
}

void mailbox_post(mailbox *m, int kind, void *item)
{
    pthread_mutex_lock(&m->lock);
    bool wake = m->posted.n == 0;   /* a box already holding letters has been woken */
    append(&m->posted, kind, item);
    pthread_mutex_unlock(&m->lock);
    if (!wake) return;
    uint64_t one = 1;
    ssize_t w = write(m->fd, &one, sizeof one);
    (void)w;   /* only fails when the counter is full, and then it is readable anyway */
}

/* Swapped under the lock, delivered outside it: fn may post (to this box or
 * another) without deadlock, and its letters wait for the next swap. */
size_t mailbox_flush(mailbox *m)
{
    pthread_mutex_lock(&m->lock);
    letters got = m->posted;
    m->posted = m->taking;
    m->posted.n = 0;
    pthread_mutex_unlock(&m->lock);
    for (size_t i = 0; i < got.n; i++) m->fn(got.at[i].kind, got.at[i].item, m->arg);
    size_t delivered = got.n;
    got.n = 0;
    m->taking = got;
    return delivered;
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    uint64_t count;
    ssize_t r = read(fd, &count, sizeof count);
    (void)r;   /* EAGAIN: another swap already took the letters */
    mailbox_flush(arg);
}

mailbox *mailbox_new(struct event_base *base, mailbox_fn fn, void *arg)
{
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return NULL;
    mailbox *m = xcalloc(1, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
    m->fd = fd;
    m->fn = fn;
    m->arg = arg;
    m->ready = event_new(base, fd, EV_READ | EV_PERSIST, on_ready, m);
    if (!m->ready || event_add(m->ready, NULL) < 0) abort();   /* libevent's allocation failed */
    return m;
}

void mailbox_free(mailbox *m)
{
    if (!m) return;
    event_free(m->ready);
    close(m->fd);
    pthread_mutex_destroy(&m->lock);
    free(m->posted.at);
    free(m->taking.at);
    free(m);
}

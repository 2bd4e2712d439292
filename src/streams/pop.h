/* pop: claims a batch of one partition under a lease (or commits it at once
 * with autoAck) and decodes the covering segments into messages. A pop that
 * finds nothing and may wait is parked here, in the server, not in a SQL
 * statement: it is woken when a push to its queue commits (through any
 * server), looks again when something it could not take yet falls due, and
 * answers empty at its deadline. A pop that may wait is listed before its
 * first query is sent, so a commit told while that query (or anything
 * before its parking) is in flight makes it look again: no commit falls
 * between its look and its parking. */
#ifndef SILT_POP_H
#define SILT_POP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include "base/buf.h"
#include "db/pool.h"
#include "streams/lease_book.h"

typedef struct pop_part {      /* one claimed partition */
    char        queue[256];
    char        id[37];
    char        name[256];
} pop_part;

typedef struct pop_msg {
    size_t      part;          /* index into pop_request.parts */
    uint8_t     message_id[16];
    const char *txn;
    size_t      txn_len;
    bool        has_trace;
    uint8_t     trace_id[16];
    const char *sub;           /* producerSub: the pushing token's sub, not NUL-terminated; NULL: none */
    size_t      sub_len;
    const char *payload;       /* verbatim client bytes (decrypted when sealed) */
    char       *owned;         /* the decrypted payload's memory, if any */
    size_t      payload_len;
    int64_t     offset;
    int64_t     created_us;    /* Unix microseconds: the segment's commit time */
} pop_msg;

typedef struct pop_request pop_request;
typedef void (*pop_done_fn)(pop_request *req, void *arg);

struct pop_request {
    /* what to pop: a queue, or (queue NULL) any queue with the tags given */
    char    *queue;
    char    *partition;        /* NULL: any partition of the queue */
    char    *namespace_tag, *task_tag;
    int      partitions;       /* partitions one pop may claim (batch is a total) */
    char    *group;            /* "__QUEUE_MODE__" for queue mode */
    char    *subscription;     /* NULL, "all", "now" or an ISO timestamp */
    int      batch;
    bool     auto_ack;
    bool     wait;
    int      timeout_ms;
    pop_done_fn done;
    void    *arg;
    /* what was popped (nmsgs == 0: nothing) */
    pop_part *parts;
    size_t   nparts;
    char     lease_id[37];     /* "" with autoAck */
    pop_msg *msgs;
    size_t   nmsgs;
    char    *error;
    char     sqlstate[6];
    bool     unavailable;
    /* internal */
    struct popper *owner;
    buf     *decoded;          /* one decompressed segment per row */
    size_t   ndecoded;
    struct event *deadline, *recheck;
    char     seen[64];         /* a waiting pop's last look: its transaction's now(), as text */
    bool     querying, rerun, expired, cancelled;
    bool     waiting;          /* on the popper's waiting list: a long-poll, from submission to answer */
    bool     parked;           /* of those, one that found nothing (the silt_long_polls_parked gauge) */
    bool     reconciled;       /* the query in flight sent the ready set's reconcile first */
    pop_request *prev, *next;  /* waiting list */
    pop_request *gathered_next; /* pops of one kind waiting to be sent together (pop.c, "gathered pops") */
};

typedef struct popper popper;

/* leases: where what each lease hands out is noted for its acks (NULL: nowhere). */
popper *popper_new(struct event_base *base, db_pool *pool, lease_book *leases, int recheck_ms,
                   size_t max_segment_bytes);
void    popper_free(popper *p);
void    popper_submit(popper *p, pop_request *req);
/* A commit wrote to these n partitions of queue (names; partitions NULL:
 * not known, which wakes every waiting pop of the queue). A waiting pop of
 * one of those partitions tries again (at once when parked, after the look
 * in flight otherwise); of the pops of any partition, at most n per
 * consumer group do (discovery pops: per group and tags), the longest
 * waiting first: more could not all be served, since a group leases a
 * partition to one pop at a time, and waking every parked pop on every
 * commit is a thundering herd (a pop that does take something wakes the
 * next, pass_on). Pops left parked
 * look again at the next commit, or when something they could not take
 * falls due (a lease expiring, delayedProcessing, windowBuffer: told by
 * the query that parked them), never by polling unless
 * LONG_POLL_RECHECK_MS asks for it. */
void    popper_wake(popper *p, const char *queue, const char *const *partitions, size_t n);
/* Commits may have been missed (the listener reconnected): every waiting
 * pop looks again. */
void    popper_wake_all(popper *p);
/* A lease of group came free (an ack released it): what it held is the
 * group's again, so its waiting pops look (a lease is not announced when it
 * merely expires: the pops knew when, see park()). */
void    popper_wake_group(popper *p, const char *group);
/* Told (after its commit) when a pop gave back the lease of messages it could
 * not read, so group's pops, here and elsewhere, can be woken to take them. */
typedef void (*pop_released_fn)(void *arg, const char *group);
void    popper_on_release(popper *p, pop_released_fn released, void *arg);
/* The client left: a parked pop answers (nothing) now, so it cannot lease or
 * auto-commit messages nobody will receive; one whose query still waits for
 * a connection, or to be gathered with others, is dropped unsent; one whose
 * query is in flight answers when
 * the query returns, without parking again, giving back at once the lease
 * of whatever it claimed (an autoAck pop's claim has committed: gone). */
void    popper_cancel(popper *p, pop_request *req);
/* Shutdown: every parked pop answers now (one still looking, when its look returns). */
void    popper_drain(popper *p);
void    pop_request_free(pop_request *req);
/* The request's timers, freed on the popper's loop: what is left of a
 * request answered can then be freed on any thread (a reply's last payload
 * may be sent by another HTTP loop, api/pop.c). */
void    pop_request_free_timers(pop_request *req);
/* Pops parked now, waiting for a message (those re-querying after a wake
 * included): the silt_long_polls_parked gauge. */
size_t  popper_parked(const popper *p);
uint64_t popper_wakeups(const popper *p);   /* waiting pops a commit woke (parked or still looking), since start */
uint64_t popper_queries(const popper *p);   /* pop looks sent (each pop of a gathered statement), since start */
uint64_t popper_reconciles(const popper *p);   /* of them, those sent behind a ready-set reconcile */
uint64_t popper_gathered(const popper *p);     /* of them, those sent in one statement with others of their kind */
size_t   popper_gathering(const popper *p);    /* pops waiting now to be sent with others of their kind */

#endif

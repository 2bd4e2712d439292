/* push: push fusion. Requests hand in batches of items; while flushes are in
 * flight, new batches gather, and the next flush writes everything gathered
 * as one segment per partition, all partitions in one transaction. A batch
 * is never split across flushes and its reply waits for the commit.
 * Flushes in flight at once take batches of different partitions where
 * they can (lanes, push.c). */
#ifndef SILT_PUSH_H
#define SILT_PUSH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include "db/pool.h"

/* buffered: held by maintenance mode, delivered when it is turned off. */
typedef enum push_status { PUSH_PENDING, PUSH_QUEUED, PUSH_DUPLICATE, PUSH_BUFFERED } push_status;

/* "queued", "duplicate" or "buffered": the word a push reply uses. */
const char *push_status_name(push_status status);

typedef struct push_item {
    char        *queue, *partition, *txn;  /* owned by the item */
    const char  *payload;                  /* the client's bytes; outlives the batch */
    size_t       payload_len;
    bool         txn_given;                /* client chose txn: dedup applies */
    bool         has_trace;
    uint8_t      trace_id[16];
    char        *sub;                      /* owned; the pushing token's sub (producerSub), NULL: none */
    uint8_t      message_id[16];           /* generated; a duplicate's original after */
    uint8_t      hash[16];                 /* xxh3-128 of txn */
    push_status  status;
    struct push_item *dup_of;              /* an earlier item of the same flush */
} push_item;

typedef struct push_batch push_batch;
typedef void (*push_done_fn)(push_batch *batch, void *arg);

struct push_batch {
    push_item   *items;
    size_t       n;
    char        *error;        /* set when the flush failed; nothing was written */
    bool         unavailable;  /* the failure was PostgreSQL being unreachable */
    push_done_fn done;
    void        *arg;
    /* When set and true at the moment the batch would be gathered into a
     * flush (its client left, or its request timed out), the batch is not
     * written: done runs with error set. NULL: always written. */
    const bool  *abandoned;
    /* NULL, or set true as the batch joins a flush: from then on it may be
     * written whatever becomes of its client. */
    bool        *sent;
    int          lane;         /* set by pusher_submit: which flushes take it (push.c) */
    push_batch  *next;
};

typedef struct pusher pusher;
/* Called after a flush commits, once per queue it wrote to. */
/* A flush committed to these n partitions (names) of queue. */
typedef void (*push_commit_fn)(void *arg, const char *queue, const char *const *partitions, size_t n);

typedef struct push_limits {
    int max_flushes;        /* flushes in flight at once */
    int flush_messages;     /* messages gathered into one flush, at most */
    int zstd_level;
} push_limits;

pusher *pusher_new(struct event_base *base, db_pool *pool, push_limits limits,
                   push_commit_fn on_commit, void *commit_arg);
void    pusher_free(pusher *p);
/* Fills each item's message_id and hash, then queues the batch. */
void    pusher_submit(pusher *p, push_batch *batch);
bool    pusher_idle(const pusher *p);
void    push_batch_free(push_batch *batch);
/* Frees n items, the strings each owns, and the array (a batch's or a
 * transaction's pushes). */
void    push_items_free(push_item *items, size_t n);
/* Gives an item a fresh message id and its transactionId hash (writers
 * outside fusion — transactions, dead-letter replay — call it too). */
void    push_item_prepare(push_item *it);
/* The lane, of lanes (PUSH_MAX_FLUSHES), of a batch whose first item goes
 * to this partition: flushes in flight at once take different lanes'. */
int     push_lane(const char *queue, const char *partition, int lanes);

#endif

/* tx: POST /api/v1/transaction's engine. Pushes and acks run in one
 * pipelined job, so in one PostgreSQL transaction: required leases are
 * checked first, then every push segment, then the acks; any failure raises
 * and rolls everything back. Two kinds of failure are resolved and the whole
 * transaction sent again: duplicates among client transactionIds (marked,
 * left out) and dead-letter hand-offs, whose message frames must first be
 * read from their compressed segments. */
#ifndef SILT_TX_H
#define SILT_TX_H
#include <stdbool.h>
#include <stddef.h>
#include "db/pool.h"
#include "streams/ack.h"
#include "streams/push.h"

typedef struct tx_request tx_request;
typedef void (*tx_done_fn)(tx_request *tx, void *arg);

struct tx_request {
    push_item  *pushes;        /* every pushed item, in operation order */
    size_t      npushes;
    size_t     *push_op;       /* operation index of each pushed item */
    ack_item   *acks;
    size_t      nacks;
    size_t     *ack_op;
    char      (*leases)[37];   /* requiredLeases */
    size_t      nleases;
    tx_done_fn  done;
    void       *arg;
    /* NULL, or true once nobody waits for the outcome: a job of the
     * transaction still waiting for a connection is then not sent (nothing
     * commits before its last job succeeds, so any of them may be dropped). */
    const bool *abandoned;
    /* NULL, or set true as the job that commits is sent (the reads before
     * it change nothing): from then on it may commit whatever becomes of
     * its client. */
    bool       *sent;
    /* outcome */
    char       *failure;       /* the transaction rolled back: why (client's fault) */
    char       *error;         /* it could not run (server or database) */
    char        sqlstate[6];
    bool        unavailable;
    /* internal */
    db_pool    *pool;
    int         zstd_level;
    size_t      max_segment_bytes;
    void       *state;
};

void tx_submit(db_pool *pool, int zstd_level, size_t max_segment_bytes, tx_request *tx);
void tx_request_free(tx_request *tx);

#endif

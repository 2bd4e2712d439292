/* ack: acknowledgements as offset commits. Items are hashed here and resolved
 * to offsets by queen.ack in one round trip. A message that must go to the
 * dead-letter queue is copied in a second round trip: its payload sits in a
 * compressed segment that only C can open. */
#ifndef SILT_ACK_H
#define SILT_ACK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "db/pool.h"

typedef struct ack_item {
    char   *txn;
    char   *group;
    char    partition_id[37];   /* validated uuid text */
    char    status;             /* 'c' completed, 'f' failed, 'r' retry, 'd' dlq */
    char    lease_id[37];       /* "" when not given */
    char   *error_text;         /* the client's error, kept with a dead letter */
    /* outcome */
    bool    success, lease_released, dlq, noop, dropped;
    char   *error;
} ack_item;

typedef struct ack_request ack_request;
typedef void (*ack_done_fn)(ack_request *req, void *arg);

struct ack_request {
    ack_item   *items;
    size_t      n;
    char       *error;          /* the whole request failed; nothing changed */
    char        sqlstate[6];
    bool        unavailable;
    ack_done_fn done;
    void       *arg;
    db_pool    *pool;
    size_t      max_segment_bytes;
};

void ack_submit(db_pool *pool, size_t max_segment_bytes, ack_request *req);
/* The items as queen.ack reads them: [{"i","p","h","s","g","t","e","l"}]. */
void ack_items_json(const ack_item *items, size_t n, buf *out);
/* Column order of queen.ack / queen.tx_ack results. */
enum { ACK_IDX, ACK_SUCCESS, ACK_ERROR, ACK_RELEASED, ACK_DLQ, ACK_NOOP, ACK_DROPPED,
       ACK_DLQ_OFFSET, ACK_DLQ_BASE, ACK_DLQ_CREATED, ACK_DLQ_BLOB };
/* Reads one result row into its item. */
void ack_take_outcome(ack_item *it, const PGresult *r, int row);
void ack_request_free(ack_request *req);

#endif

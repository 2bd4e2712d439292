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
#include "db/array.h"
#include "db/pool.h"
#include "streams/lease_book.h"

typedef enum ack_status { ACK_COMPLETED, ACK_FAILED, ACK_RETRY, ACK_DEAD_LETTER } ack_status;

typedef struct ack_item {
    char   *txn;
    char   *group;
    char    partition_id[37];   /* validated uuid text */
    ack_status status;
    char    lease_id[37];       /* "" when not given */
    uint8_t partition_raw[16];  /* partition_id and lease_id as bytes (the lease book's keys) */
    uint8_t lease_raw[16];      /* all zero when not given */
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
    /* NULL, or true once nobody waits for the outcome: queen.ack is then
     * not sent if it still waits for a connection (db_job_abandon_when).
     * A dead-letter copy after it always runs: the ack has committed. */
    const bool *abandoned;
    /* NULL, or set true as queen.ack (or queen.ack_known) is sent: from
     * then on the ack may apply whatever becomes of its client. */
    bool       *sent;
    db_pool    *pool;
    lease_book *leases;
    size_t      known;          /* items whose offset the lease book held */
    int64_t    *offsets;        /* per item: that offset, -1 when not known; NULL without leases */
    int64_t     known_lo, known_hi;   /* one lease's span: its lowest and highest offset */
    size_t      max_segment_bytes;
    ack_request *gathered_next; /* acks waiting to go together (ack.c, "gathered acks") */
};

/* acker: where acks are sent from. leases: what this server's pops handed
 * out (NULL: every item is resolved by its transactionId in SQL). Acks of
 * one lease's span whose offsets the lease book holds are gathered: while
 * a statement of them is in flight, the next go together in one
 * transaction. */
typedef struct acker acker;
acker   *acker_new(db_pool *pool, lease_book *leases, size_t max_segment_bytes);
void     acker_free(acker *a);
void     acker_submit(acker *a, ack_request *req);
uint64_t acker_gathered(const acker *a);    /* acks sent in one transaction with others, since start */
size_t   acker_gathering(const acker *a);   /* acks waiting now to go with the next */
/* The items as queen.ack reads them (queen.ack_items): one array per field,
 * the transactionId hashes as one bytea of 16 bytes per item. */
typedef struct ack_params {
    db_array groups, partitions, statuses, leases;
    buf      hashes;
} ack_params;
#define ACK_NPARAMS 5
void ack_params_build(ack_params *p, const ack_item *items, size_t n);
/* The first ACK_NPARAMS parameters of queen.ack and queen.tx_ack. */
void ack_params_values(ack_params *p, const char **values, int *lengths, int *formats);
void ack_params_fini(ack_params *p);
/* Column order of queen.ack / queen.tx_ack results. */
enum { ACK_IDX, ACK_SUCCESS, ACK_ERROR, ACK_RELEASED, ACK_DLQ, ACK_NOOP, ACK_DROPPED,
       ACK_DLQ_OFFSET, ACK_DLQ_BASE, ACK_DLQ_CREATED, ACK_DLQ_BLOB };
/* Reads one result row into its item. */
void ack_take_outcome(ack_item *it, const PGresult *r, int row);
void ack_request_free(ack_request *req);
/* Frees n items, the strings each owns, and the array (a request's or a
 * transaction's acks). */
void ack_items_free(ack_item *items, size_t n);

#endif

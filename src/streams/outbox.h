/* outbox: moves the messages pushed from SQL into the log. queen.push and
 * queen.push_many (sql/functions/sql_push.sql) cannot append to the log
 * themselves — a stored message carries the xxh3-128 of its transactionId,
 * which PostgreSQL cannot compute — so they write rows to queen.push_outbox
 * in the caller's transaction and notify. A server that hears it (and every
 * PUSH_OUTBOX_INTERVAL_MS, and at start, so rows outlive a lost
 * notification or a server that died) reads the oldest rows and writes them
 * through a push plan (push_plan.h), the path every HTTP push takes:
 * hashing, dedup, segments, encryption, maintenance buffering, wake-ups.
 *
 * Exactly once: one job, so one transaction, deletes the rows it read
 * (queen.push_outbox_take) and appends them (push_flush): they leave the
 * outbox exactly when they enter the log, and a move that fails or dies
 * leaves them all for the next pass. Not by dedup: a transactionId silt
 * made is never deduplicated, and a client's only within
 * dedupWindowSeconds. The take holds an advisory lock to the commit, so
 * movers on several servers go one after another; a mover whose rows went
 * meanwhile is refused (SLO01) and reads again, so a row is moved once and
 * a partition's rows enter the log in outbox order. */
#ifndef SILT_OUTBOX_H
#define SILT_OUTBOX_H
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include <libpq-fe.h>
#include "base/buf.h"
#include "db/pool.h"
#include "streams/push.h"

typedef struct outbox outbox;

typedef struct outbox_limits {
    int     batch_messages;   /* rows one move takes, at most (PUSH_FLUSH_MESSAGES) */
    int64_t batch_bytes;      /* payload bytes one move takes, about (MAX_BODY_BYTES) */
    int     zstd_level;
    int64_t interval_ms;      /* a look without a notification (PUSH_OUTBOX_INTERVAL_MS) */
} outbox_limits;

/* appended is told each queue's partitions a move wrote, as push fusion's. */
outbox *outbox_new(struct event_base *base, db_pool *pool, outbox_limits limits, push_commit_fn appended,
                   void *arg);
void    outbox_free(outbox *o);
/* Rows may be waiting (a notification, or some may have been missed):
 * a move starts now, or again after the one in flight. */
void    outbox_kick(outbox *o);
/* Shutdown: no move after the one in flight. */
void    outbox_stop(outbox *o);
bool    outbox_idle(const outbox *o);
/* Rows moved since start (silt_sql_pushes_moved_total). */
uint64_t outbox_moved(const outbox *o);
/* Stores what queen.push checks of a server's settings (MAX_PAYLOAD_BYTES,
 * MAX_BATCH_ITEMS), at its start: 0, or -1 with the database's message in err. */
int     outbox_store_settings(PGconn *pg, int64_t max_payload_bytes, int64_t max_items, buf *err)
    __attribute__((warn_unused_result));

#endif

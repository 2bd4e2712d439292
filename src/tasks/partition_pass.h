/* partition_pass: how terminal task records and heartbeats age (the
 * Retention Config document, "What ages by what", "Partition coverage",
 * "A partition dropped outside the library"; sql/024, sql/025). Every
 * partition_maintenance_interval_s (and soon after start) one pass:
 *
 *   1. registers this server's classes (a key registered with another
 *      duration fails that class);
 *   2. coverage: every registered class, in key order and each in its own
 *      transaction, gets its leaves for today and history_leaf_horizon_days
 *      days ahead (forever: its one leaf), missing indexes made again, and
 *      the heartbeats their hours to heartbeat_leaf_horizon_hours ahead; a
 *      class that cannot be served fails alone, the others are still served;
 *   3. finalizes any detach an earlier pass left pending;
 *   4. prunes: each leaf whose day plus its class's duration has passed is
 *      detached concurrently (under a statement and lock timeout) and
 *      dropped; one pinned by unconsumed crashed-worker evidence, or whose
 *      detach a reader held past the timeout, is refused, reported with its
 *      reason and tried again next pass;
 *   5. finds cataloged leaves whose relation is gone (dropped outside silt)
 *      and reports them with the document's message;
 *   6. records itself in horsies_retention_passes, where the coverage
 *      surface of every server reads it.
 *
 * One pass at a time across servers: the pass runs on a connection of its
 * own (db/session.h) holding a session-level advisory lock; a server that
 * finds it held yields. DETACH ... CONCURRENTLY needs that connection too:
 * it runs only alone, outside any transaction block. */
#ifndef SILT_PARTITION_PASS_H
#define SILT_PARTITION_PASS_H
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include <libpq-fe.h>
#include "base/buf.h"
#include "base/conffile.h"
#include "db/periodic.h"

typedef struct partition_pass partition_pass;

/* Totals since start, for /metrics. */
typedef struct partition_totals {
    uint64_t passes, failed_passes, leaves_created, leaves_dropped, drops_refused;
    int64_t  leaves_absent;    /* at the last pass */
    int64_t  classes_failed;   /* at the last pass */
    bool     healthy;          /* the last pass's outcome was ok */
} partition_totals;

/* report: the pass as JSON (docs/api.md, POST /api/v1/system/task-retention/run),
 * also when it failed (its outcome and error say so). */
typedef void (*partition_done_fn)(void *arg, const char *report);

partition_pass *partition_pass_new(struct event_base *base, const char *conninfo, const silt_conf *conf,
                                   int64_t detach_timeout_ms);
/* Runs a pass now; -1 (fn not called) when one is already running here. */
int  partition_pass_run(partition_pass *p, partition_done_fn fn, void *arg);
const partition_totals *partition_pass_totals(const partition_pass *p);
/* Its timer and flags, for the server's drain: periodic_stop (no new
 * pass; one running finishes), then periodic_idle. */
periodic *partition_pass_periodic(partition_pass *p);
void partition_pass_free(partition_pass *p);

/* The start-up coverage, before the server listens (a task that ends needs
 * its leaf): every registered class's leaves and the heartbeat hours, as a
 * pass makes them, one transaction per class; what cannot be covered is
 * logged (every pass reports it). 0, or -1 on a database error. */
int partition_cover_now(PGconn *pg, const silt_conf *conf);

/* The heartbeat window, how long heartbeat rows live: twice the longer
 * stale threshold, and at least an hour. */
int64_t partition_heartbeat_window_s(const conf_recovery *r);

/* The document's message for cataloged leaves whose relation is gone,
 * on one line; names comma-separated. */
void partition_absent_message(buf *out, const char *const *names, size_t n);

#endif

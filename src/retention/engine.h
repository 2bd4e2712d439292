/* engine: the log retention engine's scheduler. Every RETENTION_INTERVAL_MS
 * it runs a pass: claim the pass under a token of its own (a lease in
 * queen.retention_runner, taken under a transaction-level advisory lock, so
 * replicas never run passes concurrently), find due partitions
 * (queen.retention_candidates), run at most RETENTION_MAX_STEPS bounded
 * steps — each one partition, at most RETENTION_BATCH_SIZE segments or
 * sidecar rows, one commit — then one partition-cleanup step of at most
 * RETENTION_BATCH_SIZE partitions, then release the claim and report.
 * A dry run walks the same steps from simulated watermarks and deletes
 * nothing. The rules themselves live in the Retention section of
 * sql/migrations/018_schema.sql. */
#ifndef SILT_RETENTION_ENGINE_H
#define SILT_RETENTION_ENGINE_H
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include "base/buf.h"
#include "db/pool.h"

typedef struct retention_settings {
    int64_t interval_ms;     /* between passes; 0 turns the timer off */
    int64_t batch;           /* segments (or sidecar rows, or partitions) per step */
    int64_t max_steps;       /* segment and sidecar steps one pass may run */
    int64_t concurrency;     /* steps running side by side, each on its own partition */
    int64_t cleanup_days;    /* PARTITION_CLEANUP_DAYS */
    bool    cleanup_enabled; /* QUEEN_PARTITION_CLEANUP_ENABLED */
} retention_settings;

typedef struct retention_totals {   /* since start, for metrics */
    uint64_t passes, steps;
    uint64_t dropped[3];            /* offsets by rule: retention, completed, max wait */
    uint64_t leased_evicted;        /* leased offsets any rule removed */
    uint64_t sidecar_rows, partitions_removed;
} retention_totals;

typedef struct retention_engine retention_engine;
/* A finished pass, called after its claim is released: report is a JSON
 * object (see docs/api.md). */
typedef void (*retention_done_fn)(void *arg, const char *report, const char *error);

retention_engine *retention_engine_new(struct event_base *base, db_pool *pool, retention_settings settings);
void retention_engine_free(retention_engine *e);
/* Runs a pass now. -1 when a pass of this server is already running. */
int  retention_run(retention_engine *e, bool dry_run, retention_done_fn done, void *arg)
     __attribute__((warn_unused_result));
/* Shutdown: no more passes; a running one ends after its current step. */
void retention_engine_stop(retention_engine *e);
const retention_totals *retention_engine_totals(const retention_engine *e);
bool retention_engine_idle(const retention_engine *e);

#endif

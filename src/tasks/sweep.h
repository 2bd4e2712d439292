/* sweep: the row-delete sweep of the Retention Config document. Every
 * retention_sweep_interval_s (and once soon after start) a round deletes,
 * in batches of retention_delete_batch_size rows with one commit each,
 * terminal workflow records older than terminal_record_retention_hours
 * (their nodes and outbox evidence with them) and worker-state snapshots
 * older than worker_state_retention_hours, then expires workflows PAUSED
 * longer than paused_workflow_auto_cancel_after, and deletes unique keys
 * that hold nothing any more (a period over, a task ended). A setting at
 * None skips its part. Every server runs a sweeper; one sweeps at a time (an advisory
 * lock per batch, sql/021), the others find it taken and wait for their
 * next round. Terminal task records and heartbeats age by partition drop,
 * not here. */
#ifndef SILT_SWEEP_H
#define SILT_SWEEP_H
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include "base/conffile.h"
#include "db/periodic.h"
#include "db/pool.h"

typedef struct task_sweeper task_sweeper;

/* What one round did. */
typedef struct sweep_result {
    int64_t workflows_deleted;
    int64_t worker_states_deleted;   /* snapshots, and registrations not seen for as long */
    int64_t workflows_expired;
    int64_t unique_keys_deleted;     /* keys of tasks.unique_keys that held nothing any more */
    bool    yielded;                 /* another server was sweeping: this round stopped */
    bool    failed;                  /* a database error ended it (logged) */
} sweep_result;

/* Totals since start, for /metrics. */
typedef struct sweep_totals {
    uint64_t rounds, workflows_deleted, worker_states_deleted, workflows_expired, unique_keys_deleted;
} sweep_totals;

typedef void (*sweep_done_fn)(void *arg, const sweep_result *r);

task_sweeper *task_sweeper_new(struct event_base *base, db_pool *pool, const conf_retention *conf);
/* Runs a round now and calls fn with what it did; -1 (fn not called) when
 * a round is already running on this server. */
int           task_sweeper_run(task_sweeper *s, sweep_done_fn fn, void *arg);
const sweep_totals *task_sweeper_totals(const task_sweeper *s);
/* Its timer and flags, for the server's drain: periodic_stop (no new
 * round; callers still answered), then periodic_idle. */
periodic     *task_sweeper_periodic(task_sweeper *s);
void          task_sweeper_free(task_sweeper *s);

#endif

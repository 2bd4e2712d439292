/* sweep: the row-delete sweep and paused-workflow expiry (see sweep.h).
 * A round walks the steps in order; each step calls its SQL function
 * (sql/021) once per batch until a batch comes back short. */
#include "tasks/sweep.h"
#include <stdio.h>
#include <stdlib.h>
#include "base/log.h"
#include "base/xalloc.h"
#include "db/periodic.h"
#include "db/result.h"

#define SWEEP_FIRST_MS 2000   /* the first round, this long after start (once the database answers) */
#define SWEEP_RETRY_MS 1000   /* the database not ready yet: look again */

enum { STEP_WORKFLOWS, STEP_WORKER_STATES, STEP_EXPIRE, STEP_UNIQUE_KEYS, STEP_COUNT };

struct task_sweeper {
    db_pool              *pool;
    const conf_retention *conf;
    periodic              tick;
    int                   step;
    sweep_result          round;
    sweep_done_fn         done;   /* a caller of task_sweeper_run waiting for this round */
    void                 *done_arg;
    sweep_totals          totals;
};

static const db_stmt step_stmt[STEP_COUNT] = {
    STMT_SWEEP_WORKFLOWS, STMT_SWEEP_WORKER_STATES, STMT_EXPIRE_PAUSED, STMT_SWEEP_UNIQUE_KEYS,
};
static const char *const step_what[STEP_COUNT] = { "workflows", "worker states", "paused workflows", "unique keys" };

/* The step's age (hours, or seconds for the expiry and the unique keys);
 * CONF_NONE: skipped. Unique keys go as soon as they hold nothing: a send
 * would take them over anyway, so no setting keeps them. */
static int64_t step_age(const task_sweeper *s, int step)
{
    switch (step) {
    case STEP_WORKFLOWS:     return s->conf->terminal_record_retention_hours;
    case STEP_WORKER_STATES: return s->conf->worker_state_retention_hours;
    case STEP_UNIQUE_KEYS:   return 0;
    default:                 return s->conf->paused_workflow_auto_cancel_after_s;
    }
}

static int64_t *step_count(sweep_result *r, int step)
{
    switch (step) {
    case STEP_WORKFLOWS:     return &r->workflows_deleted;
    case STEP_WORKER_STATES: return &r->worker_states_deleted;
    case STEP_EXPIRE:        return &r->workflows_expired;
    default:                 return &r->unique_keys_deleted;
    }
}

static void round_end(task_sweeper *s)
{
    sweep_result *r = &s->round;
    periodic_end(&s->tick);
    s->totals.rounds++;
    s->totals.workflows_deleted += (uint64_t)r->workflows_deleted;
    s->totals.worker_states_deleted += (uint64_t)r->worker_states_deleted;
    s->totals.workflows_expired += (uint64_t)r->workflows_expired;
    s->totals.unique_keys_deleted += (uint64_t)r->unique_keys_deleted;
    if (r->workflows_deleted || r->worker_states_deleted || r->workflows_expired || r->unique_keys_deleted)
        log_info("task sweep: %lld workflows, %lld worker states and %lld free unique keys deleted,"
                 " %lld paused workflows expired", (long long)r->workflows_deleted,
                 (long long)r->worker_states_deleted, (long long)r->unique_keys_deleted,
                 (long long)r->workflows_expired);
    if (s->done) {
        sweep_done_fn fn = s->done;
        s->done = NULL;
        fn(s->done_arg, r);
    }
    periodic_arm(&s->tick, s->conf->retention_sweep_interval_s * 1000);
}

static void next_batch(task_sweeper *s);

static void batch_done(void *arg, const db_reply *reply)
{
    task_sweeper *s = arg;
    if (reply->error) {
        log_warn("task sweep (%s): %s", step_what[s->step], reply->error);
        s->round.failed = true;
        round_end(s);
        return;
    }
    int64_t n = db_int(reply->results[0], 0, 0);
    if (n < 0) { s->round.yielded = true; round_end(s); return; }   /* another server sweeps */
    *step_count(&s->round, s->step) += n;
    if (n < s->conf->retention_delete_batch_size) s->step++;   /* a short batch: this step is done */
    next_batch(s);
}

static void next_batch(task_sweeper *s)
{
    while (s->step < STEP_COUNT && step_age(s, s->step) == CONF_NONE) s->step++;
    if (s->step == STEP_COUNT) { round_end(s); return; }
    char age[24], batch[24];
    snprintf(age, sizeof age, "%lld", (long long)step_age(s, s->step));
    snprintf(batch, sizeof batch, "%lld", (long long)s->conf->retention_delete_batch_size);
    const char *values[2] = { age, batch };
    db_submit_stmt(s->pool, step_stmt[s->step], values, batch_done, s);
}

static void round_start(task_sweeper *s)
{
    periodic_begin(&s->tick);
    s->step = 0;
    s->round = (sweep_result){ 0 };
    next_batch(s);
}

/* The timer's round, once the database answers. */
static void due(void *owner)
{
    task_sweeper *s = owner;
    if (!db_pool_ready(s->pool)) { periodic_arm(&s->tick, SWEEP_RETRY_MS); return; }
    round_start(s);
}

task_sweeper *task_sweeper_new(struct event_base *base, db_pool *pool, const conf_retention *conf)
{
    task_sweeper *s = xcalloc(1, sizeof *s);
    s->pool = pool;
    s->conf = conf;
    periodic_init(&s->tick, base, due, s);
    periodic_arm(&s->tick, SWEEP_FIRST_MS);
    return s;
}

int task_sweeper_run(task_sweeper *s, sweep_done_fn fn, void *arg)
{
    if (!periodic_may_start(&s->tick)) return -1;
    s->done = fn;
    s->done_arg = arg;
    round_start(s);
    return 0;
}

const sweep_totals *task_sweeper_totals(const task_sweeper *s) { return &s->totals; }

periodic *task_sweeper_periodic(task_sweeper *s) { return &s->tick; }

void task_sweeper_free(task_sweeper *s)
{
    if (!s) return;
    periodic_fini(&s->tick);
    free(s);
}

/* tasks: the task engine's contract. A task is a row that changes state:
 *
 *   send ─► PENDING ─claim─► CLAIMED ─start─► RUNNING ─complete─► COMPLETED
 *             ▲  │              │                 │ fail ──────────► FAILED
 *             │  │ good_until   │ claimer stale   │ runner stale: WORKER_CRASHED
 *             │  ▼              │ or released     │ past timeout: TASK_TIMEOUT
 *             │ EXPIRED         ▼                 │ cancel acknowledged ► CANCELLED
 *             └──────────── PENDING ◄── retry ────┘ (the policy retries the code)
 *   cancel: PENDING or CLAIMED ► CANCELLED at once; RUNNING: told on its heartbeat.
 *
 * PENDING, CLAIMED and RUNNING live in horsies_tasks; the rest are terminal
 * and live in horsies_task_history, moved there in the transaction that
 * makes the task terminal. Every transition is one SQL function in
 * sql/migrations/019_tasks.sql (schema `tasks`); this module gathers calls to them,
 * parks claimers and result waiters, and runs recovery. A claim is fenced by
 * its claimId: every later call about the task names it, and one recovery
 * (or cancel) took back matches nothing, so a late completion is refused and
 * never applied twice. */
#ifndef SILT_TASKS_H
#define SILT_TASKS_H
#include <stdbool.h>
#include <stdint.h>
#include "base/ids.h"

#define TASK_MAX_RETRIES      20
#define TASK_MAX_DELAYS       20          /* entries of a fixed delay list */
#define TASK_MAX_DELAY_MS     86400000    /* one retry delay: a day at most */
#define TASK_MAX_TIMEOUT_MS   86400000
#define TASK_PRIORITY_MIN     1           /* most urgent */
#define TASK_PRIORITY_MAX     100
#define TASK_PRIORITY_DEFAULT 100
#define TASK_MAX_BATCH        1000        /* tasks in one send */
#define TASK_MAX_CLAIM        1000        /* tasks in one claim */
#define TASK_MAX_RETRY_CODES  16
#define TASK_CODE_MAX         64
#define TASK_PROGRESS_INFO_MAX 4096       /* bytes of a progress report's JSON value */

/* The error codes the engine itself writes. */
#define TASK_WORKER_CRASHED "WORKER_CRASHED"
#define TASK_TIMEOUT        "TASK_TIMEOUT"

/* The statuses, live first. */
#define TASK_STATUSES "PENDING", "CLAIMED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "EXPIRED"
bool task_status_valid(const char *s);
bool task_status_terminal(const char *s);

/* How a failed attempt is retried: at most max_retries times; before retry
 * n the delay is delays_ms[min(n, ndelays) - 1] when a list is given, else
 * min(cap_ms, base_ms * 2^(n-1)), times 1 ± jitter. Only codes in retry_on
 * retry (none listed: every code). */
typedef struct task_retry {
    int  max_retries;
    int  delays_ms[TASK_MAX_DELAYS];
    int  ndelays;
    int  base_ms, cap_ms;   /* 0: not exponential */
    double jitter;          /* 0..1 */
    char *retry_on[TASK_MAX_RETRY_CODES];
    int  nretry_on;
} task_retry;

/* One task to send. Strings are owned (task_spec_fini frees them). */
typedef struct task_spec {
    uint8_t    id[16];         /* UUIDv7, made at send */
    char      *name;
    char      *queue;
    char      *args;           /* a JSON text, stored verbatim */
    int        priority;
    char      *run_at;         /* ISO 8601, NULL: now (a delay is turned into it) */
    char      *good_until;     /* ISO 8601, NULL: none */
    int64_t    delay_ms;       /* run this long after the send (0: none) */
    int        timeout_ms;     /* 0: none */
    task_retry retry;
    char      *idempotency_key;
    char      *rate_key;       /* NULL: none; counted by its queue's rate_limit_per_key */
    char      *unique;         /* the send's "unique" object as JSON text, NULL: none (checked in SQL) */
    const char *retention_class;   /* resolved at enqueue (base/retention_class.h); owned by silt.conf,
                                    * or retention_key; NULL: the queue's (tasks.enqueue resolves it) */
    char       *retention_key;     /* the key a send named, owned (TASK_FORM_SEND) */
} task_spec;

void task_spec_init(task_spec *t);
void task_spec_fini(task_spec *t);

#endif

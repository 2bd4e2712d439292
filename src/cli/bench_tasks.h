/* bench_tasks: the task engine's scenario of `silt bench`: producers send
 * tasks, workers claim them (starting them in the same call), do nothing and
 * complete them in one request per claim. Throughput counts completed tasks;
 * latency is each task's, from the moment its send left the producer to the
 * reply that completed it. */
#ifndef SILT_BENCH_TASKS_H
#define SILT_BENCH_TASKS_H
#include <stdbool.h>
#include <stdint.h>
#include "cli/bench_load.h"

typedef struct bench_tasks_result {
    uint64_t sent, completed;
    double   p50_ms, p99_ms;      /* send to completion */
} bench_tasks_result;

#define BENCH_TASK_WORKERS 8       /* worker connections */
#define BENCH_TASK_SEND_BATCH 25   /* tasks per send */
#define BENCH_TASK_CLAIM 100       /* tasks per claim */
#define BENCH_TASK_PRODUCERS 8     /* send connections */
/* Tasks sent but not completed beyond which producers hold off (they send
 * GET /health a millisecond apart instead), so the queue never grows without
 * bound and the latency measured is the engine's. */
#define BENCH_TASK_BACKLOG 1000

#define BENCH_WORKFLOW_FAN 100     /* workflow scenario: root, this many nodes, sink */
#define BENCH_WORKFLOW_PRODUCERS 2
/* The same for workflows, in nodes: a workflow's nodes count from its
 * start, but only a stage of it can be claimed at a time (the root, then
 * the fan, then the sink), so twice the tasks' backlog keeps about as many
 * claimable as the tasks scenario has. */
#define BENCH_WORKFLOW_BACKLOG (2 * BENCH_TASK_BACKLOG)

/* cfg->workers connections in all: the first producers send (tasks, or
 * with workflows a fan-out/fan-in workflow each), the rest are task
 * workers. With workflows the rate counts nodes completed, and latency is
 * left to the requests' own. */
int bench_tasks_run(const bench_config *cfg, int producers, const char *queue, bool workflows, bench_stats *stats,
                    bench_tasks_result *out) __attribute__((warn_unused_result));

#endif

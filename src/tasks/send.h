/* send: a batch of tasks as one call of tasks.send (sql/019_tasks.sql): one
 * typed array per field, parallel, like every batch between C and SQL
 * (docs/architecture.md, "Between C and SQL"). The call's rows are (idx,
 * id, created), one per task in batch order; created is false when an
 * idempotency key named an earlier task, whose id comes back instead. */
#ifndef SILT_TASK_SEND_H
#define SILT_TASK_SEND_H
#include <stddef.h>
#include "db/pool.h"
#include "tasks/tasks.h"

void task_send_call(db_job *job, const task_spec *specs, size_t n);

#endif

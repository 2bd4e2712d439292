/* send: a batch of tasks as one call of tasks.enqueue (sql/functions/tasks_send.sql), which
 * checks them against silt's rules, gives each its queue's defaults and
 * sends them through tasks.send: one
 * typed array per field, parallel, like every batch between C and SQL
 * (docs/architecture.md, "Between C and SQL"). The call's rows are (idx,
 * id, created, changed), one per task in batch order; created is false
 * when an idempotency key or a unique key named an earlier task, whose id
 * comes back instead; changed is NULL for a task sent without "unique",
 * else whether the send changed the task it got back (replace, debounce).
 * Sends from concurrent requests are gathered into one call (tasks/gather.h). */
#ifndef SILT_TASK_SEND_H
#define SILT_TASK_SEND_H
#include <stddef.h>
#include "db/array.h"
#include "tasks/tasks.h"

/* The arrays of one call: TASK_SEND_ARRAYS of them (a gather's). */
#define TASK_SEND_ARRAYS 19
void task_send_add(db_array *arrays, const task_spec *t);
/* Elements of a retry policy (workflow nodes carry them too): the fixed
 * delays as an int[] literal, the codes that retry as a text[] literal
 * (NULL: none given), a positive int or NULL. */
void task_add_delays(db_array *a, const task_retry *r);
void task_add_retry_on(db_array *a, const task_retry *r);
void task_add_optional_int(db_array *a, int64_t v);

#endif

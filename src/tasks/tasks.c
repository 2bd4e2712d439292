/* tasks: statuses and the send record (see tasks.h). */
#include "tasks/tasks.h"
#include <stdlib.h>
#include <string.h>

static const char *const statuses[] = { TASK_STATUSES };
#define NSTATUSES (sizeof statuses / sizeof statuses[0])
#define NLIVE 3   /* PENDING, CLAIMED, RUNNING */

static int status_index(const char *s)
{
    for (size_t i = 0; s && i < NSTATUSES; i++)
        if (strcmp(s, statuses[i]) == 0) return (int)i;
    return -1;
}

bool task_status_valid(const char *s) { return status_index(s) >= 0; }
bool task_status_terminal(const char *s) { return status_index(s) >= NLIVE; }

void task_spec_init(task_spec *t)
{
    memset(t, 0, sizeof *t);
    t->priority = TASK_PRIORITY_DEFAULT;
}

void task_spec_fini(task_spec *t)
{
    free(t->name);
    free(t->queue);
    free(t->args);
    free(t->run_at);
    free(t->good_until);
    free(t->idempotency_key);
    free(t->rate_key);
    free(t->unique);
    free(t->retention_key);
    for (int i = 0; i < t->retry.nretry_on; i++) free(t->retry.retry_on[i]);
    memset(t, 0, sizeof *t);
}

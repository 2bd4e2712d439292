/* workflow_support: helpers the workflow tests share. Node tasks are run
 * by the test itself, each ended by its task name: "bad" fails with BOOM,
 * any other completes with {"node": <its node id>}. */
#ifndef SILT_WORKFLOW_SUPPORT_H
#define SILT_WORKFLOW_SUPPORT_H
#include "support.h"

/* POST /api/v1/workflows body; fails the test unless 201. Returns the id
 * (sfmt ring: keep_str what must last). */
const char *wf_start(silt_server *s, const char *body);
/* Claims (with start) what is claimable on queue q once and ends each task
 * by its name. Returns how many were claimed. */
int wf_run_round(silt_server *s, const char *q);
/* Rounds on q until workflow wf is not running any more (or a deadline). */
void wf_run_until_settled(silt_server *s, const char *q, const char *wf);
/* A node's status as clients see it (tasks.workflow_nodes), a workflow's. */
const char *wf_node_status(const char *wf, const char *node);
const char *wf_status(const char *wf);
/* Every row of the workflow and task tables (workflows, nodes, live tasks,
 * history, idempotency keys, the outbox) as text, malloc'd: a refused
 * request must leave it as it was. */
char *wf_state(void);

#endif

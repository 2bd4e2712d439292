/* task_support: helpers the task-engine tests share. */
#ifndef SILT_TASK_SUPPORT_H
#define SILT_TASK_SUPPORT_H
#include <stdbool.h>
#include "support.h"

/* Sends one task (a JSON object); fails the test unless 201. Returns its id
 * (sfmt ring: keep_str what must last). */
const char *task_send(silt_server *s, const char *task_json);

typedef struct task_claimed {
    char id[96], claim[96];
    int  attempt;
} task_claimed;

/* Claims at most one task of queue for worker (no wait); false when none. */
bool task_claim_one(silt_server *s, const char *worker, const char *queue, task_claimed *c);
/* The same, long-polling up to wait_ms for a task to become claimable. */
bool task_claim_waiting(silt_server *s, const char *worker, const char *queue, int wait_ms, task_claimed *c);
/* POST /api/v1/tasks/:id/<what> {"claimId": ..., extra}: the reply status. */
int  task_call(silt_server *s, const char *what, const task_claimed *c, const char *extra);
/* One heartbeat of worker for c: the state the server answers ("ok",
 * "cancelled", "lost"). */
const char *task_heartbeat(silt_server *s, const char *worker, const task_claimed *c);
/* POST /api/v1/tasks/:id/rerun with body (NULL: none): the status, the
 * reply in r. */
int task_rerun(silt_server *s, const char *id, const char *body, reply *r);
/* A task sent, claimed and started through worker (c), with a GET ?wait
 * for its end parked on waiter (w, started in the background). */
void task_started_with_wait(silt_server *worker, silt_server *waiter, task_claimed *c, bg_req *w);
/* A task sent, claimed, started and completed through worker while a
 * GET ?wait parks on waiter: fails the test unless the wait answers 200
 * within 3 s of the completion, woken by an announcement (the recheck of a
 * parked wait comes 5 s after it parks). */
void task_wait_woken_across(silt_server *waiter, silt_server *worker);

#endif

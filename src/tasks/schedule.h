/* schedule: the schedules fired on their cron, each slot once across any
 * number of servers (tasks.schedule_fire: whoever moves the shared state
 * from an earlier slot to this one inserts the task). Every server runs
 * one; a tick each second fires what is due.
 *
 * Two origins, one rule (docs/workflows.md, "Schedules"). silt.conf's
 * schedules are fired by each server from its own file, as they always
 * were; at start the server writes them to tasks.schedules (origin
 * `config`, scheduler_declare) so that every server lists them and the API
 * refuses to change them. API schedules live only in tasks.schedules: each
 * tick reads their definitions again, so a create, change, pause, resume or
 * delete made on any server is honoured by every server from its next tick
 * (SCHEDULE_TICK_MS), and a fire names the version of the definition it
 * read, which the database checks: nothing fires from a definition after a
 * change, pause or delete of it committed.
 *
 * Slots come from cron_next (base/cron.h), in the schedule's timezone,
 * from the last slot the database records. A slot due within
 * SCHEDULE_GRACE_S fires; older ones were missed (the servers were down):
 * catch_up 0 passes over them all, catch_up N fires the N most recent of
 * them, oldest first, and passes over the rest. A schedule the database
 * has never seen starts from now: nothing before its first start is owed
 * (the same for an API schedule created, resumed, or given a new cron or
 * timezone: sql/functions/schedules.sql). */
#ifndef SILT_SCHEDULE_H
#define SILT_SCHEDULE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include <libpq-fe.h>
#include "base/conffile.h"
#include "db/pool.h"
#include "tasks/hub.h"

#define SCHEDULE_GRACE_S   60
#define SCHEDULE_TICK_MS   1000
/* Slots walked per tick (a walk step costs ~0.15 ms): a downtime that
 * missed more passes over every missed slot, whatever catch_up says. */
#define SCHEDULE_MAX_WALK  2000

typedef struct scheduler scheduler;

/* conf outlives the scheduler. */
scheduler *scheduler_new(struct event_base *base, db_pool *pool, task_hub *hub, const silt_conf *conf);
void       scheduler_free(scheduler *s);
void       scheduler_stop(scheduler *s);
bool       scheduler_idle(const scheduler *s);

/* At server start, before the scheduler runs: writes conf's schedules to
 * tasks.schedules as origin `config` and deletes the config rows it no
 * longer declares (tasks.schedules_declare); an API schedule of the same
 * name is taken over by the file, with a warning. 0, or -1 logged. */
int        scheduler_declare(PGconn *pg, const silt_conf *conf) __attribute__((warn_unused_result));

#endif

/* schedule: the schedules of silt.conf fired on their cron, each slot once
 * across any number of servers (tasks.schedule_fire: whoever moves the
 * shared state from an earlier slot to this one inserts the task). Every
 * server runs one; a tick each second fires what is due.
 *
 * Slots come from cron_next (base/cron.h), in the schedule's timezone,
 * from the last slot the database records. A slot due within
 * SCHEDULE_GRACE_S fires; older ones were missed (the servers were down):
 * catch_up 0 passes over them all, catch_up N fires the N most recent of
 * them, oldest first, and passes over the rest. A schedule the database
 * has never seen starts from now: nothing before its first start is owed. */
#ifndef SILT_SCHEDULE_H
#define SILT_SCHEDULE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include "base/conffile.h"
#include "db/pool.h"
#include "tasks/hub.h"

#define SCHEDULE_GRACE_S   60
#define SCHEDULE_TICK_MS   1000
/* Slots walked per tick (a walk step costs ~0.15 ms): a downtime that
 * missed more passes over every missed slot, whatever catch_up says. */
#define SCHEDULE_MAX_WALK  2000

typedef struct scheduler scheduler;

scheduler *scheduler_new(struct event_base *base, db_pool *pool, task_hub *hub, const silt_conf *conf);
void       scheduler_free(scheduler *s);
void       scheduler_stop(scheduler *s);
bool       scheduler_idle(const scheduler *s);

#endif

/* hub: what the task engine keeps between requests on one server. Whatever
 * changed a task announces it once committed: "sent:<queue>" when a queue
 * got claimable work, "done:<task id>" when a task became terminal (to
 * the other servers, "done:<id>,<id>..." for as many as fit). An
 * announcement wakes the claimers and result waiters parked here at once,
 * and goes to the other servers as a NOTIFY on channel silt_tasks, sent in a
 * transaction of its own after the commit (one per batch of announcements:
 * a notifying transaction holds a cluster-wide lock through its commit, so
 * the engine's own transactions never notify). The hub listens on that
 * channel for the other servers' announcements, and runs recovery every
 * check interval (one server per round does it: tasks.recover_if_owner).
 *
 * A parked caller registers before it queries, so a wake-up that arrives
 * while its query is in flight is not lost: task_park_woken says so, and the
 * caller queries again. */
#ifndef SILT_TASK_HUB_H
#define SILT_TASK_HUB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include "base/conffile.h"
#include "db/pool.h"
#include "tasks/gather.h"

typedef struct task_hub task_hub;
typedef struct task_park task_park;
/* Called once: woken (a notification matched) or timed out. The park is
 * gone afterwards. */
typedef void (*task_wake_fn)(void *arg, bool timed_out);

/* conf (silt.conf: its queues and [recovery]) must outlive the hub. */
task_hub *task_hub_new(struct event_base *base, db_pool *pool, const char *conninfo, const silt_conf *conf);
void      task_hub_free(task_hub *h);
const conf_recovery *task_hub_recovery(const task_hub *h);
/* The declared queue, or NULL; *known is false when queues are declared and
 * name is not one of them (none declared: any name is accepted). */
const conf_queue *task_hub_queue(const task_hub *h, const char *name, bool *known);
/* Where sends and ends of attempts gather (one call per flush each). The
 * finish gather's arrays: ids, claim ids, outcomes ('COMPLETED' or
 * 'FAILED'), results, error codes, messages (tasks.finish_many). */
gather   *task_hub_sends(task_hub *h);
gather   *task_hub_finishes(task_hub *h);
#define TASK_FINISH_ARRAYS 6
/* Claims gather too (tasks.claim_many: workers, queue-list literals, cap
 * literals, maxima, start flags, rate-limit literals or NULL), one batch in
 * flight. */
gather   *task_hub_claims(task_hub *h);
#define TASK_CLAIM_ARRAYS 6
/* No recovery pass in flight, nothing gathered and nobody parked. */
bool      task_hub_idle(const task_hub *h);
/* Shutdown: stop recovery and wake every parked caller (timed out). */
void      task_hub_drain(task_hub *h);

/* After a commit: "sent:<queue>" or "done:<task id>". */
void      task_hub_announce(task_hub *h, const char *what);
void      task_hub_announce_sent(task_hub *h, const char *queue);
void      task_hub_announce_done(task_hub *h, const uint8_t id[16]);
/* A queue was paused or resumed (committed): "paused:<queue>" or
 * "resumed:<queue>". Every server keeps the paused queues it last heard of
 * (read whole from tasks.paused_queues whenever its channel is heard
 * again) and wakes no claimer for a send to one of them; a resume wakes the
 * queue's claimers. The database decides what a claim takes (tasks.claim
 * skips paused queues): a stale view here costs a look or a wait of at most
 * TASK_RECHECK_MS, never a task claimed from a paused queue. */
void      task_hub_announce_paused(task_hub *h, const char *queue, bool paused);
/* done, and sent for a capped queue (a slot came free). */
void      task_hub_announce_end(task_hub *h, const uint8_t id[16], const char *queue);

/* The message log's commits travel to the other servers on the same
 * channel, so that a long-poll parked on any server wakes (issue 14):
 * "log:<queue>[\t<partition>...]" (no partitions: any of the queue's).
 * Commits through this server wake its own parked pops first-hand; this
 * only tells the others. */
void      task_hub_announce_log(task_hub *h, const char *queue, const char *const *partitions, size_t n);
/* An ack through this server gave a lease of group back ("lease:<group>"):
 * what it held is deliverable again to the group's pops on every server. */
void      task_hub_announce_lease(task_hub *h, const char *group);
/* Who hears the other servers' log commits: queue and partitions as
 * announced (partitions NULL: any); or group, a lease of it came free; or
 * neither: notifications may have been missed (the listener reconnected),
 * every parked pop looks again. */
typedef void (*task_log_wake_fn)(void *arg, const char *queue, const char *group,
                                 const char *const *partitions, size_t n);
void      task_hub_on_log(task_hub *h, task_log_wake_fn fn, void *arg);
/* Who hears that pushes made from SQL wait in the outbox ("sql outbox",
 * sent by queen.push in the pusher's transaction: streams/outbox.h), and
 * that some may have been missed (the listener reconnected). */
typedef void (*task_outbox_fn)(void *arg);
void      task_hub_on_outbox(task_hub *h, task_outbox_fn fn, void *arg);
/* The channel is heard: the silt_notify_listening gauge. */
bool      task_hub_listening(const task_hub *h);
/* No other server has said hello for a while: announcements go to nobody
 * (see "presence" in hub.c). The silt_notify_alone gauge. */
bool      task_hub_alone(const task_hub *h);

/* Parks until a task becomes terminal (id) or wait_ms pass (at most
 * TASK_WAIT_RECHECK_MS: an announcement lost with a server that died
 * between its commit and its NOTIFY costs a waiter that long, no more). */
task_park *task_park_done(task_hub *h, const uint8_t id[16], int64_t wait_ms, task_wake_fn fn, void *arg);
/* Parks until one of queues gets claimable work or wait_ms pass (at most
 * TASK_RECHECK_MS: a delayed or retried task becomes claimable by time,
 * which nothing announces). */
task_park *task_park_sent(task_hub *h, char *const *queues, size_t nqueues, int64_t wait_ms,
                          task_wake_fn fn, void *arg);
/* A notification matched since the park was made (or the listener
 * reconnected); the park stays until it fires or is cancelled. */
bool       task_park_woken(const task_park *p);
/* Brings the park's end forward to ms from now, if that is sooner. */
void       task_park_shorten(task_park *p, int64_t ms);
/* Fires the park at once if it was woken meanwhile, else leaves it waiting. */
void       task_park_arm(task_park *p);
void       task_park_cancel(task_park *p);
int        task_hub_parked_claims(const task_hub *h);   /* claims waiting for work */
int        task_hub_parked_waits(const task_hub *h);    /* GET ?wait= waiting for an end */

#define TASK_RECHECK_MS 1000
#define TASK_WAIT_RECHECK_MS 5000

#endif

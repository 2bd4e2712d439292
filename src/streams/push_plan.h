/* push_plan: how a set of pushed items becomes segment writes. Items are
 * sorted by (queue, partition) — one lock order for every writer — grouped
 * one segment per partition, and repeats of a client transactionId inside the
 * set are marked as duplicates of the first. Push fusion, transactions and
 * dead-letter replay all write through a plan. */
#ifndef SILT_PUSH_PLAN_H
#define SILT_PUSH_PLAN_H
#include <stdbool.h>
#include <stddef.h>
#include "db/pool.h"
#include "streams/push.h"

typedef struct push_group {
    push_item **items;       /* into the plan's sorted array */
    size_t      n;
} push_group;

typedef struct push_plan {
    push_item **items;       /* the pending items, sorted */
    size_t      nitems;
    push_group *groups;
    size_t      ngroups;
    int         call;        /* index of the push_flush call in its job */
    bool        buffered;    /* after resolve: held by maintenance mode, not in the log */
} push_plan;

#define PUSH_DUPLICATE_SQLSTATE "SLD01"

void push_plan_init(push_plan *plan);
void push_plan_fini(push_plan *plan);
/* (Re)builds the plan from the items still PUSH_PENDING among items[0..n). */
void push_plan_build(push_plan *plan, push_item *const *items, size_t n);
/* Appends the push_flush call writing every group, one segment each. */
void push_plan_calls(push_plan *plan, db_job *job, int zstd_level);
/* After a failed job: when the failure is a duplicate refusal from one of
 * this plan's calls, marks the duplicates and returns true (retry the job). */
bool push_plan_take_duplicates(push_plan *plan, const db_reply *reply);
/* After a failed job: when a queue refused plaintext and this server has the
 * key, remembers that the queue encrypts and returns true (retry the job). */
bool push_plan_take_encryption(push_plan *plan, const db_reply *reply);
/* After the job committed: written items are queued (buffered when push_flush
 * held them for maintenance mode: its rows have no offsets), repeats
 * duplicate. */
void push_plan_resolve(push_plan *plan, const db_reply *reply);
/* After the job committed: tells fn which partitions of each queue the plan
 * wrote (a buffered plan wrote none), so parked pops wake. */
void push_plan_announce(const push_plan *plan, push_commit_fn fn, void *arg);

#endif

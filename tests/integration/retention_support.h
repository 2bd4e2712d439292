/* retention_support: what the retention integration tests share. Time is
 * controlled by backdating rows, never by sleeping through a window:
 * segments, sidecar rows, partitions and cursors are aged in SQL, the
 * schedule is recomputed (refresh), then a pass is run through
 * POST /api/v1/system/retention/run and its report, the database and
 * retention_history are read back. */
#ifndef SILT_TEST_RETENTION_SUPPORT_H
#define SILT_TEST_RETENTION_SUPPORT_H
#include <stdbool.h>
#include "support.h"

#define HOUR 3600L
#define DAY  86400L

/* One push request of n messages: one segment. */
void push(silt_server *s, const char *q, const char *part, int n);
/* One message with a chosen transactionId: one segment. */
void push_txn(silt_server *s, const char *q, const char *part, const char *txn);
const char *pid_of(const char *q, const char *part);
/* Moves the commit time of segments (or sidecar rows) with base offsets in
 * [lo, hi) back by secs. Ageing lower ranges further keeps created_at
 * non-decreasing with offset, as push guarantees. */
void age_segments(const char *pid, long long lo, long long hi, long secs);
void age_txns(const char *pid, long long lo, long long hi, long secs);
/* The schedule the engine finds work through (retention_check_at,
 * sidecar_check_at) follows commit times; after backdating rows it is
 * recomputed the way a step recomputes it. */
void refresh(const char *q);
/* A step that finds a partition old enough but pinned by a consumer group
 * looks at it again a pass later: RETENTION_INTERVAL_MS in seconds, at
 * least 1 (test servers have 0). Moving the schedule back by that second is
 * the time of one pass passing. */
void a_pass_later(const char *q);
long long log_start(const char *pid);
long long txns_start(const char *pid);
long long segments(const char *pid);
long long txns_rows(const char *pid);
long long partition_exists(const char *pid);
long long committed(const char *pid, const char *group);
long long dlq_rows(const char *q);
/* Polls until the query gives want (a pass the server runs on its own), at
 * most 10 s; fails the test when it never does. */
void wait_until(const char *query, const char *want);
/* retention_history of a queue: "partition rule from-to dropped leased; ..." */
const char *history(const char *q);
/* An ISO 8601 UTC timestamp secs ago. */
const char *ts_ago(long secs);
/* Pops (path: the queue, or the queue's partition when part is given) and
 * returns the offsets delivered, "0,1,2", or "none" on 204. */
const char *pop_offsets(silt_server *s, const char *q, const char *part, const char *query);
/* Runs a pass now (dry: only reports) and keeps the report in r. */
void run(silt_server *s, bool dry, reply *r);
void run_pass(silt_server *s);
/* Runs passes until the query gives want (a server may also start the next
 * pass by itself, then /run answers 409 and this waits), at most 10 s. */
bool run_until(silt_server *s, const char *query, const char *want);
/* The report's entries for queue q, "partition rule from-to offsets leased
 * segments; ...", by partition and offset. */
const char *report_of(const reply *r, const char *q);
/* One pass; returns its report for q. */
const char *run_report(silt_server *s, bool dry, const char *q);
void explain(silt_server *s, const char *q, reply *r);
void queue_detail(silt_server *s, const char *q, reply *r);
void ack(silt_server *s, const char *txn, const char *pid, const char *status, const char *group,
         const char *lease, reply *r);
/* Dead-letters the next message of the group (pop one, ack dlq). */
void dead_letter_next(silt_server *s, const char *q, const char *group, const char *txn);
/* Moves a partition's whole timeline back by secs (segments, sidecar rows,
 * every time the partition row carries, its groups' activity); live leases
 * stay live. */
void travel(const char *pid, long secs);
/* A partition of q (retentionSeconds 3600) whose two messages a group
 * consumed and a pass removed: empty since now. */
const char *emptied_partition(silt_server *s, const char *q, const char *part);

#endif

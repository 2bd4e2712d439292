/* statements: the C side of the SQL interface (functions live in sql/).
 *
 * Between C and SQL there is one way (docs/architecture.md, "Between C and
 * SQL"):
 *  - parameters: a scalar as text; a batch as one typed array per field,
 *    parallel, each a text-format literal from db/array.h, except the
 *    uuid[] and text[] of the task engine's gathered batches (tasks.enqueue,
 *    tasks.finish_many, task_notify), which db/array.h sends in binary
 *    format (a gathered send's array of NULLs alone goes as NULL:
 *    gather_nulls_as_null); bytes as bytea in binary format, a batch of them concatenated
 *    in one bytea (16 bytes per hash, or with a lengths array). Never JSON,
 *    never hex.
 *  - results: always binary (the pool asks for them), read only through
 *    db/result.h, whose helpers check each column's type and format and
 *    abort naming the column when a statement and its reader disagree.
 *  - data in an error's DETAIL: a plain list, "<index>:<offset>,...". */
#include "db/statements.h"

const db_statement db_statements[STMT_COUNT] = {
    [STMT_PUSH_FLUSH]   = { "push_flush",
        "SELECT idx, partition_id, base_offset, created_at FROM queen.push_flush($1, $2, $3, $4, $5, $6, $7, $8, $9)", 9 },
    [STMT_POP]          = { "pop",
        "SELECT queue, partition_id, partition, cursor_from, cursor_to, seg_base, seg_created, seg_blob"
        " FROM queen.pop($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)", 11 },   /* sql/035 */
    [STMT_POP_MANY]     = { "pop_many",   /* pops the server gathered (streams/pop.c, "Gathered pops") */
        "SELECT queue, partition_id, partition, cursor_from, cursor_to, seg_base, seg_created, seg_blob, member"
        " FROM queen.pop_many($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", 10 },
    [STMT_ACK]          = { "ack",
        "SELECT idx, success, error, lease_released, dlq, noop, dropped, dlq_offset, dlq_base,"
        " dlq_created, dlq_blob FROM queen.ack($1, $2, $3, $4, $5, $6)", 6 },   /* sql/033 */
    [STMT_ACK_KNOWN]    = { "ack_known",   /* sql/033: one lease's items, their offsets known */
        "SELECT applied, committed_before, released FROM queen.ack_known($1, $2, $3, $4, $5)", 5 },
    [STMT_GATHERED_LOCK_TIMEOUT] = { "gathered_lock_timeout",   /* streams/ack.c, "gathered acks" */
        "SELECT set_config('lock_timeout', '200ms', true)", 0 },
    [STMT_DEAD_LETTER]  = { "dead_letter",   /* sql/030 */
        "SELECT lease_released, error FROM queen.dead_letter($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)", 11 },
    [STMT_EXTEND_LEASE] = { "extend_lease",
        "SELECT renewed, expires_at FROM queen.extend_lease($1, $2)", 2 },
    [STMT_RELEASE_LEASE] = { "release_lease",   /* a pop that could not read what it claimed */
        "UPDATE queen.log_consumers SET lease_id = NULL, lease_end = NULL, lease_expires = NULL,"
        " last_activity_at = now() WHERE lease_id = $1", 1 },
    [STMT_POP_WAKE_AT]  = { "pop_wake_at", "SELECT queen.pop_wake_at($1, $2, $3, $4, $5, $6)", 6 },
    [STMT_POP_SEEN]     = { "pop_seen", "SELECT now()::text", 0 },   /* the time a waiting pop looked at */
    [STMT_READY_RECONCILE] = { "ready_reconcile",   /* sql/031: both (docs/schema.md) */
        "SELECT queen.queue_is_wide($2), queen.ready_reconcile($1, $2)", 2 },
    [STMT_READY_PRUNE]  = { "ready_prune", "SELECT queen.log_writes_prune()", 0 },
    [STMT_CONFIGURE]    = { "configure",
        "SELECT namespace, task, options, (options->>'encryptionEnabled')::boolean FROM queen.configure($1, $2, $3, $4)", 4 },
    /* administration: one jsonb value each (NULL: not found) */
    /* a list's second column: how many the filter matches in all (X-Total-Count) */
    [STMT_QUEUE_LIST]   = { "queue_list", "SELECT queen.queue_list($1, $2, $3, $4, $5), queen.queue_count($3)", 5 },
    [STMT_QUEUE_DETAIL] = { "queue_detail", "SELECT queen.queue_detail($1, $2, $3)", 3 },
    [STMT_QUEUE_DELETE] = { "queue_delete",   /* NULL (404) when there was no such queue */
        "SELECT CASE WHEN queen.queue_delete($1) THEN jsonb_build_object('deleted', true) END", 1 },
    [STMT_OVERVIEW]     = { "overview", "SELECT queen.overview()", 0 },
    [STMT_GROUP_LIST]   = { "group_list",
        "SELECT queen.group_list($1, $2, $3, $4, $5, $6, $7, $8), queen.group_count($3, $6)", 8 },
    [STMT_GROUP_DETAIL] = { "group_detail", "SELECT queen.group_detail($1, $2, $3, $4, $5)", 5 },
    [STMT_GROUP_DELETE] = { "group_delete",   /* NULL (404) when the group has nothing there */
        "SELECT CASE WHEN queen.group_known($1, $2)"
        " THEN jsonb_build_object('deleted', true, 'cursors', queen.group_delete($1, $2, $3)) END", 3 },
    [STMT_GROUP_SUBSCRIPTION] = { "group_subscription",
        "SELECT jsonb_build_object('updated', queen.group_set_subscription($1, $2), 'subscriptionTimestamp', queen.iso_ms($2::timestamptz))", 2 },
    [STMT_SEEK]         = { "seek", "SELECT queen.seek($1, $2, $3, $4, $5)", 5 },
    /* dead letters: rows in DLQ_COLUMNS order (see api/dead_letters.c) */
    [STMT_DLQ_COUNT]    = { "dlq_count", "SELECT queen.dlq_count($1, $2, $3)", 3 },
    [STMT_DLQ_PAGE]     = { "dlq_page", "SELECT " DLQ_COLUMNS " FROM queen.dlq_page($1, $2, $3, $4, $5)", 5 },
    [STMT_DLQ_GET]      = { "dlq_get", "SELECT " DLQ_COLUMNS " FROM queen.log_dlq WHERE id = $1", 1 },
    [STMT_DLQ_TAKE]     = { "dlq_take", "SELECT queen.dlq_take($1)", 1 },
    [STMT_DLQ_BY_MESSAGE] = { "dlq_by_message", "SELECT " DLQ_COLUMNS " FROM queen.log_dlq"
        " WHERE partition_id = $1 AND transaction_id = $2 ORDER BY failed_at DESC, id DESC", 2 },
    [STMT_DLQ_DELETE_MESSAGE] = { "dlq_delete_message",
        "WITH gone AS (DELETE FROM queen.log_dlq WHERE partition_id = $1 AND transaction_id = $2 RETURNING 1)"
        " SELECT count(*)::integer FROM gone", 2 },
    /* bulk replay and delete: $1..$6 the filter (queen.dlq_matching) */
    [STMT_DLQ_MATCH_COUNT] = { "dlq_match_count",
        "SELECT count(*) FROM queen.dlq_matching($1, $2, $3, $4, $5, $6)", 6 },
    [STMT_DLQ_MATCH_PAGE] = { "dlq_match_page", "SELECT " DLQ_COLUMNS " FROM queen.dlq_matching($1, $2, $3, $4, $5, $6)"
        " ORDER BY failed_at, id LIMIT $7", 7 },
    [STMT_DLQ_DELETE_MATCHING] = { "dlq_delete_matching",
        "SELECT deleted, more FROM queen.dlq_delete_matching($1, $2, $3, $4, $5, $6, $7)", 7 },
    [STMT_DLQ_TAKE_MANY] = { "dlq_take_many", "SELECT queen.dlq_take_many($1::uuid[])", 1 },
    /* the dashboard's history (sql/functions/history.sql) */
    [STMT_HISTORY_ROLL] = { "history_roll", "SELECT queen.minute_stats_roll(now())", 0 },
    [STMT_HISTORY]      = { "history", "SELECT minute, seconds, pushed, consumed, dead_lettered"
        " FROM queen.minute_history($1, $2)", 2 },
    [STMT_MESSAGE_LOOKUP] = { "message_lookup", "SELECT queue, partition, message_offset, seg_base, seg_created,"
        " seg_blob FROM queen.message_lookup($1, $2) WHERE message_offset IS NOT NULL", 2 },
    /* transactions */
    [STMT_REQUIRE_LEASES] = { "require_leases", "SELECT queen.require_leases($1::uuid[])", 1 },
    [STMT_TX_ACK]       = { "tx_ack",   /* sql/030 */
        "SELECT idx, success, error, lease_released, dlq, noop, dropped, dlq_offset, dlq_base,"
        " dlq_created, dlq_blob FROM queen.tx_ack($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,"
        " $16)", 16 },
    [STMT_SEGMENT_FOR_COPY] = { "segment_for_copy",
        "SELECT base, created, blob, $3::bigint, $2::bigint FROM queen.covering_segment($1, $2)", 3 },
    /* retention */
    [STMT_RET_CANDIDATES] = { "ret_candidates",
        "SELECT partition_id, queue, partition, kind FROM queen.retention_candidates(now(), $1)", 1 },
    [STMT_RET_STEP]     = { "ret_step", "SELECT status, rule, from_offset, to_offset, dropped, leased_dropped,"
        " segments, more FROM queen.retention_step($1, $2, $3, now(), $4, $5, $6)", 6 },
    [STMT_RET_SIDECAR_STEP] = { "ret_sidecar_step",
        "SELECT status, purged, next_offset, more FROM queen.sidecar_step($1, $2, $3, now(), $4, $5)", 5 },
    [STMT_RET_CLEANUP]  = { "ret_cleanup",
        "SELECT status, removed, more FROM queen.partition_cleanup($1, $2, $3, now(), $4)", 4 },
    [STMT_RET_CLAIM]    = { "ret_claim", "SELECT queen.retention_claim($1, $2)", 2 },
    [STMT_RET_RELEASE]  = { "ret_release", "SELECT queen.retention_release($1)", 1 },
    [STMT_RET_EXPLAIN]  = { "ret_explain", "SELECT queen.retention_explain($1, $2, now(), $3, $4)", 4 },
    [STMT_RET_ANALYTICS] = { "ret_analytics", "SELECT queen.retention_analytics("
        "coalesce($1::timestamptz, now() - interval '1 hour'), coalesce($2::timestamptz, now()), $3)", 3 },
    /* maintenance mode: rows in the order streams/maintenance.c reads them */
    [STMT_MAINT_STATUS] = { "maint_status", "SELECT enabled, draining, buffered, oldest_buffered_at, updated_at"
        " FROM queen.maintenance_status()", 0 },
    [STMT_MAINT_SET]    = { "maint_set", "SELECT enabled, draining, buffered, oldest_buffered_at, updated_at"
        " FROM queen.maintenance_set($1)", 1 },
    [STMT_MAINT_DRAIN]  = { "maint_drain", "SELECT queue, messages FROM queen.drain_push_buffer($1)", 1 },
    /* traces: rows in the order api/traces.c reads them */
    [STMT_TRACE_RECORD] = { "trace_record",
        "SELECT queen.trace_record($1, $2, $3, $4, $5, $6, $7, $8, $9)", 9 },
    [STMT_TRACES_OF_MESSAGE] = { "traces_of_message", "SELECT id, event_type, data, consumer_group, worker_id,"
        " created_at, trace_name FROM queen.traces_of_message($1, $2)", 2 },
    [STMT_TRACES_BY_NAME] = { "traces_by_name", "SELECT id, transaction_id, partition_id, event_type, data,"
        " consumer_group, worker_id, created_at, queue, partition, trace_name, message_offset, seg_base, seg_blob"
        " FROM queen.traces_by_name($1, $2, $3)", 3 },
    [STMT_TRACE_NAMES]  = { "trace_names", "SELECT trace_name, trace_count, message_count, last_seen"
        " FROM queen.trace_names($1, $2)", 2 },
    [STMT_TRACE_NAME_COUNT] = { "trace_name_count",
        "SELECT count(DISTINCT trace_name) FROM queen.message_trace_names", 0 },
    /* tasks (each function's live file: docs/schema.md) */
    [STMT_TASK_SEND]    = { "task_send", "SELECT idx, id, created, changed FROM tasks.enqueue($1, $2, $3, $4, $5, $6, $7,"
        " $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $19, false, p_rate_keys => $18)", 19 },
    /* finished_at from the id's birth on: PostgreSQL reads only the history
     * leaves of that day and later (sql/024) */
    [STMT_TASK_GET]     = { "task_get", "SELECT " TASK_COLUMNS " FROM tasks.all_tasks WHERE id = $1"
        " AND (finished_at IS NULL OR finished_at >= tasks.history_floor($1))", 1 },
    /* $1 queue, $2 status, $3 a substring of the name (queen.name_matches) */
#define TASK_FILTER " FROM tasks.all_tasks WHERE ($1::text IS NULL OR queue_name = $1)" \
        " AND ($2::text IS NULL OR status = $2) AND queen.name_matches(task_name, $3)"
    [STMT_TASK_LIST]    = { "task_list", "SELECT " TASK_COLUMNS TASK_FILTER
        " AND ($4::uuid IS NULL OR id > $4) ORDER BY id LIMIT $5", 5 },
    [STMT_TASK_LIST_DESC] = { "task_list_desc", "SELECT " TASK_COLUMNS TASK_FILTER
        " AND ($4::uuid IS NULL OR id < $4) ORDER BY id DESC LIMIT $5", 5 },
    /* counted up to API_PAGE_COUNT_CAP + 1: a rare name's count reads no further than its list */
    [STMT_TASK_COUNT]   = { "task_count", "SELECT count(*) FROM (SELECT 1" TASK_FILTER " LIMIT 10001) t", 3 },
#undef TASK_FILTER
    [STMT_TASK_CANCEL]  = { "task_cancel", "SELECT tasks.cancel($1)", 1 },
    /* sql/027: rows in the order api/tasks.c reads them */
    [STMT_TASK_ATTEMPTS] = { "task_attempts", "SELECT attempt, worker_id, claim_id, started_at, finished_at, outcome,"
        " error_code, error_message FROM tasks.attempts($1)", 1 },
    /* rows in the order api/workers.c reads them */
    [STMT_TASK_CLAIM_MANY] = { "task_claim_many", "SELECT idx, id, task_name, queue_name, args, priority, claim_id,"
        " attempt, retry_count, timeout_ms, status FROM tasks.claim_many($1, $2, $3, $4, $5, $6)", 6 },
    /* milliseconds until the earliest delayed task of these queues is due (NULL: none) */
    [STMT_TASK_NEXT_RUN] = { "task_next_run",
        "SELECT ceil(extract(epoch FROM tasks.next_run_at($1) - now()) * 1000)::bigint", 1 },
    /* milliseconds until a parked claim naming a rate-limited queue should look again (NULL: none known) */
    [STMT_TASK_CLAIM_WAKE] = { "task_claim_wake",
        "SELECT ceil(extract(epoch FROM tasks.claim_wake_at($1, $2, $3) - clock_timestamp()) * 1000)::bigint", 3 },
    [STMT_TASK_START]   = { "task_start", "SELECT tasks.start($1, $2)", 2 },
    [STMT_TASK_HEARTBEAT] = { "task_heartbeat", "SELECT id, state FROM tasks.heartbeat($1, $2, $3, $4, $5, $6)", 6 },
    [STMT_TASK_FINISH_MANY] = { "task_finish_many",
        "SELECT idx, id, status, queue FROM tasks.finish_many($1, $2, $3, $4, $5, $6)", 6 },
    [STMT_TASK_RELEASE] = { "task_release", "SELECT queue, released FROM tasks.release($1, $2, $3)", 3 },
    [STMT_TASK_UNCLAIM] = { "task_unclaim", "SELECT queue, released FROM tasks.unclaim($1, $2)", 2 },
    [STMT_TASK_RECOVER] = { "task_recover", "SELECT id, action, status, queue FROM tasks.recover_if_owner($1, $2, $3, $4)", 4 },
    /* after the commits it speaks of, in a transaction of its own (tasks/hub.c) */
    [STMT_TASK_NOTIFY]  = { "task_notify", "SELECT count(pg_notify('silt_tasks', x)) FROM unnest($1::text[]) x", 1 },
    /* pausing a queue, rerunning finished tasks (sql/functions/tasks_pause.sql, tasks_rerun.sql): rows in
     * the order api/task_queues.c and api/task_rerun.c read them */
    [STMT_TASK_PAUSE]   = { "task_pause", "SELECT queue_name, paused, paused_at, changed FROM tasks.queue_pause($1, $2)", 2 },
    [STMT_TASK_PAUSED]  = { "task_paused", "SELECT queue_name, paused_at FROM tasks.paused_queues ORDER BY queue_name", 0 },
    [STMT_TASK_RERUN]   = { "task_rerun", "SELECT status, workflow_id, workflow_status,"
        " refused, id, created, queue FROM tasks.rerun($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        15 },
    [STMT_TASK_RERUN_MANY] = { "task_rerun_many", "SELECT rerun_of, id, created, queue, more FROM tasks.rerun_many($1,"
        " $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)", 18 },
    /* a bulk rerun's dry run: how many it would send (at most the limit), and whether more match */
    [STMT_TASK_RERUN_COUNT] = { "task_rerun_count", "SELECT least(count(*), $8::integer), count(*) > $8::integer"
        " FROM tasks.rerun_candidates($1, $2, $3, $4, $5, $6, $7, $8::integer + 1)", 8 },
    /* workflows (sql/migrations/020_workflows.sql): rows in the order api/workflows.c reads them */
    [STMT_WF_CREATE]    = { "wf_create", "SELECT tasks.workflow_create($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,"
        " $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)", 23 },
    [STMT_WF_GET]       = { "wf_get", "SELECT " WF_COLUMNS " FROM horsies_workflows WHERE id = $1", 1 },
    [STMT_WF_NODES]     = { "wf_nodes", "SELECT node_id, task_name, queue_name, status, task_id, to_json(waits_for),"
        " join_kind, result, error_code, error_message, finished_at FROM tasks.workflow_nodes"
        " WHERE workflow_id = $1 ORDER BY node_id", 1 },
    [STMT_WF_LIST]      = { "wf_list", "SELECT " WF_COLUMNS " FROM horsies_workflows"
        " WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR name = $2) AND ($3::uuid IS NULL OR id > $3)"
        " ORDER BY id LIMIT $4", 4 },
    [STMT_WF_CONTROL]   = { "wf_control", "SELECT tasks.workflow_control($1, $2)", 2 },
    [STMT_SCHEDULE_STATE] = { "schedule_state", "SELECT schedule_name, last_slot, last_fired_at, last_task_id"
        " FROM horsies_schedule_state ORDER BY schedule_name", 0 },
    [STMT_SCHEDULE_FIRE] = { "schedule_fire", "SELECT tasks.schedule_fire($1, $2, $3, $4, $5, $6, $7, $8, $9)", 9 },
    [STMT_SCHEDULE_LIST] = { "schedule_list", "SELECT name, origin, cron, timezone, task_name, queue_name, args,"
        " catch_up, priority, retention_class_key, paused_at, version, created_at, updated_at, last_slot,"
        " last_fired_at, last_task_id FROM tasks.schedule_list($1)", 1 },
    [STMT_SCHEDULE_CREATE] = { "schedule_create",
        "SELECT tasks.schedule_create($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", 10 },
    [STMT_SCHEDULE_CHANGE] = { "schedule_change",
        "SELECT tasks.schedule_change($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", 10 },
    [STMT_SCHEDULE_PAUSE] = { "schedule_pause", "SELECT tasks.schedule_pause($1, $2)", 2 },
    [STMT_SCHEDULE_DELETE] = { "schedule_delete", "SELECT tasks.schedule_delete($1)", 1 },
    [STMT_WF_OUTBOX]    = { "wf_outbox", "SELECT workflow_id FROM tasks.apply_outbox($1)", 1 },
    /* partitions of task records (sql/025) */
    [STMT_TR_CLASSES]   = { "tr_classes", "SELECT class_key, duration_s, origin, registered_at, leaves, bytes, records,"
        " oldest, next_drop FROM tasks.retention_classes()", 0 },
    [STMT_TR_LEAVES]    = { "tr_leaves", "SELECT leaf_name, class_key, day, lower_anchor, upper_anchor, bytes, drops_at,"
        " state FROM tasks.retention_leaves($1)", 1 },
    [STMT_TR_COVERAGE]  = { "tr_coverage", "SELECT pass_id, runner, started_at, finished_at, outcome, report, absent,"
        " history_through, heartbeats_through FROM tasks.retention_coverage()", 0 },
    /* the row-delete sweep (sql/021, tasks/sweep.c): rows deleted or expired, -1 another server sweeps */
    [STMT_SWEEP_WORKFLOWS]     = { "sweep_workflows", "SELECT tasks.sweep_workflows($1, $2)", 2 },
    [STMT_SWEEP_WORKER_STATES] = { "sweep_worker_states", "SELECT tasks.sweep_worker_states($1, $2)", 2 },
    [STMT_EXPIRE_PAUSED]       = { "expire_paused", "SELECT tasks.expire_paused_workflows($1, $2)", 2 },
    [STMT_SWEEP_UNIQUE_KEYS]   = { "sweep_unique_keys", "SELECT tasks.sweep_unique_keys($1, $2)", 2 },
    [STMT_WORKER_REGISTER] = { "worker_register", "SELECT tasks.register_worker($1, $2, $3, $4, $5)", 5 },
    /* $1, $2: the claimer and runner heartbeat intervals (ms); a worker
     * holding tasks is late when it has not been seen for two of its
     * intervals (the runner's while it runs one) */
    [STMT_WORKER_LIST]  = { "worker_list", "SELECT worker_id, hostname, pid, queues_json, concurrency, registered_at,"
        " last_seen_at, claimed, running, interval_ms, age_ms, claimed + running > 0 AND age_ms > 2 * interval_ms"
        " FROM (SELECT w.*, to_json(w.queues) AS queues_json, c.claimed, c.running,"
        " CASE WHEN c.running > 0 THEN $2::bigint ELSE $1::bigint END AS interval_ms,"
        " (extract(epoch FROM now() - w.last_seen_at) * 1000)::bigint AS age_ms"
        " FROM horsies_workers w CROSS JOIN LATERAL (SELECT"
        " count(*) FILTER (WHERE t.status = 'CLAIMED') AS claimed, count(*) FILTER (WHERE t.status = 'RUNNING') AS running"
        " FROM horsies_tasks t WHERE t.worker_id = w.worker_id) c) x ORDER BY worker_id", 2 },
    /* $1: the declared queues, their load (sql/functions/tasks_claim.sql) in
     * their order, then any other paused queue; each with since when paused */
    /* $2: the queues' rate limits (api_task_rates): whether a queue's rate window is full now */
    [STMT_TASK_QUEUES]  = { "task_queues", "SELECT coalesce(l.queue, p.queue_name), l.held, l.waiting, p.paused_at,"
        " tasks.rate_reopens_at(l.queue, ($2::integer[])[l.ord][1], ($2::integer[])[l.ord][2], false) IS NOT NULL"
        " FROM tasks.queue_load($1) WITH ORDINALITY AS l(queue, held, waiting, ord)"
        " FULL JOIN tasks.paused_queues p ON p.queue_name = l.queue ORDER BY l.ord NULLS LAST, 1", 2 },
    /* pushes made from SQL, moved into the log (sql/functions/sql_push.sql, streams/outbox.c) */
    [STMT_OUTBOX_READ]  = { "outbox_read", "SELECT id, queue, partition, transaction_id, client_txn, trace_id, payload"
        " FROM queen.push_outbox_read($1, $2)", 2 },
    [STMT_OUTBOX_TAKE]  = { "outbox_take", "SELECT queen.push_outbox_take($1)", 1 },
};

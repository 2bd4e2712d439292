/* statements: every SQL statement the server sends, named once. Each is
 * prepared on every pooled connection when it connects, so a call costs one
 * pipelined Bind/Execute and no parsing. */
#ifndef SILT_STATEMENTS_H
#define SILT_STATEMENTS_H

typedef enum db_stmt {
    STMT_PUSH_FLUSH,
    STMT_POP,
    STMT_POP_MANY,
    STMT_ACK,
    STMT_ACK_KNOWN,
    STMT_GATHERED_LOCK_TIMEOUT,
    STMT_DEAD_LETTER,
    STMT_EXTEND_LEASE,
    STMT_RELEASE_LEASE,
    STMT_POP_WAKE_AT,
    STMT_POP_SEEN,
    STMT_READY_RECONCILE,
    STMT_READY_PRUNE,
    STMT_CONFIGURE,
    STMT_QUEUE_LIST,
    STMT_QUEUE_DETAIL,
    STMT_QUEUE_DELETE,
    STMT_OVERVIEW,
    STMT_GROUP_LIST,
    STMT_GROUP_DETAIL,
    STMT_GROUP_DELETE,
    STMT_GROUP_SUBSCRIPTION,
    STMT_SEEK,
    STMT_DLQ_COUNT,
    STMT_DLQ_PAGE,
    STMT_DLQ_GET,
    STMT_DLQ_TAKE,
    STMT_DLQ_BY_MESSAGE,
    STMT_DLQ_DELETE_MESSAGE,
    STMT_DLQ_MATCH_COUNT,
    STMT_DLQ_MATCH_PAGE,
    STMT_DLQ_DELETE_MATCHING,
    STMT_DLQ_TAKE_MANY,
    STMT_HISTORY_ROLL,
    STMT_HISTORY,
    STMT_MESSAGE_LOOKUP,
    STMT_REQUIRE_LEASES,
    STMT_TX_ACK,
    STMT_SEGMENT_FOR_COPY,
    STMT_RET_CANDIDATES,
    STMT_RET_STEP,
    STMT_RET_SIDECAR_STEP,
    STMT_RET_CLEANUP,
    STMT_RET_CLAIM,
    STMT_RET_RELEASE,
    STMT_RET_EXPLAIN,
    STMT_RET_ANALYTICS,
    STMT_MAINT_STATUS,
    STMT_MAINT_SET,
    STMT_MAINT_DRAIN,
    STMT_TRACE_RECORD,
    STMT_TRACES_OF_MESSAGE,
    STMT_TRACES_BY_NAME,
    STMT_TRACE_NAMES,
    STMT_TRACE_NAME_COUNT,
    STMT_TASK_SEND,
    STMT_TASK_GET,
    STMT_TASK_LIST,
    STMT_TASK_LIST_DESC,
    STMT_TASK_COUNT,
    STMT_TASK_CANCEL,
    STMT_TASK_ATTEMPTS,
    STMT_TASK_CLAIM_MANY,
    STMT_TASK_NEXT_RUN,
    STMT_TASK_CLAIM_WAKE,
    STMT_TASK_START,
    STMT_TASK_HEARTBEAT,
    STMT_TASK_FINISH_MANY,
    STMT_TASK_RELEASE,
    STMT_TASK_UNCLAIM,
    STMT_TASK_RECOVER,
    STMT_TASK_NOTIFY,
    STMT_TASK_PAUSE,
    STMT_TASK_PAUSED,
    STMT_TASK_RERUN,
    STMT_TASK_RERUN_MANY,
    STMT_TASK_RERUN_COUNT,
    STMT_WF_CREATE,
    STMT_WF_GET,
    STMT_WF_NODES,
    STMT_WF_LIST,
    STMT_WF_CONTROL,
    STMT_WF_OUTBOX,
    STMT_TR_CLASSES,
    STMT_TR_LEAVES,
    STMT_TR_COVERAGE,
    STMT_SWEEP_WORKFLOWS,
    STMT_SWEEP_WORKER_STATES,
    STMT_EXPIRE_PAUSED,
    STMT_SWEEP_UNIQUE_KEYS,
    STMT_SCHEDULE_STATE,
    STMT_SCHEDULE_FIRE,
    STMT_SCHEDULE_LIST,     /* every schedule ($1 NULL) or one, with its state */
    STMT_SCHEDULE_CREATE,   /* these four answer an outcome (sql/functions/schedules.sql) */
    STMT_SCHEDULE_CHANGE,
    STMT_SCHEDULE_PAUSE,
    STMT_SCHEDULE_DELETE,
    STMT_WORKER_REGISTER,
    STMT_WORKER_LIST,
    STMT_TASK_QUEUES,
    STMT_OUTBOX_READ,
    STMT_OUTBOX_TAKE,
    STMT_COUNT
} db_stmt;

/* Columns of a dead letter, in the order readers index them. */
#define DLQ_COLUMNS "id, queue, partition_id, partition, consumer_group, message_offset, message_id," \
    " transaction_id, trace_id, payload, error_message, retry_count, created_at, failed_at, encrypted, producer_sub"

/* Columns of a task, live or finished, in the order api/tasks.c reads them
 * (TASK_C_*). */
#define TASK_COLUMNS "id, task_name, queue_name, status, args, priority, attempt, retry_count, max_retries," \
    " sent_at, run_at, good_until, timeout_ms, worker_id, claimed_at, started_at, finished_at," \
    " cancel_requested, result, error_code, error_message, idempotency_key, retention_class_key, rerun_of," \
    " to_json(progress), progress_info, progress_at, rate_key"
enum {
    TASK_C_ID, TASK_C_NAME, TASK_C_QUEUE, TASK_C_STATUS, TASK_C_ARGS, TASK_C_PRIORITY, TASK_C_ATTEMPT,
    TASK_C_RETRIES, TASK_C_MAX_RETRIES, TASK_C_SENT, TASK_C_RUN_AT, TASK_C_GOOD_UNTIL, TASK_C_TIMEOUT,
    TASK_C_WORKER, TASK_C_CLAIMED, TASK_C_STARTED, TASK_C_FINISHED, TASK_C_CANCEL, TASK_C_RESULT,
    TASK_C_CODE, TASK_C_MESSAGE, TASK_C_KEY, TASK_C_CLASS, TASK_C_RERUN_OF, TASK_C_PROGRESS,
    TASK_C_PROGRESS_INFO, TASK_C_PROGRESS_AT, TASK_C_RATE_KEY
};

/* Columns of a workflow, in the order api/workflows.c reads them. */
#define WF_COLUMNS "id, name, status, on_error, output_node, created_at, started_at, paused_at, finished_at, result," \
    " error_code, error_message"

typedef struct db_statement {
    const char *name;
    const char *sql;
    int         nparams;
} db_statement;

extern const db_statement db_statements[STMT_COUNT];

#endif

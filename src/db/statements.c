/* statements: the C side of the SQL interface (functions live in sql/). */
#include "db/statements.h"

const db_statement db_statements[STMT_COUNT] = {
    [STMT_PUSH_SEGMENT] = { "push_segment",
        "SELECT partition_id, base_offset, created_at FROM queen.push_segment($1, $2, $3, $4, $5, $6, $7)", 7 },
    [STMT_POP]          = { "pop",
        "SELECT partition_id, partition, cursor_from, cursor_to, seg_base, seg_created, seg_blob"
        " FROM queen.pop($1, $2, $3, $4, $5, $6, $7)", 7, 1 },
    [STMT_ACK]          = { "ack",
        "SELECT idx, success, error, lease_released, dlq, noop, dropped, dlq_offset, dlq_base,"
        " dlq_created, dlq_blob FROM queen.ack($1)", 1, 1 },
    [STMT_DEAD_LETTER]  = { "dead_letter",
        "SELECT lease_released, error FROM queen.dead_letter($1, $2, $3, $4, $5, $6, $7, $8, $9)", 9 },
    [STMT_EXTEND_LEASE] = { "extend_lease",
        "SELECT renewed, expires_at FROM queen.extend_lease($1, $2)", 2 },
    [STMT_CONFIGURE]    = { "configure",
        "SELECT namespace, task, options FROM queen.configure($1, $2, $3, $4)", 4 },
    /* administration: one jsonb value each (NULL: not found) */
    [STMT_QUEUE_LIST]   = { "queue_list", "SELECT queen.queue_list()", 0 },
    [STMT_QUEUE_DETAIL] = { "queue_detail", "SELECT queen.queue_detail($1)", 1 },
    [STMT_QUEUE_DELETE] = { "queue_delete", "SELECT jsonb_build_object('deleted', queen.queue_delete($1))", 1 },
    [STMT_OVERVIEW]     = { "overview", "SELECT queen.overview()", 0 },
    [STMT_GROUP_LIST]   = { "group_list", "SELECT queen.group_list($1, $2)", 2 },
    [STMT_GROUP_DETAIL] = { "group_detail", "SELECT queen.group_detail($1)", 1 },
    [STMT_GROUP_DELETE] = { "group_delete",
        "SELECT jsonb_build_object('deleted', true, 'cursors', queen.group_delete($1, $2, $3))", 3 },
    [STMT_GROUP_SUBSCRIPTION] = { "group_subscription",
        "SELECT jsonb_build_object('updated', queen.group_set_subscription($1, $2), 'subscriptionTimestamp', $2::timestamptz)", 2 },
    [STMT_SEEK]         = { "seek", "SELECT queen.seek($1, $2, $3, $4, $5)", 5 },
};

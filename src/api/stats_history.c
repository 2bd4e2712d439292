/* stats_history: GET /api/v1/stats/history — the per-minute rollup of the
 * last hours (streams/history.h), for the dashboard's charts. */
#include <stdio.h>
#include "api/api.h"
#include "db/result.h"

#define HISTORY_HOURS_MAX 24   /* what the rollup keeps */

enum { H_MINUTE, H_SECONDS, H_PUSHED, H_CONSUMED, H_DEAD };

static void minute_json(emit *e, const PGresult *r, int row)
{
    emit_object(e);
    emit_key(e, "minute"); api_emit_time_col(e, r, row, H_MINUTE);
    emit_key(e, "seconds"); api_emit_int_col(e, r, row, H_SECONDS);
    emit_key(e, "pushed"); api_emit_int_col(e, r, row, H_PUSHED);
    emit_key(e, "consumed"); api_emit_int_col(e, r, row, H_CONSUMED);
    emit_key(e, "deadLettered"); api_emit_int_col(e, r, row, H_DEAD);
    emit_end(e);
}

void api_stats_history(httpd_req *req, server *srv)
{
    int64_t hours;
    const char *queue = httpd_query(req, "queue");
    if (api_query_int(req, "hours", HISTORY_HOURS_MAX, 1, HISTORY_HOURS_MAX, &hours) < 0) return;
    if (queue && api_check_name(req, "", "queue", queue) < 0) return;
    char hours_text[8];
    snprintf(hours_text, sizeof hours_text, "%lld", (long long)hours);
    const char *values[2] = { queue, hours_text };
    api_rows_call(req, srv, STMT_HISTORY, values, "minutes", minute_json);
}

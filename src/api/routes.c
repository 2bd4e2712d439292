/* routes: the route table. Patterns are matched segment by segment; ":name"
 * segments capture their percent-decoded text into req->params in order. */
#include <stdlib.h>
#include <string.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include "api/api.h"
#include "api/auth.h"
#include "base/xalloc.h"

/* need: the least role a caller's token must carry (auth.h). Reading is
 * read-only; pushing, popping, acking and a worker's or a task client's
 * own calls are read-write; what changes a queue's settings, moves or drops
 * another reader's cursor, replays or deletes stored messages, or runs
 * maintenance is admin (docs/operations.md has the table). */
typedef struct route {
    httpd_method method;
    auth_class   need;
    const char  *pattern;
    api_handler  handler;
} route;

static const route routes[] = {
    { HTTPD_GET,    AUTH_PUBLIC,     "/", api_dashboard_index },
    { HTTPD_GET,    AUTH_PUBLIC,     "/dashboard/:file", api_dashboard_asset },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/health", api_health },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/metrics/prometheus", api_metrics },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/whoami", api_whoami },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/configure", api_configure },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/push", api_push },
    { HTTPD_GET,    AUTH_READ_WRITE, "/api/v1/pop", api_pop_discover },
    { HTTPD_GET,    AUTH_READ_WRITE, "/api/v1/pop/queue/:queue", api_pop },
    { HTTPD_GET,    AUTH_READ_WRITE, "/api/v1/pop/queue/:queue/partition/:partition", api_pop },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/ack", api_ack },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/ack/batch", api_ack_batch },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/lease/:leaseId/extend", api_lease_extend },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/transaction", api_transaction },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/resources/queues", api_queue_list },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/resources/queues/:queue", api_queue_detail },
    { HTTPD_DELETE, AUTH_ADMIN,      "/api/v1/resources/queues/:queue", api_queue_delete },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/resources/overview", api_overview },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/stats/history", api_stats_history },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/consumer-groups", api_group_list },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/consumer-groups/:group", api_group_detail },
    { HTTPD_DELETE, AUTH_ADMIN,      "/api/v1/consumer-groups/:group", api_group_delete },
    { HTTPD_DELETE, AUTH_ADMIN,      "/api/v1/consumer-groups/:group/queues/:queue", api_group_queue_delete },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/consumer-groups/:group/subscription", api_group_subscription },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/consumer-groups/:group/queues/:queue/seek", api_seek_queue },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek", api_seek_partition },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/dlq", api_dlq_list },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/dlq/:id/replay", api_dlq_replay },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/dlq/replay", api_dlq_replay_matching },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/dlq/delete", api_dlq_delete_matching },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/messages/:partitionId/:transactionId", api_message_get },
    { HTTPD_DELETE, AUTH_ADMIN,      "/api/v1/messages/:partitionId/:transactionId", api_message_delete },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/traces", api_trace_record },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/traces/names", api_trace_names },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/traces/by-name/:traceName", api_traces_by_name },   /* before the next: same shape */
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/traces/:partitionId/:transactionId", api_traces_of_message },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/system/retention/run", api_retention_run },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/system/task-retention/sweep", api_task_sweep },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/system/task-retention/run", api_task_retention_run },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/task-retention/classes", api_task_retention_classes },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/task-retention/leaves", api_task_retention_leaves },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/task-retention/coverage", api_task_retention_coverage },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/system/maintenance", api_maintenance_get },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/system/maintenance", api_maintenance_set },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/retention/explain", api_retention_explain },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/analytics/retention", api_retention_analytics },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/tasks", api_task_send },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/tasks/rerun", api_task_rerun_many },   /* before :id */
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/tasks", api_task_list },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/tasks/:id", api_task_get },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/tasks/:id/attempts", api_task_attempts },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/tasks/:id/cancel", api_task_cancel },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/tasks/:id/rerun", api_task_rerun },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/task-queues", api_task_queue_list },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/task-queues/:queue/pause", api_task_queue_pause },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/task-queues/:queue/resume", api_task_queue_resume },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/tasks/:id/start", api_task_start },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/tasks/:id/complete", api_task_complete },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/tasks/:id/fail", api_task_fail },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workers", api_worker_register },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/workers", api_worker_list },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workers/:workerId/claim", api_worker_claim },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workers/:workerId/heartbeat", api_worker_heartbeat },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workers/:workerId/release", api_worker_release },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workers/:workerId/finish", api_worker_finish },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workflows", api_workflow_start },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/workflows", api_workflow_list },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/workflows/:id", api_workflow_get },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workflows/:id/pause", api_workflow_pause },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workflows/:id/resume", api_workflow_resume },
    { HTTPD_POST,   AUTH_READ_WRITE, "/api/v1/workflows/:id/cancel", api_workflow_cancel },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/schedules", api_schedule_list },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/schedules", api_schedule_create },
    { HTTPD_GET,    AUTH_READ_ONLY,  "/api/v1/schedules/:name", api_schedule_get },
    { HTTPD_PATCH,  AUTH_ADMIN,      "/api/v1/schedules/:name", api_schedule_change },
    { HTTPD_DELETE, AUTH_ADMIN,      "/api/v1/schedules/:name", api_schedule_delete },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/schedules/:name/pause", api_schedule_pause },
    { HTTPD_POST,   AUTH_ADMIN,      "/api/v1/schedules/:name/resume", api_schedule_resume },
};

static void clear_params(httpd_req *req)
{
    for (int i = 0; i < req->nparams; i++) free(req->params[i]);
    req->nparams = 0;
}

/* Matches path against pattern, capturing parameters; false on mismatch. */
static bool match(httpd_req *req, const char *pattern)
{
    const char *p = pattern, *s = req->path;
    clear_params(req);
    while (*p && *s) {
        if (*p++ != '/' || *s++ != '/') return false;
        size_t plen = strcspn(p, "/"), slen = strcspn(s, "/");
        if (*p == ':') {
            if (slen == 0 || req->nparams == HTTPD_MAX_PARAMS) return false;
            char *raw = xstrndup(s, slen);
            req->params[req->nparams++] = evhttp_uridecode(raw, 0, NULL);
            free(raw);
        } else if (plen != slen || strncmp(p, s, plen) != 0) {
            return false;
        }
        p += plen;
        s += slen;
    }
    return *p == '\0' && (*s == '\0' || strcmp(s, "/") == 0);
}

/* Decoded path segments and query values reach SQL as text: bytes that are
 * not UTF-8 (%ff) are refused here, naming where, rather than by PostgreSQL.
 * false: answered 400 (req is freed). */
static bool text_is_valid(httpd_req *req)
{
    for (int i = 0; i < req->nparams; i++)
        if (!req->params[i] || !json_utf8_valid(req->params[i], strlen(req->params[i]))) {
            clear_params(req);
            httpd_error(req, 400, "the path must be UTF-8 once percent-decoded");
            return false;
        }
    for (struct evkeyval *kv = req->query.tqh_first; kv; kv = kv->next.tqe_next)
        if (!json_utf8_valid(kv->value, strlen(kv->value))) {
            clear_params(req);
            httpd_error_field(req, 400, "field", kv->key, "%s must be UTF-8 once percent-decoded", kv->key);
            return false;
        }
    return true;
}

void api_dispatch(httpd_req *req, void *arg)
{
    server *srv = arg;
    bool path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (!match(req, routes[i].pattern)) continue;
        path_known = true;
        if (routes[i].method != req->method) continue;
        /* else answered, and req is gone */
        if (auth_admit(srv->auth, req, routes[i].need) == 0 && text_is_valid(req)) routes[i].handler(req, srv);
        return;
    }
    clear_params(req);
    if (path_known) httpd_error(req, 405, "method not allowed");
    else httpd_error(req, 404, "not found");
}

/* retention: POST /api/v1/system/retention/run, GET /api/v1/retention/explain
 * and GET /api/v1/analytics/retention. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "base/xalloc.h"

typedef struct run_call {
    httpd_req *req;
} run_call;

static void run_done(void *arg, const char *report, const char *error)
{
    run_call *c = arg;
    if (error) httpd_error(c->req, 500, "retention pass failed: %s", error);
    else httpd_reply(c->req, 200, report, strlen(report));
    free(c);
}

void api_retention_run(httpd_req *req, server *srv)
{
    bool dry;
    if (api_query_bool(req, "dryRun", false, &dry) < 0) return;
    run_call *c = xcalloc(1, sizeof *c);
    c->req = req;
    if (retention_run(srv->retention, dry, run_done, c) < 0) {
        free(c);
        httpd_error(req, 409, "a retention pass is already running on this server");
    }
}

void api_retention_explain(httpd_req *req, server *srv)
{
    const char *queue = httpd_query(req, "queue");
    if (!queue || !*queue) { httpd_error_field(req, 400, "field", "queue", "queue is required"); return; }
    api_offset_page page;
    if (api_query_offset_page(req, &page) < 0) return;
    const char *values[4] = { queue, httpd_query(req, "partition"), page.limit, page.offset };
    api_json_call(req, srv, STMT_RET_EXPLAIN, values, "queue not found");
}

void api_retention_analytics(httpd_req *req, server *srv)
{
    const char *values[3] = { httpd_query(req, "from"), httpd_query(req, "to"), httpd_query(req, "queue") };
    if (api_check_time(req, "from", values[0]) < 0 || api_check_time(req, "to", values[1]) < 0) return;
    api_json_call(req, srv, STMT_RET_ANALYTICS, values, "no analytics");
}

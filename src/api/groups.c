/* groups: /api/v1/consumer-groups — listing, detail, deletion, the stored
 * subscription timestamp, and seeking a group's cursors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"

/* The thresholds a group's state is judged by (config: the seconds of
 * backlog that make it Lagging, of silence that make it Dead). */
typedef struct group_thresholds {
    char lagging[24], dead[24];
} group_thresholds;

static void thresholds_of(const server *srv, group_thresholds *t)
{
    snprintf(t->lagging, sizeof t->lagging, "%lld", (long long)srv->cfg.group_lagging_s);
    snprintf(t->dead, sizeof t->dead, "%lld", (long long)srv->cfg.group_dead_s);
}

/* The keys ?sort= takes, the name first (queen.group_list). */
static const char *const group_sorts[] = { "name", "lag", "age", NULL };

void api_group_list(httpd_req *req, server *srv)
{
    api_offset_page page;
    api_find find;
    if (api_query_offset_page(req, &page) < 0 || api_query_find(req, group_sorts, &find) < 0) return;
    group_thresholds t;
    thresholds_of(srv, &t);
    const char *values[8] = { t.lagging, t.dead, httpd_query(req, "queue"), page.limit, page.offset,
                              find.search, find.sort, find.desc };
    api_json_call(req, srv, STMT_GROUP_LIST, values, "no groups");
}

void api_group_detail(httpd_req *req, server *srv)
{
    api_offset_page page;
    if (api_query_offset_page(req, &page) < 0) return;
    group_thresholds t;
    thresholds_of(srv, &t);
    const char *values[5] = { req->params[0], t.lagging, t.dead, page.limit, page.offset };
    api_json_call(req, srv, STMT_GROUP_DETAIL, values, "consumer group not found");
}

static void delete_group(httpd_req *req, server *srv, const char *queue)
{
    bool metadata;
    if (api_query_bool(req, "deleteMetadata", false, &metadata) < 0) return;
    const char *values[3] = { req->params[0], queue, metadata ? "t" : "f" };
    api_json_call(req, srv, STMT_GROUP_DELETE, values, "consumer group not found");
}

void api_group_delete(httpd_req *req, server *srv) { delete_group(req, srv, NULL); }

void api_group_queue_delete(httpd_req *req, server *srv) { delete_group(req, srv, req->params[1]); }

void api_group_subscription(httpd_req *req, server *srv)
{
    json_doc d;
    json_doc_init(&d);
    char *ts = NULL;
    if (api_read_object(req, srv, &d) == 0 && api_opt_string(req, &d, 0, "subscriptionTimestamp", &ts) == 0) {
        if (!ts) {
            httpd_error_field(req, 400, "field", "subscriptionTimestamp", "subscriptionTimestamp is required");
        } else if (api_check_time(req, "subscriptionTimestamp", ts) == 0) {
            const char *values[2] = { req->params[0], ts };
            api_json_call(req, srv, STMT_GROUP_SUBSCRIPTION, values, "consumer group not found");
        }
    }
    free(ts);
    json_doc_fini(&d);
}

/* {"toEnd": true} or {"timestamp": "ISO"}; exactly one is required. */
static void seek(httpd_req *req, server *srv, const char *partition)
{
    json_doc d;
    json_doc_init(&d);
    char *ts = NULL;
    if (api_read_object(req, srv, &d) < 0 || api_opt_string(req, &d, 0, "timestamp", &ts) < 0 ||
        api_check_time(req, "timestamp", ts) < 0)
        goto out;
    int to_end = json_get(&d, 0, "toEnd");
    bool end = to_end >= 0 && d.tokens[to_end].type == JSON_TRUE;
    if (end == (ts != NULL)) {
        httpd_error(req, 400, "seek needs either \"toEnd\": true or a \"timestamp\"");
        goto out;
    }
    const char *values[5] = { req->params[0], req->params[1], partition, end ? "t" : "f", ts };
    api_json_call_waking(req, srv, STMT_SEEK, values, "no such queue or partition", req->params[0]);
out:
    free(ts);
    json_doc_fini(&d);
}

void api_seek_queue(httpd_req *req, server *srv) { seek(req, srv, NULL); }

void api_seek_partition(httpd_req *req, server *srv) { seek(req, srv, req->params[2]); }

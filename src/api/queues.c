/* queues: /api/v1/resources — queue listing, detail, deletion, overview. */
#include "api/api.h"

/* The keys ?sort= takes, the name first (queen.queue_list). */
static const char *const queue_sorts[] = { "name", "lag", "age", "failures", "messages", "rate", NULL };

void api_queue_list(httpd_req *req, server *srv)
{
    api_offset_page page;
    api_find find;
    if (api_query_offset_page(req, &page) < 0 || api_query_find(req, queue_sorts, &find) < 0) return;
    const char *values[5] = { page.limit, page.offset, find.search, find.sort, find.desc };
    api_json_call(req, srv, STMT_QUEUE_LIST, values, "no queues");
}

void api_queue_detail(httpd_req *req, server *srv)
{
    api_offset_page page;
    if (api_query_offset_page(req, &page) < 0) return;
    const char *values[3] = { req->params[0], page.limit, page.offset };
    api_json_call(req, srv, STMT_QUEUE_DETAIL, values, "queue not found");
}

void api_queue_delete(httpd_req *req, server *srv)
{
    const char *values[1] = { req->params[0] };
    api_json_call(req, srv, STMT_QUEUE_DELETE, values, "queue not found");
}

void api_overview(httpd_req *req, server *srv)
{
    api_json_call(req, srv, STMT_OVERVIEW, NULL, "no overview");
}

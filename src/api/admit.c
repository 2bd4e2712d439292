/* admit: what every request passes before its route (api_dispatch).
 *
 * Load shedding: requests waiting on PostgreSQL hold their bodies and a
 * socket each; when the database stalls (a lock, a failover) they pile up
 * without bound. Past MAX_PENDING_REQUESTS or MAX_PENDING_BYTES a new
 * request is answered 503 with Retry-After at once, holding nothing, and
 * /health reports degraded (health.c) so a balancer sends clients
 * elsewhere. /health and the metrics are never shed: they are how the
 * state is seen. The request timeout itself lives in httpd.
 *
 * Names: queue, partition, consumer group, namespace and task names have
 * one length limit (NAMES_MAX_BYTES). Bodies are checked by their
 * handlers; names in the path and the query are checked here, for every
 * route, naming the field the way a body would. */
#include <string.h>
#include "api/api.h"
#include "base/names.h"
#include "base/xalloc.h"

/* A path segment after one of these is a name of that field. */
static const struct { const char *segment, *field; } path_names[] = {
    { "queues", "queue" }, { "queue", "queue" }, { "partition", "partition" }, { "partitions", "partition" },
    { "consumer-groups", "consumerGroup" },
};

static const char *const query_names[] = { "queue", "partition", "consumerGroup", "namespace", "task" };

static const char *field_after(const char *segment, size_t len)
{
    for (size_t i = 0; i < sizeof path_names / sizeof path_names[0]; i++)
        if (strlen(path_names[i].segment) == len && strncmp(path_names[i].segment, segment, len) == 0)
            return path_names[i].field;
    return NULL;
}

/* The decoded length of a percent-encoded segment (each %XX is one byte). */
static size_t decoded_len(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++, n++)
        if (s[i] == '%' && i + 2 < len) i += 2;
    return n;
}

static int check_path_names(httpd_req *req)
{
    const char *field = NULL;
    for (const char *s = req->path; *s == '/';) {
        s++;
        size_t len = strcspn(s, "/");
        if (field && decoded_len(s, len) > NAMES_MAX_BYTES) return api_name_too_long(req, field, "", field);
        field = field_after(s, len);
        s += len;
    }
    return 0;
}

static int check_names(httpd_req *req)
{
    if (check_path_names(req) < 0) return -1;
    for (size_t i = 0; i < sizeof query_names / sizeof query_names[0]; i++)
        if (api_check_name(req, "", query_names[i], httpd_query(req, query_names[i])) < 0) return -1;
    return 0;
}

bool api_overloaded(const server *srv)
{
    return httpd_held(srv->http) > srv->cfg.max_pending_requests ||
           httpd_held_bytes(srv->http) > (size_t)srv->cfg.max_pending_bytes;
}

static bool never_shed(const httpd_req *req)
{
    return strcmp(req->path, "/health") == 0 || strcmp(req->path, "/metrics/prometheus") == 0;
}

/* This request is already counted as held: it is shed when it takes the
 * count past the bound (a single body over MAX_PENDING_BYTES is still
 * served when nothing else waits; MAX_BODY_BYTES bounds it). */
static bool shed(httpd_req *req, server *srv)
{
    if (never_shed(req)) return false;
    bool too_many = httpd_held(srv->http) > srv->cfg.max_pending_requests;
    bool too_big = httpd_held(srv->http) > 1 && httpd_held_bytes(srv->http) > (size_t)srv->cfg.max_pending_bytes;
    if (!too_many && !too_big) return false;
    httpd_header(req, "Retry-After", "1");
    httpd_error(req, 503, "server overloaded: %d requests waiting for the database (%s)", httpd_held(srv->http) - 1,
                too_many ? "MAX_PENDING_REQUESTS" : "MAX_PENDING_BYTES");
    return true;
}

/* A pop leases what it reads: a HEAD of it would lease messages nobody sees. */
static bool head_refused(httpd_req *req)
{
    if (!req->head || strncmp(req->path, "/api/v1/pop", 11) != 0) return false;
    httpd_error(req, 405, "HEAD is not allowed on a pop: it would lease messages");
    return true;
}

void api_admit(httpd_req *req, void *arg)
{
    server *srv = arg;
    if (shed(req, srv) || head_refused(req) || check_names(req) < 0) return;
    api_dispatch(req, srv);
}

/* Integration: health, routing, push and pop round trips. */
#include <stdio.h>
#include <string.h>
#include "harness.h"
#include "support.h"

TEST(health_reports_healthy_when_database_is_up)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    rq(&s, "GET", "/health", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "status"), "healthy");
    CHECK_STR(jstr(&r, "database"), "connected");
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(push_then_pop_returns_payload_verbatim)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("verbatim");
    char body[512];
    snprintf(body, sizeof body, "{\"items\":[{\"queue\":\"%s\",\"payload\":{ \"b\" : [1, 2.50, \"\\u00e9\"] }}]}", q);
    reply r;
    rq(&s, "POST", "/api/v1/push", body, &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    reply_fini(&r);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/pop/queue/%s", q);
    rq(&s, "GET", path, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "messages.0.data"), "{ \"b\" : [1, 2.50, \"\\u00e9\"] }");
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    reply_fini(&r);
    srv_stop(&s);
}

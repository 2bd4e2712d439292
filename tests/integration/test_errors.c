/* Integration: every 4xx path of the HTTP API answers a JSON error naming
 * what is wrong, and a refused request changes nothing in the database. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

/* ---- helpers ---------------------------------------------------------- */

/* The reply is `status` with a JSON object body whose "error" contains `what`. */
static void check_error_at(const char *file, int line, const reply *r, int status, const char *what)
{
    if (r->status != status)
        harness_failf(file, line, "status %d, expected %d (body %s)", r->status, status, r->raw.body.data);
    if (r->doc.ntokens == 0 || r->doc.tokens[0].type != JSON_OBJECT)
        harness_failf(file, line, "error body is not a json object: %s", r->raw.body.data);
    if (!r->raw.content_type.data || strncmp(r->raw.content_type.data, "application/json", 16) != 0)
        harness_failf(file, line, "content type \"%s\", expected application/json",
                      r->raw.content_type.data ? r->raw.content_type.data : "");
    const char *e = jstr(r, "error");
    if (!e || !*e) harness_failf(file, line, "no \"error\" string in %s", r->raw.body.data);
    if (what && !strstr(e, what)) harness_failf(file, line, "error \"%s\" does not mention \"%s\"", e, what);
}
#define CHECK_ERROR(r, status, what) check_error_at(__FILE__, __LINE__, (r), (status), (what))

/* What a push may have written for queue q: queue rows and segments. */
static const char *footprint(const char *q)
{
    return sql("select (select count(*) from queen.queues where name = '%s') || '/' || "
               "(select count(*) from queen.log_segments s join queen.log_partitions p on p.id = s.partition_id "
               "  where p.queue = '%s') || '/' || "
               "(select count(*) from queen.log_partitions where queue = '%s')", q, q, q);
}

/* A push refused with `status` and an error mentioning `what`, that writes
 * nothing for queue q. */
static void bad_push_at(const char *file, int line, silt_server *s, const char *q, const char *body,
                        int status, const char *what)
{
    char before[96];
    keep_str(before, footprint(q));
    reply r;
    rq(s, "POST", "/api/v1/push", body, &r);
    check_error_at(file, line, &r, status, what);
    reply_fini(&r);
    const char *after = footprint(q);
    if (strcmp(before, after) != 0)
        harness_failf(file, line, "a refused push wrote something: queues/segments/partitions %s -> %s", before, after);
}
#define BAD_PUSH(s, q, body, status, what) bad_push_at(__FILE__, __LINE__, (s), (q), (body), (status), (what))

/* A valid item for queue q, to put next to a bad one. */
static const char *good_item(const char *q)
{
    return sfmt("{\"queue\":\"%s\",\"partition\":\"P\",\"payload\":{\"ok\":1}}", q);
}

/* ---- routing ---------------------------------------------------------- */

TEST(unknown_api_route_is_404_json_with_error)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *paths[][2] = {
        { "GET", "/api/v1/nope" }, { "POST", "/api/v1/pushx" }, { "GET", "/api/v2/push" },
        { "GET", "/api/v1/pop/queue" }, { "GET", "/api/v1/pop/queue/q/partition" },
        { "POST", "/api/v1/lease//extend" }, { "GET", "/api/v1/pop/queue/q/extra/more/segments" },
        { "DELETE", "/api" },
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        reply r;
        rq(&s, paths[i][0], paths[i][1], NULL, &r);
        CHECK_ERROR(&r, 404, "not found");
        reply_fini(&r);
    }
    srv_stop(&s);
}

TEST(wrong_method_on_a_known_route_is_405_json)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *paths[][2] = {
        { "GET", "/api/v1/push" }, { "DELETE", "/api/v1/configure" }, { "POST", "/api/v1/pop/queue/q" },
        { "PUT", "/api/v1/ack" }, { "GET", "/api/v1/ack/batch" },
        { "GET", "/api/v1/lease/0190a000-0000-7000-8000-000000000000/extend" }, { "POST", "/health" },
        { "PATCH", "/api/v1/pop/queue/q/partition/p" },
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        reply r;
        rq(&s, paths[i][0], paths[i][1], NULL, &r);
        CHECK_ERROR(&r, 405, "method not allowed");
        reply_fini(&r);
    }
    srv_stop(&s);
}

/* ---- push bodies ------------------------------------------------------ */

TEST(push_malformed_json_is_400_and_writes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("emalformed"));
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s]", good_item(q)), 400, NULL);
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s]} x", good_item(q)), 400, NULL);
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s,]}", good_item(q)), 400, NULL);
    BAD_PUSH(&s, q, sfmt("{'items':[%s]}", good_item(q)), 400, NULL);
    BAD_PUSH(&s, q, sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":\"\xff\"}]}", q), 400, NULL);
    srv_stop(&s);
}

TEST(push_body_that_is_not_an_object_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("enonobj"));
    BAD_PUSH(&s, q, sfmt("[%s]", good_item(q)), 400, "must be a json object");
    BAD_PUSH(&s, q, "\"items\"", 400, "must be a json object");
    BAD_PUSH(&s, q, "null", 400, "must be a json object");
    BAD_PUSH(&s, q, "42", 400, "must be a json object");
    BAD_PUSH(&s, q, "", 400, "request body is required");
    srv_stop(&s);
}

TEST(push_without_an_items_array_is_400_items_array_is_required)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("enoitems"));
    BAD_PUSH(&s, q, "{}", 400, "items array is required");
    BAD_PUSH(&s, q, sfmt("{\"item\":[%s]}", good_item(q)), 400, "items array is required");
    BAD_PUSH(&s, q, sfmt("{\"items\":%s}", good_item(q)), 400, "items array is required");
    BAD_PUSH(&s, q, "{\"items\":\"x\"}", 400, "items array is required");
    BAD_PUSH(&s, q, "{\"items\":null}", 400, "items array is required");
    BAD_PUSH(&s, q, "{\"items\":7}", 400, "items array is required");
    srv_stop(&s);
}

TEST(push_item_that_is_not_an_object_is_400_and_writes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("eitem"));
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s,5]}", good_item(q)), 400, "items[1]: must be an object");
    BAD_PUSH(&s, q, sfmt("{\"items\":[\"x\",%s]}", good_item(q)), 400, "items[0]: must be an object");
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s,[]]}", good_item(q)), 400, "items[1]: must be an object");
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s,null]}", good_item(q)), 400, "items[1]: must be an object");
    srv_stop(&s);
}

TEST(push_item_without_queue_is_400_naming_queue)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("enoqueue"));
    reply r;
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[%s,{\"payload\":1}]}", good_item(q)), &r);
    CHECK_ERROR(&r, 400, "queue is required");
    CHECK_STR(jstr(&r, "field"), "queue");
    CHECK(strstr(jstr(&r, "error"), "items[1]") != NULL);
    reply_fini(&r);
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s,{\"queue\":null,\"payload\":1}]}", good_item(q)), 400, "queue is required");
    CHECK_STR(footprint(q), "0/0/0");
    srv_stop(&s);
}

TEST(push_non_string_queue_partition_transaction_or_trace_id_is_400_naming_the_field)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("etypes"));
    const char *fields[] = { "queue", "partition", "transactionId", "traceId" };
    const char *values[] = { "5", "true", "{}", "[\"a\"]", "\"\"", "1.5" };
    for (size_t f = 0; f < 4; f++) {
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            const char *item = f == 0 ? sfmt("{\"queue\":%s,\"payload\":1}", values[v])
                                      : sfmt("{\"queue\":\"%s\",\"%s\":%s,\"payload\":1}", q, fields[f], values[v]);
            const char *body = sfmt("{\"items\":[%s,%s]}", good_item(q), item);
            reply r;
            rq(&s, "POST", "/api/v1/push", body, &r);
            CHECK_ERROR(&r, 400, fields[f]);
            CHECK_STR(jstr(&r, "field"), fields[f]);
            reply_fini(&r);
            CHECK_STR(footprint(q), "0/0/0");
        }
    }
    srv_stop(&s);
}

TEST(push_trace_id_that_is_not_a_uuid_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("etrace"));
    const char *bad[] = { "not-a-uuid", "0190a000-0000-7000-8000-00000000000", "0190a000-0000-7000-8000-00000000000g",
                          "0190a000000070008000000000000000000000" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        BAD_PUSH(&s, q, sfmt("{\"items\":[%s,{\"queue\":\"%s\",\"traceId\":\"%s\",\"payload\":1}]}", good_item(q), q, bad[i]),
                 400, "traceId must be a uuid");
    /* A valid one is stored and popped back. */
    reply r;
    rq(&s, "POST", "/api/v1/push",
       sfmt("{\"items\":[{\"queue\":\"%s\",\"traceId\":\"0190a000-0000-7000-8000-0000000000aa\",\"payload\":1}]}", q), &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "messages.0.traceId"), "0190a000-0000-7000-8000-0000000000aa");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(push_item_without_payload_is_400_but_null_payload_is_a_payload)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("epayload"));
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s,{\"queue\":\"%s\"}]}", good_item(q), q), 400, "payload is required");
    reply r;
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":null}]}", q), &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "messages.0.data"), "null");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(push_empty_items_is_201_with_an_empty_array)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    rq(&s, "POST", "/api/v1/push", "{\"items\":[]}", &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(r.raw.body.data, "[]");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(push_name_longer_than_255_bytes_is_400_naming_the_field)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("elong"));
    char longname[300];
    memset(longname, 'n', 256);
    longname[256] = '\0';
    reply r;
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1}]}", longname), &r);
    CHECK_ERROR(&r, 400, "queue");
    CHECK_STR(jstr(&r, "field"), "queue");
    reply_fini(&r);
    CHECK_STR(footprint(longname), "0/0/0");
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s,{\"queue\":\"%s\",\"partition\":\"%s\",\"payload\":1}]}", good_item(q), q, longname),
             400, "partition");
    srv_stop(&s);
}

/* ---- size limits ------------------------------------------------------ */

TEST(push_body_over_max_body_bytes_is_413_json_and_writes_nothing)
{
    const char *env[] = { "MAX_BODY_BYTES=2048", NULL };
    silt_server s;
    srv_start(&s, env);
    char q[96];
    keep_str(q, uniq("ebody"));
    char body[3100];
    int n = snprintf(body, sizeof body, "{\"items\":[{\"queue\":\"%s\",\"payload\":\"", q);
    memset(body + n, 'x', 3000 - (size_t)n - 4);
    memcpy(body + 3000 - 4, "\"}]}", 5);
    CHECK_INT(strlen(body), 3000);
    BAD_PUSH(&s, q, body, 413, "2048");
    /* The server still serves, on the same connection. */
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    srv_stop(&s);
}

TEST(push_body_over_twice_max_body_bytes_is_413_and_the_server_still_serves)
{
    const char *env[] = { "MAX_BODY_BYTES=2048", NULL };
    silt_server s;
    srv_start(&s, env);
    char q[96];
    keep_str(q, uniq("ebody2"));
    char body[5100];
    int n = snprintf(body, sizeof body, "{\"items\":[{\"queue\":\"%s\",\"payload\":\"", q);
    memset(body + n, 'x', 5000 - (size_t)n - 4);
    memcpy(body + 5000 - 4, "\"}]}", 5);
    /* The HTTP layer refuses this one before reading it: status only. */
    http_client *c = http_client_new(s.url);
    http_response resp;
    http_response_init(&resp);
    CHECK(http_request(c, "POST", "/api/v1/push", body, strlen(body), &resp) == 0);
    CHECK_INT(resp.status, 413);
    http_response_fini(&resp);
    http_client_free(c);
    CHECK_STR(footprint(q), "0/0/0");
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    srv_stop(&s);
}

TEST(push_more_items_than_max_batch_items_is_413_and_writes_nothing)
{
    const char *env[] = { "MAX_BATCH_ITEMS=5", NULL };
    silt_server s;
    srv_start(&s, env);
    char q[96];
    keep_str(q, uniq("ebatch"));
    char body[4096];
    size_t len = (size_t)snprintf(body, sizeof body, "{\"items\":[");
    for (int i = 0; i < 6; i++) len += (size_t)snprintf(body + len, sizeof body - len, "%s%s", i ? "," : "", good_item(q));
    snprintf(body + len, sizeof body - len, "]}");
    BAD_PUSH(&s, q, body, 413, "too many items");
    CHECK_INT(push_simple(&s, q, "P", 5), 201);   /* exactly the limit is fine */
    srv_stop(&s);
}

TEST(push_payload_over_max_payload_bytes_is_413_and_writes_nothing)
{
    const char *env[] = { "MAX_PAYLOAD_BYTES=64", NULL };
    silt_server s;
    srv_start(&s, env);
    char q[96];
    keep_str(q, uniq("epaysize"));
    char big[101];
    memset(big, 'y', 100);
    big[100] = '\0';
    BAD_PUSH(&s, q, sfmt("{\"items\":[%s,{\"queue\":\"%s\",\"payload\":\"%s\"}]}", good_item(q), q, big), 413, "payload");
    CHECK_INT(push_simple(&s, q, "P", 1), 201);
    srv_stop(&s);
}

/* ---- configure -------------------------------------------------------- */

TEST(configure_without_queue_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *bodies[] = { "{\"options\":{\"leaseTime\":10}}", "{}", "{\"queue\":null}" };
    for (size_t i = 0; i < 3; i++) {
        reply r;
        rq(&s, "POST", "/api/v1/configure", bodies[i], &r);
        CHECK_ERROR(&r, 400, "queue is required");
        reply_fini(&r);
    }
    const char *typed[] = { "{\"queue\":5}", "{\"queue\":\"\"}", "{\"queue\":[\"q\"]}" };
    for (size_t i = 0; i < 3; i++) {
        reply r;
        rq(&s, "POST", "/api/v1/configure", typed[i], &r);
        CHECK_ERROR(&r, 400, "queue");
        CHECK_STR(jstr(&r, "field"), "queue");
        reply_fini(&r);
    }
    reply r;
    rq(&s, "POST", "/api/v1/configure", "[1]", &r);
    CHECK_ERROR(&r, 400, "json object");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/configure", "{\"queue\":", &r);
    CHECK_ERROR(&r, 400, NULL);
    reply_fini(&r);
    srv_stop(&s);
}

/* /configure with `options` is refused with 400 and "invalid": `invalid`,
 * creating nothing. */
static void bad_options_at(const char *file, int line, silt_server *s, const char *options, const char *invalid,
                           const char *what)
{
    char q[96];
    keep_str(q, uniq("econf"));
    reply r;
    rq(s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"options\":%s}", q, options), &r);
    check_error_at(file, line, &r, 400, what);
    const char *inv = jstr(&r, "invalid");
    if (!inv || strcmp(inv, invalid) != 0)
        harness_failf(file, line, "options %s: invalid == \"%s\", expected \"%s\"", options, inv ? inv : "(null)", invalid);
    reply_fini(&r);
    if (strcmp(sql("select count(*) from queen.queues where name = '%s'", q), "0") != 0)
        harness_failf(file, line, "options %s: a refused configure created the queue", options);
}
#define BAD_OPTIONS(s, options, invalid, what) bad_options_at(__FILE__, __LINE__, (s), (options), (invalid), (what))

TEST(configure_unknown_option_is_400_naming_it)
{
    silt_server s;
    srv_start(&s, NULL);
    BAD_OPTIONS(&s, "{\"bogusOption\":1}", "bogusOption", "bogusOption");
    BAD_OPTIONS(&s, "{\"leaseTime\":10,\"leasetime\":10}", "leasetime", "leasetime");
    srv_stop(&s);
}

TEST(configure_negative_seconds_are_400_invalid_naming_the_option)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *opts[] = { "delayedProcessing", "windowBuffer", "dedupWindowSeconds", "retentionSeconds",
                           "completedRetentionSeconds", "maxWaitTimeSeconds", "ttl", "retryLimit", "retryDelay",
                           "maxSize", "leaseTime" };
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        BAD_OPTIONS(&s, sfmt("{\"%s\":-1}", opts[i]), opts[i], opts[i]);
    srv_stop(&s);
}

TEST(configure_option_of_the_wrong_type_is_400_invalid_naming_the_option)
{
    silt_server s;
    srv_start(&s, NULL);
    BAD_OPTIONS(&s, "{\"leaseTime\":\"10\"}", "leaseTime", "leaseTime");
    BAD_OPTIONS(&s, "{\"retryLimit\":true}", "retryLimit", "retryLimit");
    BAD_OPTIONS(&s, "{\"ttl\":1.5}", "ttl", "ttl");
    BAD_OPTIONS(&s, "{\"windowBuffer\":[1]}", "windowBuffer", "windowBuffer");
    BAD_OPTIONS(&s, "{\"delayedProcessing\":99999999999}", "delayedProcessing", "delayedProcessing");
    BAD_OPTIONS(&s, "{\"deadLetterQueue\":1}", "deadLetterQueue", "deadLetterQueue");
    BAD_OPTIONS(&s, "{\"retentionEnabled\":\"true\"}", "retentionEnabled", "retentionEnabled");
    BAD_OPTIONS(&s, "[]", "options", "options");
    BAD_OPTIONS(&s, "5", "options", "options");
    srv_stop(&s);
}

TEST(configure_lease_time_zero_is_400_invalid_lease_time)
{
    silt_server s;
    srv_start(&s, NULL);
    BAD_OPTIONS(&s, "{\"leaseTime\":0}", "leaseTime", "leaseTime");
    srv_stop(&s);
}

TEST(configure_refused_changes_nothing_on_an_existing_queue)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("econfkeep"));
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":\"n\",\"options\":{\"leaseTime\":10}}", q), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/configure",
       sfmt("{\"queue\":\"%s\",\"namespace\":\"other\",\"options\":{\"leaseTime\":20,\"retryLimit\":-1}}", q), &r);
    CHECK_ERROR(&r, 400, "retryLimit");
    CHECK_STR(jstr(&r, "invalid"), "retryLimit");
    reply_fini(&r);
    CHECK_STR(sql("select options->>'leaseTime' from queen.queues where name = '%s'", q), "10");
    CHECK_STR(sql("select options->>'retryLimit' from queen.queues where name = '%s'", q), "3");
    CHECK_STR(sql("select namespace from queen.queues where name = '%s'", q), "n");
    srv_stop(&s);
}

/* ---- pop query -------------------------------------------------------- */

TEST(pop_invalid_query_values_are_400_naming_the_field)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("epop"));
    CHECK_INT(push_simple(&s, q, "Default", 2), 201);
    const char *cases[][2] = {
        { "batch=0", "batch" }, { "batch=abc", "batch" }, { "batch=-1", "batch" }, { "batch=1.5", "batch" },
        { "batch=", "batch" }, { "batch=99999999999999999999", "batch" }, { "wait=maybe", "wait" },
        { "autoAck=yes", "autoAck" }, { "timeout=-1", "timeout" }, { "timeout=soon", "timeout" },
        { "subscriptionMode=bogus", "subscriptionMode" }, { "subscriptionMode=ALL", "subscriptionMode" },
        { "consumerGroup=g&subscriptionMode=bogus", "subscriptionMode" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reply r;
        rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?%s", q, cases[i][0]), NULL, &r);
        CHECK_ERROR(&r, 400, cases[i][1]);
        CHECK_STR(jstr(&r, "field"), cases[i][1]);
        reply_fini(&r);
        rq(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/Default?%s", q, cases[i][0]), NULL, &r);
        CHECK_ERROR(&r, 400, cases[i][1]);
        reply_fini(&r);
    }
    /* Nothing was leased, no cursor or subscription was created. */
    CHECK_STR(sql("select count(*) from queen.log_consumers c join queen.log_partitions p on p.id = c.partition_id "
                  "where p.queue = '%s'", q), "0");
    CHECK_STR(sql("select count(*) from queen.subscriptions where queue = '%s'", q), "0");
    srv_stop(&s);
}

TEST(pop_batch_over_max_pop_batch_is_400)
{
    const char *env[] = { "MAX_POP_BATCH=10", NULL };
    silt_server s;
    srv_start(&s, env);
    char q[96];
    keep_str(q, uniq("epopmax"));
    CHECK_INT(push_simple(&s, q, "Default", 2), 201);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?batch=11", q), NULL, &r);
    CHECK_ERROR(&r, 400, "batch");
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?batch=10", q), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(pop_subscription_from_that_is_not_a_timestamp_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("epopfrom"));
    CHECK_INT(push_simple(&s, q, "Default", 2), 201);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&subscriptionFrom=not-a-time", q), NULL, &r);
    CHECK_ERROR(&r, 400, "subscriptionFrom");
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.subscriptions where queue = '%s'", q), "0");
    srv_stop(&s);
}

TEST(pop_of_a_queue_name_that_is_not_utf8_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    rq(&s, "GET", "/api/v1/pop/queue/bad%FFname", NULL, &r);
    CHECK_ERROR(&r, 400, NULL);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/pop/queue/q/partition/bad%C3", NULL, &r);
    CHECK_ERROR(&r, 400, NULL);
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- ack and lease ---------------------------------------------------- */

#define SOME_UUID "0190a000-0000-7000-8000-000000000001"

/* Single and batch ack with `item` are both refused with 400 mentioning `what`. */
static void bad_ack_at(const char *file, int line, silt_server *s, const char *item, const char *what, const char *field)
{
    reply r;
    rq(s, "POST", "/api/v1/ack", item, &r);
    check_error_at(file, line, &r, 400, what);
    if (field && (!jstr(&r, "field") || strcmp(jstr(&r, "field"), field) != 0))
        harness_failf(file, line, "ack %s: field is not \"%s\": %s", item, field, r.raw.body.data);
    reply_fini(&r);
    rq(s, "POST", "/api/v1/ack/batch", sfmt("{\"acknowledgments\":[%s]}", item), &r);
    check_error_at(file, line, &r, 400, what);
    reply_fini(&r);
}
#define BAD_ACK(s, item, what, field) bad_ack_at(__FILE__, __LINE__, (s), (item), (what), (field))

TEST(ack_without_transaction_id_is_400_transaction_id_is_required)
{
    silt_server s;
    srv_start(&s, NULL);
    BAD_ACK(&s, "{\"partitionId\":\"" SOME_UUID "\"}", "transactionId is required", "transactionId");
    BAD_ACK(&s, "{\"transactionId\":null,\"partitionId\":\"" SOME_UUID "\"}", "transactionId is required", "transactionId");
    BAD_ACK(&s, "{\"transactionId\":5,\"partitionId\":\"" SOME_UUID "\"}", "transactionId", "transactionId");
    srv_stop(&s);
}

TEST(ack_without_partition_id_is_400_partition_id_is_required)
{
    silt_server s;
    srv_start(&s, NULL);
    BAD_ACK(&s, "{\"transactionId\":\"t\"}", "partitionId is required to ensure message uniqueness", "partitionId");
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":null}", "partitionId is required to ensure message uniqueness",
            "partitionId");
    srv_stop(&s);
}

TEST(ack_partition_id_that_is_not_a_uuid_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":\"nope\"}", "partitionId", "partitionId");
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":\"0190a000-0000-7000-8000-00000000000z\"}", "partitionId",
            "partitionId");
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":7}", "partitionId", "partitionId");
    srv_stop(&s);
}

TEST(ack_lease_id_that_is_not_a_uuid_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":\"" SOME_UUID "\",\"leaseId\":\"lease\"}", "leaseId", "leaseId");
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":\"" SOME_UUID "\",\"leaseId\":12}", "leaseId", "leaseId");
    srv_stop(&s);
}

TEST(ack_unknown_status_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":\"" SOME_UUID "\",\"status\":\"done\"}", "status", "status");
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":\"" SOME_UUID "\",\"status\":\"COMPLETED\"}", "status", "status");
    BAD_ACK(&s, "{\"transactionId\":\"t\",\"partitionId\":\"" SOME_UUID "\",\"status\":1}", "status", "status");
    srv_stop(&s);
}

TEST(ack_body_errors_are_400)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    const char *bad[] = { "", "[]", "{\"transactionId\":", "\"x\"" };
    for (size_t i = 0; i < 4; i++) {
        rq(&s, "POST", "/api/v1/ack", bad[i], &r);
        CHECK_ERROR(&r, 400, NULL);
        reply_fini(&r);
        rq(&s, "POST", "/api/v1/ack/batch", bad[i], &r);
        CHECK_ERROR(&r, 400, NULL);
        reply_fini(&r);
    }
    const char *batches[] = { "{}", "{\"acknowledgments\":{}}", "{\"acknowledgments\":null}" };
    for (size_t i = 0; i < 3; i++) {
        rq(&s, "POST", "/api/v1/ack/batch", batches[i], &r);
        CHECK_ERROR(&r, 400, "acknowledgments array is required");
        reply_fini(&r);
    }
    rq(&s, "POST", "/api/v1/ack/batch", "{\"acknowledgments\":[5]}", &r);
    CHECK_ERROR(&r, 400, "acknowledgments[0]: must be an object");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(ack_batch_with_one_bad_item_is_400_and_commits_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96], pid[96], lease[96], txn0[96], txn1[96];
    keep_str(q, uniq("eackbatch"));
    CHECK_INT(push_simple(&s, q, "Default", 3), 201);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?batch=3", q), NULL, &r);
    CHECK_INT(r.status, 200);
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    keep_str(txn0, jstr(&r, "messages.0.transactionId"));
    keep_str(txn1, jstr(&r, "messages.1.transactionId"));
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack/batch",
       sfmt("{\"acknowledgments\":[{\"transactionId\":\"%s\",\"partitionId\":\"%s\",\"leaseId\":\"%s\"},"
           "{\"transactionId\":\"%s\",\"partitionId\":\"%s\",\"status\":\"finished\"}]}", txn0, pid, lease, txn1, pid), &r);
    CHECK_ERROR(&r, 400, "acknowledgments[1]");
    reply_fini(&r);
    CHECK_STR(sql("select committed from queen.log_consumers where partition_id = '%s'", pid), "-1");
    CHECK_STR(sql("select lease_id from queen.log_consumers where partition_id = '%s'", pid), lease);
    CHECK_STR(sql("select (lease_expires > now())::text from queen.log_consumers where partition_id = '%s'", pid), "true");
    srv_stop(&s);
}

TEST(lease_extend_with_a_bad_lease_id_or_seconds_is_400)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    const char *ids[] = { "not-a-uuid", "0190a000-0000-7000-8000-00000000000", "0190a000-0000-7000-8000-0000000000011" };
    for (size_t i = 0; i < 3; i++) {
        rq(&s, "POST", sfmt("/api/v1/lease/%s/extend", ids[i]), "{\"seconds\":60}", &r);
        CHECK_ERROR(&r, 400, "leaseId must be a uuid");
        CHECK_STR(jstr(&r, "field"), "leaseId");
        reply_fini(&r);
    }
    const char *secs[] = { "{\"seconds\":0}", "{\"seconds\":-5}", "{\"seconds\":\"60\"}", "{\"seconds\":1.5}",
                           "{\"seconds\":86401}" };
    for (size_t i = 0; i < 5; i++) {
        rq(&s, "POST", "/api/v1/lease/" SOME_UUID "/extend", secs[i], &r);
        CHECK_ERROR(&r, 400, "seconds");
        CHECK_STR(jstr(&r, "field"), "seconds");
        reply_fini(&r);
    }
    rq(&s, "POST", "/api/v1/lease/" SOME_UUID "/extend", "{\"seconds\":", &r);
    CHECK_ERROR(&r, 400, NULL);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/lease/" SOME_UUID "/extend", "[60]", &r);
    CHECK_ERROR(&r, 400, "json object");
    reply_fini(&r);
    /* A well-formed unknown lease is not a 4xx: 200 with success false. */
    rq(&s, "POST", "/api/v1/lease/" SOME_UUID "/extend", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(!jbool(&r, "success"));
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- one voice for errors ---- */

/* Timestamps are ISO 8601 only, checked before any query: no PostgreSQL
 * wording reaches a client, and PostgreSQL's special words are refused. */
TEST(timestamps_are_iso_8601_only_and_refused_in_silt_words)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("etimes");
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    const char *bad[] = { "garbage", "yesterday", "infinity", "epoch", "2026-02-30T00:00:00Z" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reply r;
        rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g%zu&subscriptionFrom=%s&wait=false", q, i, bad[i]), NULL, &r);
        CHECK_ERROR(&r, 400, "subscriptionFrom must be an ISO 8601 timestamp");
        CHECK_STR(jstr(&r, "field"), "subscriptionFrom");
        reply_fini(&r);
        rq(&s, "GET", sfmt("/api/v1/analytics/retention?from=%s", bad[i]), NULL, &r);
        CHECK_ERROR(&r, 400, "from must be an ISO 8601 timestamp");
        reply_fini(&r);
        rq(&s, "GET", sfmt("/api/v1/analytics/retention?to=%s", bad[i]), NULL, &r);
        CHECK_ERROR(&r, 400, "to must be an ISO 8601 timestamp");
        reply_fini(&r);
        rq(&s, "POST", sfmt("/api/v1/consumer-groups/g/queues/%s/seek", q), sfmt("{\"timestamp\":\"%s\"}", bad[i]), &r);
        CHECK_ERROR(&r, 400, "timestamp must be an ISO 8601 timestamp");
        reply_fini(&r);
        rq(&s, "POST", "/api/v1/consumer-groups/g/subscription", sfmt("{\"subscriptionTimestamp\":\"%s\"}", bad[i]), &r);
        CHECK_ERROR(&r, 400, "subscriptionTimestamp must be an ISO 8601 timestamp");
        CHECK(strstr(r.raw.body.data, "invalid input syntax") == NULL);
        reply_fini(&r);
    }
    CHECK_STR(sql("SELECT count(*) FROM queen.log_consumers"), "0");   /* nothing started */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=ok&subscriptionFrom=2000-01-01T00:00:00Z&wait=false", q),
       NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    srv_stop(&s);
}

/* Queue mode seeds no cursor from subscriptionFrom, yet a value that cannot
 * be read is the client's mistake all the same (docs/api.md: 400 naming the
 * field), whichever pop carries it, and nothing is leased by it. */
TEST(unreadable_subscription_from_is_refused_without_a_consumer_group_too)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("equeuemode");
    CHECK_INT(push_simple(&s, q, "p", 1), 201);   /* a pop that were accepted would answer 200 */
    const char *bad[] = { "garbage", "now-ish", "2026-02-30T00:00:00Z", "10000-01-01T00:00:00Z" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *paths[] = {
            sfmt("/api/v1/pop/queue/%s?subscriptionFrom=%s", q, bad[i]),
            sfmt("/api/v1/pop/queue/%s/partition/p?subscriptionFrom=%s", q, bad[i]),
            sfmt("/api/v1/pop/queue/%s?subscriptionFrom=%s&wait=true&timeout=100", q, bad[i]),
            sfmt("/api/v1/pop?namespace=x&subscriptionFrom=%s", bad[i]),
        };
        for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++) {
            reply r;
            rq(&s, "GET", paths[k], NULL, &r);
            CHECK_ERROR(&r, 400, "subscriptionFrom must be an ISO 8601 timestamp");
            CHECK_STR(jstr(&r, "field"), "subscriptionFrom");
            reply_fini(&r);
        }
    }
    CHECK_STR(sql("SELECT count(*) FROM queen.log_consumers"), "0");
    srv_stop(&s);
}

/* Every element of an array is named the same way, "items[i]: ", whichever
 * field is wrong; a single ack is not an array and has no prefix. */
TEST(errors_inside_arrays_name_the_element_one_way)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("eprefix");
    reply r;
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1},{\"queue\":\"\",\"payload\":1}]}", q), &r);
    CHECK_ERROR(&r, 400, "items[1]: queue must be a non-empty string");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1},{\"queue\":\"%s\"}]}", q, q), &r);
    CHECK_ERROR(&r, 400, "items[1]: payload is required");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1,\"traceId\":\"x\"}]}", q), &r);
    CHECK_ERROR(&r, 400, "items[0]: traceId must be a uuid");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack", "{\"partitionId\":\"" SOME_UUID "\"}", &r);
    CHECK_ERROR(&r, 400, NULL);
    CHECK_STR(jstr(&r, "error"), "transactionId is required");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack/batch", "{\"acknowledgments\":[{\"transactionId\":\"t\",\"partitionId\":\"" SOME_UUID
                                         "\"},{\"partitionId\":\"" SOME_UUID "\"}]}", &r);
    CHECK_ERROR(&r, 400, NULL);
    CHECK_STR(jstr(&r, "error"), "acknowledgments[1]: transactionId is required");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/transaction",
       sfmt("{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"%s\",\"payload\":1},{\"payload\":2}]}]}", q), &r);
    CHECK_ERROR(&r, 400, NULL);
    CHECK_STR(jstr(&r, "error"), "operations[0].items[1]: queue is required");
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM queen.queues"), "0");
    srv_stop(&s);
}

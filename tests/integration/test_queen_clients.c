/* Integration: requests exactly as Queen's own published clients send them
 * (the C++ client's queue creation, the JavaScript client's subscription
 * modes) work unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "harness.h"
#include "support.h"

/* QueueBuilder::create() of Queen's C++ client: empty namespace and task,
 * every option of its QueueConfig. */
static const char *cpp_create(const char *q)
{
    return sfmt("{\"queue\":\"%s\",\"namespace\":\"\",\"task\":\"\",\"options\":{\"leaseTime\":300,\"retryLimit\":3,"
                "\"priority\":0,\"delayedProcessing\":0,\"windowBuffer\":0,\"maxSize\":0,\"retentionSeconds\":0,"
                "\"completedRetentionSeconds\":0,\"encryptionEnabled\":false}}", q);
}

static const char *queue_namespace(silt_server *s, const char *q)
{
    reply r;
    rq(s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    const char *ns = sfmt("%s", jraw(&r, "namespace"));
    reply_fini(&r);
    return ns;
}

TEST(cpp_client_creates_a_queue_with_empty_namespace_and_task)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("cpp-create");
    reply r;
    rq(&s, "POST", "/api/v1/configure", cpp_create(q), &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "configured"));
    CHECK_STR(jraw(&r, "namespace"), "null");   /* "" is "none" */
    CHECK_STR(jraw(&r, "task"), "null");
    CHECK_INT(jint(&r, "options.leaseTime"), 300);
    reply_fini(&r);
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    /* a queue tagged elsewhere keeps its tags when the C++ client configures it again */
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":\"billing\",\"task\":\"invoices\"}", q), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/configure", cpp_create(q), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "namespace"), "billing");
    CHECK_STR(jstr(&r, "task"), "invoices");
    reply_fini(&r);
    CHECK_STR(queue_namespace(&s, q), "\"billing\"");
    srv_stop(&s);
}

TEST(a_namespace_that_is_not_a_string_is_still_refused)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("cpp-badns");
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":7}", q), &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "field"), "namespace");
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", q), "0");
    srv_stop(&s);
}

/* The JavaScript client's .subscriptionMode('from_beginning'). */
TEST(js_client_subscription_mode_from_beginning_reads_from_the_oldest_message)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("js-frombeg");
    CHECK_INT(push_simple(&s, q, "Default", 3), 201);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?batch=10&wait=false&consumerGroup=%s&subscriptionMode=from_beginning",
                       q, uniq("g")), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    CHECK_INT(jint(&r, "messages.2.offset"), 2);
    reply_fini(&r);
    /* the same request with new reads nothing older than the group */
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?batch=10&wait=false&consumerGroup=%s&subscriptionMode=new", q, uniq("g")),
       NULL, &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(an_unknown_subscription_mode_is_400_and_starts_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("js-badmode"), *g = uniq("g");
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=%s&subscriptionMode=beginning", q, g), NULL, &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "field"), "subscriptionMode");
    CHECK(strstr(jstr(&r, "error"), "from_beginning") != NULL);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_consumers where consumer_group = '%s'", g), "0");
    CHECK_STR(sql("select count(*) from queen.subscriptions where consumer_group = '%s'", g), "0");
    srv_stop(&s);
}

/* Operators and test harnesses clean up behind the broker's back. */
TEST(a_queue_deleted_by_sql_leaves_nothing_behind)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96], pid[64];
    keep_str(q, sfmt("test-%s", uniq("sqldel")));
    push_one(&s, q, "Default", "t1", "{\"a\":1}");
    push_one(&s, q, "Default", "t2", "{\"a\":2}");
    snprintf(pid, sizeof pid, "%s", sql("select id from queen.log_partitions where queue = '%s'", q));
    /* a dead letter: pop one, ack it as dlq */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?batch=1", q), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"t1\",\"partitionId\":\"%s\",\"status\":\"dlq\","
                                       "\"error\":\"poison\"}", pid), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_dlq where queue = '%s'", q), "1");
    sql("DELETE FROM queen.queues WHERE name LIKE 'test-%%'");
    CHECK_STR(sql("select count(*) from queen.log_partitions where id = '%s'", pid), "0");
    CHECK_STR(sql("select count(*) from queen.log_segments where partition_id = '%s'", pid), "0");
    CHECK_STR(sql("select count(*) from queen.log_txns where partition_id = '%s'", pid), "0");
    CHECK_STR(sql("select count(*) from queen.log_dlq where queue = '%s'", q), "0");
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "total"), 0);
    reply_fini(&r);
    /* the next push makes a new queue, from offset 0 */
    push_one(&s, q, "Default", "t1", "{\"a\":3}");
    CHECK_STR(sql("select last_offset from queen.log_partitions where queue = '%s'", q), "0");
    srv_stop(&s);
}

TEST(a_queue_deleted_through_the_api_leaves_nothing_behind)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("apidel");
    CHECK_INT(push_simple(&s, q, "A", 2), 201);
    CHECK_INT(push_simple(&s, q, "B", 2), 201);
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_segments s where not exists "
                  "(select 1 from queen.log_partitions p where p.id = s.partition_id)"), "0");
    CHECK_STR(sql("select count(*) from queen.log_txns t where not exists "
                  "(select 1 from queen.log_partitions p where p.id = t.partition_id)"), "0");
    srv_stop(&s);
}

/* Not-found is not-found, for queues and consumer groups alike. */
TEST(deleting_an_unknown_queue_or_group_is_404_and_a_known_one_200)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("del404"), *g = uniq("g"), *other = uniq("del404other");
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    CHECK_INT(push_simple(&s, other, "Default", 1), 201);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=%s&autoAck=true", q, g), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    const char *gone[] = { sfmt("/api/v1/resources/queues/%s", uniq("nosuch")),
                           sfmt("/api/v1/consumer-groups/%s", uniq("nosuch")),
                           sfmt("/api/v1/consumer-groups/%s/queues/%s", g, other) };   /* known group, not on it */
    for (int i = 0; i < 3; i++) {
        rq(&s, "DELETE", gone[i], NULL, &r);
        CHECK_INT(r.status, 404);
        CHECK(jstr(&r, "error") != NULL);
        reply_fini(&r);
    }
    CHECK_STR(sql("select count(*) from queen.log_consumers where consumer_group = '%s'", g), "1");
    rq(&s, "DELETE", sfmt("/api/v1/consumer-groups/%s/queues/%s", g, q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "cursors"), 1);
    reply_fini(&r);
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "deleted"));
    reply_fini(&r);
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);   /* twice: gone now */
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    /* the CLI says so with its exit code */
    const char *cmd = sfmt("SILT_URL='%s' '%s' groups rm %s >/dev/null 2>&1", s.url, silt_bin(), uniq("nosuch"));
    int rc = system(cmd);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    srv_stop(&s);
}

/* ---- large payloads ---- */

/* pushLargePayload of Queen's JavaScript client tests: 10,000 records of a
 * 32-hex id, 100 bytes of data and a nested object, 2.17 MB of JSON. */
static void js_large_payload(buf *out, int records)
{
    for (int i = 0; i < records; i++) {
        buf_puts(out, i ? "," : "[");
        buf_printf(out, "{\"id\":\"%032x\",\"data\":\"%0100d\",\"nested\":{\"field1\":\"value1\","
                        "\"field2\":%d,\"field3\":[1,2,3]}}", i, 0, i);
    }
    buf_putc(out, ']');
}

static void push_payload(silt_server *s, const char *q, const buf *payload)
{
    buf body;
    buf_init(&body);
    buf_printf(&body, "{\"items\":[{\"queue\":\"%s\",\"payload\":", q);
    buf_append(&body, payload->data, payload->len);
    buf_puts(&body, "}]}");
    reply r;
    rq(s, "POST", "/api/v1/push", body.data, &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    reply_fini(&r);
    buf_fini(&body);
}

/* Pops the one message and checks its data is the payload, byte for byte. */
static void pop_payload(silt_server *s, const char *q, const buf *payload)
{
    reply r;
    rq(s, "GET", sfmt("/api/v1/pop/queue/%s?autoAck=true&wait=false", q), NULL, &r);
    CHECK_INT(r.status, 200);
    int t = jpath(&r, "messages.0.data");
    CHECK(t >= 0);
    size_t n = 0;
    const char *data = t >= 0 ? json_span(&r.doc, (uint32_t)t, &n) : "";
    CHECK_INT((int64_t)n, (int64_t)payload->len);
    CHECK(n == payload->len && memcmp(data, payload->data, n) == 0);
    reply_fini(&r);
}

TEST(js_client_large_payload_is_accepted_by_default_and_comes_back_verbatim)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("large");
    buf payload;
    buf_init(&payload);
    js_large_payload(&payload, 10000);
    CHECK(payload.len > 2100000);
    push_payload(&s, q, &payload);
    pop_payload(&s, q, &payload);
    buf_fini(&payload);
    srv_stop(&s);
}

/* Peak resident memory of a server process, bytes. */
static int64_t peak_rss(const silt_server *s)
{
    FILE *f = fopen(sfmt("/proc/%d/status", (int)s->pid), "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

/* Without sanitizers only: AddressSanitizer keeps freed memory quarantined. */
#if defined(__SANITIZE_ADDRESS__)
#define MEMORY_MEASURED 0
#else
#define MEMORY_MEASURED 1
#endif

/* A 10 MB message: the server that takes it grows by about twice its size
 * (the body as read, then joined into one piece; it used to be 2.6 times),
 * and a fresh server that hands it out by about its size once (it used to be
 * 3 times: decoded, copied into the reply, copied again to the socket). */
TEST(a_10_mb_message_costs_its_size_about_once_on_the_way_in_and_out)
{
    const char *q = uniq("rss");
    buf payload;
    buf_init(&payload);
    js_large_payload(&payload, 46000);   /* 10 MB */
    silt_server in, out;
    srv_start(&in, NULL);
    int64_t before = peak_rss(&in);
    push_payload(&in, q, &payload);
    int64_t pushed = peak_rss(&in) - before;
    srv_stop(&in);
    srv_start(&out, NULL);
    before = peak_rss(&out);
    pop_payload(&out, q, &payload);
    int64_t popped = peak_rss(&out) - before;
    srv_stop(&out);
    printf("    10 MB message: push +%.1f MB, pop +%.1f MB\n", (double)pushed / 1e6, (double)popped / 1e6);
    if (MEMORY_MEASURED) {
        CHECK(pushed < (int64_t)payload.len * 24 / 10);
        CHECK(popped < (int64_t)payload.len * 16 / 10);
    }
    buf_fini(&payload);
}

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

/* Integration: transactions, dead letters, consumer-group and queue
 * administration, multi-partition and discovery pops, encryption at rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "base/emit.h"

/* Dead-letters txn of a freshly popped partition with status dlq. */
static const char *dead_letter(silt_server *s, const char *q, const char *txn)
{
    reply r;
    CHECK_INT(pop_from(s, q, NULL, "batch=1", &r), 200);
    const char *pid = jstr(&r, "partitionId");
    reply_fini(&r);
    rq(s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"%s\",\"partitionId\":\"%s\",\"status\":\"dlq\",\"error\":\"poison\"}", txn, pid), &r);
    CHECK(jbool(&r, "0.dlq"));
    reply_fini(&r);
    return pid;
}

TEST(transaction_commits_pushes_and_acks_together)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *in = uniq("txin"), *out = uniq("txout");
    push_one(&s, in, "Default", "m1", "1");
    reply r;
    CHECK_INT(pop_from(&s, in, NULL, "batch=1", &r), 200);
    const char *pid = jstr(&r, "partitionId"), *lease = jstr(&r, "leaseId");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/transaction", sfmt("{\"operations\":[{\"type\":\"ack\",\"transactionId\":\"m1\","
        "\"partitionId\":\"%s\",\"leaseId\":\"%s\"},{\"type\":\"push\",\"items\":[{\"queue\":\"%s\",\"payload\":{\"r\":1}}]}],"
        "\"requiredLeases\":[\"%s\"]}", pid, lease, out, lease), &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "success"));
    CHECK_STR(jstr(&r, "results.0.type"), "ack");
    CHECK_STR(jstr(&r, "results.1.status"), "queued");
    reply_fini(&r);
    CHECK_STR(sql("select committed from queen.log_consumers where partition_id = '%s'", pid), "0");
    CHECK_INT(pop_from(&s, out, NULL, "batch=1", &r), 200);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(transaction_with_unresolvable_ack_rolls_back_its_pushes)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *in = uniq("txin"), *out = uniq("txout");
    push_one(&s, in, "Default", "m1", "1");
    reply r;
    CHECK_INT(pop_from(&s, in, NULL, "batch=1", &r), 200);
    const char *pid = jstr(&r, "partitionId");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/transaction", sfmt("{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"%s\",\"payload\":1}]},"
        "{\"type\":\"ack\",\"transactionId\":\"m1\",\"partitionId\":\"%s\"},"
        "{\"type\":\"ack\",\"transactionId\":\"never-pushed\",\"partitionId\":\"%s\"}]}", out, pid, pid), &r);
    CHECK_INT(r.status, 200);
    CHECK(!jbool(&r, "success"));
    CHECK(strstr(jstr(&r, "error"), "unresolvable") != NULL);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", out), "0");
    CHECK_STR(sql("select committed from queen.log_consumers where partition_id = '%s'", pid), "-1");
    srv_stop(&s);
}

TEST(transaction_with_a_lost_lease_rolls_back)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *in = uniq("txin"), *out = uniq("txout");
    push_one(&s, in, "Default", "m1", "1");
    reply r;
    CHECK_INT(pop_from(&s, in, NULL, "batch=1", &r), 200);
    const char *pid = jstr(&r, "partitionId"), *lease = jstr(&r, "leaseId");
    reply_fini(&r);
    sql("update queen.log_consumers set lease_expires = now() - interval '1 second' where partition_id = '%s'", pid);
    rq(&s, "POST", "/api/v1/transaction", sfmt("{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"%s\",\"payload\":1}]}],"
        "\"requiredLeases\":[\"%s\"]}", out, lease), &r);
    CHECK(!jbool(&r, "success"));
    CHECK(strstr(jstr(&r, "error"), "is not held") != NULL);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", out), "0");
    srv_stop(&s);
}

TEST(transaction_unknown_operation_rolls_back_and_says_why)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *out = uniq("txout");
    reply r;
    rq(&s, "POST", "/api/v1/transaction", sfmt("{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"%s\",\"payload\":1}]},"
        "{\"type\":\"frobnicate\"}]}", out), &r);
    CHECK_INT(r.status, 200);
    CHECK(!jbool(&r, "success"));
    CHECK(strstr(jstr(&r, "error"), "frobnicate") != NULL);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", out), "0");
    rq(&s, "POST", "/api/v1/transaction", "{\"operations\":[]}", &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(transaction_dlq_ack_dead_letters_inside_the_transaction)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *in = uniq("txdlq");
    push_one(&s, in, "Default", "m1", "{\"v\":\"poison\"}");
    reply r;
    CHECK_INT(pop_from(&s, in, NULL, "batch=1", &r), 200);
    const char *pid = jstr(&r, "partitionId");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/transaction", sfmt("{\"operations\":[{\"type\":\"ack\",\"transactionId\":\"m1\","
        "\"partitionId\":\"%s\",\"status\":\"dlq\",\"error\":\"bad\"}]}", pid), &r);
    CHECK(jbool(&r, "success"));
    CHECK(jbool(&r, "results.0.dlq"));
    reply_fini(&r);
    CHECK_STR(sql("select convert_from(payload, 'UTF8') || error_message from queen.log_dlq where queue = '%s'", in),
              "{\"v\":\"poison\"}bad");
    srv_stop(&s);
}

TEST(dlq_replay_round_trip_pushes_back_and_removes_the_dead_letter)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("replay");
    push_one(&s, q, "Default", "m1", "{\"x\":42}");
    dead_letter(&s, q, "m1");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "total"), 1);
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"x\":42}");
    CHECK_STR(jstr(&r, "messages.0.errorMessage"), "poison");
    const char *id = jstr(&r, "messages.0.id");
    reply_fini(&r);
    rq(&s, "POST", sfmt("/api/v1/dlq/%s/replay", id), "{}", &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "transactionId"), sfmt("dlq:%s", id));
    CHECK_INT(jint(&r, "offset"), 1);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_dlq where queue = '%s'", q), "0");
    CHECK_INT(pop_from(&s, q, NULL, "batch=5", &r), 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), sfmt("dlq:%s", id));
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"x\":42}");
    reply_fini(&r);
    rq(&s, "POST", sfmt("/api/v1/dlq/%s/replay", id), "{}", &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(dlq_pages_are_correct_at_every_offset)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("dlqpages");
    for (int i = 0; i < 5; i++) push_one(&s, q, "Default", sfmt("m%d", i), sfmt("%d", i));
    for (int i = 0; i < 5; i++) dead_letter(&s, q, sfmt("m%d", i));
    char seen[5] = { 0 };
    for (int offset = 0; offset <= 6; offset++) {
        reply r;
        rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s&limit=2&offset=%d", q, offset), NULL, &r);
        CHECK_INT(jint(&r, "total"), 5);
        CHECK_INT(jint(&r, "pagination.offset"), offset);
        int expect = offset >= 5 ? 0 : (5 - offset < 2 ? 5 - offset : 2);
        CHECK_INT(r.doc.tokens[jpath(&r, "messages")].count, expect);
        if (offset % 2 == 0)
            for (int k = 0; k < expect; k++) seen[jint(&r, sfmt("messages.%d.offset", k))]++;
        reply_fini(&r);
    }
    for (int i = 0; i < 5; i++) CHECK_INT(seen[i], 1);   /* pages neither overlap nor skip */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s&limit=0", q), NULL, &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(message_delete_removes_the_dead_letter_of_that_message)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("msgdel");
    push_one(&s, q, "Default", "m1", "1");
    const char *pid = dead_letter(&s, q, "m1");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/messages/%s/m1", pid), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "status"), "retained");
    reply_fini(&r);
    rq(&s, "DELETE", sfmt("/api/v1/messages/%s/m1", pid), NULL, &r);
    CHECK_INT(jint(&r, "deleted"), 1);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_dlq where queue = '%s'", q), "0");
    rq(&s, "DELETE", sfmt("/api/v1/messages/%s/m1", pid), NULL, &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(seek_to_a_timestamp_older_than_the_oldest_segment_resolves_to_it)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("seekold");
    push_one(&s, q, "Default", "m0", "0");
    push_one(&s, q, "Default", "m1", "1");
    push_one(&s, q, "Default", "m2", "2");
    const char *pid = sql("select id from queen.log_partitions where queue = '%s'", q);
    /* retention removed the first segment: the watermark is offset 1 */
    sql("delete from queen.log_segments where partition_id = '%s' and base_offset = 0", pid);
    sql("update queen.log_partitions set log_start = 1 where id = '%s'", pid);
    reply r;
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/g1/queues/%s/seek", q), "{\"timestamp\":\"2000-01-01T00:00:00Z\"}", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "partitions.0.committedOffset"), 0);
    reply_fini(&r);
    CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=g1&batch=5", &r), 200);
    CHECK_INT(jint(&r, "messages.0.offset"), 1);
    reply_fini(&r);
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/g1/queues/%s/seek", q), "{\"toEnd\":true}", &r);
    CHECK_INT(jint(&r, "partitions.0.committedOffset"), 2);
    reply_fini(&r);
    CHECK_STR(sql("select coalesce(lease_id::text, 'released') || retry_count from queen.log_consumers "
                  "where partition_id = '%s' and consumer_group = 'g1'", pid), "released0");
    CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=g1", &r), 204);
    reply_fini(&r);
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/g1/queues/%s/seek", q), "{}", &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(consumer_groups_list_detail_and_delete)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("groups"), *g = uniq("grp");
    push_simple(&s, q, "Default", 3);
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, sfmt("consumerGroup=%s&batch=1", g), &r), 200);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/consumer-groups/%s", g), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "partitions.0.lag"), 3);
    CHECK(jpath(&r, "partitions.0.lease.leaseId") >= 0);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/consumer-groups", NULL, &r);
    CHECK(strstr(r.raw.body.data, g) != NULL);
    reply_fini(&r);
    rq(&s, "DELETE", sfmt("/api/v1/consumer-groups/%s?deleteMetadata=true", g), NULL, &r);
    CHECK_INT(jint(&r, "cursors"), 1);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.subscriptions where consumer_group = '%s'", g), "0");
    rq(&s, "GET", sfmt("/api/v1/consumer-groups/%s", g), NULL, &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    srv_stop(&s);
}

/* Queues and consumer groups page by name when asked; a group's detail
 * pages its cursors and carries the figures of all of them; the group list
 * narrows to the groups on one queue. */
TEST(queue_and_group_lists_and_a_groups_cursors_page_when_asked)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *qa = uniq("lq-a");
    char a[96], b[96];
    keep_str(a, qa);
    keep_str(b, sfmt("%s-b", a));   /* sorts after a */
    push_queued(&s, a, "p1", 0, 2, NULL);
    push_queued(&s, a, "p2", 0, 3, NULL);
    push_queued(&s, b, "p1", 0, 1, NULL);
    reply r;
    CHECK_INT(pop_from(&s, a, "p1", "consumerGroup=ga&batch=1&wait=false", &r), 200);   /* ga: a's p1 */
    reply_fini(&r);
    CHECK_INT(pop_from(&s, a, "p2", "consumerGroup=ga&batch=1&wait=false", &r), 200);   /* and a's p2 */
    reply_fini(&r);
    CHECK_INT(pop_from(&s, b, "p1", "consumerGroup=gb&batch=1&wait=false", &r), 200);   /* gb: b only */
    reply_fini(&r);

    rq(&s, "GET", "/api/v1/resources/queues", NULL, &r);
    CHECK(jpath(&r, "1") >= 0 && jpath(&r, "2") < 0);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/resources/queues?limit=1&offset=1", NULL, &r);
    CHECK_STR(jstr(&r, "0.name"), b);
    CHECK(jpath(&r, "1") < 0);
    reply_fini(&r);

    rq(&s, "GET", "/api/v1/consumer-groups?limit=1", NULL, &r);
    CHECK_STR(jstr(&r, "0.name"), "ga");
    CHECK(jpath(&r, "1") < 0);
    CHECK_INT(jint(&r, "0.cursors"), 2);
    CHECK_INT(jint(&r, "0.totalLag"), 5);          /* over both its cursors */
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/consumer-groups?queue=%s", b), NULL, &r);
    CHECK_STR(jstr(&r, "0.name"), "gb");
    CHECK(jpath(&r, "1") < 0);
    reply_fini(&r);

    rq(&s, "GET", "/api/v1/consumer-groups/ga?limit=1&offset=1", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "partitions.0.partition"), "p2");   /* (queue, partition) order */
    CHECK(jpath(&r, "partitions.1") < 0);
    CHECK_INT(jint(&r, "cursors"), 2);
    CHECK_INT(jint(&r, "totalLag"), 5);
    CHECK_INT(jint(&r, "members"), 2);                    /* both pops' leases */
    CHECK_STR(jstr(&r, "queues.0"), a);
    CHECK_INT(jint(&r, "pagination.limit"), 1);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/consumer-groups/ga", NULL, &r);
    CHECK(jpath(&r, "partitions.1") >= 0 && jpath(&r, "pagination") < 0);
    reply_fini(&r);

    rq(&s, "GET", "/api/v1/resources/overview", NULL, &r);
    CHECK_INT(jint(&r, "totalLag"), 6);   /* every group's lag: ga 5, gb 1 */
    reply_fini(&r);
    const char *bad[] = { "/api/v1/resources/queues?limit=0", "/api/v1/consumer-groups?offset=-2",
                          "/api/v1/consumer-groups/ga?limit=x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rq(&s, "GET", bad[i], NULL, &r);
        CHECK_INT(r.status, 400);
        reply_fini(&r);
    }
    srv_stop(&s);
}

TEST(queue_delete_removes_everything_dead_letters_included)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("qdel");
    push_one(&s, q, "Default", "m1", "1");
    push_one(&s, q, "Default", "m2", "2");
    dead_letter(&s, q, "m1");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(jint(&r, "messages.total"), 2);
    CHECK_INT(jint(&r, "messages.deadLetters"), 1);
    CHECK_INT(jint(&r, "partitionList.0.lastOffset"), 1);
    reply_fini(&r);
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK(jbool(&r, "deleted"));
    reply_fini(&r);
    CHECK_STR(sql("select (select count(*) from queen.log_dlq where queue = '%s') + "
                  "(select count(*) from queen.log_partitions where queue = '%s')", q, q), "0");
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    srv_stop(&s);
}

/* A queue's detail and its retention explain answer one page of partitions
 * in name order when asked (?limit=&offset=), with the queue-wide figures
 * whole; without a limit, the whole list as before. */
TEST(queue_detail_and_explain_page_partitions_in_name_order_when_asked)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("qpage");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    const char *names[5] = { "pa", "pb", "pc", "pd", "pe" };
    for (int i = 4; i >= 0; i--) push_queued(&s, q, names[i], 0, i + 1, NULL);   /* pa holds 1 ... pe 5 */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(jint(&r, "partitions"), 5);
    CHECK(jpath(&r, "partitionList.4") >= 0 && jpath(&r, "partitionList.5") < 0);
    CHECK(jpath(&r, "pagination") < 0);
    char newest[64];
    snprintf(newest, sizeof newest, "%s", sql("select queen.iso_ms(max(last_write_at)) from queen.log_partitions "
                                              "where queue = '%s'", q));
    CHECK_STR(jstr(&r, "lastWriteAt"), newest);
    reply_fini(&r);

    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s?limit=2&offset=1", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "partitions"), 5);            /* the whole queue's figures */
    CHECK_INT(jint(&r, "messages.total"), 15);
    CHECK_STR(jstr(&r, "lastWriteAt"), newest);
    CHECK_STR(jstr(&r, "partitionList.0.name"), "pb");
    CHECK_STR(jstr(&r, "partitionList.1.name"), "pc");
    CHECK(jpath(&r, "partitionList.2") < 0);
    CHECK_INT(jint(&r, "partitionList.1.messages"), 3);
    CHECK_INT(jint(&r, "pagination.limit"), 2);
    CHECK_INT(jint(&r, "pagination.offset"), 1);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s?limit=10&offset=5", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(jpath(&r, "partitionList.0") < 0);   /* past the end: an empty page, not an error */
    reply_fini(&r);

    rq(&s, "GET", sfmt("/api/v1/retention/explain?queue=%s&limit=2&offset=4", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "partitions.0.partition"), "pe");
    CHECK(jpath(&r, "partitions.1") < 0);
    CHECK_INT(jint(&r, "summary.partitions"), 5);
    CHECK_INT(jint(&r, "summary.retainedOffsets"), 15);
    CHECK_INT(jint(&r, "pagination.offset"), 4);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/retention/explain?queue=%s&partition=pd&limit=1", q), NULL, &r);
    CHECK_STR(jstr(&r, "partitions.0.partition"), "pd");   /* the filter applies before the page */
    CHECK(jpath(&r, "partitions.1") < 0);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/retention/explain?queue=%s", q), NULL, &r);
    CHECK(jpath(&r, "partitions.4") >= 0 && jpath(&r, "pagination") < 0);
    reply_fini(&r);
    srv_stop(&s);
}

/* A limit or offset that is not a whole number in range is a 400 naming it. */
TEST(queue_detail_and_explain_refuse_a_bad_page)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("qbadpage");
    push_queued(&s, q, "Default", 0, 1, NULL);
    const char *bad[][2] = { { "limit=0", "limit" }, { "limit=1001", "limit" }, { "limit=ten", "limit" },
                             { "limit=5&offset=-1", "offset" }, { "offset=x", "offset" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *paths[2] = { sfmt("/api/v1/resources/queues/%s?%s", q, bad[i][0]),
                                 sfmt("/api/v1/retention/explain?queue=%s&%s", q, bad[i][0]) };
        for (int k = 0; k < 2; k++) {
            reply r;
            rq(&s, "GET", paths[k], NULL, &r);
            CHECK_INT(r.status, 400);
            CHECK_STR(jstr(&r, "field"), bad[i][1]);
            reply_fini(&r);
        }
    }
    srv_stop(&s);
}

/* The overview counts the cluster's traffic, not one server's: offsets
 * written through one server and consumed through another show on both. */
TEST(overview_counts_offsets_written_and_consumed_across_servers)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    reply r;
    rq(&b, "GET", "/api/v1/resources/overview", NULL, &r);
    int64_t written = jint(&r, "offsetsWritten"), consumed = jint(&r, "offsetsConsumed");
    reply_fini(&r);
    const char *q = uniq("qcount");
    push_queued(&a, q, "Default", 0, 3, NULL);
    CHECK_INT(pop_from(&a, q, "Default", "consumerGroup=g&batch=2&wait=false&autoAck=true", &r), 200);
    reply_fini(&r);
    silt_server *both[2] = { &a, &b };
    for (int i = 0; i < 2; i++) {
        rq(both[i], "GET", "/api/v1/resources/overview", NULL, &r);
        CHECK_INT(jint(&r, "offsetsWritten"), written + 3);
        CHECK_INT(jint(&r, "offsetsConsumed"), consumed + 2);
        reply_fini(&r);
    }
    srv_stop(&b);
    srv_stop(&a);
}

TEST(multi_partition_pop_never_holds_two_leases_on_one_partition)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("multi");
    push_simple(&s, q, "a", 3);
    push_simple(&s, q, "b", 3);
    push_simple(&s, q, "c", 3);
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, "batch=7&partitions=3", &r), 200);
    CHECK_INT(jint(&r, "partitionsClaimed"), 3);
    CHECK_INT(r.doc.tokens[jpath(&r, "messages")].count, 7);
    const char *lease = jstr(&r, "leaseId");
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_consumers where lease_id = '%s'", lease), "3");
    CHECK_STR(sql("select count(*) from (select partition_id from queen.log_consumers c join queen.log_partitions p "
                  "on p.id = c.partition_id where p.queue = '%s' and lease_expires > now() group by partition_id, "
                  "consumer_group having count(*) > 1) x", q), "0");
    CHECK_INT(pop_from(&s, q, NULL, "batch=10&partitions=3", &r), 204);   /* every partition is leased */
    reply_fini(&r);
    rq(&s, "POST", sfmt("/api/v1/lease/%s/extend", lease), "{\"seconds\":600}", &r);
    CHECK_INT(jint(&r, "renewed"), 3);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(discovery_pop_finds_queues_by_namespace_and_task)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("disc"), *ns = uniq("ns");
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":\"%s\",\"task\":\"resize\"}", q, ns), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    push_simple(&s, q, "Default", 2);
    rq(&s, "GET", sfmt("/api/v1/pop?namespace=%s&task=other", ns), NULL, &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop?namespace=%s&task=resize&batch=5", ns), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "queue"), q);
    CHECK_INT(r.doc.tokens[jpath(&r, "messages")].count, 2);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/pop", NULL, &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(encryption_round_trip_stores_only_ciphertext)
{
    silt_server s;
    srv_start(&s, NULL);   /* with TEST_ENCRYPTION_KEY */
    const char *q = uniq("enc");
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"options\":{\"encryptionEnabled\":true}}", q), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    push_one(&s, q, "Default", "m1", "{\"card\":\"4111-1111\"}");
    push_one(&s, q, "Default", "m2", "{\"card\":\"5500-0000\"}");
    CHECK_INT(pop_from(&s, q, NULL, "batch=1", &r), 200);
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"card\":\"4111-1111\"}");
    const char *pid = jstr(&r, "partitionId");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"m1\",\"partitionId\":\"%s\"}", pid), &r);
    CHECK(jbool(&r, "0.success"));
    reply_fini(&r);
    dead_letter(&s, q, "m2");
    /* the dead letter's stored payload is sealed: nonce + ciphertext + tag */
    CHECK_STR(sql("select encrypted::text || length(payload) || position('5500'::bytea in payload) "
                  "from queen.log_dlq where queue = '%s'", q), "true480");
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"card\":\"5500-0000\"}");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(encryption_flag_set_elsewhere_is_honoured_by_the_next_push)
{
    silt_server s;
    srv_start(&s, NULL);   /* with TEST_ENCRYPTION_KEY */
    const char *q = uniq("enc2");
    push_one(&s, q, "Default", "m1", "1");
    /* another server switched encryption on: this one has not heard of it */
    sql("update queen.queues set options = options || '{\"encryptionEnabled\": true}' where name = '%s'", q);
    push_one(&s, q, "Default", "m2", "{\"secret\":1}");
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, "batch=2", &r), 200);
    CHECK_STR(jraw(&r, "messages.1.data"), "{\"secret\":1}");
    reply_fini(&r);
    srv_stop(&s);
}

/* A server whose key cannot open what it claimed gives the lease back at
 * once (src/streams/pop.c, release_lease): the partition is not blocked
 * until the lease expires, the cursor and retry count are untouched, and a
 * server with the right key serves the message at its next pop. */
TEST(encryption_pop_that_cannot_decrypt_releases_its_lease)
{
    silt_server right, wrong;
    srv_start(&right, NULL);   /* with TEST_ENCRYPTION_KEY */
    const char *other = "QUEEN_ENCRYPTION_KEY=ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
    srv_start(&wrong, (const char *const[]){ other, NULL });
    const char *q = uniq("enckey");
    configure_queue(&right, q, "{\"encryptionEnabled\":true,\"leaseTime\":600}");
    push_one(&right, q, "Default", "m1", "{\"secret\":1}");
    reply r;
    for (int i = 0; i < 2; i++) {   /* a group's lease and queue mode's */
        const char *group = i ? "" : "consumerGroup=g&", *name = i ? "__QUEUE_MODE__" : "g";
        pop_from(&wrong, q, NULL, sfmt("%sbatch=1", group), &r);
        CHECK_INT(r.status, 500);
        CHECK(strstr(jstr(&r, "error"), "wrong encryption key") != NULL);
        reply_fini(&r);
        sql_await("0", 5000, "select count(*) from queen.log_consumers c join queen.log_partitions p on p.id = c.partition_id"
                             " where p.queue = '%s' and c.consumer_group = '%s' and c.lease_id is not null", q, name);
        CHECK_INT(pop_from(&right, q, NULL, sfmt("%sbatch=1&wait=false", group), &r), 200);
        CHECK_STR(jraw(&r, "messages.0.data"), "{\"secret\":1}");
        reply_fini(&r);
    }
    srv_stop(&wrong);
    srv_stop(&right);
}

/* `silt server` on the test's database with this key, stderr into stdout:
 * for a server expected to refuse to start. */
static const char *server_cmd(const char *key)
{
    return sfmt("PG_HOST=127.0.0.1 PG_PORT=%s PG_USER=postgres PG_DB=%s PORT=1 QUEEN_ENCRYPTION_KEY=%s %s server 2>&1",
                getenv("SILT_TEST_PGPORT") ? getenv("SILT_TEST_PGPORT") : "5432", test_db(), key,
                getenv("SILT_BIN") ? getenv("SILT_BIN") : "build/silt");
}

TEST(encryption_without_a_key_is_refused_at_configure_and_at_startup)
{
    silt_server s;
    char db[64];
    snprintf(db, sizeof db, "silt_nokey_%d", (int)getpid());
    const char *env[] = { "QUEEN_ENCRYPTION_KEY=", NULL };
    srv_start_db(&s, env, db);
    const char *q = uniq("nokey");
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"options\":{\"encryptionEnabled\":true}}", q), &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "invalid"), "encryptionEnabled");
    /* the error names the setting and how to make a key */
    CHECK(strstr(jstr(&r, "error"), "QUEEN_ENCRYPTION_KEY") && strstr(jstr(&r, "error"), "openssl rand -hex 32"));
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", q), "0");
    srv_stop(&s);
    /* a queue that needs the key stops a keyless server at start, saying why */
    sql("DROP DATABASE \"%s\" WITH (FORCE)", db);
    FILE *p = popen(server_cmd("abc"), "r");
    char line[512] = "";
    CHECK(fgets(line, sizeof line, p) != NULL);
    CHECK(pclose(p) != 0);
    CHECK(strstr(line, "QUEEN_ENCRYPTION_KEY must be 64 hexadecimal characters") != NULL);
    sql("INSERT INTO queen.queues (name, options) VALUES ('%s', queen.default_options() || '{\"encryptionEnabled\": true}')", q);
    p = popen(server_cmd(""), "r");
    CHECK(fgets(line, sizeof line, p) != NULL);
    CHECK(pclose(p) != 0);
    CHECK(strstr(line, "has encryptionEnabled but QUEEN_ENCRYPTION_KEY is not set") != NULL);
    CHECK(strstr(line, "openssl rand -hex 32") != NULL);
}

/* ---- one voice ---- */

/* A reply speaks the API's one voice when writing it again with the emitter
 * changes nothing (no spaces, one escaping), and every time in it has the one
 * format (UTC, milliseconds, Z). */
static void check_one_voice(const char *file, int line, const char *what, const reply *r)
{
    buf again;
    buf_init(&again);
    emit e;
    emit_init(&e, &again);
    if (emit_json(&e, r->raw.body.data, r->raw.body.len) < 0) harness_failf(file, line, "%s: not json", what);
    if (strcmp(again.data, r->raw.body.data) != 0)
        harness_failf(file, line, "%s: not in the one voice:\n      %s\n    written again:\n      %s", what,
                      r->raw.body.data, again.data);
    buf_fini(&again);
    for (uint32_t t = 0; t < r->doc.ntokens; t++) {
        const json_token *k = &r->doc.tokens[t];
        const char *s = r->raw.body.data + k->start + 1;
        size_t n = k->end - k->start - 2;
        bool looks_like_time = k->type == JSON_STRING && n >= 11 && s[4] == '-' && s[7] == '-' && s[10] == 'T';
        bool one_format = n == 24 && s[19] == '.' && s[23] == 'Z';
        if (looks_like_time && !one_format) harness_failf(file, line, "%s: a time in another format: %.*s", what, (int)n, s);
    }
}
#define CHECK_ONE_VOICE(what, r) check_one_voice(__FILE__, __LINE__, (what), (r))

TEST(every_reply_speaks_one_voice_with_one_time_format)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("voice");
    const char *calls[][3] = {
        { "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"options\":{\"retentionEnabled\":true,"
                                            "\"retentionSeconds\":3600,\"retryLimit\":0}}", q) },
        { "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":{\"a\":1},\"transactionId\":\"t1\"},"
                                       "{\"queue\":\"%s\",\"payload\":[1,2],\"transactionId\":\"t2\"}]}", q, q) },
        { "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&batch=1", q), NULL },
        { "GET", "/api/v1/resources/queues", NULL },
        { "GET", sfmt("/api/v1/resources/queues/%s", q), NULL },
        { "GET", "/api/v1/resources/overview", NULL },
        { "GET", "/api/v1/consumer-groups", NULL },
        { "GET", "/api/v1/consumer-groups/g", NULL },
        { "POST", "/api/v1/consumer-groups/g/subscription", "{\"subscriptionTimestamp\":\"2026-01-01T00:00:00Z\"}" },
        { "GET", sfmt("/api/v1/retention/explain?queue=%s", q), NULL },
        { "GET", "/api/v1/analytics/retention", NULL },
        { "POST", "/api/v1/system/retention/run?dryRun=true", NULL },
        { "GET", "/api/v1/system/maintenance", NULL },
        { "GET", "/api/v1/dlq", NULL },
        { "GET", "/health", NULL },
        { "GET", "/api/v1/nothing-here", NULL },
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        reply r;
        rq(&s, calls[i][0], calls[i][1], calls[i][2], &r);
        CHECK(r.status < 500);
        CHECK_ONE_VOICE(calls[i][1], &r);
        reply_fini(&r);
    }
    srv_stop(&s);
}

/* Integration: the streams rules of the wire contract — per-partition order,
 * consumer groups and leases, subscriptions, push dedup, delayedProcessing,
 * windowBuffer, long-polls, partition pops and /configure. Time windows are
 * crossed by backdating rows in PostgreSQL, never by sleeping through them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

/* ---- helpers ---------------------------------------------------------- */

static int nmsgs(const reply *r)
{
    int t = jpath(r, "messages");
    return t < 0 ? -1 : (int)r->doc.tokens[t].count;
}

static const char *partition_id(const char *q, const char *partition)
{
    return sql("select id from queen.log_partitions where queue = '%s' and name = '%s'", q, partition);
}

/* ---- ordering --------------------------------------------------------- */

TEST(partition_messages_pop_in_offset_order_with_payloads_in_push_order)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("order"));
    push_queued(&s, q, "P", 0, 4, NULL);
    push_queued(&s, q, "P", 4, 3, NULL);
    push_queued(&s, q, "P", 7, 5, NULL);
    int seen = 0;
    long long last_offset = -1;
    for (int round = 0; round < 10 && seen < 12; round++) {
        reply r;
        pop_from(&s, q, NULL, "batch=5&autoAck=true", &r);
        CHECK_INT(r.status, 200);
        int n = nmsgs(&r);
        CHECK(n >= 1 && n <= 5);
        CHECK_STR(jstr(&r, "partition"), "P");
        for (int i = 0; i < n; i++) {
            long long off = jint(&r, sfmt("messages.%d.offset", i));
            CHECK(off > last_offset);
            CHECK_INT(off, seen);
            CHECK_STR(jraw(&r, sfmt("messages.%d.data", i)), sfmt("{\"i\":%d}", seen));
            last_offset = off;
            seen++;
        }
        reply_fini(&r);
    }
    CHECK_INT(seen, 12);
    reply r;
    pop_from(&s, q, NULL, "batch=5&autoAck=true", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(created_at_never_decreases_with_offset_within_a_partition)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("created"));
    for (int i = 0; i < 5; i++) push_queued(&s, q, "Default", i * 3, 3, NULL);
    CHECK_STR(sql("select count(*) from queen.log_segments where partition_id = '%s'",
                  partition_id(q, "Default")), "5");
    reply r;
    pop_from(&s, q, NULL, "batch=100&autoAck=true", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 15);
    char prev[64] = "";
    for (int i = 0; i < 15; i++) {
        const char *c = jstr(&r, sfmt("messages.%d.createdAt", i));
        CHECK(c != NULL);
        CHECK_INT(strlen(c), 24);   /* YYYY-MM-DDTHH:MM:SS.mmmZ: fixed width, so strcmp orders */
        CHECK_INT(jint(&r, sfmt("messages.%d.offset", i)), i);
        CHECK(strcmp(prev, c) <= 0);
        if (i % 3) CHECK_STR(c, prev);   /* messages of one segment share its commit time */
        snprintf(prev, sizeof prev, "%s", c);
    }
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- consumer groups and leases ---------------------------------------- */

TEST(consumer_groups_each_read_every_message_independently)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("groups"));
    push_queued(&s, q, "Default", 0, 4, NULL);
    const char *groups[] = { "consumerGroup=ga", "consumerGroup=gb", NULL };
    for (int g = 0; g < 3; g++) {   /* ga, gb, then queue mode */
        reply r;
        pop_from(&s, q, NULL, sfmt("batch=10&autoAck=true%s%s", groups[g] ? "&" : "", groups[g] ? groups[g] : ""), &r);
        CHECK_INT(r.status, 200);
        CHECK_INT(nmsgs(&r), 4);
        CHECK_STR(jstr(&r, "consumerGroup"), g == 0 ? "ga" : g == 1 ? "gb" : "__QUEUE_MODE__");
        for (int i = 0; i < 4; i++) {
            CHECK_INT(jint(&r, sfmt("messages.%d.offset", i)), i);
            CHECK_STR(jraw(&r, sfmt("messages.%d.data", i)), sfmt("{\"i\":%d}", i));
        }
        reply_fini(&r);
    }
    /* Each group's cursor is its own: all three are at the end now. */
    push_queued(&s, q, "Default", 4, 1, NULL);
    for (int g = 0; g < 3; g++) {
        reply r;
        pop_from(&s, q, NULL, sfmt("batch=10&autoAck=true%s%s", groups[g] ? "&" : "", groups[g] ? groups[g] : ""), &r);
        CHECK_INT(r.status, 200);
        CHECK_INT(nmsgs(&r), 1);
        CHECK_INT(jint(&r, "messages.0.offset"), 4);
        reply_fini(&r);
    }
    srv_stop(&s);
}

TEST(a_group_holds_at_most_one_live_lease_per_partition)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("lease"));
    push_queued(&s, q, "Default", 0, 3, NULL);
    reply r;
    pop_from(&s, q, NULL, "consumerGroup=g1", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 1);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    CHECK(jstr(&r, "leaseId") && strlen(jstr(&r, "leaseId")) == 36);
    reply_fini(&r);
    /* The same group: nothing while the lease is live, by queue or by partition. */
    pop_from(&s, q, NULL, "consumerGroup=g1", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/Default?consumerGroup=g1&batch=10", q), NULL, &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    /* Other groups are not blocked by g1's lease. */
    pop_from(&s, q, NULL, "consumerGroup=g2", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    reply_fini(&r);
    pop_from(&s, q, NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_consumers where partition_id = '%s' and lease_expires > now()",
                  partition_id(q, "Default")), "3");
    srv_stop(&s);
}

TEST(an_expired_lease_makes_its_batch_available_again)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("expire"));
    push_queued(&s, q, "Default", 0, 3, NULL);
    reply r;
    pop_from(&s, q, NULL, "consumerGroup=g1&batch=2", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    char lease[64];
    snprintf(lease, sizeof lease, "%s", jstr(&r, "leaseId"));
    reply_fini(&r);
    pop_from(&s, q, NULL, "consumerGroup=g1&batch=2", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    sql("update queen.log_consumers set lease_expires = now() - interval '1 second' "
        "where partition_id = '%s' and consumer_group = 'g1'", partition_id(q, "Default"));
    pop_from(&s, q, NULL, "consumerGroup=g1&batch=2", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    CHECK_INT(jint(&r, "messages.1.offset"), 1);
    CHECK(strcmp(jstr(&r, "leaseId"), lease) != 0);
    reply_fini(&r);
    CHECK_STR(sql("select retry_count from queen.log_consumers where partition_id = '%s' and consumer_group = 'g1'",
                  partition_id(q, "Default")), "0");
    srv_stop(&s);
}

/* ---- subscriptions ---------------------------------------------------- */

TEST(subscription_new_sees_only_messages_pushed_after_first_contact)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("subnew"));
    push_queued(&s, q, "Default", 0, 3, NULL);
    const char *modes[] = { "consumerGroup=n1&subscriptionMode=new", "consumerGroup=n2&subscriptionMode=new-only",
                            "consumerGroup=n3&subscriptionFrom=now" };
    for (int m = 0; m < 3; m++) {
        reply r;
        pop_from(&s, q, NULL, sfmt("batch=10&autoAck=true&%s", modes[m]), &r);
        CHECK_INT(r.status, 204);
        reply_fini(&r);
    }
    push_queued(&s, q, "Default", 3, 2, NULL);
    for (int m = 0; m < 3; m++) {
        reply r;
        pop_from(&s, q, NULL, sfmt("batch=10&autoAck=true&%s", modes[m]), &r);
        CHECK_INT(r.status, 200);
        CHECK_INT(nmsgs(&r), 2);
        CHECK_INT(jint(&r, "messages.0.offset"), 3);
        CHECK_STR(jraw(&r, "messages.0.data"), "{\"i\":3}");
        CHECK_INT(jint(&r, "messages.1.offset"), 4);
        reply_fini(&r);
    }
    srv_stop(&s);
}

TEST(subscription_is_remembered_so_a_later_mode_all_does_not_rewind)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("subkeep"));
    push_queued(&s, q, "Default", 0, 3, NULL);
    reply r;
    pop_from(&s, q, NULL, "consumerGroup=g&subscriptionMode=new&batch=10", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    pop_from(&s, q, NULL, "consumerGroup=g&subscriptionMode=all&batch=10", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(subscription_new_seeds_a_partition_created_later_from_its_start)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("sublater"));
    push_queued(&s, q, "old", 0, 3, NULL);
    reply r;
    pop_from(&s, q, NULL, "consumerGroup=g&subscriptionMode=new&batch=10", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    push_queued(&s, q, "later", 100, 3, NULL);   /* a partition born after g's first contact */
    pop_from(&s, q, NULL, "consumerGroup=g&batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "partition"), "later");
    CHECK_INT(nmsgs(&r), 3);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"i\":100}");
    reply_fini(&r);
    pop_from(&s, q, NULL, "consumerGroup=g&batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 204);   /* and "old" still holds nothing new for g */
    reply_fini(&r);
    srv_stop(&s);
}

/* A seek makes cursors without recording the group's first contact; the
 * first pop that reaches one of them records it, so a partition born later
 * is seeded from that pop, not from whenever a pop first meets it. */
TEST(subscription_new_after_a_seek_seeds_a_partition_created_later_from_the_first_pop)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("subseek"));
    push_queued(&s, q, "old", 0, 3, NULL);
    reply r;
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/g/queues/%s/seek", q), "{\"toEnd\":true}", &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    push_queued(&s, q, "old", 3, 1, NULL);
    pop_from(&s, q, NULL, "consumerGroup=g&subscriptionMode=new&batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 200);   /* g's first contact, at a cursor the seek made */
    CHECK_INT(nmsgs(&r), 1);
    reply_fini(&r);
    push_queued(&s, q, "later", 100, 3, NULL);
    pop_from(&s, q, NULL, "consumerGroup=g&subscriptionMode=new&batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "partition"), "later");
    CHECK_INT(nmsgs(&r), 3);
    reply_fini(&r);
    srv_stop(&s);
}

/* What one pop, called in SQL, claimed ("n" messages; any partition when
 * partition is NULL) and the
 * synchronous_commit its transaction would commit with: "n/on" or "n/off". */
static const char *pop_commit_mode(const char *q, const char *partition, const char *group, bool auto_ack)
{
    return sql("WITH p AS MATERIALIZED ("
               "  SELECT coalesce(sum(x.cursor_to - x.cursor_from), 0) AS n FROM ("
               "    SELECT DISTINCT partition_id, cursor_from, cursor_to"
               "      FROM queen.pop('%s', %s, NULL, NULL, '%s', 100, 1, %s, NULL, gen_random_uuid(), false)) x)"
               " SELECT p.n || '/' || current_setting('synchronous_commit') FROM p",
               q, partition ? sfmt("'%s'", partition) : "NULL", group, auto_ack ? "true" : "false");
}

/* A leased pop's commit does not wait for its WAL flush (lost in a crash,
 * it loses only its lease); a pop that acks (autoAck) or makes a group's
 * first contact (its subscription row, a new cursor) waits, as the
 * cluster's synchronous_commit says. */
TEST(pop_commit_waits_for_its_flush_only_when_it_acks_or_makes_first_contact)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("popflush"));
    push_queued(&s, q, "a", 0, 3, NULL);
    CHECK_STR(pop_commit_mode(q, NULL, "first", false), "3/on");     /* the group's subscription and cursor */
    reply r;
    pop_from(&s, q, "a", "consumerGroup=g&batch=10&autoAck=true", &r);
    CHECK_INT(nmsgs(&r), 3);   /* g's first contact, through the server */
    reply_fini(&r);
    push_queued(&s, q, "a", 3, 2, NULL);
    CHECK_STR(pop_commit_mode(q, NULL, "g", false), "2/off");        /* a cursor that exists, leased */
    push_queued(&s, q, "b", 0, 1, NULL);
    CHECK_STR(pop_commit_mode(q, NULL, "g", false), "1/on");         /* a cursor the group had not on b */
    pop_from(&s, q, "a", "consumerGroup=h&batch=10&autoAck=true", &r);
    reply_fini(&r);
    push_queued(&s, q, "a", 5, 1, NULL);
    CHECK_STR(pop_commit_mode(q, "a", "h", true), "1/on");          /* autoAck on a cursor that exists */
    CHECK_STR(pop_commit_mode(q, NULL, "g", false), "0/off");        /* nothing to claim: nothing to keep */
    srv_stop(&s);
}

TEST(subscription_all_reads_from_the_oldest_message)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("suball"));
    push_queued(&s, q, "Default", 0, 3, NULL);
    push_queued(&s, q, "Default", 3, 2, NULL);
    const char *groups[] = { "consumerGroup=a1&subscriptionMode=all", "consumerGroup=a2" };
    for (int g = 0; g < 2; g++) {   /* "all" and the default for a named group */
        reply r;
        pop_from(&s, q, NULL, sfmt("batch=10&autoAck=true&%s", groups[g]), &r);
        CHECK_INT(r.status, 200);
        CHECK_INT(nmsgs(&r), 5);
        CHECK_INT(jint(&r, "messages.0.offset"), 0);
        CHECK_STR(jraw(&r, "messages.4.data"), "{\"i\":4}");
        reply_fini(&r);
    }
    srv_stop(&s);
}

TEST(subscription_from_timestamp_starts_at_first_segment_at_or_after_it)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("subfrom"));
    for (int i = 0; i < 3; i++) push_queued(&s, q, "Default", i * 2, 2, NULL);
    char pid[96];
    keep_str(pid, partition_id(q, "Default"));
    CHECK_STR(sql("select count(*) from queen.log_segments where partition_id = '%s'", pid), "3");
    /* Segments at now-3h, now-2h, now-1h (created_at still rises with offset). */
    sql("update queen.log_segments set created_at = now() - make_interval(hours => 3 - base_offset::int / 2) "
        "where partition_id = '%s'", pid);
    struct { int minutes; long long first; int n; } cases[] = {
        { 90, 4, 2 },    /* between the 2nd and 3rd segment */
        { 150, 2, 4 },   /* between the 1st and 2nd */
        { 240, 0, 6 },   /* before all */
    };
    for (int c = 0; c < 3; c++) {
        const char *ts = sql("select to_char(now() at time zone 'utc' - make_interval(mins => %d), "
                             "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')", cases[c].minutes);
        reply r;
        pop_from(&s, q, NULL, sfmt("batch=10&autoAck=true&consumerGroup=f%d&subscriptionFrom=%s", c, ts), &r);
        CHECK_INT(r.status, 200);
        CHECK_INT(nmsgs(&r), cases[c].n);
        CHECK_INT(jint(&r, "messages.0.offset"), cases[c].first);
        CHECK_STR(jraw(&r, "messages.0.data"), sfmt("{\"i\":%lld}", cases[c].first));
        reply_fini(&r);
    }
    /* After every segment: a group that starts at the end. */
    const char *ts = sql("select to_char(now() at time zone 'utc' - make_interval(mins => 30), "
                         "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')");
    reply r;
    pop_from(&s, q, NULL, sfmt("batch=10&autoAck=true&consumerGroup=late&subscriptionFrom=%s", ts), &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(queue_mode_reads_everything_whatever_the_subscription)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("qmode"));
    push_queued(&s, q, "Default", 0, 3, NULL);
    reply r;
    pop_from(&s, q, NULL, "batch=10&subscriptionMode=new", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 3);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    CHECK_STR(jstr(&r, "consumerGroup"), "__QUEUE_MODE__");
    reply_fini(&r);
    char q2[96];
    keep_str(q2, uniq("qmode"));
    push_queued(&s, q2, "Default", 0, 2, NULL);
    pop_from(&s, q2, NULL, "batch=10&subscriptionFrom=now", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.subscriptions where queue in ('%s', '%s')", q, q2), "0");
    srv_stop(&s);
}

/* ---- dedup ------------------------------------------------------------ */

TEST(push_same_transaction_id_same_partition_in_window_is_duplicate_of_original)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("dedup"));
    reply r;
    push_txn_reply(&s, q, "P", "txn-1", "{\"v\":1}", &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    CHECK_STR(jstr(&r, "0.transaction_id"), "txn-1");
    char original[64];
    snprintf(original, sizeof original, "%s", jstr(&r, "0.message_id"));
    reply_fini(&r);
    push_txn_reply(&s, q, "P", "txn-1", "{\"v\":2}", &r);
    CHECK_STR(jstr(&r, "0.status"), "duplicate");
    CHECK_STR(jstr(&r, "0.message_id"), original);
    CHECK_STR(jstr(&r, "0.transaction_id"), "txn-1");
    CHECK_STR(jstr(&r, "0.queueName"), q);
    reply_fini(&r);
    /* A duplicate next to a new item: the new one is written, the duplicate not. */
    rq(&s, "POST", "/api/v1/push",
       sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"P\",\"transactionId\":\"txn-1\",\"payload\":3},"
           "{\"queue\":\"%s\",\"partition\":\"P\",\"transactionId\":\"txn-2\",\"payload\":4}]}", q, q), &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "0.status"), "duplicate");
    CHECK_STR(jstr(&r, "0.message_id"), original);
    CHECK_STR(jstr(&r, "1.status"), "queued");
    reply_fini(&r);
    /* A stored transactionId repeated inside one request: both are duplicates of the original. */
    rq(&s, "POST", "/api/v1/push",
       sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"P\",\"transactionId\":\"txn-1\",\"payload\":5},"
           "{\"queue\":\"%s\",\"partition\":\"P\",\"transactionId\":\"txn-1\",\"payload\":6}]}", q, q), &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "0.status"), "duplicate");
    CHECK_STR(jstr(&r, "0.message_id"), original);
    CHECK_STR(jstr(&r, "1.status"), "duplicate");
    CHECK_STR(jstr(&r, "1.message_id"), original);
    reply_fini(&r);
    pop_from(&s, q, NULL, "batch=10", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    CHECK_STR(jstr(&r, "messages.0.id"), original);
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"v\":1}");
    CHECK_STR(jraw(&r, "messages.1.data"), "4");
    CHECK_INT(jint(&r, "messages.1.offset"), 1);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(push_same_transaction_id_twice_in_one_request_first_wins)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("dedup1"));
    reply r;
    rq(&s, "POST", "/api/v1/push",
       sfmt("{\"items\":[{\"queue\":\"%s\",\"transactionId\":\"t\",\"payload\":\"first\"},"
           "{\"queue\":\"%s\",\"transactionId\":\"u\",\"payload\":\"other\"},"
           "{\"queue\":\"%s\",\"transactionId\":\"t\",\"payload\":\"second\"}]}", q, q, q), &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    CHECK_STR(jstr(&r, "1.status"), "queued");
    CHECK_STR(jstr(&r, "2.status"), "duplicate");
    CHECK_STR(jstr(&r, "2.message_id"), jstr(&r, "0.message_id"));
    CHECK_INT(jint(&r, "2.index"), 2);
    reply_fini(&r);
    pop_from(&s, q, NULL, "batch=10", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    CHECK_STR(jraw(&r, "messages.0.data"), "\"first\"");
    CHECK_STR(jraw(&r, "messages.1.data"), "\"other\"");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(push_same_transaction_id_on_another_partition_is_not_a_duplicate)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("dedupp"));
    reply r;
    push_txn_reply(&s, q, "A", "shared", "1", &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    char first[64];
    snprintf(first, sizeof first, "%s", jstr(&r, "0.message_id"));
    reply_fini(&r);
    push_txn_reply(&s, q, "B", "shared", "2", &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    CHECK(strcmp(jstr(&r, "0.message_id"), first) != 0);
    reply_fini(&r);
    /* And in one request, too. */
    rq(&s, "POST", "/api/v1/push",
       sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"C\",\"transactionId\":\"x\",\"payload\":1},"
           "{\"queue\":\"%s\",\"partition\":\"D\",\"transactionId\":\"x\",\"payload\":2}]}", q, q), &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    CHECK_STR(jstr(&r, "1.status"), "queued");
    reply_fini(&r);
    const char *parts[] = { "A", "B", "C", "D" };
    for (int i = 0; i < 4; i++) {
        rq(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/%s?batch=10", q, parts[i]), NULL, &r);
        CHECK_INT(r.status, 200);
        CHECK_INT(nmsgs(&r), 1);
        reply_fini(&r);
    }
    srv_stop(&s);
}

TEST(push_same_transaction_id_after_dedup_window_is_queued_again)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("dedupold"));
    reply r;
    configure_reply(&s, q, "{\"dedupWindowSeconds\":600}", &r);
    reply_fini(&r);
    push_txn_reply(&s, q, "Default", "again", "1", &r);
    char first[64];
    snprintf(first, sizeof first, "%s", jstr(&r, "0.message_id"));
    reply_fini(&r);
    char pid[96];
    keep_str(pid, partition_id(q, "Default"));
    /* Still inside the window at 500 s old. */
    sql("update queen.log_txns set created_at = now() - interval '500 seconds' where partition_id = '%s'", pid);
    sql("update queen.log_segments set created_at = now() - interval '500 seconds' where partition_id = '%s'", pid);
    push_txn_reply(&s, q, "Default", "again", "2", &r);
    CHECK_STR(jstr(&r, "0.status"), "duplicate");
    CHECK_STR(jstr(&r, "0.message_id"), first);
    reply_fini(&r);
    /* Outside it at 700 s. */
    sql("update queen.log_txns set created_at = now() - interval '700 seconds' where partition_id = '%s'", pid);
    sql("update queen.log_segments set created_at = now() - interval '700 seconds' where partition_id = '%s'", pid);
    push_txn_reply(&s, q, "Default", "again", "3", &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    CHECK(strcmp(jstr(&r, "0.message_id"), first) != 0);
    reply_fini(&r);
    pop_from(&s, q, NULL, "batch=10", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    CHECK_STR(jraw(&r, "messages.0.data"), "1");
    CHECK_STR(jraw(&r, "messages.1.data"), "3");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(push_same_transaction_id_after_default_window_of_3600s_is_queued_again)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("dedupdef"));
    reply r;
    push_txn_reply(&s, q, "Default", "again", "1", &r);
    reply_fini(&r);
    char pid[96];
    keep_str(pid, partition_id(q, "Default"));
    sql("update queen.log_txns set created_at = now() - interval '3500 seconds' where partition_id = '%s'", pid);
    push_txn_reply(&s, q, "Default", "again", "2", &r);
    CHECK_STR(jstr(&r, "0.status"), "duplicate");
    reply_fini(&r);
    sql("update queen.log_txns set created_at = now() - interval '2 hours' where partition_id = '%s'", pid);
    push_txn_reply(&s, q, "Default", "again", "3", &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(dedup_window_zero_disables_the_duplicate_probe)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("dedup0"));
    reply r;
    configure_reply(&s, q, "{\"dedupWindowSeconds\":0}", &r);
    CHECK_INT(jint(&r, "options.dedupWindowSeconds"), 0);
    reply_fini(&r);
    push_txn_reply(&s, q, "Default", "same", "1", &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    char first[64];
    snprintf(first, sizeof first, "%s", jstr(&r, "0.message_id"));
    reply_fini(&r);
    push_txn_reply(&s, q, "Default", "same", "2", &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    CHECK(strcmp(jstr(&r, "0.message_id"), first) != 0);
    reply_fini(&r);
    pop_from(&s, q, NULL, "batch=10", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    CHECK_STR(jstr(&r, "messages.1.transactionId"), "same");
    reply_fini(&r);
    srv_stop(&s);
}

/* Sidecar rows first..last of partition pid, 20 frames each, as a flush
 * writes them: frame k of row g has the hash md5('g:k') and the message id
 * md5('id g:k'), so a test can name a stored hash. */
static void sidecar_rows(const char *pid, int first, int last)
{
    sql("INSERT INTO queen.log_txns (partition_id, base_offset, created_at, hashes, message_ids)"
        " SELECT '%s', g * 20, now(),"
        "  (SELECT string_agg(decode(md5(g || ':' || k), 'hex'), ''::bytea ORDER BY k) FROM generate_series(0, 19) k),"
        "  (SELECT string_agg(decode(md5('id' || g || ':' || k), 'hex'), ''::bytea ORDER BY k) FROM generate_series(0, 19) k)"
        " FROM generate_series(%d, %d) g", pid, first, last);
}

/* Shared buffers one duplicate check of 20 hashes reads (the 7th stored in
 * row 3, the others never pushed), its plan already made and kept as a
 * push's session keeps it. EXPLAIN counts the buffers of the statements the
 * function runs inside the call. */
static long dedup_check_buffers(const char *pid)
{
    const char *check = sfmt("SELECT queen.find_duplicates('%s', 0, now() - interval '1 hour',"
                             " (SELECT string_agg(decode(md5(CASE k WHEN 6 THEN '3:6' ELSE 'new' || k END), 'hex'),"
                             "  ''::bytea ORDER BY k) FROM generate_series(0, 19) k))", pid);
    return atol(sql("DO $$ BEGIN FOR i IN 1 .. 8 LOOP PERFORM (%s); END LOOP; END $$;"
                    " SELECT (p->'Plan'->>'Shared Hit Blocks')::bigint + (p->'Plan'->>'Shared Read Blocks')::bigint"
                    " FROM (SELECT public.explain_json($q$%s$q$) -> 0 AS p) x", check, check));
}

/* The duplicate check is an index lookup (sql/028): what it reads does not
 * grow with the rows of the dedup window. The scan it replaced read every
 * sidecar row of the window (here 50 times as many at the second count). */
TEST(dedup_check_reads_as_much_at_60000_messages_as_at_1000)
{
    sql("CREATE FUNCTION public.explain_json(q text) RETURNS json LANGUAGE plpgsql AS"
        " $f$ DECLARE j json; BEGIN EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ' || q INTO j; RETURN j; END $f$");
    char pid[96];
    keep_str(pid, sql("SELECT gen_random_uuid()"));
    sidecar_rows(pid, 0, 49);   /* 1,000 messages */
    CHECK_STR(sql("SELECT queen.find_duplicates('%s', 0, now() - interval '1 hour',"
                  " decode(md5('new') || md5('3:6'), 'hex'))", pid),
              sfmt("1:%s", sql("SELECT md5('id3:6')")));   /* the stored frame's message id */
    long shallow = dedup_check_buffers(pid);
    sidecar_rows(pid, 50, 2999);   /* 60,000 */
    sql("ANALYZE queen.log_txns");
    long deep = dedup_check_buffers(pid);
    CHECK(shallow > 0);
    if (deep > shallow + 30)   /* an index level more for each of 20 hashes; the scan read ~270 more */
        harness_failf(__FILE__, __LINE__, "the check read %ld buffers at 1,000 messages, %ld at 60,000", shallow, deep);
    /* and what it finds is the same */
    CHECK_STR(sql("SELECT queen.find_duplicates('%s', 0, now() - interval '1 hour',"
                  " decode(md5('2999:19') || md5('new') || md5('3:6'), 'hex'))", pid),
              sfmt("0:%s,2:%s", sql("SELECT md5('id2999:19')"), sql("SELECT md5('id3:6')")));
    /* nothing below the sidecar watermark or before the window's edge */
    CHECK_STR(sql("SELECT coalesce(queen.find_duplicates('%s', 100, now() - interval '1 hour',"
                  " decode(md5('3:6'), 'hex')), 'none')", pid), "none");
    sql("UPDATE queen.log_txns SET created_at = now() - interval '2 hours' WHERE partition_id = '%s' AND base_offset < 1000", pid);
    CHECK_STR(sql("SELECT coalesce(queen.find_duplicates('%s', 0, now() - interval '1 hour',"
                  " decode(md5('3:6'), 'hex')), 'none')", pid), "none");
}

/* Only sidecar rows holding a client's transactionId enter the dedup index:
 * a server-generated id cannot collide, and indexing every message's hash
 * was most of a batched push's database work (sql/migrations/038). */
TEST(only_pushes_with_client_transaction_ids_enter_the_dedup_index)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96], pid[96];
    keep_str(q, uniq("dedupidx"));
    CHECK_INT(push_simple(&s, q, "P", 3), 201);   /* no transactionId: the server makes them */
    reply r;
    push_txn_reply(&s, q, "P", "client-1", "{}", &r);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    reply_fini(&r);
    keep_str(pid, partition_id(q, "P"));
    CHECK_STR(sql("SELECT string_agg(client_ids::text, ',' ORDER BY base_offset) FROM queen.log_txns"
                  " WHERE partition_id = '%s'", pid), "false,true");
    CHECK(strstr(sql("SELECT pg_get_indexdef('queen.log_txns_keys'::regclass)"), "WHERE client_ids") != NULL);
    push_txn_reply(&s, q, "P", "client-1", "{}", &r);   /* the client's id is still found */
    CHECK_STR(jstr(&r, "0.status"), "duplicate");
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- delayedProcessing and windowBuffer ------------------------------- */

TEST(delayed_processing_hides_messages_until_their_segment_is_old_enough)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("delay"));
    reply r;
    configure_reply(&s, q, "{\"delayedProcessing\":3600}", &r);
    reply_fini(&r);
    push_queued(&s, q, "Default", 0, 2, NULL);
    push_queued(&s, q, "Default", 2, 2, NULL);
    pop_from(&s, q, NULL, "batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    char pid[96];
    keep_str(pid, partition_id(q, "Default"));
    /* The first segment is old enough, the second is not. */
    sql("update queen.log_segments set created_at = now() - interval '2 hours' "
        "where partition_id = '%s' and base_offset = 0", pid);
    pop_from(&s, q, NULL, "batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    CHECK_INT(jint(&r, "messages.1.offset"), 1);
    reply_fini(&r);
    pop_from(&s, q, NULL, "batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    sql("update queen.log_segments set created_at = now() - interval '3601 seconds' "
        "where partition_id = '%s' and base_offset = 2", pid);
    pop_from(&s, q, NULL, "batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    CHECK_INT(jint(&r, "messages.0.offset"), 2);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(window_buffer_holds_a_partition_while_its_newest_message_is_young)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("window"));
    reply r;
    configure_reply(&s, q, "{\"windowBuffer\":3600}", &r);
    reply_fini(&r);
    push_queued(&s, q, "Default", 0, 2, NULL);
    pop_from(&s, q, NULL, "batch=10", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    char pid[96];
    keep_str(pid, partition_id(q, "Default"));
    sql("update queen.log_partitions set last_write_at = now() - interval '2 hours' where id = '%s'", pid);
    pop_from(&s, q, NULL, "batch=10&autoAck=true", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(nmsgs(&r), 2);
    reply_fini(&r);
    /* A new write makes the partition young again: even its older messages wait. */
    push_queued(&s, q, "Default", 2, 1, NULL);
    sql("update queen.log_consumers set committed = -1 where partition_id = '%s'", pid);
    pop_from(&s, q, NULL, "batch=10", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- long-poll -------------------------------------------------------- */

TEST(long_poll_returns_as_soon_as_a_push_makes_a_message_deliverable)
{
    /* Rechecks every 60 s, so only the push's wake-up can answer in time. */
    const char *env[] = { "LONG_POLL_RECHECK_MS=60000", NULL };
    silt_server s;
    srv_start(&s, env);
    char q[96];
    keep_str(q, uniq("wake"));
    reply r;
    configure_reply(&s, q, "{}", &r);
    reply_fini(&r);
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=10000", q), NULL);
    srv_await_metric(&s, "silt_long_polls_parked", 1, 5000);   /* it found nothing and waits */
    int64_t t0 = now_ms();
    push_queued(&s, q, "Default", 0, 1, NULL);
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    int64_t after_push = now_ms() - t0;
    CHECK_INT(status, 200);
    CHECK(elapsed < 3000);
    CHECK(after_push < 2000);
    /* The message went to the long-poll: nothing is left. */
    pop_from(&s, q, NULL, NULL, &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(long_poll_with_nothing_to_deliver_returns_204_after_its_timeout)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("lpto"));
    reply r;
    configure_reply(&s, q, "{}", &r);
    reply_fini(&r);
    int64_t t0 = now_ms();
    pop_from(&s, q, NULL, "wait=true&timeout=300", &r);
    int64_t elapsed = now_ms() - t0;
    CHECK_INT(r.status, 204);
    CHECK_INT(r.raw.body.len, 0);
    reply_fini(&r);
    CHECK(elapsed >= 280);
    CHECK(elapsed < 2000);
    /* Without wait, no waiting at all. */
    t0 = now_ms();
    pop_from(&s, q, NULL, "timeout=5000", &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    CHECK(now_ms() - t0 < 1000);
    srv_stop(&s);
}

/* ---- partition pops --------------------------------------------------- */

TEST(pop_of_a_named_partition_reads_only_that_partition)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("ppop"));
    push_queued(&s, q, "p1", 0, 2, NULL);
    push_queued(&s, q, "p2", 10, 3, NULL);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/p2?batch=10", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "partition"), "p2");
    CHECK_STR(jstr(&r, "partitionId"), partition_id(q, "p2"));
    CHECK_INT(nmsgs(&r), 3);
    for (int i = 0; i < 3; i++) {
        CHECK_STR(jstr(&r, sfmt("messages.%d.partition", i)), "p2");
        CHECK_STR(jstr(&r, sfmt("messages.%d.partitionId", i)), partition_id(q, "p2"));
        CHECK_STR(jraw(&r, sfmt("messages.%d.data", i)), sfmt("{\"i\":%d}", 10 + i));
    }
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/p2?batch=10", q), NULL, &r);
    CHECK_INT(r.status, 204);   /* p2 is leased; p1 is not offered instead */
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/p1?batch=10", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "partition"), "p1");
    CHECK_INT(nmsgs(&r), 2);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/nope?batch=10", q), NULL, &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(pop_of_a_named_partition_decodes_its_percent_encoded_name)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("ppenc"));
    push_queued(&s, q, "a b/c", 0, 2, NULL);
    push_queued(&s, q, "other", 5, 1, NULL);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/a%%20b%%2Fc?batch=10", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "partition"), "a b/c");
    CHECK_INT(nmsgs(&r), 2);
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- configure -------------------------------------------------------- */

static const struct { const char *key, *value; } defaults[] = {
    { "leaseTime", "300" }, { "retryLimit", "3" }, { "retryDelay", "1000" }, { "priority", "0" },
    { "ttl", "3600" }, { "maxSize", "0" }, { "deadLetterQueue", "true" }, { "dlqAfterMaxRetries", "true" },
    { "delayedProcessing", "0" }, { "windowBuffer", "0" }, { "retentionEnabled", "false" },
    { "retentionSeconds", "0" }, { "completedRetentionSeconds", "0" }, { "maxWaitTimeSeconds", "0" },
    { "dedupWindowSeconds", "3600" }, { "encryptionEnabled", "false" },
};

/* Every option key present with its default, except those in `except`. */
static void check_options(const reply *r, const char *except)
{
    int t = jpath(r, "options");
    CHECK(t >= 0);
    CHECK_INT(r->doc.tokens[t].type, JSON_OBJECT);
    CHECK_INT(r->doc.tokens[t].count, 16);
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        const char *v = jraw(r, sfmt("options.%s", defaults[i].key));
        if (!v) harness_failf(__FILE__, __LINE__, "option %s missing", defaults[i].key);
        if (except && strstr(except, sfmt(",%s,", defaults[i].key))) continue;
        if (strcmp(v, defaults[i].value) != 0)
            harness_failf(__FILE__, __LINE__, "option %s == %s, expected %s", defaults[i].key, v, defaults[i].value);
    }
}

TEST(configure_creates_the_queue_and_returns_all_sixteen_options_with_defaults)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("conf"));
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", q), "0");
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\"}", q), &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "configured"));
    CHECK_STR(jstr(&r, "queue"), q);
    CHECK_STR(jraw(&r, "namespace"), "null");
    CHECK_STR(jraw(&r, "task"), "null");
    check_options(&r, NULL);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", q), "1");
    /* A configured queue with no messages pops nothing. */
    pop_from(&s, q, NULL, NULL, &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(configure_partial_options_merge_and_null_returns_to_default)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("confmerge"));
    reply r;
    configure_reply(&s, q, "{\"leaseTime\":10,\"retryLimit\":5,\"deadLetterQueue\":false}", &r);
    CHECK_INT(jint(&r, "options.leaseTime"), 10);
    CHECK_INT(jint(&r, "options.retryLimit"), 5);
    CHECK_STR(jraw(&r, "options.deadLetterQueue"), "false");
    check_options(&r, ",leaseTime,retryLimit,deadLetterQueue,");
    reply_fini(&r);
    configure_reply(&s, q, "{\"leaseTime\":20}", &r);
    CHECK_INT(jint(&r, "options.leaseTime"), 20);
    CHECK_INT(jint(&r, "options.retryLimit"), 5);
    CHECK_STR(jraw(&r, "options.deadLetterQueue"), "false");
    check_options(&r, ",leaseTime,retryLimit,deadLetterQueue,");
    reply_fini(&r);
    configure_reply(&s, q, "{\"retryLimit\":null,\"deadLetterQueue\":null}", &r);
    CHECK_INT(jint(&r, "options.leaseTime"), 20);
    CHECK_INT(jint(&r, "options.retryLimit"), 3);
    CHECK_STR(jraw(&r, "options.deadLetterQueue"), "true");
    check_options(&r, ",leaseTime,");
    reply_fini(&r);
    /* The stored options are what was echoed: a pop's lease uses leaseTime 20. */
    push_queued(&s, q, "Default", 0, 1, NULL);
    pop_from(&s, q, NULL, NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    const char *secs = sql("select round(extract(epoch from lease_expires - now())) from queen.log_consumers "
                           "where partition_id = '%s'", partition_id(q, "Default"));
    CHECK(atoi(secs) >= 18 && atoi(secs) <= 20);
    srv_stop(&s);
}

TEST(configure_echoes_namespace_and_task_and_keeps_them_when_omitted)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("confns"));
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":\"ns1\",\"task\":\"t1\"}", q), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "namespace"), "ns1");
    CHECK_STR(jstr(&r, "task"), "t1");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"options\":{\"ttl\":5}}", q), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "namespace"), "ns1");
    CHECK_STR(jstr(&r, "task"), "t1");
    CHECK_INT(jint(&r, "options.ttl"), 5);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"task\":\"t2\"}", q), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "namespace"), "ns1");
    CHECK_STR(jstr(&r, "task"), "t2");
    CHECK_INT(jint(&r, "options.ttl"), 5);
    reply_fini(&r);
    CHECK_STR(sql("select namespace || '/' || task from queen.queues where name = '%s'", q), "ns1/t2");
    srv_stop(&s);
}

TEST(push_created_queue_has_the_default_options)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("pushdef"));
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    CHECK_STR(sql("select options = queen.default_options() from queen.queues where name = '%s'", q), "t");
    reply r;
    configure_reply(&s, q, "{}", &r);
    check_options(&r, NULL);
    CHECK_STR(jraw(&r, "namespace"), "null");
    reply_fini(&r);
    srv_stop(&s);
}

/* A commit wakes at most as many parked pops of a group as partitions it
 * wrote (more could not be served), the longest waiting first; a pop of one
 * partition wakes only for a commit to that partition. Rechecks are a
 * minute away here, so only wake-ups move a parked pop; and the listener
 * is connected before any pop parks, because its connecting makes every
 * parked pop look again, which parks them anew in another order. */
TEST(a_commit_wakes_as_many_parked_pops_as_it_can_serve)
{
    const char *env[] = { "LONG_POLL_RECHECK_MS=60000", NULL };
    silt_server s;
    srv_start(&s, env);
    srv_await_metric(&s, "silt_notify_listening", 1, 10000);
    const char *q = uniq("herd");
    bg_req any[5], only_b;
    for (int i = 0; i < 5; i++) {
        bg_start(&any[i], &s, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=30000&autoAck=true", q), NULL);
        srv_await_metric(&s, "silt_long_polls_parked", i + 1, 5000);   /* parked in this order */
    }
    bg_start(&only_b, &s, "GET",
             sfmt("/api/v1/pop/queue/%s/partition/B?consumerGroup=g2&wait=true&timeout=30000&autoAck=true", q), NULL);
    srv_await_metric(&s, "silt_long_polls_parked", 6, 5000);
    int status;
    int64_t elapsed;
    push_one(&s, q, "A", "a1", "1");
    CHECK_INT(srv_metric(&s, "silt_long_poll_wakeups_total"), 1);   /* one partition: one of the five, not B's */
    bg_wait(&any[0], &status, &elapsed);   /* the longest waiting */
    CHECK_INT(status, 200);
    reply r;
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"A\",\"payload\":2},"
                                        "{\"queue\":\"%s\",\"partition\":\"C\",\"payload\":3}]}", q, q), &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    CHECK_INT(srv_metric(&s, "silt_long_poll_wakeups_total"), 3);   /* two partitions: two more */
    bg_wait(&any[1], &status, &elapsed);
    CHECK_INT(status, 200);
    bg_wait(&any[2], &status, &elapsed);   /* if it lost the race, the winner passed it on */
    CHECK_INT(status, 200);
    push_one(&s, q, "B", "b1", "4");
    CHECK_INT(srv_metric(&s, "silt_long_poll_wakeups_total"), 5);   /* B's pop, and one of the group's */
    bg_wait(&only_b, &status, &elapsed);   /* its own group: the message is its */
    CHECK_INT(status, 200);
    bg_wait(&any[3], &status, &elapsed);
    CHECK_INT(status, 200);
    srv_stop(&s);
    bg_wait(&any[4], &status, &elapsed);
}

/* Parked long-polls do not poll (issue 14): 100 pops parked on 100 queues
 * send no statement while nothing happens (here for the 3 s a pop on
 * another queue waits out its timeout), and a push to queue A wakes A's
 * parked pop only. */
TEST(parked_long_polls_send_nothing_while_idle_and_a_push_wakes_only_its_queue)
{
    silt_server s;
    srv_start(&s, NULL);   /* LONG_POLL_RECHECK_MS at its default: never */
    srv_await_metric(&s, "silt_notify_listening", 1, 10000);   /* its first "look again" is behind it */
    char a[96];
    keep_str(a, uniq("parkeda"));
    enum { OTHERS = 100 };
    bg_req others[OTHERS], on_a, clock;
    for (int i = 0; i < OTHERS; i++)
        bg_start(&others[i], &s, "GET", sfmt("/api/v1/pop/queue/%s-b%d?wait=true&timeout=60000", a, i), NULL);
    bg_start(&on_a, &s, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=60000&autoAck=true", a), NULL);
    srv_await_metric(&s, "silt_long_polls_parked", OTHERS + 1, 20000);
    int64_t queries = srv_metric(&s, "silt_pop_queries_total");
    int status;
    int64_t elapsed;
    bg_start(&clock, &s, "GET", sfmt("/api/v1/pop/queue/%s-clock?wait=true&timeout=3000", a), NULL);
    bg_wait(&clock, &status, &elapsed);   /* 3 s of nothing happening */
    CHECK_INT(status, 204);
    CHECK_INT(srv_metric(&s, "silt_pop_queries_total") - queries, 1);   /* the clock's own first try */
    int64_t wakeups = srv_metric(&s, "silt_long_poll_wakeups_total");
    push_one(&s, a, "Default", "t1", "1");
    bg_wait(&on_a, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK_INT(srv_metric(&s, "silt_long_poll_wakeups_total") - wakeups, 1);   /* A's, none of the others */
    CHECK_INT(srv_metric(&s, "silt_long_polls_parked"), OTHERS);
    srv_stop(&s);
    for (int i = 0; i < OTHERS; i++) bg_wait(&others[i], &status, &elapsed);
}

/* A push through one server wakes a pop parked on another at once, by
 * NOTIFY on the task hub's channel, with no polling anywhere. */
TEST(a_push_through_another_server_wakes_a_parked_long_poll)
{
    silt_server one, two;
    srv_start(&one, NULL);
    srv_start(&two, NULL);
    srv_await_metric(&one, "silt_notify_listening", 1, 10000);
    const char *q = uniq("parkedx");
    bg_req b;
    bg_start(&b, &one, "GET", sfmt("/api/v1/pop/queue/%s/partition/p?wait=true&timeout=30000&autoAck=true", q), NULL);
    srv_await_metric(&one, "silt_long_polls_parked", 1, 5000);
    push_one(&two, q, "p", "t1", "{\"via\":2}");
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 20000);   /* woken, not answered at its deadline */
    CHECK_INT(srv_metric(&one, "silt_long_poll_wakeups_total"), 1);
    CHECK_INT(srv_metric(&one, "silt_pop_queries_total"), 2);   /* its first try and the one the wake-up sent */
    srv_stop(&two);
    srv_stop(&one);
}

/* What falls due by time wakes a parked pop when it does, not a poll: a
 * lease that expires (leaseTime 1 s) is delivered to the group's parked pop
 * at the expiry, with no commit to announce it. */
TEST(a_lease_expiring_wakes_the_groups_parked_long_poll_when_it_expires)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("parkedlease");
    configure_queue(&s, q, "{\"leaseTime\":1}");
    push_one(&s, q, "Default", "t1", "1");
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=g&wait=false", &r), 200);   /* leased, never acked */
    reply_fini(&r);
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&wait=true&timeout=20000", q), NULL);
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 15000);   /* at the expiry (a second), not at its deadline */
    srv_stop(&s);
}

/* A segment ageing past delayedProcessing wakes the parked pop that could
 * not take it, when it does: nothing commits meanwhile. */
TEST(a_delayed_segment_coming_of_age_wakes_a_parked_long_poll)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("parkeddelay");
    configure_queue(&s, q, "{\"delayedProcessing\":1}");
    push_one(&s, q, "Default", "t1", "1");
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=20000&autoAck=true", q), NULL);
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 15000);   /* when the segment is a second old, not at the deadline */
    srv_stop(&s);
}

/* The due time a parking pop asks for counts from the pop's own look, not
 * from the moment it asks: a segment that came of age in between (its
 * delay passed after the pop's statement, before the question) is answered,
 * in the past, so the pop looks again at once instead of sleeping to its
 * deadline. Asked as of a look before the segment's due time, and as of
 * one after it. */
TEST(a_due_time_passed_since_the_pop_looked_is_answered_so_the_pop_looks_again)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("seendue");
    configure_queue(&s, q, "{\"delayedProcessing\":1}");
    push_one(&s, q, "Default", "t1", "1");
    sql("update queen.log_segments set created_at = created_at - interval '10 seconds' where partition_id in"
        " (select id from queen.log_partitions where queue = '%s')", q);
    CHECK_STR(sql("select queen.pop_wake_at('%s', null, null, null, '__QUEUE_MODE__', now() - interval '20 seconds')"
                  " = (select s.created_at + interval '1 second' from queen.log_segments s join queen.log_partitions p"
                  " on p.id = s.partition_id where p.queue = '%s')", q, q), "t");
    CHECK_STR(sql("select queen.pop_wake_at('%s', null, null, null, '__QUEUE_MODE__', now()) is null", q), "t");
    srv_stop(&s);
}

/* A seek that gives a group messages again (back to before its first
 * message) wakes the group's parked pops on every server: here a pop parked
 * on one server is answered when the seek goes through the other. */
TEST(a_seek_through_another_server_wakes_the_groups_parked_long_poll)
{
    silt_server one, two;
    srv_start(&one, NULL);
    srv_start(&two, NULL);
    srv_await_metric(&one, "silt_notify_listening", 1, 10000);
    const char *q = uniq("parkedseek");
    push_one(&one, q, "Default", "t1", "1");
    reply r;
    CHECK_INT(pop_from(&one, q, NULL, "consumerGroup=g&wait=false&autoAck=true", &r), 200);   /* consumed */
    reply_fini(&r);
    bg_req b;
    bg_start(&b, &one, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&wait=true&timeout=30000", q), NULL);
    srv_await_metric(&one, "silt_long_polls_parked", 1, 5000);
    rq(&two, "POST", sfmt("/api/v1/consumer-groups/g/queues/%s/seek", q), "{\"timestamp\":\"2000-01-01T00:00:00Z\"}", &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 20000);   /* woken by the seek, not answered at its deadline */
    srv_stop(&two);
    srv_stop(&one);
}

/* An ack that gives a lease back wakes the group's parked pops (nothing
 * else would before the lease's own expiry, 600 s here): the next message
 * of the partition goes to the parked pop at once. */
TEST(an_ack_releasing_a_lease_wakes_the_groups_parked_long_poll)
{
    silt_server s;
    srv_start(&s, NULL);
    srv_await_metric(&s, "silt_notify_listening", 1, 10000);
    const char *q = uniq("parkedack");
    configure_queue(&s, q, "{\"leaseTime\":600}");
    push_one(&s, q, "Default", "t1", "1");
    push_one(&s, q, "Default", "t2", "2");
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=g&batch=1&wait=false", &r), 200);
    char pid[64];
    snprintf(pid, sizeof pid, "%s", jstr(&r, "partitionId"));
    reply_fini(&r);
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&wait=true&timeout=30000", q), NULL);
    srv_await_metric(&s, "silt_long_polls_parked", 1, 5000);
    rq(&s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"t1\",\"partitionId\":\"%s\",\"consumerGroup\":\"g\"}", pid), &r);
    CHECK(jbool(&r, "0.success"));
    reply_fini(&r);
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 20000);   /* woken by the ack, not answered at its deadline */
    srv_stop(&s);
}

/* A pop finds a deliverable partition whenever one exists, however many
 * that cannot deliver yet come before it (here 100 held by windowBuffer, all
 * ordered before the one that can). */
TEST(a_pop_finds_the_deliverable_partition_behind_100_that_are_not)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("behind");
    configure_queue(&s, q, "{\"windowBuffer\":600}");
    buf body;
    buf_init(&body);
    buf_puts(&body, "{\"items\":[");
    for (int i = 0; i <= 100; i++)
        buf_printf(&body, "%s{\"queue\":\"%s\",\"partition\":\"p%03d\",\"payload\":%d}", i ? "," : "", q, i, i);
    buf_puts(&body, "]}");
    reply r;
    rq(&s, "POST", "/api/v1/push", body.data, &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    buf_fini(&body);
    /* p100 wrote long ago (its window has passed) and was served most recently, so it comes last */
    sql("UPDATE queen.log_partitions SET last_write_at = now() - interval '1 hour' WHERE queue = '%s' AND name = 'p100'", q);
    sql("INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, last_activity_at) "
        "SELECT id, 'g', -1, now() FROM queen.log_partitions WHERE queue = '%s' AND name = 'p100'", q);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&wait=false", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "partition"), "p100");
    CHECK_INT(jint(&r, "messages.0.data"), 100);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&wait=false", q), NULL, &r);
    CHECK_INT(r.status, 204);   /* the other hundred are still in their window */
    reply_fini(&r);
    srv_stop(&s);
}

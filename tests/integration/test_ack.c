/* Integration: the ack contract (POST /api/v1/ack, /ack/batch) and lease
 * extension. Each test proves one rule; cursor state is read back from
 * queen.log_consumers, lease expiry is simulated by backdating lease_expires. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

#define QM "__QUEUE_MODE__"

/* Pops and expects 200 with exactly n messages at offsets first..first+n-1. */
static void pop_expect(silt_server *s, const char *q, const char *part, const char *query,
                       int first, int n, reply *r)
{
    pop_from(s, q, part, query, r);
    CHECK_INT(r->status, 200);
    int m = jpath(r, "messages");
    CHECK(m >= 0);
    CHECK_INT(r->doc.tokens[m].count, n);
    for (int i = 0; i < n; i++) {
        char p[48], t[16];
        snprintf(p, sizeof p, "messages.%d.offset", i);
        CHECK_INT(jint(r, p), first + i);
        snprintf(p, sizeof p, "messages.%d.transactionId", i);
        snprintf(t, sizeof t, "tx%d", first + i);
        CHECK_STR(jstr(r, p), t);
    }
}

static void pop_expect_none(silt_server *s, const char *q, const char *part, const char *query)
{
    reply r;
    pop_from(s, q, part, query, &r);
    CHECK_INT(r.status, 204);
    reply_fini(&r);
}

/* Builds one ack item; NULL fields are left out. */
static void ack_item_json(char *out, size_t n, const char *txn, const char *pid, const char *status,
                          const char *lease, const char *group, const char *error)
{
    size_t len = (size_t)snprintf(out, n, "{\"transactionId\":\"%s\",\"partitionId\":\"%s\"", txn, pid);
    if (status) len += (size_t)snprintf(out + len, n - len, ",\"status\":\"%s\"", status);
    if (lease) len += (size_t)snprintf(out + len, n - len, ",\"leaseId\":\"%s\"", lease);
    if (group) len += (size_t)snprintf(out + len, n - len, ",\"consumerGroup\":\"%s\"", group);
    if (error) len += (size_t)snprintf(out + len, n - len, ",\"error\":\"%s\"", error);
    snprintf(out + len, n - len, "}");
}

/* POST /api/v1/ack with one item; expects 200 and a one-element array. */
static void ack(silt_server *s, const char *txn, const char *pid, const char *status,
                const char *lease, const char *group, const char *error, reply *r)
{
    char body[1024];
    ack_item_json(body, sizeof body, txn, pid, status, lease, group, error);
    rq(s, "POST", "/api/v1/ack", body, r);
    if (r->status != 200)
        harness_failf(__FILE__, __LINE__, "POST /api/v1/ack %s: %d %s", body, r->status,
                      r->raw.body.data ? r->raw.body.data : "");
    CHECK(r->doc.ntokens > 0 && r->doc.tokens[0].type == JSON_ARRAY);
    CHECK_INT(r->doc.tokens[0].count, 1);
    CHECK_INT(jint(r, "0.index"), 0);
    CHECK_STR(jstr(r, "0.transactionId"), txn);
}

static long long committed(const char *pid, const char *group)
{
    const char *v = sql("select committed from queen.log_consumers where partition_id = '%s' and consumer_group = '%s'",
                        pid, group);
    CHECK(v[0] != '\0');
    return atoll(v);
}

static long long retry_count(const char *pid, const char *group)
{
    const char *v = sql("select retry_count from queen.log_consumers where partition_id = '%s' and consumer_group = '%s'",
                        pid, group);
    CHECK(v[0] != '\0');
    return atoll(v);
}

static bool lease_held(const char *pid, const char *group)
{
    return strcmp(sql("select lease_id is not null from queen.log_consumers "
                      "where partition_id = '%s' and consumer_group = '%s'", pid, group), "t") == 0;
}

static void expire_lease(const char *pid, const char *group)
{
    sql("update queen.log_consumers set lease_expires = now() - interval '1 second' "
        "where partition_id = '%s' and consumer_group = '%s'", pid, group);
}

static long long dlq_rows(const char *pid)
{
    return atoll(sql("select count(*) from queen.log_dlq where partition_id = '%s'", pid));
}

/* ------------------------------------------------------------------ */

TEST(ack_completed_on_last_of_batch_commits_the_whole_batch)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-implicit");
    push_queued(&s, q, "Default", 0, 5, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=5", 0, 5, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    ack(&s, "tx4", pid, "completed", lease, NULL, NULL, &r);   /* only the last one */
    CHECK(jbool(&r, "0.success"));
    CHECK_STR(jraw(&r, "0.error"), "null");
    CHECK(jbool(&r, "0.leaseReleased"));
    CHECK(!jbool(&r, "0.noop"));
    CHECK(!jbool(&r, "0.dlq"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 4);
    CHECK(!lease_held(pid, QM));

    /* nothing of the batch redelivers; the next push is what comes next */
    pop_expect_none(&s, q, NULL, "batch=5");
    push_queued(&s, q, "Default", 5, 2, "tx");
    pop_expect(&s, q, NULL, "batch=5", 5, 2, &r);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_completed_in_middle_commits_up_to_it_and_keeps_lease)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-partial");
    push_queued(&s, q, "Default", 0, 5, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=5", 0, 5, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    ack(&s, "tx2", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(!jbool(&r, "0.leaseReleased"));      /* offsets 3 and 4 are still leased */
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 2);
    CHECK(lease_held(pid, QM));
    pop_expect_none(&s, q, NULL, "batch=5");  /* the live lease blocks the partition */

    /* after expiry only the uncommitted rest redelivers */
    expire_lease(pid, QM);
    pop_expect(&s, q, NULL, "batch=5", 3, 2, &r);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_lease_released_only_when_whole_batch_committed)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-released");
    push_queued(&s, q, "Default", 0, 3, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    ack(&s, "tx0", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(!jbool(&r, "0.leaseReleased"));
    reply_fini(&r);
    ack(&s, "tx1", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(!jbool(&r, "0.leaseReleased"));
    reply_fini(&r);
    CHECK(lease_held(pid, QM));
    ack(&s, "tx2", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.leaseReleased"));
    reply_fini(&r);
    CHECK(!lease_held(pid, QM));
    CHECK_INT(committed(pid, QM), 2);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_failed_is_never_skipped_completed_above_it_redeliver)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-noskip");
    push_queued(&s, q, "Default", 0, 5, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=5", 0, 5, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    char a[512], b[512], c[512], body[2048];
    ack_item_json(a, sizeof a, "tx3", pid, "completed", lease, NULL, NULL);
    ack_item_json(b, sizeof b, "tx1", pid, "failed", lease, NULL, "boom");
    ack_item_json(c, sizeof c, "tx0", pid, "completed", lease, NULL, NULL);
    snprintf(body, sizeof body, "{\"acknowledgments\":[%s,%s,%s]}", a, b, c);
    rq(&s, "POST", "/api/v1/ack/batch", body, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.doc.tokens[0].count, 3);
    for (int i = 0; i < 3; i++) {
        char p[32];
        snprintf(p, sizeof p, "%d.index", i);
        CHECK_INT(jint(&r, p), i);
        snprintf(p, sizeof p, "%d.success", i);
        CHECK(jbool(&r, p));
        snprintf(p, sizeof p, "%d.leaseReleased", i);
        CHECK(jbool(&r, p));                 /* a failed below the budget releases */
        snprintf(p, sizeof p, "%d.dlq", i);
        CHECK(!jbool(&r, p));
    }
    CHECK_STR(jstr(&r, "0.transactionId"), "tx3");
    CHECK_STR(jstr(&r, "1.transactionId"), "tx1");
    CHECK_STR(jstr(&r, "2.transactionId"), "tx0");
    reply_fini(&r);

    CHECK_INT(committed(pid, QM), 0);        /* stops below the failed offset 1 */
    CHECK_INT(retry_count(pid, QM), 1);
    CHECK(!lease_held(pid, QM));
    CHECK_INT(dlq_rows(pid), 0);
    /* the failed message and the completed tx3 above it come back */
    pop_expect(&s, q, NULL, "batch=5", 1, 4, &r);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_failed_charges_retry_budget_then_dead_letters_full_message)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-budget");
    configure_queue(&s, q, "{\"retryLimit\":2}");
    /* a payload with odd spacing and an escape: the dead letter keeps the exact bytes */
    const char *payload = "{ \"k\" : [1, 2.50, \"\\u00e9\"] ,\"n\":null }";
    char body[1024];
    snprintf(body, sizeof body,
             "{\"items\":[{\"queue\":\"%s\",\"transactionId\":\"poison-1\","
             "\"traceId\":\"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b\",\"payload\":%s}]}", q, payload);
    reply r;
    rq(&s, "POST", "/api/v1/push", body, &r);
    CHECK_INT(r.status, 201);
    char msg_id[96];
    keep_str(msg_id, jstr(&r, "0.message_id"));
    reply_fini(&r);

    int failures = 0;
    char pid[96] = "";
    for (;;) {
        pop_from(&s, q, NULL, "batch=1", &r);
        CHECK_INT(r.status, 200);
        CHECK_STR(jstr(&r, "messages.0.transactionId"), "poison-1");
        CHECK_INT(jint(&r, "messages.0.offset"), 0);
        CHECK_STR(jraw(&r, "messages.0.data"), payload);
        keep_str(pid, jstr(&r, "partitionId"));
        char lease[96];
        keep_str(lease, jstr(&r, "leaseId"));
        reply_fini(&r);

        char err[32];
        snprintf(err, sizeof err, "boom %d", failures + 1);
        ack(&s, "poison-1", pid, "failed", lease, NULL, err, &r);
        failures++;
        CHECK(jbool(&r, "0.success"));
        CHECK(jbool(&r, "0.leaseReleased"));
        bool dead = jbool(&r, "0.dlq");
        reply_fini(&r);
        if (dead) break;
        CHECK(failures < 10);
        /* below the limit: budget charged, cursor stays, lease released */
        CHECK_INT(retry_count(pid, QM), failures);
        CHECK_INT(committed(pid, QM), -1);
        CHECK(!lease_held(pid, QM));
        CHECK_INT(dlq_rows(pid), 0);
    }
    /* retryLimit=2: two failures redeliver, the third dead-letters */
    CHECK_INT(failures, 3);
    CHECK_INT(committed(pid, QM), 0);
    CHECK_INT(retry_count(pid, QM), 0);
    CHECK_INT(dlq_rows(pid), 1);
    CHECK_STR(sql("select convert_from(payload, 'UTF8') from queen.log_dlq where partition_id = '%s'", pid), payload);
    CHECK_STR(sql("select error_message from queen.log_dlq where partition_id = '%s'", pid), "boom 3");
    CHECK_STR(sql("select retry_count from queen.log_dlq where partition_id = '%s'", pid), "2");
    CHECK_STR(sql("select transaction_id from queen.log_dlq where partition_id = '%s'", pid), "poison-1");
    CHECK_STR(sql("select message_offset from queen.log_dlq where partition_id = '%s'", pid), "0");
    CHECK_STR(sql("select message_id from queen.log_dlq where partition_id = '%s'", pid), msg_id);
    CHECK_STR(sql("select trace_id from queen.log_dlq where partition_id = '%s'", pid),
              "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    CHECK_STR(sql("select consumer_group || '/' || queue || '/' || partition from queen.log_dlq "
                  "where partition_id = '%s'", pid), sql("select '" QM "/%s/Default'", q));
    /* the cursor moved past it: nothing redelivers */
    pop_expect_none(&s, q, NULL, "batch=1");
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_failed_charges_budget_once_per_call_not_per_item)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-once");
    push_queued(&s, q, "Default", 0, 3, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    char a[512], b[512], c[512], body[2048];
    ack_item_json(a, sizeof a, "tx0", pid, "failed", lease, NULL, NULL);
    ack_item_json(b, sizeof b, "tx1", pid, "failed", lease, NULL, NULL);
    ack_item_json(c, sizeof c, "tx2", pid, "failed", lease, NULL, NULL);
    snprintf(body, sizeof body, "{\"acknowledgments\":[%s,%s,%s]}", a, b, c);
    rq(&s, "POST", "/api/v1/ack/batch", body, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "1.success"));
    CHECK(jbool(&r, "2.success"));
    reply_fini(&r);
    CHECK_INT(retry_count(pid, QM), 1);
    CHECK_INT(committed(pid, QM), -1);
    CHECK_INT(dlq_rows(pid), 0);
    pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_retry_releases_lease_without_charging_budget)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-retry");
    push_queued(&s, q, "Default", 0, 2, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    /* one failed first, so "unchanged" is distinguishable from "reset" */
    ack(&s, "tx0", pid, "failed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    reply_fini(&r);
    CHECK_INT(retry_count(pid, QM), 1);

    pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    ack(&s, "tx0", pid, "retry", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.leaseReleased"));
    CHECK(!jbool(&r, "0.dlq"));
    reply_fini(&r);
    CHECK_INT(retry_count(pid, QM), 1);
    CHECK_INT(committed(pid, QM), -1);
    CHECK(!lease_held(pid, QM));
    /* retry again and again: never dead-letters */
    for (int i = 0; i < 5; i++) {
        pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
        keep_str(lease, jstr(&r, "leaseId"));
        reply_fini(&r);
        ack(&s, "tx0", pid, "retry", lease, NULL, NULL, &r);
        CHECK(jbool(&r, "0.success"));
        CHECK(!jbool(&r, "0.dlq"));
        reply_fini(&r);
    }
    CHECK_INT(retry_count(pid, QM), 1);
    CHECK_INT(dlq_rows(pid), 0);
    pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_dlq_status_dead_letters_at_once)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-dlq");
    push_queued(&s, q, "Default", 0, 3, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    ack(&s, "tx1", pid, "dlq", lease, NULL, "poison", &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.dlq"));
    CHECK(!jbool(&r, "0.leaseReleased"));    /* offset 2 is still leased */
    CHECK_STR(jraw(&r, "0.error"), "null");
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 1);        /* moved past the dead letter */
    CHECK_INT(retry_count(pid, QM), 0);
    CHECK_INT(dlq_rows(pid), 1);
    CHECK_STR(sql("select message_offset || ' ' || transaction_id || ' ' || error_message || ' ' || retry_count "
                  "|| ' ' || convert_from(payload, 'UTF8') from queen.log_dlq where partition_id = '%s'", pid),
              "1 tx1 poison 0 {\"i\":1}");

    ack(&s, "tx2", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.leaseReleased"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 2);
    pop_expect_none(&s, q, NULL, "batch=3");
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_dlq_is_never_skipped_completed_above_it_is_not_committed)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-dlqskip");
    push_queued(&s, q, "Default", 0, 3, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    char a[512], b[512], body[2048];
    ack_item_json(a, sizeof a, "tx2", pid, "completed", lease, NULL, NULL);
    ack_item_json(b, sizeof b, "tx1", pid, "dlq", lease, NULL, "poison");
    snprintf(body, sizeof body, "{\"acknowledgments\":[%s,%s]}", a, b);
    rq(&s, "POST", "/api/v1/ack/batch", body, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "0.success"));
    CHECK(!jbool(&r, "0.dlq"));
    CHECK(jbool(&r, "1.success"));
    CHECK(jbool(&r, "1.dlq"));
    CHECK(!jbool(&r, "1.leaseReleased"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 1);        /* past the dead letter, not past tx2 */
    CHECK_INT(dlq_rows(pid), 1);
    CHECK_STR(sql("select message_offset from queen.log_dlq where partition_id = '%s'", pid), "1");

    /* tx2 was not committed by that call: acking it again is real work, not a noop */
    ack(&s, "tx2", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(!jbool(&r, "0.noop"));
    CHECK(jbool(&r, "0.leaseReleased"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 2);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_with_dlq_disabled_drops_the_message)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-drop");
    configure_queue(&s, q, "{\"deadLetterQueue\":false,\"dlqAfterMaxRetries\":false,\"retryLimit\":1}");
    push_queued(&s, q, "Default", 0, 3, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    /* dlq status: dropped at once */
    ack(&s, "tx0", pid, "dlq", lease, NULL, "bad", &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.dropped"));
    CHECK(!jbool(&r, "0.dlq"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 0);
    CHECK_INT(dlq_rows(pid), 0);

    /* failed with retryLimit=1: one redelivery, then dropped */
    ack(&s, "tx1", pid, "failed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jraw(&r, "0.dropped") == NULL);
    CHECK(jbool(&r, "0.leaseReleased"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 0);
    pop_expect(&s, q, NULL, "batch=3", 1, 2, &r);
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    ack(&s, "tx1", pid, "failed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.dropped"));
    CHECK(!jbool(&r, "0.dlq"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 1);
    CHECK_INT(retry_count(pid, QM), 0);
    CHECK_INT(dlq_rows(pid), 0);
    CHECK(lease_held(pid, QM));              /* offset 2 still leased */
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_completed_at_or_below_cursor_is_noop)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-noop");
    push_queued(&s, q, "Default", 0, 3, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    ack(&s, "tx1", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(!jbool(&r, "0.noop"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 1);

    const char *txns[] = { "tx0", "tx1" };
    for (int i = 0; i < 2; i++) {
        ack(&s, txns[i], pid, "completed", NULL, NULL, NULL, &r);
        CHECK(jbool(&r, "0.success"));
        CHECK(jbool(&r, "0.noop"));
        CHECK_STR(jraw(&r, "0.error"), "null");
        reply_fini(&r);
        ack(&s, txns[i], pid, "success", NULL, NULL, NULL, &r);   /* the alias */
        CHECK(jbool(&r, "0.success"));
        CHECK(jbool(&r, "0.noop"));
        reply_fini(&r);
    }
    CHECK_INT(committed(pid, QM), 1);
    pop_expect(&s, q, NULL, "batch=2", 2, 1, &r);   /* the rest is untouched */
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_non_completed_at_or_below_cursor_is_already_committed)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-already");
    push_queued(&s, q, "Default", 0, 2, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    ack(&s, "tx1", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.leaseReleased"));
    reply_fini(&r);

    const char *statuses[] = { "failed", "retry", "dlq" };
    const char *txns[] = { "tx0", "tx1" };
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            ack(&s, txns[k], pid, statuses[i], NULL, NULL, NULL, &r);
            CHECK(!jbool(&r, "0.success"));
            CHECK_STR(jstr(&r, "0.error"), "already committed");
            CHECK(!jbool(&r, "0.noop"));
            CHECK(!jbool(&r, "0.dlq"));
            reply_fini(&r);
        }
    CHECK_INT(committed(pid, QM), 1);
    CHECK_INT(retry_count(pid, QM), 0);
    CHECK_INT(dlq_rows(pid), 0);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_unknown_transaction_id_is_unresolvable_and_message_redelivers)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-unres");
    push_queued(&s, q, "Default", 0, 1, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=1", 0, 1, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    const char *statuses[] = { "completed", "failed", "dlq" };
    for (int i = 0; i < 3; i++) {
        ack(&s, "never-pushed", pid, statuses[i], lease, NULL, NULL, &r);
        CHECK(!jbool(&r, "0.success"));
        const char *e = jstr(&r, "0.error");
        CHECK(e && strncmp(e, "unresolvable", 12) == 0);
        CHECK(!jbool(&r, "0.noop"));
        CHECK(!jbool(&r, "0.dlq"));
        reply_fini(&r);
    }
    CHECK_INT(committed(pid, QM), -1);
    CHECK_INT(retry_count(pid, QM), 0);
    CHECK_INT(dlq_rows(pid), 0);
    pop_expect_none(&s, q, NULL, "batch=1");   /* still leased */
    expire_lease(pid, QM);
    pop_expect(&s, q, NULL, "batch=1", 0, 1, &r);
    CHECK(strcmp(jstr(&r, "leaseId"), lease) != 0);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_with_wrong_or_expired_lease_is_invalid_or_expired_lease)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-lease");
    push_queued(&s, q, "Default", 0, 2, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);

    /* a well-formed leaseId that is not the live lease */
    ack(&s, "tx1", pid, "completed", "00000000-0000-7000-8000-000000000000", NULL, NULL, &r);
    CHECK(!jbool(&r, "0.success"));
    CHECK_STR(jstr(&r, "0.error"), "invalid or expired lease");
    reply_fini(&r);
    ack(&s, "tx0", pid, "failed", "00000000-0000-7000-8000-000000000000", NULL, NULL, &r);
    CHECK(!jbool(&r, "0.success"));
    CHECK_STR(jstr(&r, "0.error"), "invalid or expired lease");
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), -1);
    CHECK_INT(retry_count(pid, QM), 0);
    CHECK(lease_held(pid, QM));

    /* the right leaseId after it expired */
    expire_lease(pid, QM);
    ack(&s, "tx1", pid, "completed", lease, NULL, NULL, &r);
    CHECK(!jbool(&r, "0.success"));
    CHECK_STR(jstr(&r, "0.error"), "invalid or expired lease");
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), -1);
    /* the old lease stays invalid once the batch was handed out again */
    pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
    char lease2[96];
    keep_str(lease2, jstr(&r, "leaseId"));
    reply_fini(&r);
    ack(&s, "tx1", pid, "completed", lease, NULL, NULL, &r);
    CHECK(!jbool(&r, "0.success"));
    CHECK_STR(jstr(&r, "0.error"), "invalid or expired lease");
    reply_fini(&r);
    ack(&s, "tx1", pid, "completed", lease2, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 1);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(lease_expiry_redelivers_same_messages_with_new_lease_and_no_retry_charge)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-expiry");
    push_queued(&s, q, "Default", 0, 3, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
    char pid[96], lease1[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease1, jstr(&r, "leaseId"));
    char ids[3][96];
    for (int i = 0; i < 3; i++) {
        char p[32];
        snprintf(p, sizeof p, "messages.%d.id", i);
        keep_str(ids[i], jstr(&r, p));
    }
    reply_fini(&r);
    /* one charged failure first, so "no charge" means it stays at 1 */
    ack(&s, "tx0", pid, "failed", lease1, NULL, NULL, &r);
    reply_fini(&r);
    CHECK_INT(retry_count(pid, QM), 1);

    pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
    keep_str(lease1, jstr(&r, "leaseId"));
    reply_fini(&r);
    for (int round = 0; round < 2; round++) {
        expire_lease(pid, QM);
        pop_expect(&s, q, NULL, "batch=3", 0, 3, &r);
        const char *lease2 = jstr(&r, "leaseId");
        CHECK(lease2 && lease2[0] && strcmp(lease2, lease1) != 0);
        for (int i = 0; i < 3; i++) {
            char p[32];
            snprintf(p, sizeof p, "messages.%d.id", i);
            CHECK_STR(jstr(&r, p), ids[i]);
            snprintf(p, sizeof p, "messages.%d.leaseId", i);
            CHECK_STR(jstr(&r, p), lease2);
        }
        keep_str(lease1, lease2);
        reply_fini(&r);
        CHECK_INT(retry_count(pid, QM), 1);
        CHECK_INT(committed(pid, QM), -1);
    }
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_batch_spans_two_partitions_in_one_call)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-2part");
    push_queued(&s, q, "p1", 0, 2, "tx");
    push_queued(&s, q, "p2", 0, 2, "tx");
    reply r;
    pop_expect(&s, q, "p1", "batch=2", 0, 2, &r);
    char pid1[96], lease1[96];
    keep_str(pid1, jstr(&r, "partitionId"));
    keep_str(lease1, jstr(&r, "leaseId"));
    reply_fini(&r);
    pop_expect(&s, q, "p2", "batch=2", 0, 2, &r);
    char pid2[96], lease2[96];
    keep_str(pid2, jstr(&r, "partitionId"));
    keep_str(lease2, jstr(&r, "leaseId"));
    reply_fini(&r);
    CHECK(strcmp(pid1, pid2) != 0);

    /* same transactionIds on both partitions: the partitionId decides */
    char a[512], b[512], c[512], body[2048];
    ack_item_json(a, sizeof a, "tx1", pid2, "completed", lease2, NULL, NULL);
    ack_item_json(b, sizeof b, "tx1", pid1, "completed", lease1, NULL, NULL);
    ack_item_json(c, sizeof c, "tx0", pid2, "failed", lease2, NULL, "x");
    snprintf(body, sizeof body, "{\"acknowledgments\":[%s,%s,%s]}", a, b, c);
    rq(&s, "POST", "/api/v1/ack/batch", body, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.doc.tokens[0].count, 3);
    for (int i = 0; i < 3; i++) {
        char p[32];
        snprintf(p, sizeof p, "%d.index", i);
        CHECK_INT(jint(&r, p), i);
        snprintf(p, sizeof p, "%d.success", i);
        CHECK(jbool(&r, p));
        snprintf(p, sizeof p, "%d.leaseReleased", i);
        CHECK(jbool(&r, p));
    }
    reply_fini(&r);
    CHECK_INT(committed(pid1, QM), 1);      /* p1: whole batch committed */
    CHECK_INT(retry_count(pid1, QM), 0);
    CHECK_INT(committed(pid2, QM), -1);     /* p2: failed at 0 holds the cursor */
    CHECK_INT(retry_count(pid2, QM), 1);
    pop_expect_none(&s, q, "p1", "batch=2");
    pop_expect(&s, q, "p2", "batch=2", 0, 2, &r);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_batch_item_consumer_group_overrides_batch_group)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-groups");
    push_queued(&s, q, "Default", 0, 2, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=2&consumerGroup=g1", 0, 2, &r);
    char pid[96], lease1[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease1, jstr(&r, "leaseId"));
    CHECK_STR(jstr(&r, "consumerGroup"), "g1");
    reply_fini(&r);
    pop_expect(&s, q, NULL, "batch=2&consumerGroup=g2", 0, 2, &r);
    char lease2[96];
    keep_str(lease2, jstr(&r, "leaseId"));
    reply_fini(&r);

    char a[512], b[512], body[2048];
    ack_item_json(a, sizeof a, "tx1", pid, "completed", lease1, NULL, NULL);    /* batch group g1 */
    ack_item_json(b, sizeof b, "tx0", pid, "completed", lease2, "g2", NULL);
    snprintf(body, sizeof body, "{\"consumerGroup\":\"g1\",\"acknowledgments\":[%s,%s]}", a, b);
    rq(&s, "POST", "/api/v1/ack/batch", body, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.leaseReleased"));
    CHECK(jbool(&r, "1.success"));
    CHECK(!jbool(&r, "1.leaseReleased"));
    reply_fini(&r);
    CHECK_INT(committed(pid, "g1"), 1);
    CHECK_INT(committed(pid, "g2"), 0);
    CHECK_STR(sql("select count(*) from queen.log_consumers where partition_id = '%s' and consumer_group = '" QM "'",
                  pid), "0");
    pop_expect_none(&s, q, NULL, "batch=2&consumerGroup=g1");
    expire_lease(pid, "g2");
    pop_expect(&s, q, NULL, "batch=2&consumerGroup=g2", 1, 1, &r);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

static double lease_seconds_left(const char *pid)
{
    return atof(sql("select extract(epoch from lease_expires - now()) from queen.log_consumers "
                    "where partition_id = '%s' and consumer_group = '" QM "'", pid));
}

TEST(lease_extend_renews_and_never_shortens)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("lease-extend");
    push_queued(&s, q, "Default", 0, 1, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=1", 0, 1, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    double before = lease_seconds_left(pid);
    CHECK(before > 250 && before <= 300);   /* default leaseTime 300 */

    char path[256];
    snprintf(path, sizeof path, "/api/v1/lease/%s/extend", lease);
    rq(&s, "POST", path, "{\"seconds\":600}", &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "success"));
    CHECK_STR(jstr(&r, "leaseId"), lease);
    CHECK_INT(jint(&r, "renewed"), 1);
    char expires[96];
    keep_str(expires, jstr(&r, "expiresAt"));
    reply_fini(&r);
    double after = lease_seconds_left(pid);
    CHECK(after > 590 && after <= 600);
    char stored[96];
    keep_str(stored, sql("select lease_expires from queen.log_consumers where partition_id = '%s'", pid));

    rq(&s, "POST", path, "{\"seconds\":1}", &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "success"));
    CHECK_INT(jint(&r, "renewed"), 1);
    CHECK_STR(jstr(&r, "expiresAt"), expires);   /* the later expiry is kept */
    reply_fini(&r);
    CHECK_STR(sql("select lease_expires from queen.log_consumers where partition_id = '%s'", pid), stored);

    /* no body: the default 60 s is shorter too, so nothing moves */
    rq(&s, "POST", path, NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "success"));
    CHECK_STR(jstr(&r, "expiresAt"), expires);
    reply_fini(&r);

    /* the lease still works for acks */
    ack(&s, "tx0", pid, "completed", lease, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.leaseReleased"));
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(lease_extend_renews_every_partition_of_a_multi_partition_pop)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("lease-multi");
    push_queued(&s, q, "p1", 0, 1, "tx");
    push_queued(&s, q, "p2", 0, 1, "tx");
    reply r;
    pop_from(&s, q, NULL, "batch=2&partitions=2", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "partitionsClaimed"), 2);
    int m = jpath(&r, "messages");
    CHECK(m >= 0);
    CHECK_INT(r.doc.tokens[m].count, 2);
    char lease[96];
    keep_str(lease, jstr(&r, "leaseId"));
    char pid0[96], pid1[96];
    keep_str(pid0, jstr(&r, "messages.0.partitionId"));
    keep_str(pid1, jstr(&r, "messages.1.partitionId"));
    CHECK(strcmp(pid0, pid1) != 0);
    CHECK_STR(jstr(&r, "messages.0.leaseId"), lease);
    CHECK_STR(jstr(&r, "messages.1.leaseId"), lease);
    reply_fini(&r);

    char path[256];
    snprintf(path, sizeof path, "/api/v1/lease/%s/extend", lease);
    rq(&s, "POST", path, "{\"seconds\":900}", &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "success"));
    CHECK_INT(jint(&r, "renewed"), 2);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_consumers where lease_id = '%s' "
                  "and lease_expires > now() + interval '890 seconds'", lease), "2");

    /* one batch ack commits both partitions and releases both */
    char a[512], b[512], body[2048];
    ack_item_json(a, sizeof a, "tx0", pid0, "completed", lease, NULL, NULL);
    ack_item_json(b, sizeof b, "tx0", pid1, "completed", lease, NULL, NULL);
    snprintf(body, sizeof body, "{\"acknowledgments\":[%s,%s]}", a, b);
    rq(&s, "POST", "/api/v1/ack/batch", body, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.leaseReleased"));
    CHECK(jbool(&r, "1.success"));
    CHECK(jbool(&r, "1.leaseReleased"));
    reply_fini(&r);
    CHECK_INT(committed(pid0, QM), 0);
    CHECK_INT(committed(pid1, QM), 0);
    rq(&s, "POST", path, "{\"seconds\":60}", &r);   /* nothing left under it */
    CHECK(!jbool(&r, "success"));
    CHECK_INT(jint(&r, "renewed"), 0);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(lease_extend_unknown_or_expired_lease_fails)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("lease-unknown");
    reply r;
    rq(&s, "POST", "/api/v1/lease/01900000-0000-7000-8000-000000000001/extend", "{\"seconds\":60}", &r);
    CHECK_INT(r.status, 200);
    CHECK(!jbool(&r, "success"));
    CHECK(jpath(&r, "success") >= 0);
    CHECK_INT(jint(&r, "renewed"), 0);
    CHECK(jstr(&r, "error") != NULL);
    reply_fini(&r);

    push_queued(&s, q, "Default", 0, 1, "tx");
    pop_expect(&s, q, NULL, "batch=1", 0, 1, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    expire_lease(pid, QM);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/lease/%s/extend", lease);
    rq(&s, "POST", path, "{\"seconds\":600}", &r);
    CHECK_INT(r.status, 200);
    CHECK(!jbool(&r, "success"));
    CHECK_INT(jint(&r, "renewed"), 0);
    CHECK(jstr(&r, "error") != NULL);
    reply_fini(&r);
    CHECK(lease_seconds_left(pid) < 0);      /* an expired lease is not revived */
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_dlq_whose_segment_is_gone_is_rejected_and_cursor_stays)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ack-dlqgone");
    push_queued(&s, q, "Default", 0, 1, "tx");   /* segment [0,0] */
    push_queued(&s, q, "Default", 1, 1, "tx");   /* segment [1,1] */
    reply r;
    pop_expect(&s, q, NULL, "batch=2", 0, 2, &r);
    char pid[96], lease[96];
    keep_str(pid, jstr(&r, "partitionId"));
    keep_str(lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.log_segments where partition_id = '%s'", pid), "2");

    /* retention removed the segment covering offset 0 */
    sql("delete from queen.log_segments where partition_id = '%s' and base_offset = 0", pid);
    sql("update queen.log_partitions set log_start = 1 where id = '%s'", pid);

    ack(&s, "tx0", pid, "dlq", lease, NULL, "poison", &r);
    CHECK(!jbool(&r, "0.success"));
    CHECK_STR(jstr(&r, "0.error"), "dlq rejected");
    CHECK(!jbool(&r, "0.dlq"));
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), -1);
    CHECK_INT(dlq_rows(pid), 0);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(pop_auto_ack_commits_in_the_pop_itself)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("autoack");
    push_queued(&s, q, "Default", 0, 4, "tx");
    reply r;
    pop_expect(&s, q, NULL, "batch=2&autoAck=true", 0, 2, &r);
    char pid[96];
    keep_str(pid, jstr(&r, "partitionId"));
    CHECK_STR(jstr(&r, "leaseId"), "");
    CHECK_STR(jstr(&r, "messages.0.leaseId"), "");
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 1);
    CHECK(!lease_held(pid, QM));

    pop_expect(&s, q, NULL, "batch=2&autoAck=true", 2, 2, &r);
    CHECK_STR(jstr(&r, "leaseId"), "");
    reply_fini(&r);
    CHECK_INT(committed(pid, QM), 3);
    pop_expect_none(&s, q, NULL, "batch=2");

    /* acking an auto-acked message is a no-op */
    ack(&s, "tx3", pid, "completed", NULL, NULL, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "0.noop"));
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

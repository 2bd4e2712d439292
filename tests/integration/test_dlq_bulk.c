/* Integration: dead letters replayed and deleted by filter
 * (POST /api/v1/dlq/replay, /api/v1/dlq/delete), a bounded number per call,
 * with a dry run's count and sample first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

/* Pushes n messages to q and dead-letters each with error. */
static void dead_letters(silt_server *s, const char *q, int n, const char *error)
{
    for (int i = 0; i < n; i++) {
        const char *txn = uniq("m");
        char kept[96];
        keep_str(kept, txn);
        push_one(s, q, "Default", kept, sfmt("{\"n\":%d}", i));
        reply r;
        CHECK_INT(pop_from(s, q, NULL, "batch=1", &r), 200);
        const char *pid = jstr(&r, "messages.0.partitionId");
        reply_fini(&r);
        rq(s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"%s\",\"partitionId\":\"%s\",\"status\":\"dlq\","
                                          "\"error\":\"%s\"}", kept, pid, error), &r);
        CHECK(jbool(&r, "0.dlq"));
        reply_fini(&r);
    }
}

static const char *dlq_count(const char *q)
{
    return sql("select count(*) from queen.log_dlq where queue = '%s'", q);
}

TEST(dlq_bulk_dry_run_counts_and_samples_what_matches_and_changes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("bulkdry"), *other = uniq("bulkother");
    char qk[96], ok[96];
    keep_str(qk, q);
    keep_str(ok, other);
    dead_letters(&s, qk, 3, "poison pill");
    dead_letters(&s, qk, 1, "timeout");
    dead_letters(&s, ok, 2, "poison pill");
    reply r;
    rq(&s, "POST", "/api/v1/dlq/replay", sfmt("{\"queue\":\"%s\",\"error\":\"POISON\",\"dryRun\":true,\"limit\":2}", qk), &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "dryRun"));
    CHECK_INT(jint(&r, "matching"), 3);
    CHECK_INT(jint(&r, "count"), 2);
    CHECK(jbool(&r, "more"));
    CHECK_INT(r.doc.tokens[jpath(&r, "sample")].count, 3);
    CHECK_STR(jstr(&r, "sample.0.errorMessage"), "poison pill");
    CHECK_STR(jstr(&r, "sample.2.queue"), qk);
    reply_fini(&r);
    /* every queue's, and a time range: none failed before 2000 */
    rq(&s, "POST", "/api/v1/dlq/delete", "{\"error\":\"poison\",\"dryRun\":true}", &r);
    CHECK(jint(&r, "matching") >= 5);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/dlq/delete", sfmt("{\"queue\":\"%s\",\"to\":\"2000-01-01T00:00:00Z\",\"dryRun\":true}", qk), &r);
    CHECK_INT(jint(&r, "matching"), 0);
    CHECK(!jbool(&r, "more"));
    reply_fini(&r);
    CHECK_STR(dlq_count(qk), "4");
    CHECK_STR(dlq_count(ok), "2");
    srv_stop(&s);
}

TEST(dlq_bulk_replay_is_bounded_by_limit_and_says_more_until_none_match)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("bulkreplay");
    char qk[96];
    keep_str(qk, q);
    dead_letters(&s, qk, 3, "poison");
    dead_letters(&s, qk, 1, "other");
    reply r;
    rq(&s, "POST", "/api/v1/dlq/replay", sfmt("{\"queue\":\"%s\",\"error\":\"poison\",\"limit\":2}", qk), &r);
    CHECK_INT(r.status, 200);
    CHECK(!jbool(&r, "dryRun"));
    CHECK_INT(jint(&r, "count"), 2);
    CHECK(jbool(&r, "more"));
    reply_fini(&r);
    CHECK_STR(dlq_count(qk), "2");
    rq(&s, "POST", "/api/v1/dlq/replay", sfmt("{\"queue\":\"%s\",\"error\":\"poison\",\"limit\":2}", qk), &r);
    CHECK_INT(jint(&r, "count"), 1);
    CHECK(!jbool(&r, "more"));
    reply_fini(&r);
    /* the one that did not match stays; the three are back in the log, as the single replay puts them */
    CHECK_STR(sql("select error_message from queen.log_dlq where queue = '%s'", qk), "other");
    CHECK_INT(pop_from(&s, qk, NULL, "batch=10", &r), 200);
    CHECK_INT(r.doc.tokens[jpath(&r, "messages")].count, 3);
    CHECK(strncmp(jstr(&r, "messages.0.transactionId"), "dlq:", 4) == 0);
    CHECK(strncmp(jstr(&r, "messages.2.transactionId"), "dlq:", 4) == 0);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/dlq/replay", sfmt("{\"queue\":\"%s\",\"error\":\"poison\"}", qk), &r);
    CHECK_INT(jint(&r, "count"), 0);
    CHECK(!jbool(&r, "more"));
    reply_fini(&r);
    srv_stop(&s);
}

TEST(dlq_bulk_delete_removes_only_the_matching_dead_letters_a_limit_at_a_time)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("bulkdel");
    char qk[96];
    keep_str(qk, q);
    dead_letters(&s, qk, 3, "poison");
    dead_letters(&s, qk, 2, "kept");
    reply r;
    rq(&s, "POST", "/api/v1/dlq/delete", sfmt("{\"queue\":\"%s\",\"consumerGroup\":\"__QUEUE_MODE__\","
                                              "\"partition\":\"Default\",\"error\":\"poison\",\"limit\":2}", qk), &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "count"), 2);
    CHECK(jbool(&r, "more"));
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/dlq/delete", sfmt("{\"queue\":\"%s\",\"error\":\"poison\",\"from\":\"2000-01-01T00:00:00Z\"}", qk),
       &r);
    CHECK_INT(jint(&r, "count"), 1);
    CHECK(!jbool(&r, "more"));
    reply_fini(&r);
    CHECK_STR(sql("select string_agg(error_message, ',') from queen.log_dlq where queue = '%s'", qk), "kept,kept");
    srv_stop(&s);
}

TEST(dlq_bulk_bad_input_is_a_400_naming_the_field_and_changes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("bulkbad");
    char qk[96];
    keep_str(qk, q);
    dead_letters(&s, qk, 2, "poison");
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    char long_group[400];   /* not in sfmt's ring: the loop's requests reuse it */
    snprintf(long_group, sizeof long_group, "{\"consumerGroup\":\"%s\"}", longname);
    const char *cases[][2] = {
        { "{\"limit\":0}", "limit" },
        { "{\"limit\":1001}", "limit" },
        { "{\"from\":\"yesterday\"}", "from" },
        { "{\"to\":12}", "to" },
        { "{\"dryRun\":\"yes\"}", "dryRun" },
        { "{\"queue\":\"\"}", "queue" },
        { long_group, "consumerGroup" },
        { "{\"error\":[1]}", "error" },
        { "{\"queues\":\"a\"}", "queues" },
    };
    for (int route = 0; route < 2; route++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            rq_refused(&s, "POST", route ? "/api/v1/dlq/delete" : "/api/v1/dlq/replay", cases[i][0], cases[i][1]);
    reply r;
    rq(&s, "POST", "/api/v1/dlq/delete", "[1]", &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    CHECK_STR(dlq_count(qk), "2");
    srv_stop(&s);
}

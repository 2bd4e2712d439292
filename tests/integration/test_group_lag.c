/* A consumer group's lag (issue 36, point 1), through the API: a group
 * reads every partition of the queues it reads (its subscriptions; in queue
 * mode, the queues it holds cursors on), so a partition it has no cursor
 * on yet counts from where its first pop there would start
 * (queen.seed_cursor). The group list, a group's page, a queue's pending
 * count by group and the overview's total lag answer the same number
 * (queen.group_lag). */
#include <stdio.h>
#include <string.h>
#include "harness.h"
#include "support.h"
#include "retention_support.h"

/* The group's lag as each of the four routes answers it; fails the test
 * unless all four are want. */
static void lag_everywhere(silt_server *s, const char *q, const char *g, long long want)
{
    reply r;
    rq(s, "GET", sfmt("/api/v1/consumer-groups/%s", g), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "totalLag"), want);
    reply_fini(&r);
    rq(s, "GET", sfmt("/api/v1/consumer-groups?queue=%s", q), NULL, &r);
    CHECK_STR(jstr(&r, "0.name"), g);
    CHECK_INT(jint(&r, "0.totalLag"), want);
    reply_fini(&r);
    rq(s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(jint(&r, sfmt("messages.pending.%s", g)), want);
    reply_fini(&r);
    rq(s, "GET", "/api/v1/resources/overview", NULL, &r);   /* the test's own database: this group only */
    CHECK_INT(jint(&r, "totalLag"), want);
    CHECK_INT(jint(&r, "consumerGroups"), 1);
    reply_fini(&r);
}

/* "one cursor → lag 375 while 12,603 unread" */
TEST(group_lag_counts_the_partitions_it_has_no_cursor_on_yet)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("lag-uncursored");
    push_queued(&s, q, "p1", 0, 2, NULL);
    push_queued(&s, q, "p2", 0, 3, NULL);
    push_queued(&s, q, "p3", 0, 4, NULL);
    reply r;
    CHECK_INT(pop_from(&s, q, "p1", "consumerGroup=billing&batch=1&wait=false", &r), 200);   /* a cursor on p1 only */
    reply_fini(&r);
    lag_everywhere(&s, q, "billing", 2 + 3 + 4);
    rq(&s, "GET", "/api/v1/consumer-groups/billing", NULL, &r);
    CHECK_INT(jint(&r, "cursors"), 1);            /* the cursors it holds, as before */
    CHECK_INT(jint(&r, "partitions.0.lag"), 2);
    CHECK(jpath(&r, "partitions.1") < 0);
    reply_fini(&r);
    srv_stop(&s);
}

/* "another lag 0 and Stable with 7,200 unread": caught up on its one
 * cursor, while an old backlog waits on a partition it never popped. */
TEST(group_caught_up_on_its_cursors_is_lagging_while_another_partition_waits)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("lag-stable");
    push_queued(&s, q, "p1", 0, 1, NULL);
    push_queued(&s, q, "p2", 0, 5, NULL);
    age_segments(pid_of(q, "p2"), 0, 5, 2 * HOUR);
    reply r;
    CHECK_INT(pop_from(&s, q, "p1", "consumerGroup=billing&batch=10&autoAck=true&wait=false", &r), 200);
    reply_fini(&r);
    lag_everywhere(&s, q, "billing", 5);
    rq(&s, "GET", "/api/v1/consumer-groups/billing", NULL, &r);
    CHECK_STR(jstr(&r, "state"), "Lagging");      /* active just now, with a backlog two hours old */
    CHECK(jint(&r, "maxTimeLag") >= 2 * HOUR);
    reply_fini(&r);
    srv_stop(&s);
}

/* A subscription from a time: a partition without a cursor counts only
 * what its first pop would deliver, the segments committed from then on. */
TEST(group_lag_of_a_partition_without_a_cursor_starts_at_the_subscriptions_time)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("lag-from");
    push_queued(&s, q, "p2", 0, 3, NULL);
    age_segments(pid_of(q, "p2"), 0, 3, 2 * HOUR);   /* before the subscription */
    push_queued(&s, q, "p2", 3, 2, NULL);            /* after it */
    push_queued(&s, q, "p1", 0, 1, NULL);
    reply r;
    CHECK_INT(pop_from(&s, q, "p1", sfmt("consumerGroup=billing&batch=10&autoAck=true&wait=false&subscriptionFrom=%s",
                                          ts_ago(HOUR)), &r), 200);
    reply_fini(&r);
    lag_everywhere(&s, q, "billing", 2);
    CHECK_INT(pop_from(&s, q, "p2", "consumerGroup=billing&batch=10&autoAck=true&wait=false", &r), 200);
    CHECK_INT(jint(&r, "messages.0.offset"), 3);     /* the pop starts where the lag counted from */
    reply_fini(&r);
    lag_everywhere(&s, q, "billing", 0);
    srv_stop(&s);
}

/* Queue mode stores no subscription: its queues are those it has cursors on. */
TEST(queue_mode_lag_counts_every_partition_of_a_queue_it_pops)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("lag-qmode");
    push_queued(&s, q, "p1", 0, 2, NULL);
    push_queued(&s, q, "p2", 0, 3, NULL);
    reply r;
    CHECK_INT(pop_from(&s, q, "p1", "batch=1&wait=false", &r), 200);
    reply_fini(&r);
    CHECK_STR(sql("select count(*) from queen.subscriptions"), "0");
    lag_everywhere(&s, q, "__QUEUE_MODE__", 5);
    srv_stop(&s);
}

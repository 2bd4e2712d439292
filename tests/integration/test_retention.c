/* Integration: the log retention engine (docs/retention.md). Every test is
 * named after a sentence of the retention document; docs/retention.md maps
 * each sentence to its tests.
 *
 * Time is controlled by backdating rows, never by sleeping through a window
 * (retention_support.h). Test servers run no timed passes, and each test
 * has a database of its own. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "harness.h"
#include "retention_support.h"

/* ---- nothing is deleted until you ask ---- */

TEST(consuming_a_message_does_not_delete_it)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-consume"), *g = uniq("g");
    push(&s, q, "Default", 3);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "0,1,2");
    CHECK_STR(pop_offsets(&s, q, NULL, "batch=3&autoAck=true"), "0,1,2");   /* queue mode consumed it too */
    age_segments(pid, 0, 3, 10 * DAY);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(segments(pid), 1);
    CHECK_INT(log_start(pid), 0);
    CHECK_STR(history(q), "");
    /* still there for anyone who reads it */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=5", uniq("g"))), "0,1,2");
    srv_stop(&s);
}

TEST(queue_created_by_push_or_configured_without_retention_keys_has_retention_off)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *pushed = uniq("ret-bypush"), *configured = uniq("ret-byconf");
    push(&s, pushed, "Default", 1);
    configure_queue(&s, configured, "{\"leaseTime\":30,\"retryLimit\":5}");
    const char *qs[2] = { pushed, configured };
    for (int i = 0; i < 2; i++) {
        reply r;
        queue_detail(&s, qs[i], &r);
        CHECK_STR(jraw(&r, "options.retentionEnabled"), "false");
        CHECK_INT(jint(&r, "options.retentionSeconds"), 0);
        CHECK_INT(jint(&r, "options.completedRetentionSeconds"), 0);
        CHECK_INT(jint(&r, "options.maxWaitTimeSeconds"), 0);
        reply_fini(&r);
    }
    srv_stop(&s);
}

TEST(nothing_is_deleted_until_you_configure_retention)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-unattended"), *g = uniq("g");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "0,1,2");
    age_segments(pid, 0, 3, 3650 * DAY);   /* ten years old, and consumed */
    refresh(q);
    CHECK_STR(run_report(&s, true, q), "");
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_STR(run_report(&s, false, q), "");
    /* the engine does not even find it as work */
    CHECK_STR(sql("select count(*) from queen.retention_candidates(now(), 100000) where queue = '%s' and kind = 'segments'", q), "0");
    push(&s, q, "Default", 2);   /* an unattended queue grows */
    CHECK_INT(segments(pid), 4);
    CHECK_INT(log_start(pid), 0);
    CHECK_STR(history(q), "");
    reply r;
    explain(&s, q, &r);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "no retention rule applies to this queue") != NULL);
    CHECK_STR(jraw(&r, "partitions.0.nextPass"), "null");
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- the two consumption-aware rules ---- */

TEST(setting_the_window_without_enabling_retention_does_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-notenabled"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":false,\"retentionSeconds\":3600,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "0,1,2");
    age_segments(pid, 0, 3, 10 * DAY);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(segments(pid), 3);
    CHECK_INT(log_start(pid), 0);
    reply r;
    explain(&s, q, &r);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "retentionEnabled is false") != NULL);
    reply_fini(&r);
    /* the same windows, enabled, delete */
    configure_queue(&s, q, "{\"retentionEnabled\":true}");
    CHECK_STR(run_report(&s, false, q), "Default retention 0-3 3 0 3");
    CHECK_INT(log_start(pid), 3);
    srv_stop(&s);
}

TEST(enabling_retention_with_both_windows_at_zero_does_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-zero"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":0,\"completedRetentionSeconds\":0}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "0,1,2");
    age_segments(pid, 0, 3, 10 * DAY);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(segments(pid), 3);
    reply r;
    explain(&s, q, &r);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "both windows are 0") != NULL);
    reply_fini(&r);
    /* one positive window is enough */
    configure_queue(&s, q, "{\"completedRetentionSeconds\":3600}");
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-3 3 0 3");
    CHECK_INT(log_start(pid), 3);
    srv_stop(&s);
}

TEST(retention_seconds_deletes_on_age_alone)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-age");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 4; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    /* nobody consumed anything: age alone decides */
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-2 2 0 2");
    CHECK_INT(log_start(pid), 2);
    CHECK_INT(segments(pid), 2);
    CHECK_STR(history(q), "Default retention 0-2 2 0");
    reply r;
    queue_detail(&s, q, &r);
    CHECK_INT(jint(&r, "partitionList.0.logStart"), 2);
    CHECK_INT(jint(&r, "partitionList.0.lastOffset"), 3);
    reply_fini(&r);
    CHECK_STR(pop_offsets(&s, q, NULL, "batch=10"), "2,3");
    srv_stop(&s);
}

TEST(consumer_down_longer_than_the_window_comes_back_to_a_shorter_log)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-down"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 5; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=1&autoAck=true", g)), "0");
    /* the group went down; offsets 1..3 outlived the window meanwhile */
    age_segments(pid, 0, 4, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-4 4 0 4");
    CHECK_INT(committed(pid, g), 0);
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", g)), "4");
    srv_stop(&s);
}

TEST(retention_window_is_a_floor_on_what_is_kept)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-floor");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 2, 3500);   /* just inside the window */
    age_segments(pid, 0, 1, 200);    /* offset 0: 3700 s, just outside */
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-1 1 0 1");
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(log_start(pid), 1);
    CHECK_INT(segments(pid), 2);
    srv_stop(&s);
}

TEST(completed_retention_never_deletes_unconsumed_backlog)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-backlog"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 5; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=2&autoAck=true", g)), "0,1");
    age_segments(pid, 0, 5, 3650 * DAY);   /* however old */
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-2 2 0 2");
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(log_start(pid), 2);
    CHECK_INT(segments(pid), 3);
    CHECK_STR(history(q), "Default completed_retention 0-2 2 0");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", g)), "2,3,4");
    srv_stop(&s);
}

TEST(never_popped_partition_deletes_nothing_under_completed_retention)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-neverpopped"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 3, 3650 * DAY);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(segments(pid), 3);
    reply r;
    explain(&s, q, &r);
    CHECK_STR(jraw(&r, "partitions.0.consumptionCap"), "null");
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "no consumer group has a cursor on this partition") != NULL);
    reply_fini(&r);
    /* once a group has consumed it, the same rule deletes it */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "0,1,2");
    a_pass_later(q);
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-3 3 0 3");
    srv_stop(&s);
}

TEST(completed_retention_is_capped_at_the_lowest_cursor_plus_one)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-cap"), *a = uniq("ga"), *b = uniq("gb"), *c = uniq("gc");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 5; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=4&autoAck=true", a)), "0,1,2,3");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=2&autoAck=true", b)), "0,1");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", c)), "0,1,2");
    age_segments(pid, 0, 5, 2 * HOUR);
    refresh(q);
    reply r;
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "partitions.0.consumptionCap.offset"), 2);
    CHECK_STR(jstr(&r, "partitions.0.consumptionCap.pinnedBy"), b);
    CHECK_INT(jint(&r, "partitions.0.boundaries.completedRetention"), 2);
    reply_fini(&r);
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-2 2 0 2");
    CHECK_INT(log_start(pid), 2);
    srv_stop(&s);
}

TEST(one_lagging_group_holds_data_for_every_group)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-lagging"), *fast = uniq("gfast"), *slow = uniq("gslow");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 5; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=1&autoAck=true", slow)), "0");   /* then abandoned */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=5&autoAck=true", fast)), "0,1,2,3,4");
    age_segments(pid, 0, 5, 30 * DAY);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-1 1 0 1");
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(log_start(pid), 1);
    CHECK_INT(segments(pid), 4);   /* everything fast consumed, held for slow */
    reply r;
    explain(&s, q, &r);
    CHECK_STR(jstr(&r, "partitions.0.consumptionCap.pinnedBy"), slow);
    CHECK_INT(jint(&r, "partitions.0.consumptionCap.behind"), 4);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(deleting_a_group_releases_its_floor)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-release"), *fast = uniq("gfast"), *slow = uniq("gslow");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 5; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=1&autoAck=true", slow)), "0");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=4&autoAck=true", fast)), "0,1,2,3");
    age_segments(pid, 0, 5, 30 * DAY);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-1 1 0 1");
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/consumer-groups/%s/queues/%s", slow, q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "cursors"), 1);
    reply_fini(&r);
    /* at once: removing the cursors reschedules the partition they pinned */
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 1-4 3 0 3");
    CHECK_INT(log_start(pid), 4);
    CHECK_STR(history(q), "Default completed_retention 0-1 1 0; Default completed_retention 1-4 3 0");
    srv_stop(&s);
}

TEST(when_both_rules_apply_the_further_boundary_wins)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-both"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":7200,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 4; i++) { push(&s, q, "A", 1); push(&s, q, "B", 1); }
    const char *a = pid_of(q, "A"), *b = pid_of(q, "B");
    /* A: retention reaches offset 3, the consumption cap only 1 */
    age_segments(a, 0, 3, 3 * HOUR);
    CHECK_STR(pop_offsets(&s, q, "A", sfmt("consumerGroup=%s&batch=1&autoAck=true", g)), "0");
    /* B: retention reaches offset 2, completed retention (all consumed, 1.5 h old) 4 */
    age_segments(b, 0, 4, 5400);
    age_segments(b, 0, 2, 2 * HOUR);
    CHECK_STR(pop_offsets(&s, q, "B", sfmt("consumerGroup=%s&batch=4&autoAck=true", g)), "0,1,2,3");
    refresh(q);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/retention/explain?queue=%s&partition=A", q), NULL, &r);
    CHECK_INT(jint(&r, "partitions.0.boundaries.retention"), 3);
    CHECK_INT(jint(&r, "partitions.0.boundaries.completedRetention"), 1);
    CHECK_STR(jstr(&r, "partitions.0.nextPass.rule"), "retention");
    CHECK_INT(jint(&r, "partitions.0.nextPass.boundary"), 3);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/retention/explain?queue=%s&partition=B", q), NULL, &r);
    CHECK_INT(jint(&r, "partitions.0.boundaries.retention"), 2);
    CHECK_INT(jint(&r, "partitions.0.boundaries.completedRetention"), 4);
    CHECK_STR(jstr(&r, "partitions.0.nextPass.rule"), "completed_retention");
    reply_fini(&r);
    run_pass(&s);
    CHECK_INT(log_start(a), 3);
    CHECK_INT(log_start(b), 4);
    CHECK_STR(sql("select string_agg(partition || ' ' || rule || ' ' || from_offset || '-' || to_offset, '; ' "
                  "order by partition) from queen.retention_history where queue = '%s'", q),
              "A retention 0-3; B completed_retention 0-4");
    srv_stop(&s);
}

TEST(max_wait_beyond_the_other_rules_wins_as_an_eviction)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-maxwins");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":10800,\"maxWaitTimeSeconds\":3600}");
    for (int i = 0; i < 4; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 3, 2 * HOUR);
    age_segments(pid, 0, 1, 2 * HOUR);   /* offset 0: 4 h, past retentionSeconds too */
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default max_wait_time_eviction 0-3 3 0 3");
    CHECK_INT(log_start(pid), 3);
    srv_stop(&s);
}

/* ---- whole segments ---- */

TEST(a_push_is_one_segment_with_one_commit_timestamp)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-segment");
    push(&s, q, "Default", 3);
    push(&s, q, "Default", 2);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(sql("select string_agg(base_offset || '-' || end_offset, ',' order by base_offset) "
                  "from queen.log_segments where partition_id = '%s'", pid), "0-2,3-4");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?batch=3", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "messages.0.createdAt"), jstr(&r, "messages.2.createdAt"));
    CHECK_STR(jstr(&r, "messages.1.createdAt"), jstr(&r, "messages.2.createdAt"));
    reply_fini(&r);
    srv_stop(&s);
}

TEST(only_segments_entirely_below_the_boundary_are_deleted)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-whole"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 3);   /* [0-2] [3-5] [6-8] */
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=5&autoAck=true", g)), "0,1,2,3,4");
    age_segments(pid, 0, 9, 2 * HOUR);
    refresh(q);
    /* the boundary is offset 5; [3-5] is not entirely below it */
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-3 3 0 1");
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(log_start(pid), 3);
    CHECK_STR(sql("select string_agg(base_offset || '-' || end_offset, ',' order by base_offset) "
                  "from queen.log_segments where partition_id = '%s'", pid), "3-5,6-8");
    srv_stop(&s);
}

TEST(straddling_segment_survives_with_everything_in_it)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-straddle"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 3);   /* [0-2] [3-5] [6-8] */
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=5&autoAck=true", g)), "0,1,2,3,4");
    age_segments(pid, 0, 9, 2 * HOUR);
    refresh(q);
    reply r;
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "partitions.0.straddlingSegment.baseOffset"), 3);
    CHECK_INT(jint(&r, "partitions.0.straddlingSegment.endOffset"), 5);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "segment 3-5 holds its next offset and stays with everything in it"));
    reply_fini(&r);
    run_pass(&s);
    CHECK_INT(log_start(pid), 3);
    /* 3 and 4 were consumed, yet a group reading from the start still gets them */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", uniq("g"))), "3,4,5,6,7,8");
    srv_stop(&s);
}

TEST(consumption_cap_mid_segment_keeps_the_covering_segment)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-midcap"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    push(&s, q, "Default", 4);   /* [0-3] */
    push(&s, q, "Default", 4);   /* [4-7] */
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 8, 2 * HOUR);
    refresh(q);
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "0,1,2");
    CHECK_STR(run_report(&s, false, q), "");   /* cap 3 falls inside [0-3]: its tail is unconsumed */
    CHECK_INT(segments(pid), 2);
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "3,4,5");
    a_pass_later(q);
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-4 4 0 1");   /* now [0-3] is wholly consumed */
    CHECK_INT(log_start(pid), 4);
    CHECK_INT(segments(pid), 1);
    srv_stop(&s);
}

/* ---- maxWaitTimeSeconds ---- */

TEST(max_wait_deletes_whole_segments_older_than_its_cutoff_for_every_group)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-maxwait"), *done = uniq("gdone"), *idle = uniq("gidle");
    configure_queue(&s, q, "{\"maxWaitTimeSeconds\":3600}");
    push(&s, q, "Default", 2);   /* [0-1] */
    push(&s, q, "Default", 1);   /* [2] */
    push(&s, q, "Default", 1);   /* [3] */
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10&autoAck=true", done)), "0,1,2,3");
    reply r;
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/%s/queues/%s/seek", idle, q), "{\"timestamp\":\"2000-01-01T00:00:00Z\"}", &r);
    CHECK_INT(jint(&r, "partitions.0.committedOffset"), -1);   /* consumed nothing */
    reply_fini(&r);
    age_segments(pid, 0, 3, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default max_wait_time_eviction 0-3 3 0 2");
    CHECK_INT(log_start(pid), 3);
    CHECK_STR(history(q), "Default max_wait_time_eviction 0-3 3 0");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", idle)), "3");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", done)), "none");
    srv_stop(&s);
}

TEST(max_wait_deletes_leased_segments_and_records_leased_offsets)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-leased"), *g = uniq("g");
    configure_queue(&s, q, "{\"maxWaitTimeSeconds\":3600,\"leaseTime\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3", g)), "0,1,2");   /* a worker holds 0..2 */
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    CHECK_INT(srv_metric(&s, "silt_retention_leased_offsets_evicted_total"), 0);
    reply r;
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "partitions.0.nextPass.leasedOffsets"), 2);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "whether consumed or leased") != NULL);
    reply_fini(&r);
    CHECK_STR(run_report(&s, false, q), "Default max_wait_time_eviction 0-2 2 2 2");
    CHECK_STR(history(q), "Default max_wait_time_eviction 0-2 2 2");
    CHECK_INT(srv_metric(&s, "silt_retention_leased_offsets_evicted_total"), 2);
    CHECK_INT(srv_metric(&s, "silt_retention_offsets_deleted_total{rule=\"max_wait_time_eviction\"}"), 2);
    CHECK_INT(log_start(pid), 2);
    CHECK_INT(segments(pid), 1);
    /* the lease lapses: the group resumes at what still exists */
    sql("update queen.log_consumers set lease_expires = now() - interval '1 second' where partition_id = '%s'", pid);
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", g)), "2");
    srv_stop(&s);
}

TEST(max_wait_applies_regardless_of_retention_enabled)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *off = uniq("ret-maxonly"), *on = uniq("ret-maxon");
    configure_queue(&s, off, "{\"maxWaitTimeSeconds\":3600}");   /* only this option */
    configure_queue(&s, on, "{\"retentionEnabled\":true,\"maxWaitTimeSeconds\":3600}");
    const char *qs[2] = { off, on };
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 3; i++) push(&s, qs[k], "Default", 1);
        const char *pid = pid_of(qs[k], "Default");
        age_segments(pid, 0, 2, 2 * HOUR);
        refresh(qs[k]);
    }
    reply r;
    run(&s, false, &r);
    CHECK_STR(report_of(&r, off), "Default max_wait_time_eviction 0-2 2 0 2");
    CHECK_STR(report_of(&r, on), "Default max_wait_time_eviction 0-2 2 0 2");
    reply_fini(&r);
    CHECK_STR(sql("select options->>'retentionEnabled' from queen.queues where name = '%s'", off), "false");
    srv_stop(&s);
}

TEST(max_wait_does_not_dead_letter)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-maxnodlq"), *g = uniq("g");
    configure_queue(&s, q, "{\"maxWaitTimeSeconds\":3600,\"leaseTime\":3600}");
    push_txn(&s, q, "Default", "m0");
    push_txn(&s, q, "Default", "m1");
    push_txn(&s, q, "Default", "m2");
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=1", g)), "0");   /* one leased, two unconsumed */
    age_segments(pid, 0, 3, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default max_wait_time_eviction 0-3 3 1 3");
    CHECK_INT(dlq_rows(q), 0);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "total"), 0);
    reply_fini(&r);
    /* gone, not quarantined */
    rq(&s, "GET", sfmt("/api/v1/messages/%s/m1", pid), NULL, &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    CHECK_INT(segments(pid), 0);
    srv_stop(&s);
}

TEST(cursors_below_the_watermark_resume_at_the_next_existing_offset)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-resume"), *g = uniq("g");
    configure_queue(&s, q, "{\"maxWaitTimeSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    push(&s, q, "Default", 2);   /* [3-4] */
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=1&autoAck=true", g)), "0");
    age_segments(pid, 0, 3, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default max_wait_time_eviction 0-3 3 0 3");
    CHECK_INT(committed(pid, g), 0);   /* the cursor is left below the watermark */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/consumer-groups/%s", g), NULL, &r);
    CHECK_INT(jint(&r, "partitions.0.lag"), 2);
    reply_fini(&r);
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", g)), "3,4");
    CHECK_STR(pop_offsets(&s, q, NULL, "batch=10"), "3,4");   /* queue mode, never popped before */
    srv_stop(&s);
}

/* ---- dead letters ---- */

TEST(dead_letters_are_never_purged_by_any_rule)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-dlq"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600,\"completedRetentionSeconds\":3600,"
                     "\"maxWaitTimeSeconds\":3600,\"dedupWindowSeconds\":0}");
    for (int i = 0; i < 3; i++) push_txn(&s, q, "Default", sfmt("m%d", i));
    push(&s, q, "Default", 1);   /* offset 3 */
    const char *pid = pid_of(q, "Default");
    for (int i = 0; i < 3; i++) dead_letter_next(&s, q, g, sfmt("m%d", i));
    CHECK_INT(dlq_rows(q), 3);
    /* every rule and the sidecar purge pass over the partition */
    age_segments(pid, 0, 4, 3650 * DAY);
    age_txns(pid, 0, 4, 3650 * DAY);
    refresh(q);
    reply r;
    run(&s, false, &r);
    CHECK_STR(report_of(&r, q), "Default retention 0-4 4 0 4");
    CHECK(jint(&r, "sidecarRowsPurged") >= 4);
    reply_fini(&r);
    CHECK_INT(segments(pid), 0);
    CHECK_INT(txns_rows(pid), 0);
    CHECK_INT(dlq_rows(q), 3);
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "total"), 3);
    CHECK_STR(jraw(&r, "messages.2.data"), "{\"txn\":\"m0\"}");
    const char *id = strdup(jstr(&r, "messages.2.id"));
    reply_fini(&r);
    /* removed only one at a time, by replay, or with the queue */
    rq(&s, "POST", sfmt("/api/v1/dlq/%s/replay", id), "{}", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "offset"), 4);
    reply_fini(&r);
    rq(&s, "DELETE", sfmt("/api/v1/messages/%s/m1", pid), NULL, &r);
    CHECK_INT(jint(&r, "deleted"), 1);
    reply_fini(&r);
    CHECK_INT(dlq_rows(q), 1);
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK(jbool(&r, "deleted"));
    reply_fini(&r);
    CHECK_INT(dlq_rows(q), 0);
    srv_stop(&s);
}

/* ---- partition cleanup ---- */

TEST(empty_untouched_partitions_are_removed_after_cleanup_days)
{
    silt_server s;
    srv_start(&s, NULL);   /* PARTITION_CLEANUP_DAYS defaults to 30 */
    const char *q = uniq("ret-cleanup");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    const char *old = emptied_partition(&s, q, "old"), *recent = emptied_partition(&s, q, "recent");
    travel(old, 31 * DAY);
    travel(recent, 29 * DAY);
    reply r;
    run(&s, false, &r);
    CHECK(jint(&r, "partitionsRemoved") >= 1);
    reply_fini(&r);
    CHECK_INT(partition_exists(old), 0);
    CHECK_INT(partition_exists(recent), 1);
    CHECK_STR(sql("select count(*) from queen.log_consumers where partition_id = '%s'", old), "0");   /* cursors went with it */
    CHECK_STR(sql("select count(*) from queen.log_consumers where partition_id = '%s'", recent), "1");
    travel(recent, 2 * DAY);
    run_pass(&s);
    CHECK_INT(partition_exists(recent), 0);
    srv_stop(&s);
}

TEST(partition_emptied_by_retention_and_untouched_for_cleanup_days_is_removed)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-cleanuplong"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3024000}");   /* 35 days */
    push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=1&autoAck=true", g)), "0");
    travel(pid, 36 * DAY);   /* pushed and consumed 36 days ago, nothing since */
    reply r;
    run(&s, false, &r);
    CHECK_STR(report_of(&r, q), "Default retention 0-1 1 0 1");
    reply_fini(&r);
    /* now empty, and untouched (no push, no group activity) for 36 days */
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 0);
    srv_stop(&s);
}

TEST(cleanup_days_setting_sets_the_untouched_window)
{
    silt_server s;
    const char *env[] = { "PARTITION_CLEANUP_DAYS=2", NULL };
    srv_start(&s, env);
    const char *q = uniq("ret-cleanupdays");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    const char *three = emptied_partition(&s, q, "three"), *one = emptied_partition(&s, q, "one");
    travel(three, 3 * DAY);
    travel(one, 1 * DAY);
    run_pass(&s);
    CHECK_INT(partition_exists(three), 0);
    CHECK_INT(partition_exists(one), 1);
    srv_stop(&s);
}

TEST(partition_with_retained_segments_is_kept)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-keepsegs");
    push(&s, q, "Default", 2);   /* no retention: the segment stays */
    const char *pid = pid_of(q, "Default");
    travel(pid, 400 * DAY);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 1);
    CHECK_INT(segments(pid), 1);
    srv_stop(&s);
}

TEST(partition_with_dead_letters_is_kept)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-keepdlq"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push_txn(&s, q, "Default", "m0");
    const char *pid = pid_of(q, "Default");
    dead_letter_next(&s, q, g, "m0");
    age_segments(pid, 0, 1, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-1 1 0 1");
    CHECK_INT(segments(pid), 0);
    travel(pid, 400 * DAY);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 1);   /* no segments, but a dead letter */
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/messages/%s/m0", pid), NULL, &r);
    CHECK_INT(jint(&r, "deleted"), 1);
    reply_fini(&r);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 0);   /* without it, the partition goes */
    srv_stop(&s);
}

TEST(partition_with_in_flight_lease_is_kept)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-keeplease"), *g = uniq("g");
    configure_queue(&s, q, "{\"maxWaitTimeSeconds\":3600,\"leaseTime\":3600}");
    push(&s, q, "Default", 2);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=2", g)), "0,1");
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default max_wait_time_eviction 0-2 2 2 1");
    CHECK_INT(segments(pid), 0);
    travel(pid, 400 * DAY);   /* the lease is the only thing keeping it */
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 1);
    sql("update queen.log_consumers set lease_expires = now() - interval '1 second' where partition_id = '%s'", pid);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 0);
    srv_stop(&s);
}

TEST(recent_push_keeps_an_empty_partition)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-keeppush");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "Default", 2);   /* nobody consumes it: only the push touched it */
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-2 2 0 1");
    travel(pid, DAY);   /* pushed a day ago (and emptied since) */
    run_pass(&s);
    CHECK_INT(log_start(pid), 2);
    CHECK_INT(partition_exists(pid), 1);
    travel(pid, 30 * DAY);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 0);
    srv_stop(&s);
}

TEST(recent_consumer_activity_keeps_an_empty_partition)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-keepactive");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    const char *pid = emptied_partition(&s, q, "Default");
    travel(pid, 400 * DAY);
    sql("update queen.log_consumers set last_activity_at = now() - interval '1 day' where partition_id = '%s'", pid);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 1);
    sql("update queen.log_consumers set last_activity_at = now() - interval '31 days' where partition_id = '%s'", pid);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 0);
    srv_stop(&s);
}

TEST(cleanup_disabled_keeps_every_partition)
{
    silt_server s;
    const char *env[] = { "QUEEN_PARTITION_CLEANUP_ENABLED=false", NULL };
    srv_start(&s, env);
    const char *q = uniq("ret-nocleanup");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    const char *pid = emptied_partition(&s, q, "Default");   /* retention itself still works */
    travel(pid, 400 * DAY);
    reply r;
    run(&s, false, &r);
    CHECK_INT(jint(&r, "partitionsRemoved"), 0);
    reply_fini(&r);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 1);
    srv_stop(&s);
}

TEST(partition_removal_drops_cursors_and_total_consumed_not_position)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-dropcursor"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "Default", 3);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "0,1,2");
    CHECK_STR(sql("select total_consumed from queen.log_consumers where partition_id = '%s'", pid), "3");
    age_segments(pid, 0, 3, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-3 3 0 1");
    travel(pid, 31 * DAY);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 0);
    CHECK_STR(sql("select count(*) from queen.log_consumers where partition_id = '%s'", pid), "0");
    push(&s, q, "Default", 2);
    const char *again = pid_of(q, "Default");
    /* nothing of the old partition is re-read; the new one is read from its start */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10&autoAck=true", g)), "0,1");
    CHECK_STR(sql("select total_consumed from queen.log_consumers where partition_id = '%s' and consumer_group = '%s'",
                  again, g), "2");
    srv_stop(&s);
}

TEST(recreated_partition_gets_a_new_id_and_starts_at_offset_zero)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-recreate");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    const char *old = emptied_partition(&s, q, "Default");   /* it held offsets 0 and 1 */
    travel(old, 31 * DAY);
    run_pass(&s);
    CHECK_INT(partition_exists(old), 0);
    push(&s, q, "Default", 2);
    const char *fresh = pid_of(q, "Default");
    CHECK(*fresh && strcmp(fresh, old) != 0);
    reply r;
    queue_detail(&s, q, &r);
    CHECK_STR(jstr(&r, "partitionList.0.id"), fresh);
    CHECK_INT(jint(&r, "partitionList.0.logStart"), 0);
    CHECK_INT(jint(&r, "partitionList.0.lastOffset"), 1);
    reply_fini(&r);
    CHECK_STR(pop_offsets(&s, q, NULL, "batch=10"), "0,1");
    srv_stop(&s);
}

TEST(groups_seed_into_a_recreated_partition_from_their_subscription)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-reseed"), *all = uniq("gall"), *fresh = uniq("gnew");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "P", 2);
    const char *old = pid_of(q, "P");
    CHECK_STR(pop_offsets(&s, q, "P", sfmt("consumerGroup=%s&batch=2&autoAck=true", all)), "0,1");
    CHECK_STR(pop_offsets(&s, q, "P", sfmt("consumerGroup=%s&subscriptionMode=new&batch=2", fresh)), "none");
    age_segments(old, 0, 2, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "P retention 0-2 2 0 1");
    travel(old, 31 * DAY);
    run_pass(&s);
    CHECK_INT(partition_exists(old), 0);
    /* the subscriptions are per queue and survive */
    CHECK_STR(sql("select count(*) from queen.subscriptions where queue = '%s'", q), "2");
    push(&s, q, "P", 2);       /* recreates P */
    push(&s, q, "Brand", 2);   /* a brand-new partition, for comparison */
    CHECK_STR(pop_offsets(&s, q, "P", sfmt("consumerGroup=%s&batch=10&autoAck=true", all)), "0,1");
    CHECK_STR(pop_offsets(&s, q, "Brand", sfmt("consumerGroup=%s&batch=10&autoAck=true", all)), "0,1");
    CHECK_STR(pop_offsets(&s, q, "P", sfmt("consumerGroup=%s&batch=10&autoAck=true", fresh)), "0,1");
    CHECK_STR(pop_offsets(&s, q, "Brand", sfmt("consumerGroup=%s&batch=10&autoAck=true", fresh)), "0,1");
    srv_stop(&s);
}

TEST(queues_are_never_removed_by_retention)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-keepqueue");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600,\"leaseTime\":77}");
    const char *pid = emptied_partition(&s, q, "Default");
    travel(pid, 400 * DAY);
    sql("update queen.queues set created_at = created_at - interval '400 days' where name = '%s'", q);
    run_pass(&s);
    run_pass(&s);
    CHECK_INT(partition_exists(pid), 0);
    reply r;
    queue_detail(&s, q, &r);
    CHECK_INT(jint(&r, "partitions"), 0);
    CHECK_INT(jint(&r, "options.leaseTime"), 77);
    reply_fini(&r);
    /* removing it is an explicit administrative action */
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK(jbool(&r, "deleted"));
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(offsets_are_never_reused_while_the_partition_lives)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-noreuse");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "Default", 3);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 3, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-3 3 0 1");
    /* emptied, but recently used: the row stays with its counter */
    reply r;
    queue_detail(&s, q, &r);
    CHECK_STR(jstr(&r, "partitionList.0.id"), pid);
    CHECK_INT(jint(&r, "partitionList.0.lastOffset"), 2);
    CHECK_INT(jint(&r, "partitionList.0.logStart"), 3);
    CHECK_INT(jint(&r, "partitionList.0.messages"), 0);
    reply_fini(&r);
    push(&s, q, "Default", 2);
    CHECK_STR(pid_of(q, "Default"), pid);
    CHECK_STR(pop_offsets(&s, q, NULL, "batch=10"), "3,4");
    srv_stop(&s);
}

/* ---- retention is the replay window ---- */

/* Four one-message segments committed 4, 3, 2 and 1 hours ago. */
static const char *hourly_segments(silt_server *s, const char *q)
{
    for (int i = 0; i < 4; i++) push(s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    for (int hi = 4; hi >= 1; hi--) age_segments(pid, 0, hi, HOUR);
    refresh(q);
    return pid;
}

TEST(timestamp_older_than_oldest_retained_segment_resolves_to_it)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-replay");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":9000}");   /* 2.5 h */
    const char *pid = hourly_segments(&s, q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-2 2 0 2");
    CHECK_INT(log_start(pid), 2);
    /* seek: older than everything, and a time that pointed at removed offset 1 */
    const char *g1 = uniq("g"), *g2 = uniq("g");
    reply r;
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/%s/queues/%s/seek", g1, q), sfmt("{\"timestamp\":\"%s\"}", ts_ago(5 * HOUR)), &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "partitions.0.committedOffset"), 1);
    reply_fini(&r);
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/%s/queues/%s/seek", g2, q), sfmt("{\"timestamp\":\"%s\"}", ts_ago(3 * HOUR + 1800)), &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "partitions.0.committedOffset"), 1);
    reply_fini(&r);
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", g1)), "2,3");
    /* subscriptionFrom: the same, with no error */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10&subscriptionFrom=%s", uniq("g"), ts_ago(5 * HOUR))), "2,3");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10&subscriptionFrom=%s", uniq("g"), ts_ago(3 * HOUR + 1800))), "2,3");
    /* a timestamp inside the retained window still resolves exactly */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10&subscriptionFrom=%s", uniq("g"), ts_ago(HOUR + 1800))), "3");
    srv_stop(&s);
}

TEST(position_lookups_start_at_the_watermark)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-fromwm");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":5400}");   /* 1.5 h */
    const char *pid = hourly_segments(&s, q);
    /* the watermark is at 2 while rows 0 and 1 still exist: every lookup must ignore them */
    sql("update queen.log_partitions set log_start = 2 where id = '%s'", pid);
    reply r;
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/%s/queues/%s/seek", uniq("g"), q), sfmt("{\"timestamp\":\"%s\"}", ts_ago(5 * HOUR)), &r);
    CHECK_INT(jint(&r, "partitions.0.committedOffset"), 1);
    reply_fini(&r);
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10&subscriptionFrom=%s", uniq("g"), ts_ago(5 * HOUR))), "2,3");
    /* the boundary walk starts at the watermark too */
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "partitions.0.boundaries.retention"), 3);
    CHECK_INT(jint(&r, "partitions.0.nextPass.offsets"), 1);
    reply_fini(&r);
    /* offset 2 was leased by the subscriptionFrom pop: the step says so */
    CHECK_STR(run_report(&s, false, q), "Default retention 2-3 1 1 1");
    CHECK_INT(log_start(pid), 3);
    srv_stop(&s);
}

TEST(dlq_handoff_after_segment_removed_is_rejected_and_cursor_stays)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-dlqgone"), *g = uniq("g");
    configure_queue(&s, q, "{\"maxWaitTimeSeconds\":3600,\"leaseTime\":3600}");
    push_txn(&s, q, "Default", "m0");
    push_txn(&s, q, "Default", "m1");
    push_txn(&s, q, "Default", "m2");
    const char *pid = pid_of(q, "Default");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=%s&batch=2", q, g), NULL, &r);
    CHECK_INT(r.status, 200);
    const char *lease = strdup(jstr(&r, "leaseId"));
    reply_fini(&r);
    age_segments(pid, 0, 1, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default max_wait_time_eviction 0-1 1 1 1");
    ack(&s, "m0", pid, "dlq", g, lease, &r);
    CHECK(!jbool(&r, "0.success"));
    CHECK_STR(jstr(&r, "0.error"), "dlq rejected");
    CHECK(!jbool(&r, "0.dlq"));
    reply_fini(&r);
    CHECK_INT(committed(pid, g), -1);
    CHECK_INT(dlq_rows(q), 0);
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=10", g)), "1,2");   /* lease released */
    srv_stop(&s);
}

/* ---- the ack window ---- */

TEST(sidecar_expires_after_max_of_dedup_completed_and_900_seconds)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *floor900 = uniq("ret-ack900"), *dedup = uniq("ret-ackdedup"), *completed = uniq("ret-ackcompleted");
    configure_queue(&s, floor900, "{\"dedupWindowSeconds\":0}");                        /* window 900 */
    /* dedup: defaults, window 3600 */
    configure_queue(&s, completed, "{\"dedupWindowSeconds\":60,\"retentionEnabled\":true,\"completedRetentionSeconds\":7200}");
    const char *qs[3] = { floor900, dedup, completed };
    const long window[3] = { 900, 3600, 7200 };
    const char *pids[3];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 3; i++) push(&s, qs[k], "Default", 1);
        pids[k] = pid_of(qs[k], "Default");
        age_txns(pids[k], 0, 2, window[k] - 60);   /* offset 1: just inside the window */
        age_txns(pids[k], 0, 1, 120);              /* offset 0: just outside */
        refresh(qs[k]);
    }
    run_pass(&s);
    for (int k = 0; k < 3; k++) {
        CHECK_INT(txns_start(pids[k]), 1);
        CHECK_INT(txns_rows(pids[k]), 2);
        CHECK_INT(log_start(pids[k]), 0);
        reply r;
        explain(&s, qs[k], &r);
        CHECK_INT(jint(&r, "ackWindowSeconds"), window[k]);
        CHECK_INT(jint(&r, "partitions.0.sidecarWatermark"), 1);
        reply_fini(&r);
    }
    srv_stop(&s);
}

TEST(sidecar_is_purged_independently_of_segments)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *hashes = uniq("ret-sidecaronly"), *segs = uniq("ret-segsonly");
    configure_queue(&s, hashes, "{\"dedupWindowSeconds\":0}");   /* no retention rule at all */
    configure_queue(&s, segs, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) { push(&s, hashes, "Default", 1); push(&s, segs, "Default", 1); }
    const char *hp = pid_of(hashes, "Default"), *sp = pid_of(segs, "Default");
    age_txns(hp, 0, 2, 1000);
    age_segments(sp, 0, 2, 2 * HOUR);
    refresh(hashes);
    refresh(segs);
    long long before = srv_metric(&s, "silt_retention_sidecar_rows_purged_total");
    run_pass(&s);
    CHECK(srv_metric(&s, "silt_retention_sidecar_rows_purged_total") >= before + 2);
    reply r;
    queue_detail(&s, hashes, &r);   /* the sidecar moved, the log did not */
    CHECK_INT(jint(&r, "partitionList.0.txnsStart"), 2);
    CHECK_INT(jint(&r, "partitionList.0.logStart"), 0);
    CHECK_INT(jint(&r, "partitionList.0.segments"), 3);
    reply_fini(&r);
    CHECK_STR(pop_offsets(&s, hashes, NULL, "batch=10"), "0,1,2");
    queue_detail(&s, segs, &r);     /* the log moved, the sidecar did not */
    CHECK_INT(jint(&r, "partitionList.0.txnsStart"), 0);
    CHECK_INT(jint(&r, "partitionList.0.logStart"), 2);
    reply_fini(&r);
    CHECK_INT(txns_rows(sp), 3);
    srv_stop(&s);
}

TEST(hash_row_outliving_its_message_is_harmless)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-hashoutlives"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push_txn(&s, q, "Default", "m0");
    push_txn(&s, q, "Default", "m1");
    push_txn(&s, q, "Default", "m2");
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-2 2 0 2");
    CHECK_INT(txns_rows(pid), 3);   /* the hashes of m0 and m1 outlive their messages */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=%s&batch=10", q, g), NULL, &r);
    CHECK_INT(r.doc.tokens[jpath(&r, "messages")].count, 1);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "m2");
    reply_fini(&r);
    ack(&s, "m2", pid, "completed", g, NULL, &r);
    CHECK(jbool(&r, "0.success"));
    reply_fini(&r);
    CHECK_INT(committed(pid, g), 2);
    ack(&s, "m0", pid, "completed", g, NULL, &r);   /* a stale ack for a removed message changes nothing */
    CHECK(jbool(&r, "0.noop"));
    reply_fini(&r);
    CHECK_INT(committed(pid, g), 2);
    srv_stop(&s);
}

TEST(late_ack_for_purged_hash_is_unresolvable_and_message_redelivers)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-lateack"), *g = uniq("g");
    configure_queue(&s, q, "{\"dedupWindowSeconds\":0}");   /* ack window 900 s */
    push_txn(&s, q, "Default", "m0");
    push_txn(&s, q, "Default", "m1");
    const char *pid = pid_of(q, "Default");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=%s&batch=1", q, g), NULL, &r);
    CHECK_INT(r.status, 200);
    const char *lease = strdup(jstr(&r, "leaseId"));
    reply_fini(&r);
    age_txns(pid, 0, 1, 1000);
    refresh(q);
    run_pass(&s);
    CHECK_INT(txns_start(pid), 1);
    CHECK_INT(segments(pid), 2);   /* the message is still stored */
    ack(&s, "m0", pid, "completed", g, lease, &r);
    CHECK(!jbool(&r, "0.success"));
    CHECK_STR(jstr(&r, "0.error"), "unresolvable: transaction id not found in the partition");
    reply_fini(&r);
    CHECK_INT(committed(pid, g), -1);
    sql("update queen.log_consumers set lease_expires = now() - interval '1 second' where partition_id = '%s'", pid);
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=%s&batch=1", q, g), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "messages.0.offset"), 0);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "m0");
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- what you can see afterwards ---- */

TEST(each_deleting_step_records_its_rule_and_offsets_dropped)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *qr = uniq("ret-histr"), *qc = uniq("ret-histc"), *qm = uniq("ret-histm"), *g = uniq("g");
    configure_queue(&s, qr, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    configure_queue(&s, qc, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    configure_queue(&s, qm, "{\"maxWaitTimeSeconds\":3600}");
    const char *qs[3] = { qr, qc, qm };
    for (int k = 0; k < 3; k++) {
        push(&s, qs[k], "Default", 2);
        push(&s, qs[k], "Default", 1);
        push(&s, qs[k], "Default", 1);
        const char *pid = pid_of(qs[k], "Default");
        age_segments(pid, 0, 4, 2 * HOUR);
        refresh(qs[k]);
    }
    CHECK_STR(pop_offsets(&s, qc, NULL, sfmt("consumerGroup=%s&batch=3&autoAck=true", g)), "0,1,2");
    reply r;
    run(&s, false, &r);
    CHECK_STR(report_of(&r, qr), "Default retention 0-4 4 0 3");
    CHECK_STR(report_of(&r, qc), "Default completed_retention 0-3 3 0 2");
    CHECK_STR(report_of(&r, qm), "Default max_wait_time_eviction 0-4 4 0 3");
    CHECK(jint(&r, "steps") >= 3);
    reply_fini(&r);
    CHECK_STR(history(qr), "Default retention 0-4 4 0");
    CHECK_STR(history(qc), "Default completed_retention 0-3 3 0");
    CHECK_STR(history(qm), "Default max_wait_time_eviction 0-4 4 0");
    /* a step that deletes nothing records nothing */
    run_pass(&s);
    CHECK_STR(sql("select count(*) from queen.retention_history where queue in ('%s', '%s', '%s')", qr, qc, qm), "3");
    /* the analytics view reads these rows */
    const char *keys[3] = { "retentionMsgs", "completedRetentionMsgs", "evictionMsgs" };
    const long long dropped[3] = { 4, 3, 4 };
    for (int k = 0; k < 3; k++) {
        rq(&s, "GET", sfmt("/api/v1/analytics/retention?queue=%s", qs[k]), NULL, &r);
        CHECK_INT(r.status, 200);
        for (int j = 0; j < 3; j++) CHECK_INT(jint(&r, sfmt("totals.%s", keys[j])), j == k ? dropped[k] : 0);
        CHECK_INT(jint(&r, "totals.totalMsgs"), dropped[k]);
        CHECK_INT(jint(&r, "totals.eventCount"), 1);
        CHECK_INT(jint(&r, sfmt("series.0.%s", keys[k])), dropped[k]);
        reply_fini(&r);
    }
    rq(&s, "GET", sfmt("/api/v1/analytics/retention?queue=%s&from=%s&to=%s", qr, ts_ago(3 * HOUR), ts_ago(2 * HOUR)), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "totals.totalMsgs"), 0);
    reply_fini(&r);
    CHECK(srv_metric(&s, "silt_retention_offsets_deleted_total{rule=\"retention\"}") >= 4);
    CHECK(srv_metric(&s, "silt_retention_offsets_deleted_total{rule=\"completed_retention\"}") >= 3);
    CHECK(srv_metric(&s, "silt_retention_offsets_deleted_total{rule=\"max_wait_time_eviction\"}") >= 4);
    CHECK(srv_metric(&s, "silt_retention_passes_total") >= 2);
    srv_stop(&s);
}

TEST(queue_with_retention_and_nothing_to_delete_shows_nothing_not_an_error)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-nothing");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600,\"completedRetentionSeconds\":3600}");
    push(&s, q, "Default", 2);
    CHECK_STR(run_report(&s, false, q), "");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/analytics/retention?queue=%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "totals.totalMsgs"), 0);
    CHECK_INT(jint(&r, "totals.eventCount"), 0);
    CHECK_STR(jraw(&r, "series"), "[]");
    reply_fini(&r);
    explain(&s, q, &r);
    CHECK_STR(jraw(&r, "partitions.0.nextPass"), "null");
    CHECK_INT(jint(&r, "partitions.0.watermark"), 0);
    reply_fini(&r);
    CHECK_STR(history(q), "");
    srv_stop(&s);
}

/* ---- the engine and its endpoints ---- */

TEST(dry_run_reports_without_deleting)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-dry");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, true, q), "Default retention 0-2 2 0 2");
    CHECK_STR(run_report(&s, true, q), "Default retention 0-2 2 0 2");
    CHECK_INT(segments(pid), 3);
    CHECK_INT(log_start(pid), 0);
    CHECK_STR(history(q), "");
    CHECK_STR(run_report(&s, false, q), "Default retention 0-2 2 0 2");
    CHECK_INT(log_start(pid), 2);
    CHECK_STR(run_report(&s, true, q), "");
    srv_stop(&s);
}

TEST(explain_names_the_pinning_group_and_next_pass)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-explain"), *fast = uniq("gfast"), *slow = uniq("gslow");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    push(&s, q, "Default", 1);   /* [0] */
    push(&s, q, "Default", 2);   /* [1-2] */
    push(&s, q, "Default", 3);   /* [3-5] */
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=6&autoAck=true", fast)), "0,1,2,3,4,5");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=2&autoAck=true", slow)), "0,1");
    age_segments(pid, 0, 6, 2 * HOUR);
    refresh(q);
    reply r;
    explain(&s, q, &r);
    CHECK_STR(jstr(&r, "queue"), q);
    CHECK_INT(jint(&r, "options.completedRetentionSeconds"), 3600);
    CHECK_STR(jstr(&r, "partitions.0.partition"), "Default");
    CHECK_STR(jstr(&r, "partitions.0.partitionId"), pid);
    CHECK_INT(jint(&r, "partitions.0.watermark"), 0);
    CHECK_INT(jint(&r, "partitions.0.lastOffset"), 5);
    CHECK_INT(jint(&r, "partitions.0.retainedOffsets"), 6);
    CHECK_STR(jraw(&r, "partitions.0.boundaries.retention"), "null");
    CHECK_INT(jint(&r, "partitions.0.boundaries.completedRetention"), 1);
    CHECK_INT(jint(&r, "partitions.0.consumptionCap.offset"), 2);
    CHECK_STR(jstr(&r, "partitions.0.consumptionCap.pinnedBy"), slow);
    CHECK_INT(jint(&r, "partitions.0.consumptionCap.behind"), 4);
    CHECK_INT(jint(&r, "partitions.0.straddlingSegment.baseOffset"), 1);
    CHECK_INT(jint(&r, "partitions.0.straddlingSegment.endOffset"), 2);
    CHECK_STR(jstr(&r, "partitions.0.nextPass.rule"), "completed_retention");
    CHECK_INT(jint(&r, "partitions.0.nextPass.boundary"), 1);
    CHECK_INT(jint(&r, "partitions.0.nextPass.segments"), 1);
    CHECK_INT(jint(&r, "partitions.0.nextPass.offsets"), 1);
    CHECK_INT(jint(&r, "partitions.0.nextPass.leasedOffsets"), 0);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "the next pass deletes offset 0 under completed_retention"));
    CHECK(strstr(jraw(&r, "partitions.0.notes"),
                 sfmt("consumer group %s has consumed up to offset 1: segment 1-2 holds its next offset", slow)));
    reply_fini(&r);
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-1 1 0 1");
    explain(&s, q, &r);   /* why did it go, and why is the rest still here */
    CHECK_INT(jint(&r, "partitions.0.watermark"), 1);
    CHECK_STR(jraw(&r, "partitions.0.nextPass"), "null");
    CHECK_STR(jstr(&r, "partitions.0.consumptionCap.pinnedBy"), slow);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/retention/explain?queue=%s&partition=nope", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "partitions"), "[]");
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/retention/explain?queue=%s", uniq("ret-absent")), NULL, &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/retention/explain", NULL, &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_step_deletes_at_most_the_batch_size)
{
    silt_server s;
    const char *env[] = { "RETENTION_BATCH_SIZE=2", NULL };
    srv_start(&s, env);
    const char *q = uniq("ret-batch");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 5; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 5, 2 * HOUR);
    refresh(q);
    /* a dry run walks the same steps as the pass, deleting nothing */
    CHECK_STR(run_report(&s, true, q),
              "Default retention 0-2 2 0 2; Default retention 2-4 2 0 2; Default retention 4-5 1 0 1");
    CHECK_INT(log_start(pid), 0);
    CHECK_STR(run_report(&s, false, q),
              "Default retention 0-2 2 0 2; Default retention 2-4 2 0 2; Default retention 4-5 1 0 1");
    CHECK_STR(history(q), "Default retention 0-2 2 0; Default retention 2-4 2 0; Default retention 4-5 1 0");
    CHECK_INT(log_start(pid), 5);
    srv_stop(&s);
}

TEST(a_pass_stops_after_max_steps)
{
    silt_server s;
    const char *env[] = { "RETENTION_BATCH_SIZE=1", "RETENTION_MAX_STEPS=2", "RETENTION_CONCURRENCY=1", NULL };
    srv_start(&s, env);
    /* due an hour ago: older than anything other tests leave due, so it comes first */
    const char *q = uniq("ret-maxsteps");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 5; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 5, 2 * HOUR);
    refresh(q);
    reply r;
    run(&s, false, &r);
    CHECK_INT(jint(&r, "steps"), 2);
    CHECK_STR(report_of(&r, q), "Default retention 0-1 1 0 1; Default retention 1-2 1 0 1");
    reply_fini(&r);
    /* the next passes go on where it stopped */
    CHECK(run_until(&s, sfmt("select log_start from queen.log_partitions where id = '%s'", pid), "5"));
    CHECK_STR(history(q), "Default retention 0-1 1 0; Default retention 1-2 1 0; Default retention 2-3 1 0; "
                          "Default retention 3-4 1 0; Default retention 4-5 1 0");
    srv_stop(&s);
}

TEST(retention_runs_in_the_background_every_interval)
{
    silt_server s;
    const char *env[] = { "RETENTION_INTERVAL_MS=200", NULL };
    srv_start(&s, env);
    const char *q = uniq("ret-background");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    /* wait for a timed pass (not for a retention window): at most 15 s */
    for (int i = 0; i < 300 && log_start(pid) != 2; i++) {
        struct timespec ts = { 0, 50 * 1000000 };
        nanosleep(&ts, NULL);
    }
    CHECK_INT(log_start(pid), 2);
    CHECK_STR(history(q), "Default retention 0-2 2 0");
    srv_stop(&s);
}

TEST(retention_run_while_a_pass_is_running_is_409_and_one_runner_serves_all_replicas)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);   /* a second replica on the same database */
    const char *q = uniq("ret-runner");
    configure_queue(&a, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&a, q, "P1", 1);
    const char *p1 = pid_of(q, "P1");
    age_segments(p1, 0, 1, 2 * HOUR);
    refresh(q);
    /* hold P1's row so A's pass blocks inside its step */
    char conninfo[128];
    snprintf(conninfo, sizeof conninfo, "host=127.0.0.1 port=%s user=postgres dbname=%s",
             getenv("SILT_TEST_PGPORT") ? getenv("SILT_TEST_PGPORT") : "5432", test_db());
    PGconn *holder = PQconnectdb(conninfo);
    CHECK(PQstatus(holder) == CONNECTION_OK);
    PQclear(PQexec(holder, "BEGIN"));
    PGresult *res = PQexec(holder, sfmt("SELECT 1 FROM queen.log_partitions WHERE id = '%s' FOR UPDATE", p1));
    CHECK(PQresultStatus(res) == PGRES_TUPLES_OK);
    PQclear(res);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        http_client *c = http_client_new(a.url);
        http_client_set_timeout(c, 30000);
        http_response resp;
        http_response_init(&resp);
        int rc = http_request(c, "POST", "/api/v1/system/retention/run", NULL, 0, &resp);
        _exit(rc == 0 && resp.status == 200 && strstr(resp.body.data, q) ? 0 : 1);
    }
    wait_until("select count(*) from pg_stat_activity where datname = current_database() "
               "and wait_event_type = 'Lock' and query like '%retention_step%'", "1");
    reply r;
    rq(&a, "POST", "/api/v1/system/retention/run", NULL, &r);
    CHECK_INT(r.status, 409);
    reply_fini(&r);
    /* B's pass finds A's running: it deletes nothing, anywhere */
    run(&b, false, &r);
    CHECK(jbool(&r, "busy"));
    CHECK(jint(&r, "steps") <= 1);
    CHECK(jpath(&r, "deleted.0") < 0);
    CHECK_INT(jint(&r, "partitionsRemoved"), 0);
    reply_fini(&r);
    PQclear(PQexec(holder, "COMMIT"));
    PQfinish(holder);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_STR(history(q), "P1 retention 0-1 1 0");   /* deleted once */
    /* once A's pass has ended, B runs passes */
    wait_until("select (lease_until = '-infinity')::text from queen.retention_runner", "true");
    push(&b, q, "P2", 1);
    const char *p2 = pid_of(q, "P2");
    age_segments(p2, 0, 1, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&b, false, q), "P2 retention 0-1 1 0 1");
    srv_stop(&b);
    srv_stop(&a);
}

/* ---- finding work stays cheap ---- */

TEST(finding_work_skips_thousands_of_partitions_with_nothing_to_delete)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-manyparts");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "due", 2);
    sql("insert into queen.log_partitions (queue, name) select '%s', 'idle-' || i from generate_series(1, 2000) i", q);
    const char *pid = pid_of(q, "due");
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    char got_cands[32], got_report[256], got_parts[32];
    snprintf(got_cands, sizeof got_cands, "%s",
             sql("select count(*) from queen.retention_candidates(now(), 100000) where queue = '%s'", q));
    snprintf(got_report, sizeof got_report, "%s", run_report(&s, false, q));
    long long start_due = log_start(pid);
    snprintf(got_parts, sizeof got_parts, "%s", sql("select count(*) from queen.log_partitions where queue = '%s'", q));
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);   /* leave nothing behind */
    reply_fini(&r);
    srv_stop(&s);
    CHECK_STR(got_cands, "1");
    CHECK_STR(got_report, "due retention 0-2 2 0 1");
    CHECK_INT(start_due, 2);
    CHECK_STR(got_parts, "2001");
}

TEST(due_partition_is_found_behind_a_thousand_partitions_pinned_by_completed_retention)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-pinned"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    /* 1000 partitions no group ever popped, 3 h old: nothing there is deletable */
    sql("insert into queen.log_partitions (queue, name, last_offset, last_write_at) "
        "select '%s', 'never-' || i, 0, now() - interval '3 hours' from generate_series(1, 1000) i", q);
    sql("insert into queen.log_segments (partition_id, base_offset, end_offset, created_at, blob) "
        "select id, 0, 0, now() - interval '3 hours', '\\x00'::bytea from queen.log_partitions "
        "where queue = '%s' and name like 'never-%%'", q);
    sql("insert into queen.log_txns (partition_id, base_offset, created_at, hashes, message_ids) "
        "select id, 0, now() - interval '3 hours', decode(md5(id::text), 'hex'), decode(md5(name), 'hex') "
        "from queen.log_partitions where queue = '%s' and name like 'never-%%'", q);
    /* one partition a group consumed, 2 h old: due */
    push(&s, q, "consumed", 2);
    const char *pid = pid_of(q, "consumed");
    CHECK_STR(pop_offsets(&s, q, "consumed", sfmt("consumerGroup=%s&batch=2&autoAck=true", g)), "0,1");
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    /* the pinned partitions may take one pass; the due one must not wait behind them for ever */
    char got[1024] = "";
    size_t len = 0;
    for (int i = 0; i < 3; i++) {
        const char *rep = run_report(&s, false, q);
        if (*rep) len += (size_t)snprintf(got + len, sizeof got - len, "%s%s", len ? "; " : "", rep);
    }
    long long wm = log_start(pid);
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);   /* leave nothing behind */
    reply_fini(&r);
    srv_stop(&s);
    CHECK_STR(got, "consumed completed_retention 0-2 2 0 1");
    CHECK_INT(wm, 2);
}

TEST(partitions_with_nothing_to_delete_do_not_stop_later_passes_reaching_due_ones)
{
    silt_server s;
    const char *env[] = { "RETENTION_MAX_STEPS=3", NULL };
    srv_start(&s, env);
    /* the pinned partitions fall due (2 h ago) before the due one (1 h ago) */
    const char *pinned = uniq("ret-pinnedfirst"), *due = uniq("ret-duelater");
    configure_queue(&s, pinned, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    configure_queue(&s, due, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) {   /* three partitions no group ever popped: never deletable */
        const char *part = sfmt("p%d", i);
        push(&s, pinned, part, 1);
        age_segments(pid_of(pinned, part), 0, 1, 3 * HOUR);
    }
    push(&s, due, "Default", 1);
    const char *pid = pid_of(due, "Default");
    age_segments(pid, 0, 1, 2 * HOUR);
    refresh(pinned);
    refresh(due);
    /* each pass stops after 3 steps; the next passes must go on to the due one */
    run_until(&s, sfmt("select log_start from queen.log_partitions where id = '%s'", pid), "1");
    long long wm = log_start(pid);
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", pinned), NULL, &r);   /* leave nothing behind */
    reply_fini(&r);
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", due), NULL, &r);
    reply_fini(&r);
    srv_stop(&s);
    CHECK_INT(wm, 1);
}

TEST(a_push_schedules_its_partition_and_configuring_rules_reschedules_it)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *ruled = uniq("ret-schedpush"), *later = uniq("ret-schedconf");
    configure_queue(&s, ruled, "{\"retentionEnabled\":true,\"retentionSeconds\":3600,\"dedupWindowSeconds\":0}");
    for (int i = 0; i < 2; i++) { push(&s, ruled, "Default", 1); push(&s, later, "Default", 1); }
    const char *rp = pid_of(ruled, "Default"), *lp = pid_of(later, "Default");
    travel(rp, 2 * HOUR);
    travel(lp, 2 * HOUR);
    reply r;
    run(&s, false, &r);
    CHECK_STR(report_of(&r, ruled), "Default retention 0-2 2 0 2");   /* scheduled by its pushes */
    CHECK_STR(report_of(&r, later), "");                              /* no rule yet */
    reply_fini(&r);
    CHECK_INT(txns_start(rp), 2);   /* the sidecar was scheduled too (ack window 900 s) */
    configure_queue(&s, later, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    CHECK_STR(run_report(&s, false, later), "Default retention 0-2 2 0 2");
    CHECK_INT(log_start(lp), 2);
    srv_stop(&s);
}

/* ---- options ---- */

TEST(retention_is_configured_with_the_documented_queue_options)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-orders.created");
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"options\":{\"retentionEnabled\":true,"
        "\"retentionSeconds\":604800,\"completedRetentionSeconds\":3600,\"maxWaitTimeSeconds\":0,"
        "\"dedupWindowSeconds\":3600,\"leaseTime\":300,\"retryLimit\":3}}", q), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "options.retentionEnabled"), "true");
    CHECK_INT(jint(&r, "options.retentionSeconds"), 604800);
    CHECK_INT(jint(&r, "options.completedRetentionSeconds"), 3600);
    reply_fini(&r);
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "options.retentionSeconds"), 604800);
    CHECK_INT(jint(&r, "options.maxWaitTimeSeconds"), 0);
    CHECK_INT(jint(&r, "ackWindowSeconds"), 3600);
    reply_fini(&r);
    srv_stop(&s);
}

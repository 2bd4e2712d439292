/* Integration: retention passes that never race and always tell the truth.
 * A pass owns its claim and gives it back before it replies; its step
 * limit is a limit; no setting makes passes spin; pinned partitions never
 * starve the sidecar purge or partition cleanup; the same data is
 * attributed to the same rule whatever the batch size; leased offsets are
 * counted as offsets; explain, a dry run and the pass agree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "retention_support.h"

/* ---- the claim belongs to the pass ---- */

TEST(back_to_back_passes_never_revoke_each_other)
{
    silt_server s;
    const char *env[] = { "RETENTION_BATCH_SIZE=1", "RETENTION_MAX_STEPS=1", "RETENTION_CONCURRENCY=1", NULL };
    srv_start(&s, env);
    const char *q = uniq("ret-b2b");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int i = 0; i < 30; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    age_segments(pid, 0, 30, 2 * HOUR);
    refresh(q);
    /* each pass deletes exactly its one step: none finds its claim taken */
    for (int i = 0; i < 30; i++) {
        reply r;
        run(&s, false, &r);
        CHECK(!jbool(&r, "busy"));
        CHECK_STR(report_of(&r, q), sfmt("Default retention %d-%d 1 0 1", i, i + 1));
        reply_fini(&r);
        /* released before the reply */
        CHECK_STR(sql("select lease_until = '-infinity' from queen.retention_runner"), "t");
    }
    for (int i = 0; i < 50; i++) {
        reply r;
        run(&s, false, &r);
        CHECK(!jbool(&r, "busy"));
        reply_fini(&r);
    }
    CHECK_INT(log_start(pid), 30);
    srv_stop(&s);
}

TEST(a_late_release_cannot_revoke_another_pass)
{
    silt_server s;
    srv_start(&s, NULL);
    CHECK_STR(sql("select queen.retention_claim('pass-a', 60)"), "t");
    CHECK_STR(sql("select queen.retention_claim('pass-b', 60)"), "f");   /* held */
    sql("select queen.retention_release('pass-b')");                    /* not its claim */
    CHECK_STR(sql("select queen.retention_owns('pass-a')"), "t");
    sql("select queen.retention_release('pass-a')");
    CHECK_STR(sql("select queen.retention_owns('pass-a')"), "f");
    CHECK_STR(sql("select queen.retention_claim('pass-b', 60)"), "t");
    sql("select queen.retention_release('pass-b')");
    /* a server's next pass may take over its own earlier pass's claim (its
     * release was lost), and that pass's late release changes nothing */
    CHECK_STR(sql("select queen.retention_claim('srv1:1', 60)"), "t");
    CHECK_STR(sql("select queen.retention_claim('srv2:1', 60)"), "f");
    CHECK_STR(sql("select queen.retention_claim('srv1:2', 60)"), "t");
    sql("select queen.retention_release('srv1:1')");
    CHECK_STR(sql("select queen.retention_owns('srv1:2')"), "t");
    srv_stop(&s);
}

/* ---- the step limit ---- */

TEST(a_pass_never_runs_more_steps_than_its_limit)
{
    silt_server s;
    const char *env[] = { "RETENTION_BATCH_SIZE=1", "RETENTION_MAX_STEPS=3", "RETENTION_CONCURRENCY=4", NULL };
    srv_start(&s, env);
    const char *q = uniq("ret-limit");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    for (int p = 0; p < 6; p++) {
        const char *part = sfmt("P%d", p);
        for (int i = 0; i < 3; i++) push(&s, q, part, 1);
        age_segments(pid_of(q, part), 0, 3, 2 * HOUR);
    }
    refresh(q);
    reply r;
    run(&s, false, &r);
    CHECK_INT(jint(&r, "steps"), 3);
    CHECK_INT(jint(&r, "deletingSteps"), 3);
    CHECK(jbool(&r, "limited"));
    reply_fini(&r);
    CHECK_STR(sql("select sum(offsets_dropped) from queen.retention_history where queue = '%s'", q), "3");
    srv_stop(&s);
}

TEST(no_setting_makes_passes_spin)
{
    silt_server s;
    const char *env[] = { "RETENTION_INTERVAL_MS=100", "RETENTION_MAX_STEPS=1", "RETENTION_BATCH_SIZE=1", NULL };
    srv_start(&s, env);
    /* two partitions due but held back (never popped, completedRetentionSeconds
     * only): every pass is limited, none deletes anything */
    const char *q = uniq("ret-spin");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    push(&s, q, "A", 1);
    push(&s, q, "B", 1);
    age_segments(pid_of(q, "A"), 0, 1, 2 * HOUR);
    age_segments(pid_of(q, "B"), 0, 1, 2 * HOUR);
    refresh(q);
    long long first = srv_metric(&s, "silt_retention_passes_total"), passes = 0;
    int64_t t0 = now_ms(), deadline = t0 + 20000;
    while ((passes = srv_metric(&s, "silt_retention_passes_total") - first) < 8 && now_ms() < deadline) pause_ms(20);
    int64_t elapsed = now_ms() - t0;
    passes = srv_metric(&s, "silt_retention_passes_total") - first;
    /* one pass per interval, plus the one in flight: a spinning engine makes
     * hundreds a second */
    if (passes > elapsed / 100 + 2)
        harness_failf(__FILE__, __LINE__, "%lld passes in %lld ms at a 100 ms interval", passes, (long long)elapsed);
    CHECK_INT(segments(pid_of(q, "A")), 1);
    srv_stop(&s);
}

TEST(sidecar_purge_and_cleanup_progress_whatever_is_pinned)
{
    silt_server s;
    const char *env[] = { "RETENTION_MAX_STEPS=2", "RETENTION_BATCH_SIZE=1", "RETENTION_CONCURRENCY=1", NULL };
    srv_start(&s, env);
    /* a partition empty and idle for 31 days, and a 31-day-old hash row */
    const char *hashes = uniq("ret-oldhash"), *empty = uniq("ret-oldempty");
    configure_queue(&s, empty, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    const char *ep = emptied_partition(&s, empty, "Default");
    travel(ep, 31 * DAY);
    push_txn(&s, hashes, "Default", "h0");
    const char *hp = pid_of(hashes, "Default");
    age_txns(hp, 0, 1, 31 * DAY);
    refresh(hashes);
    /* four partitions due and held back, older than anything else due */
    const char *pinned = uniq("ret-pinned");
    configure_queue(&s, pinned, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int p = 0; p < 4; p++) {
        push(&s, pinned, sfmt("P%d", p), 1);
        age_segments(pid_of(pinned, sfmt("P%d", p)), 0, 1, 40 * DAY);
    }
    refresh(pinned);
    for (int pass = 0; pass < 2; pass++) {
        a_pass_later(pinned);   /* the pinned partitions are due again at every pass */
        reply r;
        run(&s, false, &r);
        CHECK(jint(&r, "steps") <= 2);
        reply_fini(&r);
    }
    CHECK_INT(txns_rows(hp), 0);
    CHECK_INT(partition_exists(ep), 0);
    CHECK_INT(segments(pid_of(pinned, "P0")), 1);
    srv_stop(&s);
}

/* ---- attribution ---- */

/* Six one-message segments; ages (hours) per segment; a group consumes the
 * first `consumed`; returns the history of one pass at the given batch size
 * as "rule from-to" ranges merged per rule. */
static const char *attribute(int batch, const char *options, const double hours[6], int consumed)
{
    silt_server s;
    const char *env[] = { sfmt("RETENTION_BATCH_SIZE=%d", batch), NULL };
    srv_start(&s, env);
    const char *q = uniq("ret-attr"), *g = uniq("g");
    configure_queue(&s, q, options);
    for (int i = 0; i < 6; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    if (consumed) pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=%d&autoAck=true", g, consumed));
    for (int i = 0; i < 6; i++)
        sql("update queen.log_segments set created_at = now() - make_interval(secs => %ld) "
            "where partition_id = '%s' and base_offset = %d", (long)(hours[i] * HOUR), pid, i);
    refresh(q);
    run_pass(&s);
    const char *out = sql("select string_agg(rule || ' ' || f || '-' || t, '; ' order by f) from ("
                          "select rule, min(from_offset) f, max(to_offset) t, sum(leased_dropped) l "
                          "from queen.retention_history where queue = '%s' group by rule) x", q);
    char *copy = strdup(out);
    srv_stop(&s);
    return copy;
}

TEST(a_rule_is_attributed_the_same_whatever_the_batch_size)
{
    /* completed retention reaches 6, retention only 2 */
    const double a[6] = { 3, 3, 1.5, 1.5, 1.5, 1.5 };
    const char *both = "{\"retentionEnabled\":true,\"retentionSeconds\":7200,\"completedRetentionSeconds\":3600}";
    /* retention reaches 6, the consumption cap only 2 */
    const double b[6] = { 3, 3, 3, 3, 3, 3 };
    /* max wait reaches 5, retention 3 */
    const double c[6] = { 4, 4, 4, 2, 2, 0.1 };
    const char *evict = "{\"retentionEnabled\":true,\"retentionSeconds\":10800,\"maxWaitTimeSeconds\":3600}";
    for (int batch = 1; batch <= 7; batch += 2) {
        CHECK_STR(attribute(batch, both, a, 6), "completed_retention 0-6");
        CHECK_STR(attribute(batch, both, b, 2), "retention 0-6");
        CHECK_STR(attribute(batch, evict, c, 0), "max_wait_time_eviction 0-5");
    }
}

/* ---- leased offsets ---- */

TEST(leased_offsets_are_counted_once_however_many_groups_lease_them)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-leasedonce");
    configure_queue(&s, q, "{\"maxWaitTimeSeconds\":3600}");
    push(&s, q, "Default", 3);
    push(&s, q, "Default", 2);
    const char *pid = pid_of(q, "Default");
    /* two groups lease offsets 0-2, a third 0-3 */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3", uniq("g"))), "0,1,2");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=3", uniq("g"))), "0,1,2");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=4", uniq("g"))), "0,1,2,3");
    age_segments(pid, 0, 5, 2 * HOUR);
    refresh(q);
    long long before = srv_metric(&s, "silt_retention_leased_offsets_evicted_total");
    CHECK_STR(run_report(&s, false, q), "Default max_wait_time_eviction 0-5 5 4 2");
    CHECK_INT(srv_metric(&s, "silt_retention_leased_offsets_evicted_total"), before + 4);
    CHECK_STR(history(q), "Default max_wait_time_eviction 0-5 5 4");
    srv_stop(&s);
}

TEST(a_retention_step_counts_the_leased_offsets_it_removes)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-leasedage");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "Default", 3);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=2", uniq("g"))), "0,1");
    age_segments(pid, 0, 3, 2 * HOUR);
    refresh(q);
    reply r;
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "partitions.0.nextPass.leasedOffsets"), 2);
    reply_fini(&r);
    CHECK_STR(run_report(&s, true, q), "Default retention 0-3 3 2 1");
    CHECK_STR(run_report(&s, false, q), "Default retention 0-3 3 2 1");
    CHECK_STR(history(q), "Default retention 0-3 3 2");
    srv_stop(&s);
}

/* ---- explain tells the truth ---- */

TEST(explain_does_not_keep_a_straddling_segment_another_rule_removes)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-straddlegone"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":7200,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 3; i++) push(&s, q, "Default", 3);   /* [0-2] [3-5] [6-8] */
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=5&autoAck=true", g)), "0,1,2,3,4");
    age_segments(pid, 0, 9, 3 * HOUR);
    refresh(q);
    reply r;
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "partitions.0.straddlingSegment.baseOffset"), 3);
    CHECK_STR(jstr(&r, "partitions.0.nextPass.rule"), "retention");
    CHECK_INT(jint(&r, "partitions.0.nextPass.boundary"), 9);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "stays") == NULL);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "the next pass deletes offsets 0-8 under retention"));
    reply_fini(&r);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-9 9 0 3");
    srv_stop(&s);
}

TEST(explain_dry_run_and_pass_agree_while_a_partition_waits_for_its_recheck)
{
    silt_server s;
    /* a pinned partition is looked at again an interval later: an hour here,
     * so it cannot come due by itself while the test runs (the timer's first
     * pass is an hour away too) */
    const char *env[] = { "RETENTION_INTERVAL_MS=3600000", NULL };
    srv_start(&s, env);
    const char *q = uniq("ret-recheck"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 4; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=2&autoAck=true", g)), "0,1");
    age_segments(pid, 0, 4, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 0-2 2 0 2");
    CHECK_STR(run_report(&s, false, q), "");   /* held back at the cap: looked at again a pass later */
    /* the group moves on: offsets 2-3 could go, but not before the recheck */
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=2&autoAck=true", g)), "2,3");
    reply r;
    explain(&s, q, &r);
    CHECK_STR(jraw(&r, "partitions.0.nextPass"), "null");
    CHECK(strstr(jraw(&r, "partitions.0.notes"), "offsets 2-3 can go under completed_retention, but this partition "
                                                 "is next looked at"));
    reply_fini(&r);
    CHECK_STR(run_report(&s, true, q), "");
    CHECK_STR(run_report(&s, false, q), "");
    CHECK_INT(log_start(pid), 2);
    sql("update queen.log_partitions set retention_check_at = retention_check_at - interval '1 hour' "
        "where queue = '%s'", q);   /* the hour passes */
    explain(&s, q, &r);
    CHECK_STR(jstr(&r, "partitions.0.nextPass.rule"), "completed_retention");
    CHECK_INT(jint(&r, "partitions.0.nextPass.fromOffset"), 2);
    CHECK_INT(jint(&r, "partitions.0.nextPass.toOffset"), 4);
    reply_fini(&r);
    CHECK_STR(run_report(&s, true, q), "Default completed_retention 2-4 2 0 2");
    CHECK_STR(run_report(&s, false, q), "Default completed_retention 2-4 2 0 2");
    srv_stop(&s);
}

/* The README tour: everything consumed, completedRetentionSeconds set. The
 * age window keeps the data; no group does. */
TEST(explain_names_the_age_window_when_everything_is_consumed)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-tour");
    push(&s, q, "Default", 2);
    push(&s, q, "Default", 1);
    CHECK_STR(pop_offsets(&s, q, NULL, "batch=10&autoAck=true"), "0,1,2");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"completedRetentionSeconds\":3600}");
    reply r;
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "partitions.0.consumptionCap.behind"), 0);
    const char *notes = jraw(&r, "partitions.0.notes");
    CHECK(strstr(notes, "completedRetentionSeconds keeps offsets from 0 (consumed): segment 0-1 was committed at "));
    CHECK(strstr(notes, "and goes at "));
    CHECK(strstr(notes, "__QUEUE_MODE__") == NULL);
    CHECK(strstr(notes, "offset 3") == NULL);   /* no such offset */
    reply_fini(&r);
    srv_stop(&s);
}

TEST(behind_counts_only_retained_offsets)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("ret-behind"), *g = uniq("g");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600,\"completedRetentionSeconds\":3600}");
    for (int i = 0; i < 5; i++) push(&s, q, "Default", 1);
    const char *pid = pid_of(q, "Default");
    CHECK_STR(pop_offsets(&s, q, NULL, sfmt("consumerGroup=%s&batch=1&autoAck=true", g)), "0");
    age_segments(pid, 0, 3, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(&s, false, q), "Default retention 0-3 3 0 3");
    reply r;
    explain(&s, q, &r);   /* offsets 3 and 4 remain; the group has consumed only 0 */
    CHECK_INT(jint(&r, "partitions.0.consumptionCap.behind"), 2);
    CHECK(strstr(jraw(&r, "partitions.0.notes"), sfmt("consumer group %s has 2 retained offsets to consume", g)));
    reply_fini(&r);
    srv_stop(&s);
}

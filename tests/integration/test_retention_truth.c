/* Integration: explain, a dry run and a real pass are the same truth. Over
 * many randomized queues (rule combinations, groups at different progress,
 * live leases, segments the consumption cap falls inside, partitions pinned
 * at an earlier pass and released since, option changes) each partition's
 * explain `nextPass`, the dry run's steps and the real pass's steps must
 * name the same rule, the same offsets and the same leased offsets, and
 * retention_history must record exactly what the pass reported.
 *
 * Ages are set well away from every window edge (at least five minutes,
 * also after the hour most partitions travel), so the seconds between
 * explain and the pass change nothing. The seed is printed with any
 * failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "retention_support.h"

#define QUEUES 16

static unsigned long rng_state;
static int rnd(int n)   /* 0..n-1, reproducible from the seed */
{
    rng_state = rng_state * 6364136223846793005UL + 1442695040888963407UL;
    return (int)((rng_state >> 33) % (unsigned long)n);
}

static const char *random_options(void)
{
    static const int retention[] = { 0, 3600, 7200 }, completed[] = { 0, 3600, 10800 },
                     max_wait[] = { 0, 0, 5400, 14400 };
    return sfmt("{\"retentionEnabled\":%s,\"retentionSeconds\":%d,\"completedRetentionSeconds\":%d,"
                "\"maxWaitTimeSeconds\":%d}", rnd(5) ? "true" : "false", retention[rnd(3)], completed[rnd(3)],
                max_wait[rnd(4)]);
}

/* Segment ages in seconds, never increasing with offset. Window edges are
 * multiples of half an hour (1, 1.5, 2, 3 and 4 hours); these ages, and the
 * same plus an hour, stay at least five minutes from each. */
static long random_age(long older_than_or_equal)
{
    static const long ages[] = { 300, 2700, 4500, 6300, 9000, 12600, 18000 };
    long a;
    do a = ages[rnd(7)]; while (a > older_than_or_equal);
    return a;
}

/* One partition: 1-6 segments of 1-4 messages, aged, with 0-2 groups that
 * consumed (and leased) a random prefix. */
static void random_partition(silt_server *s, const char *q, const char *name)
{
    char part[96];
    keep_str(part, name);
    int nsegs = 1 + rnd(6), total = 0;
    for (int i = 0; i < nsegs; i++) {
        int n = 1 + rnd(4);
        push(s, q, part, n);
        total += n;
    }
    for (int g = rnd(3); g > 0; g--) {
        const char *group = uniq("g");
        int consumed = rnd(total + 1), leased = rnd(3);
        if (consumed) pop_offsets(s, q, part, sfmt("consumerGroup=%s&batch=%d&autoAck=true", group, consumed));
        if (leased) pop_offsets(s, q, part, sfmt("consumerGroup=%s&batch=%d", group, leased));
    }
    const char *pid = pid_of(q, part);
    long age = 18000;
    for (int i = 0; i < nsegs; i++) {
        age = random_age(age);
        sql("update queen.log_segments set created_at = now() - make_interval(secs => %ld) where partition_id = '%s' "
            "and base_offset = (select base_offset from queen.log_segments where partition_id = '%s' "
            "order by base_offset offset %d limit 1)", age, pid, pid, i);
    }
}

/* explain's nextPass per partition of q: "part rule from-to leased; ..." */
static const char *explained(silt_server *s, const char *q)
{
    reply r;
    explain(s, q, &r);
    char out[4096] = "";
    size_t len = 0;
    for (int i = 0; jpath(&r, sfmt("partitions.%d", i)) >= 0; i++) {
        if (strcmp(jraw(&r, sfmt("partitions.%d.nextPass", i)), "null") == 0) continue;
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%s %s %lld-%lld %lld", len ? "; " : "",
                                jstr(&r, sfmt("partitions.%d.partition", i)),
                                jstr(&r, sfmt("partitions.%d.nextPass.rule", i)),
                                (long long)jint(&r, sfmt("partitions.%d.watermark", i)),
                                (long long)jint(&r, sfmt("partitions.%d.nextPass.boundary", i)),
                                (long long)jint(&r, sfmt("partitions.%d.nextPass.leasedOffsets", i)));
    }
    reply_fini(&r);
    return sfmt("%s", out);
}

/* A pass's steps for q merged per partition in the same form; fails when
 * one partition's steps name two rules or leave a gap. */
static const char *merged(const char *steps)
{
    char out[4096] = "", part[256] = "", rule[64] = "";
    long long from = -1, to = -1, leased = 0;
    size_t len = 0;
    const char *p = steps;
    while (p && *p) {
        char sp[256], sr[64];
        long long f, t, offs, l, segs;
        if (sscanf(p, "%255s %63s %lld-%lld %lld %lld %lld", sp, sr, &f, &t, &offs, &l, &segs) != 7)
            harness_failf(__FILE__, __LINE__, "unreadable step: %s", p);
        if (strcmp(sp, part) == 0) {
            if (strcmp(sr, rule) != 0 || f != to)
                harness_failf(__FILE__, __LINE__, "one partition, two rules or a gap: %s", steps);
            to = t;
            leased += l;
        } else {
            if (*part) len += (size_t)snprintf(out + len, sizeof out - len, "%s%s %s %lld-%lld %lld", len ? "; " : "",
                                               part, rule, from, to, leased);
            snprintf(part, sizeof part, "%s", sp);
            snprintf(rule, sizeof rule, "%s", sr);
            from = f; to = t; leased = l;
        }
        p = strstr(p, "; ");
        if (p) p += 2;
    }
    if (*part) snprintf(out + len, sizeof out - len, "%s%s %s %lld-%lld %lld", len ? "; " : "", part, rule, from, to, leased);
    return sfmt("%s", out);
}

static void expect_same(unsigned long seed, const char *q, const char *what, const char *got, const char *want)
{
    if (strcmp(got, want) != 0)
        harness_failf(__FILE__, __LINE__, "seed %lu, queue %s: %s says \"%s\", explain said \"%s\"", seed, q, what, got, want);
}

/* Returns how many partitions the compared pass deleted from. */
static int agree(unsigned long seed, int batch)
{
    silt_server s;
    /* LOG_LEVEL: every leased offset a pass removes is a warning, and this test removes many.
     * RETENTION_INTERVAL_MS: a partition the first pass finds pinned is looked at again one
     * interval later; at the tests' default (none: one second) that moment could fall between
     * explain and the compared pass on a slow machine. An hour puts it either before both (the
     * partitions that travel an hour) or after both (those that stay). No timed pass runs. */
    srv_start(&s, (const char *const[]){ sfmt("RETENTION_BATCH_SIZE=%d", batch), "LOG_LEVEL=error",
                                          "RETENTION_INTERVAL_MS=3600000", NULL });
    rng_state = seed;
    const char *qs[QUEUES];
    for (int i = 0; i < QUEUES; i++) {
        qs[i] = uniq("ret-truth");
        configure_queue(&s, qs[i], random_options());
        for (int p = 1 + rnd(3); p > 0; p--) random_partition(&s, qs[i], sfmt("P%d", p));
        refresh(qs[i]);
    }
    run_pass(&s);   /* pins some partitions until their recheck, deletes from others */
    /* an hour passes for most partitions (ages keep their distance from
     * every window edge); the others stay as the pass left them */
    for (int i = 0; i < QUEUES; i++)
        for (int p = 1; p <= 3; p++) {
            const char *pid = pid_of(qs[i], sfmt("P%d", p));
            if (*pid && rnd(3)) travel(pid, HOUR);
        }
    for (int i = 0; i < QUEUES; i++) {
        if (rnd(2)) pop_offsets(&s, qs[i], NULL, sfmt("consumerGroup=%s&batch=%d&autoAck=true", uniq("late"), rnd(8) + 1));
        if (rnd(3) == 0) configure_queue(&s, qs[i], random_options());   /* reschedules */
    }
    char want[QUEUES][4096];
    int deleting = 0;   /* partitions the pass deletes from: the comparison must have something to compare */
    for (int i = 0; i < QUEUES; i++) {
        snprintf(want[i], sizeof want[i], "%s", explained(&s, qs[i]));
        for (const char *w = want[i]; *w; w = strstr(w, "; ") ? strstr(w, "; ") + 2 : "") deleting++;
    }
    reply dry, real;
    run(&s, true, &dry);
    const char *last_id = sql("select coalesce(max(id), 0) from queen.retention_history");
    char mark[32];
    snprintf(mark, sizeof mark, "%s", last_id);
    run(&s, false, &real);
    for (int i = 0; i < QUEUES; i++) {
        expect_same(seed, qs[i], "the dry run", merged(report_of(&dry, qs[i])), want[i]);
        expect_same(seed, qs[i], "the pass", merged(report_of(&real, qs[i])), want[i]);
        const char *hist = merged(sql("select coalesce(string_agg(partition || ' ' || rule || ' ' || from_offset || '-' "
            "|| to_offset || ' ' || offsets_dropped || ' ' || leased_dropped || ' 0', '; ' order by partition, from_offset), '') "
            "from queen.retention_history where queue = '%s' and id > %s", qs[i], mark));
        expect_same(seed, qs[i], "retention_history", hist, want[i]);
    }
    reply_fini(&dry);
    reply_fini(&real);
    srv_stop(&s);
    return deleting;
}

/* Four seeds at one batch size; the comparison must have had something to
 * compare. */
static void agree_over_seeds(unsigned long first, int batch)
{
    int deleting = 0;
    for (unsigned long seed = first; seed < first + 4; seed++) deleting += agree(seed, batch);
    if (deleting < 16) harness_failf(__FILE__, __LINE__, "seeds %lu-%lu: only %d partitions to delete from",
                                    first, first + 3, deleting);
}

TEST(explain_dry_run_and_pass_agree_batch_1)   { agree_over_seeds(1, 1); }
TEST(explain_dry_run_and_pass_agree_batch_2)   { agree_over_seeds(11, 2); }
TEST(explain_dry_run_and_pass_agree_batch_3)   { agree_over_seeds(31, 3); }
TEST(explain_dry_run_and_pass_agree_batch_100) { agree_over_seeds(21, 100); }

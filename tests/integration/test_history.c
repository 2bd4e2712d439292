/* Integration: the dashboard's per-minute history (queen.minute_stats_roll,
 * GET /api/v1/stats/history). Minutes are rolled by calling the rollup
 * with the time it would run at, never by waiting for a minute to pass;
 * the server's own roller may roll one in between, which changes which
 * minute holds a count but never the sum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

/* Sum of one series over every minute the route answers for q. */
static int64_t series_sum(silt_server *s, const char *q, const char *key)
{
    reply r;
    rq(s, "GET", sfmt("/api/v1/stats/history?queue=%s&hours=24", q), NULL, &r);
    CHECK_INT(r.status, 200);
    int n = r.doc.tokens[jpath(&r, "minutes")].count;
    int64_t sum = 0;
    for (int i = 0; i < n; i++) sum += jint(&r, sfmt("minutes.%d.%s", i, key));
    reply_fini(&r);
    return sum;
}

TEST(history_counts_pushes_consumption_and_dead_letters_once_whoever_rolls)
{
    silt_server s;
    srv_start(&s, NULL);
    sql("select queen.minute_stats_roll(now() - interval '1 minute')");   /* a reading before the queue exists */
    const char *q = uniq("hist");
    char qk[96];
    keep_str(qk, q);
    for (int i = 0; i < 5; i++) push_one(&s, qk, "Default", sfmt("m%d", i), "1");
    reply r;
    CHECK_INT(pop_from(&s, qk, NULL, "batch=3", &r), 200);
    const char *pid = jstr(&r, "partitionId"), *lease = jstr(&r, "leaseId");
    char pk[96], lk[96];
    keep_str(pk, pid);
    keep_str(lk, lease);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack/batch", sfmt("{\"acknowledgments\":["
        "{\"transactionId\":\"m0\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"completed\"},"
        "{\"transactionId\":\"m1\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"completed\"},"
        "{\"transactionId\":\"m2\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"dlq\",\"error\":\"x\"}]}",
        pk, lk, pk, lk, pk, lk), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    /* the minute now ending, as the roller would read it a minute from now */
    sql("select queen.minute_stats_roll(now() + interval '1 minute')");
    CHECK_INT(series_sum(&s, qk, "pushed"), 5);
    CHECK_INT(series_sum(&s, qk, "consumed"), 3);
    CHECK_INT(series_sum(&s, qk, "deadLettered"), 1);
    /* the same minute again, as a second server would ask: nothing more */
    CHECK_STR(sql("select queen.minute_stats_roll(now() + interval '1 minute')"), "-1");
    CHECK_INT(series_sum(&s, qk, "pushed"), 5);
    /* every queue: at least this one's */
    rq(&s, "GET", "/api/v1/stats/history", NULL, &r);
    int n = r.doc.tokens[jpath(&r, "minutes")].count;
    CHECK(n >= 2);
    CHECK(jint(&r, sfmt("minutes.%d.seconds", n - 1)) > 0);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(history_keeps_24_hours_and_a_minute_without_traffic_is_zeros)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("histold");
    sql("insert into queen.minute_rolls values (date_trunc('minute', now()) - interval '25 hours', now(), 60),"
        " (date_trunc('minute', now()) - interval '10 minutes', now(), 60)");
    sql("insert into queen.minute_stats (minute, queue, pushed) values"
        " (date_trunc('minute', now()) - interval '25 hours', '%s', 7)", q);
    sql("select queen.minute_stats_roll(now() + interval '1 minute')");
    CHECK_STR(sql("select count(*) from queen.minute_stats where queue = '%s'", q), "0");
    CHECK_STR(sql("select count(*) from queen.minute_rolls where minute < now() - interval '24 hours'"), "0");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/stats/history?queue=%s&hours=1", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(r.doc.tokens[jpath(&r, "minutes")].count >= 2);   /* the rolled minutes, as zeros */
    CHECK_INT(jint(&r, "minutes.0.pushed"), 0);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(history_bad_hours_or_queue_is_a_400_naming_it)
{
    silt_server s;
    srv_start(&s, NULL);
    char longname[300];
    memset(longname, 'q', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    char long_queue[400];   /* not in sfmt's ring: the loop's requests reuse it */
    snprintf(long_queue, sizeof long_queue, "/api/v1/stats/history?queue=%s", longname);
    const char *cases[][2] = {
        { "/api/v1/stats/history?hours=0", "hours" },
        { "/api/v1/stats/history?hours=25", "hours" },
        { "/api/v1/stats/history?hours=day", "hours" },
        { long_queue, "queue" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) rq_refused(&s, "GET", cases[i][0], NULL, cases[i][1]);
    srv_stop(&s);
}

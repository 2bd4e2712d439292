/* retention_support: helpers of the retention tests (see retention_support.h). */
#include "retention_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness.h"

/* One push request of n messages: one segment. */
void push(silt_server *s, const char *q, const char *part, int n)
{
    CHECK_INT(push_simple(s, q, part, n), 201);
}

/* One message with a chosen transactionId: one segment. */
void push_txn(silt_server *s, const char *q, const char *part, const char *txn)
{
    push_one(s, q, part, txn, sfmt("{\"txn\":\"%s\"}", txn));
}

const char *pid_of(const char *q, const char *part)
{
    return strdup(sql("select id from queen.log_partitions where queue = '%s' and name = '%s'", q, part));
}

/* Moves the commit time of segments (or sidecar rows) with base offsets in
 * [lo, hi) back by secs. Ageing lower ranges further keeps created_at
 * non-decreasing with offset, as push guarantees. */
void age_segments(const char *pid, long long lo, long long hi, long secs)
{
    sql("update queen.log_segments set created_at = created_at - make_interval(secs => %ld) "
        "where partition_id = '%s' and base_offset >= %lld and base_offset < %lld", secs, pid, lo, hi);
}

void age_txns(const char *pid, long long lo, long long hi, long secs)
{
    sql("update queen.log_txns set created_at = created_at - make_interval(secs => %ld) "
        "where partition_id = '%s' and base_offset >= %lld and base_offset < %lld", secs, pid, lo, hi);
}

/* The schedule the engine finds work through (retention_check_at,
 * sidecar_check_at) follows commit times; after backdating rows it is
 * recomputed the way a step recomputes it. */
void refresh(const char *q)
{
    sql("select queen.reschedule(p.id, q.options, null) from queen.log_partitions p "
        "join queen.queues q on q.name = p.queue where p.queue = '%s'", q);
}

/* A step that finds a partition old enough but pinned by a consumer group
 * looks at it again a pass later: RETENTION_INTERVAL_MS in seconds, at
 * least 1 (test servers have 0). Moving the schedule back by that second is
 * the time of one pass passing. */
void a_pass_later(const char *q)
{
    sql("update queen.log_partitions set retention_check_at = retention_check_at - interval '1 second' "
        "where queue = '%s'", q);
}

static long long num(const char *v) { return *v ? atoll(v) : -999; }
long long log_start(const char *pid)
{
    return num(sql("select log_start from queen.log_partitions where id = '%s'", pid));
}
long long txns_start(const char *pid)
{
    return num(sql("select txns_start from queen.log_partitions where id = '%s'", pid));
}
long long segments(const char *pid)
{
    return num(sql("select count(*) from queen.log_segments where partition_id = '%s'", pid));
}
long long txns_rows(const char *pid)
{
    return num(sql("select count(*) from queen.log_txns where partition_id = '%s'", pid));
}
long long partition_exists(const char *pid)
{
    return num(sql("select count(*) from queen.log_partitions where id = '%s'", pid));
}
long long committed(const char *pid, const char *group)
{
    return num(sql("select coalesce((select committed from queen.log_consumers where partition_id = '%s' "
                   "and consumer_group = '%s'), -999)", pid, group));
}
long long dlq_rows(const char *q)
{
    return num(sql("select count(*) from queen.log_dlq where queue = '%s'", q));
}

/* Polls until the query gives want (a pass the server runs on its own), at
 * most 10 s; true when it did. */
static bool poll_for(const char *query, const char *want)
{
    for (int i = 0; i < 400; i++) {
        if (strcmp(sql("%s", query), want) == 0) return true;
        struct timespec ts = { 0, 25 * 1000000 };
        nanosleep(&ts, NULL);
    }
    return false;
}

void wait_until(const char *query, const char *want)
{
    if (!poll_for(query, want)) harness_failf(__FILE__, __LINE__, "%s never gave %s", query, want);
}

/* retention_history of a queue: "partition rule from-to dropped leased; ..." */
const char *history(const char *q)
{
    return sql("select coalesce(string_agg(partition || ' ' || rule || ' ' || from_offset || '-' || to_offset || ' ' "
               "|| offsets_dropped || ' ' || leased_dropped, '; ' order by partition, id), '') "
               "from queen.retention_history where queue = '%s'", q);
}

/* An ISO 8601 UTC timestamp secs ago. */
const char *ts_ago(long secs)
{
    return sql("select to_char((now() - make_interval(secs => %ld)) at time zone 'UTC', "
               "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')", secs);
}

/* Pops (path: the queue, or the queue's partition when part is given) and
 * returns the offsets delivered, "0,1,2", or "none" on 204. */
const char *pop_offsets(silt_server *s, const char *q, const char *part, const char *query)
{
    reply r;
    pop_from(s, q, part, query, &r);
    if (r.status == 204) { reply_fini(&r); return "none"; }
    CHECK_INT(r.status, 200);
    char out[2048] = "";
    size_t len = 0;
    for (int i = 0; jpath(&r, sfmt("messages.%d", i)) >= 0 && len < sizeof out - 32; i++)
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%lld", i ? "," : "",
                                (long long)jint(&r, sfmt("messages.%d.offset", i)));
    reply_fini(&r);
    return sfmt("%s", out);
}

/* Runs a pass now (dry: only reports) and keeps the report in r. */
void run(silt_server *s, bool dry, reply *r)
{
    rq(s, "POST", dry ? "/api/v1/system/retention/run?dryRun=true" : "/api/v1/system/retention/run", NULL, r);
    CHECK_INT(r->status, 200);
    CHECK(jpath(r, "deleted") >= 0);
    CHECK(jbool(r, "dryRun") == dry);
}

void run_pass(silt_server *s)
{
    reply r;
    run(s, false, &r);
    reply_fini(&r);
}

/* Runs passes until the query gives want (a server may also start the next
 * pass by itself, then /run answers 409 and this waits), at most 10 s. */
bool run_until(silt_server *s, const char *query, const char *want)
{
    for (int i = 0; i < 400; i++) {
        if (strcmp(sql("%s", query), want) == 0) return true;
        reply r;
        rq(s, "POST", "/api/v1/system/retention/run", NULL, &r);
        int status = r.status;
        reply_fini(&r);
        if (status == 409) {
            struct timespec ts = { 0, 25 * 1000000 };
            nanosleep(&ts, NULL);
        }
    }
    return strcmp(sql("%s", query), want) == 0;
}

/* The report's entries for queue q, "partition rule from-to offsets leased
 * segments; ...", by partition and offset (steps on different partitions
 * run side by side, so the report's own order is not fixed). */
typedef struct entry {
    char      part[256];
    long long from;
    char      text[640];
} entry;

static int entry_cmp(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    int c = strcmp(x->part, y->part);
    return c ? c : (x->from > y->from) - (x->from < y->from);
}

const char *report_of(const reply *r, const char *q)
{
    entry *es = NULL;
    size_t n = 0;
    for (int i = 0; jpath(r, sfmt("deleted.%d", i)) >= 0; i++) {
        char queue[256], rule[64];
        snprintf(queue, sizeof queue, "%s", jstr(r, sfmt("deleted.%d.queue", i)));
        if (strcmp(queue, q) != 0) continue;
        es = realloc(es, (n + 1) * sizeof *es);
        entry *e = &es[n++];
        snprintf(e->part, sizeof e->part, "%s", jstr(r, sfmt("deleted.%d.partition", i)));
        snprintf(rule, sizeof rule, "%s", jstr(r, sfmt("deleted.%d.rule", i)));
        e->from = jint(r, sfmt("deleted.%d.fromOffset", i));
        long long to = jint(r, sfmt("deleted.%d.toOffset", i));
        long long offs = jint(r, sfmt("deleted.%d.offsets", i)), leased = jint(r, sfmt("deleted.%d.leasedOffsets", i));
        long long segs = jint(r, sfmt("deleted.%d.segments", i));
        snprintf(e->text, sizeof e->text, "%s %s %lld-%lld %lld %lld %lld", e->part, rule, e->from, to, offs, leased, segs);
    }
    if (n) qsort(es, n, sizeof *es, entry_cmp);
    char out[4096] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof out - 700; i++)
        len += (size_t)snprintf(out + len, sizeof out - len, "%s%s", i ? "; " : "", es[i].text);
    free(es);
    return sfmt("%s", out);
}

/* One pass; returns its report for q. */
const char *run_report(silt_server *s, bool dry, const char *q)
{
    reply r;
    run(s, dry, &r);
    const char *out = report_of(&r, q);
    reply_fini(&r);
    return out;
}

void explain(silt_server *s, const char *q, reply *r)
{
    rq(s, "GET", sfmt("/api/v1/retention/explain?queue=%s", q), NULL, r);
    CHECK_INT(r->status, 200);
}

void queue_detail(silt_server *s, const char *q, reply *r)
{
    rq(s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, r);
    CHECK_INT(r->status, 200);
}

void ack(silt_server *s, const char *txn, const char *pid, const char *status, const char *group,
                const char *lease, reply *r)
{
    rq(s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"%s\",\"partitionId\":\"%s\",\"status\":\"%s\","
                                      "\"consumerGroup\":\"%s\"%s%s%s,\"error\":\"poison\"}", txn, pid, status, group,
                                      lease ? ",\"leaseId\":\"" : "", lease ? lease : "", lease ? "\"" : ""), r);
    CHECK_INT(r->status, 200);
}

/* Dead-letters the next message of the group (pop one, ack dlq). */
void dead_letter_next(silt_server *s, const char *q, const char *group, const char *txn)
{
    reply r;
    rq(s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=%s&batch=1", q, group), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), txn);
    char pid[64];
    snprintf(pid, sizeof pid, "%s", jstr(&r, "partitionId"));
    reply_fini(&r);
    ack(s, txn, pid, "dlq", group, NULL, &r);
    CHECK(jbool(&r, "0.dlq"));
    reply_fini(&r);
}

/* Moves a partition's whole timeline back by secs, as if all of it had
 * happened secs earlier: its segments' and sidecar rows' commit times, every
 * time the partition row carries (creation, last write, emptiness, the
 * retention schedule) and its consumer groups' activity. Live leases stay
 * live (tests expire them explicitly). Nothing is recomputed, so what pushes,
 * steps and cleanup wrote is what is tested. */
void travel(const char *pid, long secs)
{
    sql("update queen.log_segments set created_at = created_at - make_interval(secs => %ld) where partition_id = '%s'", secs, pid);
    sql("update queen.log_txns set created_at = created_at - make_interval(secs => %ld) where partition_id = '%s'", secs, pid);
    char cols[2048];
    snprintf(cols, sizeof cols, "%s",
             sql("select string_agg(format('%%I = %%I - make_interval(secs => %ld)', column_name, column_name), ', ') "
                 "from information_schema.columns where table_schema = 'queen' and table_name = 'log_partitions' "
                 "and data_type = 'timestamp with time zone'", secs));
    sql("update queen.log_partitions set %s where id = '%s'", cols, pid);
    sql("update queen.log_consumers set last_activity_at = last_activity_at - make_interval(secs => %ld) "
        "where partition_id = '%s'", secs, pid);
}

/* A partition of q (retentionSeconds 3600) whose two messages a group
 * consumed and a pass removed: empty since now. */
const char *emptied_partition(silt_server *s, const char *q, const char *part)
{
    const char *g = uniq("g");
    push(s, q, part, 2);
    const char *pid = pid_of(q, part);
    CHECK_STR(pop_offsets(s, q, part, sfmt("consumerGroup=%s&batch=2&autoAck=true", g)), "0,1");
    age_segments(pid, 0, 2, 2 * HOUR);
    refresh(q);
    CHECK_STR(run_report(s, false, q), sfmt("%s retention 0-2 2 0 1", part));
    CHECK_INT(segments(pid), 0);
    CHECK_INT(partition_exists(pid), 1);
    return pid;
}

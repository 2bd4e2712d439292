/* Integration: the ready set a queue-wide pop walks (sql/031). What a
 * group may have something in is kept per group and queue; these tests
 * check that every way a partition gains something for the group reaches
 * the set (a write, a write whose transaction was in flight when the set
 * looked, a seek back, the group deleted), that a partition with nothing
 * left leaves it, that the minute's refill mends a damaged set, and that
 * the write rows the set reads are pruned once every group has them. Only
 * queues of more than 256 partitions use sets; the others' pops scan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "harness.h"
#include "raw_support.h"
#include "support.h"

/* A queue walks ready sets once it has more than 256 partitions
 * (queen.queue_is_wide): 257 empty ones, made in SQL, give each test's
 * queue that width without messages of their own. */
static const char *wide_queue(silt_server *s)
{
    const char *q = uniq("ready");
    configure_queue(s, q, "{}");
    sql("INSERT INTO queen.log_partitions (queue, name) SELECT '%s', 'empty' || i FROM generate_series(1, 257) i", q);
    return q;
}

/* An autoAck pop of group g from queue q: the partition it served, or ""
 * when it answered 204. */
static const char *pop_partition(silt_server *s, const char *q)
{
    reply r;
    int status = pop_from(s, q, NULL, "consumerGroup=g&wait=false&autoAck=true", &r);
    const char *part = status == 200 ? sfmt("%s", jstr(&r, "partition")) : "";
    CHECK(status == 200 || status == 204);
    reply_fini(&r);
    return part;
}

static const char *ready_rows(const char *q)
{
    return sql("SELECT count(*) FROM queen.log_ready WHERE consumer_group = 'g' AND queue = '%s'", q);
}

/* Pops until a 204: how many partitions served. */
static int drain(silt_server *s, const char *q)
{
    int served = 0;
    while (*pop_partition(s, q)) served++;
    return served;
}

TEST(pop_ready_a_groups_first_pop_fills_its_set_and_spent_partitions_leave_it)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    for (int i = 0; i < 5; i++) push_one(&s, q, sfmt("p%d", i), sfmt("t%d", i), "1");
    CHECK_STR(ready_rows(q), "0");
    CHECK(*pop_partition(&s, q));
    /* the first pop filled the set with all five; the one it emptied stays until a pop finds it spent */
    CHECK_STR(ready_rows(q), "5");
    CHECK_INT(drain(&s, q), 4);
    CHECK_STR(ready_rows(q), "0");
    srv_stop(&s);
}

TEST(pop_ready_a_partition_written_after_the_group_caught_up_is_served)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    for (int i = 0; i < 3; i++) push_one(&s, q, sfmt("p%d", i), sfmt("t%d", i), "1");
    CHECK_INT(drain(&s, q), 3);
    CHECK_STR(ready_rows(q), "0");
    push_one(&s, q, "p1", "again", "2");
    CHECK_STR(pop_partition(&s, q), "p1");
    CHECK_STR(pop_partition(&s, q), "");
    srv_stop(&s);
}

/* A write whose transaction drew its write row before another write was
 * taken in, and committed after: the set's look noted the transaction in
 * flight, and the next pop takes the write in by it (without that, the row
 * sits below the set's mark until the minute's refill). */
TEST(pop_ready_a_write_committed_after_the_sets_look_is_served_by_its_transaction)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    push_one(&s, q, "late", "t0", "1");
    CHECK_STR(pop_partition(&s, q), "late");
    CHECK_STR(pop_partition(&s, q), "");   /* finds "late" spent: out of the set */
    CHECK_STR(ready_rows(q), "0");
    PGconn *pg = test_session();
    PQclear(PQexec(pg, "BEGIN"));
    /* the same message again at the next offset of "late", appended as a flush appends */
    PGresult *res = PQexec(pg, sfmt(
        "SELECT count(*) FROM queen.append_segments(ARRAY['%s'], ARRAY['late'], ARRAY[1],"
        " (SELECT s.blob FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id"
        "   WHERE p.queue = '%s' AND p.name = 'late'),"
        " ARRAY[(SELECT length(s.blob) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id"
        "   WHERE p.queue = '%s' AND p.name = 'late')],"
        " (SELECT t.hashes FROM queen.log_txns t JOIN queen.log_partitions p ON p.id = t.partition_id"
        "   WHERE p.queue = '%s' AND p.name = 'late'),"
        " (SELECT t.message_ids FROM queen.log_txns t JOIN queen.log_partitions p ON p.id = t.partition_id"
        "   WHERE p.queue = '%s' AND p.name = 'late'), ARRAY[true], now())", q, q, q, q, q));
    CHECK_INT(PQresultStatus(res), PGRES_TUPLES_OK);
    PQclear(res);
    push_one(&s, q, "early", "t1", "1");   /* a higher write row id, committed first */
    CHECK_STR(pop_partition(&s, q), "early");
    CHECK_STR(sql("SELECT s.seen_id >= max(w.id) FROM queen.log_ready_scans s, queen.log_writes w"
                  " WHERE s.consumer_group = 'g' AND s.queue = '%s' AND w.queue = '%s' GROUP BY s.seen_id", q, q), "t");
    res = PQexec(pg, "COMMIT");
    CHECK_INT(PQresultStatus(res), PGRES_COMMAND_OK);
    PQclear(res);
    PQfinish(pg);
    CHECK_STR(pop_partition(&s, q), "late");
    srv_stop(&s);
}

TEST(pop_ready_a_seek_back_gives_the_group_its_partitions_again)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    for (int i = 0; i < 3; i++) push_one(&s, q, sfmt("p%d", i), sfmt("t%d", i), "1");
    CHECK_INT(drain(&s, q), 3);
    reply r;
    rq(&s, "POST", sfmt("/api/v1/consumer-groups/g/queues/%s/seek", q), "{\"timestamp\":\"2000-01-01T00:00:00Z\"}", &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(ready_rows(q), "3");
    CHECK_INT(drain(&s, q), 3);
    srv_stop(&s);
}

TEST(pop_ready_a_deleted_group_starts_again_from_its_subscription)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    for (int i = 0; i < 3; i++) push_one(&s, q, sfmt("p%d", i), sfmt("t%d", i), "1");
    CHECK_INT(drain(&s, q), 3);
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/consumer-groups/g/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM queen.log_ready_scans WHERE consumer_group = 'g' AND queue = '%s'", q), "0");
    CHECK_INT(drain(&s, q), 3);
    srv_stop(&s);
}

/* The set is a cache of the partitions: a row lost (here deleted by hand)
 * is found again by the refill a pop runs once its set is a minute old. */
TEST(pop_ready_the_minutes_refill_mends_a_damaged_set)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    push_one(&s, q, "p0", "t0", "1");
    push_one(&s, q, "p1", "t1", "1");
    CHECK(*pop_partition(&s, q));
    sql("DELETE FROM queen.log_ready WHERE consumer_group = 'g' AND queue = '%s'", q);
    CHECK_STR(pop_partition(&s, q), "");
    sql("UPDATE queen.log_ready_scans SET filled_at = now() - interval '61 seconds' WHERE queue = '%s'", q);
    CHECK(*pop_partition(&s, q));
    CHECK_STR(pop_partition(&s, q), "");
    srv_stop(&s);
}

/* An autoAck long-poll of group g from q, in the background, once the
 * server has parked it. */
static void park_long_poll(bg_req *b, silt_server *s, const char *q)
{
    bg_start(b, s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&wait=true&timeout=20000&autoAck=true", q), NULL);
    srv_await_metric(s, "silt_long_polls_parked", 1, 10000);
}

/* The parked long-poll answered with a message, well before its timeout. */
static void expect_answered(bg_req *b)
{
    int status;
    int64_t elapsed;
    bg_wait(b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 15000);
}

/* A queue-wide long-poll parked on an empty set is answered by a write. */
TEST(pop_ready_a_parked_queue_wide_pop_is_answered_by_a_write)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    push_one(&s, q, "p0", "t0", "1");
    CHECK_STR(pop_partition(&s, q), "p0");
    bg_req b;
    park_long_poll(&b, &s, q);
    push_one(&s, q, "p1", "t1", "1");
    expect_answered(&b);
    srv_stop(&s);
}

/* Write rows are pruned by the retention pass once every group of their
 * queue has taken them in (and they are 5 minutes old); rows a group has
 * not taken in are kept. */
TEST(pop_ready_write_rows_every_group_has_taken_in_are_pruned)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    push_one(&s, q, "p0", "t0", "1");
    CHECK_STR(pop_partition(&s, q), "p0");
    push_one(&s, q, "p0", "t1", "1");   /* not taken in yet */
    sql("UPDATE queen.log_writes SET created_at = now() - interval '10 minutes' WHERE queue = '%s'", q);
    CHECK_STR(sql("SELECT count(*) FROM queen.log_writes WHERE queue = '%s'", q), "2");
    reply r;
    rq(&s, "POST", "/api/v1/system/retention/run", "{}", &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM queen.log_writes WHERE queue = '%s'", q), "1");
    CHECK_STR(pop_partition(&s, q), "p0");
    CHECK_STR(sql("SELECT count(*) FROM queen.log_writes WHERE queue = '%s'", q), "1");
    rq(&s, "POST", "/api/v1/system/retention/run", "{}", &r);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM queen.log_writes WHERE queue = '%s'", q), "0");
    srv_stop(&s);
}

/* A queue of 256 partitions or fewer is scanned by its pops: no set. */
TEST(pop_ready_a_narrow_queue_keeps_no_set)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("narrow");
    for (int i = 0; i < 3; i++) push_one(&s, q, sfmt("p%d", i), sfmt("t%d", i), "1");
    CHECK_INT(drain(&s, q), 3);
    CHECK_STR(sql("SELECT count(*) FROM queen.log_ready_scans WHERE queue = '%s'", q), "0");
    CHECK_STR(ready_rows(q), "0");
    srv_stop(&s);
}

/* A narrow queue's pops send the set's reconcile only until the first one
 * finds the queue narrow (sql/035): after that they go alone. */
TEST(pop_ready_a_queue_found_narrow_has_its_pops_sent_without_a_reconcile)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("narrow");
    for (int i = 0; i < 3; i++) push_one(&s, q, sfmt("p%d", i), sfmt("t%d", i), "1");
    int64_t before = srv_metric(&s, "silt_pop_reconciles_total");
    CHECK_INT(drain(&s, q), 3);   /* four pops: three served, then a 204 */
    CHECK_INT(srv_metric(&s, "silt_pop_reconciles_total") - before, 1);
    srv_stop(&s);
}

/* A wide queue's pops each bring the set up to date first. */
TEST(pop_ready_a_wide_queues_pops_each_reconcile_first)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    for (int i = 0; i < 2; i++) push_one(&s, q, sfmt("p%d", i), sfmt("t%d", i), "1");
    int64_t before = srv_metric(&s, "silt_pop_reconciles_total");
    int64_t queries = srv_metric(&s, "silt_pop_queries_total");
    CHECK_INT(drain(&s, q), 2);
    CHECK_INT(srv_metric(&s, "silt_pop_reconciles_total") - before, 3);
    CHECK_INT(srv_metric(&s, "silt_pop_queries_total") - queries, 3);   /* none refused and sent again */
    srv_stop(&s);
}

/* A queue this server's pops found narrow (a message popped, then a 204),
 * grown since past 256 partitions (in SQL, as another server's pushes
 * would), with nothing new to deliver. */
static const char *grown_queue(silt_server *s)
{
    const char *q = uniq("grows");
    push_one(s, q, "p0", "t0", "1");
    CHECK_STR(pop_partition(s, q), "p0");
    CHECK_STR(pop_partition(s, q), "");
    sql("INSERT INTO queen.log_partitions (queue, name) SELECT '%s', 'empty' || i FROM generate_series(1, 257) i", q);
    return q;
}

/* A queue this server found narrow grows past 256 partitions: its next
 * pop, sent without a reconcile, is refused before it claims, and goes again behind one, so
 * the set it walks holds the partition written meanwhile. */
TEST(pop_ready_a_queue_grown_wide_since_it_was_found_narrow_is_served_through_its_set)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = grown_queue(&s);
    push_one(&s, q, "late", "t1", "1");
    int64_t before = srv_metric(&s, "silt_pop_reconciles_total");
    int64_t queries = srv_metric(&s, "silt_pop_queries_total");
    CHECK_STR(pop_partition(&s, q), "late");
    CHECK_INT(srv_metric(&s, "silt_pop_reconciles_total") - before, 1);
    CHECK_INT(srv_metric(&s, "silt_pop_queries_total") - queries, 2);   /* refused alone, then behind one */
    CHECK_STR(sql("SELECT count(*) FROM queen.log_ready_scans WHERE consumer_group = 'g' AND queue = '%s'", q), "1");
    srv_stop(&s);
}

/* The refusal itself: a wide queue's pop that says it sent no reconcile
 * fails with SLW01 and leaves the group without a cursor or a lease. */
TEST(pop_ready_a_wide_queues_pop_without_a_reconcile_is_refused_and_claims_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = wide_queue(&s);
    push_one(&s, q, "p0", "t0", "1");
    PGconn *pg = test_session();
    PGresult *r = PQexec(pg, sfmt("SELECT count(*) FROM queen.pop('%s', NULL, NULL, NULL, 'g', 10, 1, false, NULL,"
                                  " gen_random_uuid(), false)", q));
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    CHECK_STR(state ? state : "", "SLW01");
    PQclear(r);
    PQfinish(pg);
    CHECK_STR(sql("SELECT count(*) FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id"
                  " WHERE p.queue = '%s'", q), "0");
    CHECK_STR(pop_partition(&s, q), "p0");   /* the server's own pop reconciles and is served */
    srv_stop(&s);
}

/* The same refusal for a long-poll that then finds nothing: sent again
 * behind a reconcile, it parks (its look's time read from the job's third
 * call, not its second), and a write answers it. */
TEST(pop_ready_a_long_poll_refused_as_wide_parks_and_is_answered_by_a_write)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = grown_queue(&s);
    int64_t queries = srv_metric(&s, "silt_pop_queries_total");
    bg_req b;
    park_long_poll(&b, &s, q);
    CHECK(srv_metric(&s, "silt_pop_queries_total") - queries >= 2);   /* refused alone, then behind one */
    push_one(&s, q, "late", "t1", "1");
    expect_answered(&b);
    srv_stop(&s);
}

/* Servers of the previous version call queen.pop with ten arguments while
 * they are replaced: that form still claims (it stands for a pop sent
 * behind a reconcile, as theirs always were). */
TEST(pop_ready_the_previous_versions_ten_argument_pop_still_claims)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("old");
    push_one(&s, q, "p0", "t0", "1");
    CHECK_STR(sql("SELECT partition FROM queen.pop('%s', NULL, NULL, NULL, 'g', 10, 1, true, NULL, gen_random_uuid())", q),
              "p0");
    CHECK_STR(pop_partition(&s, q), "");
    srv_stop(&s);
}

/* ---- lock order ------------------------------------------------------- */

static void exec_ok(PGconn *pg, const char *statement)
{
    PGresult *r = PQexec(pg, statement);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        harness_failf(__FILE__, __LINE__, "%s: %s", statement, PQresultErrorMessage(r));
    PQclear(r);
}

/* Sessions of the test's database waiting for a lock inside a reconcile. */
static void await_reconciles_waiting(int n)
{
    sql_await(sfmt("%d", n), 20000,
              "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
              " AND query LIKE '%%ready_reconcile%%' AND pid <> pg_backend_pid()");
}

/* The minute's refill and a reconcile taking writes in take the group's
 * scans row before the set's rows, in one order (sql/037). The refill used
 * to insert the rows it found missing first and lock the scans row after:
 * beside a reconcile that held the scans row and came to one of those rows,
 * each waited for the other until PostgreSQL aborted one ("deadlock
 * detected"), and the pop behind the aborted reconcile walked a set missing
 * the new writes (issue 32: 204 with messages there). Staged here with
 * sessions of the test: one holds a row of the set as a pop's claim holds
 * it, one runs a reconcile that takes two writes in (it waits at that row
 * with the scans row locked), and the pop's reconcile refills meanwhile. */
TEST(pop_ready_a_refill_beside_a_reconcile_taking_writes_in_does_not_deadlock)
{
    char log[96];
    keep_str(log, log_file());
    const char *env[] = { sfmt("SILT_TEST_STDERR=%s", log), NULL };
    silt_server s;
    srv_start(&s, env);
    const char *q = wide_queue(&s);
    push_one(&s, q, "a", "t0", "1");
    push_one(&s, q, "b", "t1", "1");
    CHECK(*pop_partition(&s, q));   /* the group's first fill: a and b in its set */
    char low[96], high[96], low_name[96];   /* the reconcile marks in partition order: low, then high */
#define BY_ID(what, order) \
    sql("SELECT " what " FROM queen.log_partitions WHERE queue = '%s' AND name IN ('a', 'b') ORDER BY id " order " LIMIT 1", q)
    keep_str(low, BY_ID("id", "ASC"));
    keep_str(low_name, BY_ID("name", "ASC"));
    keep_str(high, BY_ID("id", "DESC"));
#undef BY_ID
    sql("DELETE FROM queen.log_ready WHERE consumer_group = 'g' AND partition_id = '%s'", high);   /* the refill adds it */
    push_one(&s, q, "a", "t2", "2");
    push_one(&s, q, "b", "t3", "2");
    reply r0;   /* low emptied by a pop of it alone (no reconcile): only high has messages */
    CHECK_INT(pop_from(&s, q, low_name, "consumerGroup=g&wait=false&autoAck=true&batch=10", &r0), 200);
    reply_fini(&r0);
    sql("UPDATE queen.log_ready_scans SET filled_at = now() - interval '61 seconds' WHERE queue = '%s'", q);

    PGconn *claim = test_session(), *refill = test_session(), *marker = test_session();
    exec_ok(claim, "BEGIN");
    exec_ok(claim, sfmt("SELECT 1 FROM queen.log_ready WHERE consumer_group = 'g' AND partition_id = '%s' FOR UPDATE", low));
    exec_ok(refill, "BEGIN");   /* keeps the marker's reconcile from refilling: the pop's does */
    exec_ok(refill, sfmt("SELECT pg_advisory_xact_lock(hashtext('silt.refill'), hashtext('g/%s'))", q));
    exec_ok(marker, "BEGIN");
    CHECK(PQsendQuery(marker, sfmt("SELECT queen.ready_reconcile('g', '%s')", q)));
    await_reconciles_waiting(1);   /* at low, with the scans row */
    exec_ok(refill, "COMMIT");
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&wait=false&autoAck=true&batch=10", q), NULL);
    await_reconciles_waiting(2);   /* the pop's reconcile, refilling, waits for the scans row */
    exec_ok(claim, "COMMIT");

    PGresult *r = PQgetResult(marker);
    CHECK_STR(PQresultStatus(r) == PGRES_TUPLES_OK ? "ok" : PQresultErrorMessage(r), "ok");
    PQclear(r);
    while ((r = PQgetResult(marker))) PQclear(r);
    exec_ok(marker, "COMMIT");
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);   /* high's messages, found by the refill or the marker */
    CHECK_INT(drain(&s, q), 0);
    srv_stop(&s);
    CHECK_INT(log_count(log, "deadlock"), 0);
    PQfinish(claim);
    PQfinish(refill);
    PQfinish(marker);
}

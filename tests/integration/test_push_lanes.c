/* test_push_lanes: flushes in flight at once take batches of different
 * partitions (lanes, src/streams/push.c), so a push does not wait on the
 * partition row locks another flush holds. */
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>
#include "harness.h"
#include "support.h"
#include "streams/push.h"

/* A partition name of queue q in lane (of 2: the server below runs PUSH_MAX_FLUSHES=2),
 * other than avoid, into out. */
static void partition_in_lane(char out[96], const char *q, int lane, const char *avoid)
{
    for (int i = 0; i < 1000; i++) {
        keep_str(out, sfmt("p%d", i));
        if (push_lane(q, out, 2) == lane && (!avoid || strcmp(out, avoid) != 0)) return;
    }
    harness_failf(__FILE__, __LINE__, "no partition in lane %d", lane);
}

/* Holds partition's row lock from a session of the test's own, as a flush
 * would until its commit. */
static PGconn *hold_partition(const char *q, const char *partition)
{
    PGconn *pg = test_session();
    PQclear(PQexec(pg, "BEGIN"));
    PGresult *r = PQexec(pg, sfmt("SELECT 1 FROM queen.log_partitions WHERE queue = '%s' AND name = '%s' FOR UPDATE",
                                 q, partition));
    CHECK_INT(PQntuples(r), 1);
    PQclear(r);
    return pg;
}

static void release(PGconn *pg)
{
    PQclear(PQexec(pg, "ROLLBACK"));
    PQfinish(pg);
}

static const char *one_item(const char *q, const char *partition)
{
    return sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"%s\",\"payload\":1}]}", q, partition);
}

static void await_segments(const char *q, const char *partition, int n)
{
    sql_await(sfmt("%d", n), 10000,
              "SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id"
              " WHERE p.queue = '%s' AND p.name = '%s'", q, partition);
}

/* Both flushes are held on locks (A's lane on A, the other lane on C), and
 * a push to A and one to B (C's lane) gather. When C's lock goes, the free
 * flush takes B alone: B commits while A is still held. Before lanes it
 * took A's push too and waited on A's lock with it. */
TEST(a_push_does_not_wait_behind_a_flush_held_on_another_lanes_partition)
{
    silt_server s;
    srv_start(&s, (const char *[]){ "PUSH_MAX_FLUSHES=2", NULL });
    const char *q = uniq("lanes");
    char a[96], b[96], c[96];
    partition_in_lane(a, q, 0, NULL);
    partition_in_lane(c, q, 1, NULL);
    partition_in_lane(b, q, 1, c);
    CHECK_INT(push_simple(&s, q, a, 1), 201);
    CHECK_INT(push_simple(&s, q, b, 1), 201);
    CHECK_INT(push_simple(&s, q, c, 1), 201);

    PGconn *hold_a = hold_partition(q, a), *hold_c = hold_partition(q, c);
    bg_req first_a, first_c, second_a, to_b;
    bg_start(&first_a, &s, "POST", "/api/v1/push", one_item(q, a));
    srv_await_metric(&s, "silt_http_requests_waiting", 1, 10000);
    bg_start(&first_c, &s, "POST", "/api/v1/push", one_item(q, c));
    sql_await("2", 10000, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                          " AND wait_event_type = 'Lock' AND query LIKE '%%push_flush%%'");
    bg_start(&second_a, &s, "POST", "/api/v1/push", one_item(q, a));
    bg_start(&to_b, &s, "POST", "/api/v1/push", one_item(q, b));
    srv_await_metric(&s, "silt_http_requests_waiting", 4, 10000);

    release(hold_c);
    await_segments(q, c, 2);
    await_segments(q, b, 2);           /* while A's lock is still held */
    int status;
    int64_t ms;
    bg_wait(&to_b, &status, &ms);
    CHECK_INT(status, 201);
    bg_wait(&first_c, &status, &ms);
    CHECK_INT(status, 201);
    CHECK_STR(sql("SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id"
                  " WHERE p.queue = '%s' AND p.name = '%s'", q, a), "1");

    release(hold_a);
    bg_wait(&first_a, &status, &ms);
    CHECK_INT(status, 201);
    bg_wait(&second_a, &status, &ms);
    CHECK_INT(status, 201);
    await_segments(q, a, 3);
    CHECK_INT(srv_stop(&s), 0);
}

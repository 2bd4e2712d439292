/* Integration: acks of one lease's span gathered while transactions of
 * them are in flight (src/streams/ack.c, "gathered acks": two at a time).
 * The first two acks are held in PostgreSQL by locks on their cursor rows;
 * the acks sent meanwhile wait in the server and then commit together,
 * each as if alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

#define PARTITIONS 5
#define IN_FLIGHT 2   /* ACKS_IN_FLIGHT */

typedef struct leased {
    char pid[96], lease[96];
} leased;

/* One message on each of PARTITIONS partitions, each popped (group g) under a lease of its own. */
static void pop_each(silt_server *s, const char *q, leased *out)
{
    configure_queue(s, q, "{\"leaseTime\":600}");
    for (int i = 0; i < PARTITIONS; i++) {
        push_one(s, q, sfmt("p%d", i), sfmt("m%d", i), "1");
        reply r;
        CHECK_INT(pop_from(s, q, sfmt("p%d", i), "consumerGroup=g&batch=1&wait=false", &r), 200);
        keep_str(out[i].pid, jstr(&r, "messages.0.partitionId"));
        keep_str(out[i].lease, jstr(&r, "messages.0.leaseId"));
        reply_fini(&r);
    }
}

static const char *ack_body(const leased *l, int i)
{
    return sfmt("{\"transactionId\":\"m%d\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"completed\","
                "\"consumerGroup\":\"g\"}", i, l->pid, l->lease);
}

/* Holds acks of the partition's cursor until the session ends. */
static PGconn *hold_cursor(const char *pid)
{
    PGconn *pg = test_session();
    PQclear(PQexec(pg, "BEGIN"));
    PGresult *r = PQexec(pg, sfmt("SELECT 1 FROM queen.log_consumers WHERE partition_id = '%s' AND consumer_group = 'g'"
                                  " FOR UPDATE", pid));
    CHECK_INT(PQntuples(r), 1);
    PQclear(r);
    return pg;
}

static void release_cursor(PGconn *pg)
{
    PQclear(PQexec(pg, "ROLLBACK"));
    PQfinish(pg);
}

static void await_held_acks(const char *n)
{
    sql_await(n, 10000, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND application_name = 'silt' AND wait_event_type = 'Lock'");
}

/* Acks of l[0] and l[1] sent and held on their cursors' locks (locks[0..1]):
 * every transaction the server lets fly is waiting. */
static void fill_flight(silt_server *s, const leased *l, PGconn **locks, bg_req *acks)
{
    for (int i = 0; i < IN_FLIGHT; i++) locks[i] = hold_cursor(l[i].pid);
    for (int i = 0; i < IN_FLIGHT; i++) bg_start(&acks[i], s, "POST", "/api/v1/ack", ack_body(&l[i], i));
    await_held_acks(sfmt("%d", IN_FLIGHT));
}

/* "<committed>/<leased>" of group g's cursor on the partition. */
static const char *cursor_of(const char *pid)
{
    return sql("SELECT committed || '/' || (lease_id IS NOT NULL) FROM queen.log_consumers"
               " WHERE partition_id = '%s' AND consumer_group = 'g'", pid);
}

static void await_status(bg_req *b, int want)
{
    int status;
    int64_t elapsed;
    bg_wait(b, &status, &elapsed);
    CHECK_INT(status, want);
}

TEST(acks_sent_while_two_are_in_flight_commit_together_each_as_if_alone)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("ackgather"));
    leased l[PARTITIONS];
    pop_each(&s, q, l);
    int64_t gathered = srv_metric(&s, "silt_acks_gathered_total");
    PGconn *locks[IN_FLIGHT];
    bg_req acks[PARTITIONS];
    fill_flight(&s, l, locks, acks);
    for (int i = IN_FLIGHT; i < PARTITIONS; i++) bg_start(&acks[i], &s, "POST", "/api/v1/ack", ack_body(&l[i], i));
    srv_await_metric(&s, "silt_acks_gathering", PARTITIONS - IN_FLIGHT, 10000);   /* they wait behind the two */
    CHECK_STR(cursor_of(l[IN_FLIGHT].pid), "-1/true");
    for (int i = 0; i < IN_FLIGHT; i++) release_cursor(locks[i]);
    for (int i = 0; i < PARTITIONS; i++) await_status(&acks[i], 200);
    CHECK_INT(srv_metric(&s, "silt_acks_gathered_total") - gathered, PARTITIONS - IN_FLIGHT);
    CHECK_INT(srv_metric(&s, "silt_acks_gathering"), 0);
    for (int i = 0; i < PARTITIONS; i++) CHECK_STR(cursor_of(l[i].pid), "0/false");   /* committed, lease given back */
    srv_stop(&s);
}

/* A gathered transaction that meets a held cursor gives up after its
 * lock_timeout; each ack goes again alone, and those not held commit while
 * the held one waits. */
TEST(a_gathered_ack_transaction_that_meets_a_held_cursor_sends_each_ack_again_alone)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("ackalone"));
    leased l[PARTITIONS];
    pop_each(&s, q, l);
    PGconn *locks[IN_FLIGHT];
    bg_req acks[PARTITIONS];
    fill_flight(&s, l, locks, acks);
    PGconn *held = hold_cursor(l[PARTITIONS - 1].pid);
    for (int i = IN_FLIGHT; i < PARTITIONS; i++) bg_start(&acks[i], &s, "POST", "/api/v1/ack", ack_body(&l[i], i));
    srv_await_metric(&s, "silt_acks_gathering", PARTITIONS - IN_FLIGHT, 10000);
    release_cursor(locks[0]);   /* a slot: the gathered three go, and meet the held cursor */
    await_status(&acks[0], 200);
    for (int i = IN_FLIGHT; i < PARTITIONS - 1; i++) await_status(&acks[i], 200);   /* alone, past the held one */
    CHECK_STR(cursor_of(l[PARTITIONS - 1].pid), "-1/true");
    release_cursor(held);
    await_status(&acks[PARTITIONS - 1], 200);
    CHECK_STR(cursor_of(l[PARTITIONS - 1].pid), "0/false");
    release_cursor(locks[1]);
    await_status(&acks[1], 200);
    srv_stop(&s);
}

/* Acks whose requests timed out while they waited to be gathered are
 * never sent: each is answered 503 (not written) and no cursor moves. */
TEST(acks_that_timed_out_while_they_waited_to_be_gathered_are_never_applied)
{
    silt_server s;
    srv_start(&s, (const char *[]){ "REQUEST_TIMEOUT_MS=1500", NULL });
    char q[96];
    keep_str(q, uniq("ackgone"));
    leased l[PARTITIONS];
    pop_each(&s, q, l);
    PGconn *locks[IN_FLIGHT];
    bg_req acks[PARTITIONS];
    fill_flight(&s, l, locks, acks);
    for (int i = IN_FLIGHT; i < PARTITIONS; i++) bg_start(&acks[i], &s, "POST", "/api/v1/ack", ack_body(&l[i], i));
    srv_await_metric(&s, "silt_acks_gathering", PARTITIONS - IN_FLIGHT, 10000);
    for (int i = IN_FLIGHT; i < PARTITIONS; i++) await_status(&acks[i], 503);   /* never sent: not written */
    for (int i = 0; i < IN_FLIGHT; i++) await_status(&acks[i], 504);   /* sent: outcome unknown at the timeout */
    for (int i = 0; i < IN_FLIGHT; i++) release_cursor(locks[i]);
    srv_await_metric(&s, "silt_acks_gathering", 0, 10000);
    for (int i = 0; i < IN_FLIGHT; i++)
        sql_await("0/false", 10000, "SELECT committed || '/' || (lease_id IS NOT NULL) FROM queen.log_consumers"
                                    " WHERE partition_id = '%s' AND consumer_group = 'g'", l[i].pid);
    for (int i = IN_FLIGHT; i < PARTITIONS; i++) CHECK_STR(cursor_of(l[i].pid), "-1/true");
    srv_stop(&s);
}

/* Integration: acks of one lease's span gathered while a transaction of
 * them is in flight (src/streams/ack.c, "gathered acks"). The server runs
 * with one database connection, which a push held by a table lock
 * occupies: the first ack's transaction waits for it, and the acks sent
 * meanwhile wait in the server, then commit together, each as if alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

#define PARTITIONS 5

static const char *const ONE_CONNECTION[] = { "DB_POOL_SIZE=1", "DB_PIPELINE_DEPTH=1", NULL };

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

/* A push to q that holds the server's only connection until session_release. */
static PGconn *hold_connection(silt_server *s, const char *q, bg_req *push)
{
    PGconn *pg = session_holding("LOCK TABLE queen.log_partitions IN EXCLUSIVE MODE");
    bg_start(push, s, "POST", "/api/v1/push",
             sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"p0\",\"payload\":1}]}", q));
    await_silt_lock_waiters(1);
    return pg;
}

static const char *ack_body(const leased *l, int i)
{
    return sfmt("{\"transactionId\":\"m%d\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"completed\","
                "\"consumerGroup\":\"g\"}", i, l->pid, l->lease);
}

/* Holds acks of the partition's cursor until session_release. */
static PGconn *hold_cursor(const char *pid)
{
    return session_holding(sfmt("SELECT 1 FROM queen.log_consumers WHERE partition_id = '%s' AND consumer_group = 'g'"
                                " FOR UPDATE", pid));
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

/* The first ack waits for the connection; the other PARTITIONS - 1 gather. */
static void gather_behind_first(silt_server *s, const leased *l, bg_req *acks)
{
    bg_start(&acks[0], s, "POST", "/api/v1/ack", ack_body(&l[0], 0));
    srv_await_metric(s, "silt_http_requests_waiting", 2, 10000);   /* the push's and the first ack's jobs */
    for (int i = 1; i < PARTITIONS; i++) bg_start(&acks[i], s, "POST", "/api/v1/ack", ack_body(&l[i], i));
    srv_await_metric(s, "silt_acks_gathering", PARTITIONS - 1, 10000);
}

TEST(acks_sent_while_one_is_in_flight_commit_together_each_as_if_alone)
{
    silt_server s;
    srv_start(&s, ONE_CONNECTION);
    char q[96];
    keep_str(q, uniq("ackgather"));
    leased l[PARTITIONS];
    pop_each(&s, q, l);
    int64_t gathered = srv_metric(&s, "silt_acks_gathered_total");
    bg_req push, acks[PARTITIONS];
    PGconn *lock = hold_connection(&s, q, &push);
    gather_behind_first(&s, l, acks);
    CHECK_STR(cursor_of(l[1].pid), "-1/true");
    session_release(lock);
    await_status(&push, 201);
    for (int i = 0; i < PARTITIONS; i++) await_status(&acks[i], 200);
    CHECK_INT(srv_metric(&s, "silt_acks_gathered_total") - gathered, PARTITIONS - 1);
    CHECK_INT(srv_metric(&s, "silt_acks_gathering"), 0);
    for (int i = 0; i < PARTITIONS; i++) CHECK_STR(cursor_of(l[i].pid), "0/false");   /* committed, lease given back */
    srv_stop(&s);
}

/* A gathered transaction that meets a held cursor gives up after its
 * lock_timeout; each ack goes again alone (in the transaction's order, the
 * held cursor's last on the one connection), and those not held commit
 * while the held one waits. */
TEST(a_gathered_ack_transaction_that_meets_a_held_cursor_sends_each_ack_again_alone)
{
    silt_server s;
    srv_start(&s, ONE_CONNECTION);
    char q[96];
    keep_str(q, uniq("ackalone"));
    leased l[PARTITIONS];
    pop_each(&s, q, l);
    int last = 1;   /* of the gathered, the partition the transaction locks last */
    for (int i = 2; i < PARTITIONS; i++)
        if (strcmp(l[i].pid, l[last].pid) > 0) last = i;
    bg_req push, acks[PARTITIONS];
    PGconn *lock = hold_connection(&s, q, &push);
    gather_behind_first(&s, l, acks);
    PGconn *held = hold_cursor(l[last].pid);
    session_release(lock);
    await_status(&push, 201);
    for (int i = 0; i < PARTITIONS; i++)
        if (i != last) await_status(&acks[i], 200);
    CHECK_STR(cursor_of(l[last].pid), "-1/true");
    session_release(held);
    await_status(&acks[last], 200);
    for (int i = 0; i < PARTITIONS; i++) CHECK_STR(cursor_of(l[i].pid), "0/false");
    srv_stop(&s);
}

/* Acks whose requests timed out while they waited to be gathered are
 * never sent: each is answered 503 (not written) and its cursor does not
 * move. The first ack's transaction is sent (pipelined behind the held
 * push), so its timeout answers 504 (outcome unknown), and it commits. */
TEST(acks_that_timed_out_while_they_waited_to_be_gathered_are_never_applied)
{
    silt_server s;
    srv_start(&s, (const char *[]){ "DB_POOL_SIZE=1", "DB_PIPELINE_DEPTH=2", "REQUEST_TIMEOUT_MS=1500", NULL });
    char q[96];
    keep_str(q, uniq("ackgone"));
    leased l[PARTITIONS];
    pop_each(&s, q, l);
    bg_req push, acks[PARTITIONS];
    PGconn *lock = hold_connection(&s, q, &push);
    gather_behind_first(&s, l, acks);
    await_status(&acks[0], 504);
    for (int i = 1; i < PARTITIONS; i++) await_status(&acks[i], 503);   /* never sent: not written */
    session_release(lock);
    sql_await("0/false", 10000, "SELECT committed || '/' || (lease_id IS NOT NULL) FROM queen.log_consumers"
                                " WHERE partition_id = '%s' AND consumer_group = 'g'", l[0].pid);
    srv_await_metric(&s, "silt_http_requests_waiting", 0, 10000);
    CHECK_INT(srv_metric(&s, "silt_acks_gathering"), 0);
    for (int i = 1; i < PARTITIONS; i++) CHECK_STR(cursor_of(l[i].pid), "-1/true");
    srv_stop(&s);
}

/* Integration: queue-wide pops of one kind gathered while a statement of
 * that kind is in flight (src/streams/pop.c, "gathered pops";
 * queen.pop_many). The first pop is held in PostgreSQL by a lock on the
 * subscriptions table its look reads; the pops sent meanwhile wait in the
 * server and then go together in one statement, each under a lease of its
 * own, each on a partition of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

#define PARTITIONS 6

/* A queue of PARTITIONS partitions with one message each, found narrow by
 * a first pop (of another group: the width is the queue's), so the next
 * queue-wide pops are gathered rather than sent behind a reconcile. */
static void narrow_queue(silt_server *s, const char *q)
{
    configure_queue(s, q, "{\"leaseTime\":600}");
    for (int i = 0; i < PARTITIONS; i++) push_one(s, q, sfmt("p%d", i), sfmt("m%d", i), "1");
    reply r;
    CHECK_INT(pop_from(s, q, NULL, "consumerGroup=warm&batch=1&wait=false", &r), 200);
    reply_fini(&r);
}

/* Holds every pop's look (its first-contact read) until session_release. */
static PGconn *hold_looks(void)
{
    return session_holding("LOCK TABLE queen.subscriptions IN ACCESS EXCLUSIVE MODE");
}

static const char *pop_path(const char *q)
{
    return sfmt("/api/v1/pop/queue/%s?consumerGroup=g&batch=1&wait=false", q);
}

/* "<leases>/<partitions>" of group g's live leases on q. */
static const char *leases_of_g(const char *q)
{
    return sql("SELECT count(DISTINCT c.lease_id) || '/' || count(DISTINCT c.partition_id) FROM queen.log_consumers c"
               " JOIN queen.log_partitions p ON p.id = c.partition_id"
               " WHERE p.queue = '%s' AND c.consumer_group = 'g' AND c.lease_id IS NOT NULL", q);
}

TEST(pops_sent_while_one_of_their_kind_is_in_flight_go_together_each_on_its_own_partition_and_lease)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("gather"));
    narrow_queue(&s, q);
    int64_t looks = srv_metric(&s, "silt_pop_queries_total");
    int64_t gathered = srv_metric(&s, "silt_pop_gathered_total");
    PGconn *lock = hold_looks();
    bg_req pops[5];
    bg_start(&pops[0], &s, "GET", pop_path(q), NULL);
    await_silt_lock_waiters(1);
    for (int i = 1; i < 5; i++) bg_start(&pops[i], &s, "GET", pop_path(q), NULL);
    srv_await_metric(&s, "silt_pop_queries_total", looks + 5, 10000);
    CHECK_INT(srv_metric(&s, "silt_pops_gathering"), 4);               /* four wait behind the first */
    CHECK_INT(srv_metric(&s, "silt_pop_gathered_total"), gathered);     /* nothing sent with another yet */
    session_release(lock);
    for (int i = 0; i < 5; i++) {
        int status;
        int64_t elapsed;
        bg_wait(&pops[i], &status, &elapsed);
        CHECK_INT(status, 200);
    }
    CHECK_INT(srv_metric(&s, "silt_pop_gathered_total") - gathered, 4);
    CHECK_INT(srv_metric(&s, "silt_pops_gathering"), 0);
    CHECK_STR(leases_of_g(q), "5/5");
    reply r;   /* the sixth partition is left, and the next pop takes it alone */
    CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=g&batch=1&wait=false", &r), 200);
    reply_fini(&r);
    CHECK_STR(leases_of_g(q), "6/6");
    CHECK_INT(srv_metric(&s, "silt_pop_gathered_total") - gathered, 4);
    srv_stop(&s);
}

/* Group g's n-th live lease on q (by partition name): "name partitionId leaseId". */
static const char *nth_lease(const char *q, int n)
{
    return sql("SELECT p.name || ' ' || c.partition_id || ' ' || c.lease_id FROM queen.log_consumers c"
               " JOIN queen.log_partitions p ON p.id = c.partition_id"
               " WHERE p.queue = '%s' AND c.consumer_group = 'g' AND c.lease_id IS NOT NULL"
               " ORDER BY p.name LIMIT 1 OFFSET %d", q, n);
}

static void ack(silt_server *s, const char *partition, const char *pid, const char *lease, reply *r)
{
    rq(s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"m%s\",\"partitionId\":\"%s\",\"leaseId\":\"%s\","
                                      "\"status\":\"completed\",\"consumerGroup\":\"g\"}",
                                      partition + 1, pid, lease), r);
}

/* Each pop of a gathered statement acks under its own lease; an ack under
 * another's lease is refused. */
TEST(pops_gathered_in_one_statement_are_acked_each_under_its_own_lease)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("gatherack"));
    narrow_queue(&s, q);
    int64_t looks = srv_metric(&s, "silt_pop_queries_total");
    int64_t gathered = srv_metric(&s, "silt_pop_gathered_total");
    PGconn *lock = hold_looks();
    bg_req pops[3];
    bg_start(&pops[0], &s, "GET", pop_path(q), NULL);
    await_silt_lock_waiters(1);
    for (int i = 1; i < 3; i++) bg_start(&pops[i], &s, "GET", pop_path(q), NULL);
    srv_await_metric(&s, "silt_pop_queries_total", looks + 3, 10000);
    session_release(lock);
    for (int i = 0; i < 3; i++) {
        int status;
        int64_t elapsed;
        bg_wait(&pops[i], &status, &elapsed);
        CHECK_INT(status, 200);
    }
    CHECK_INT(srv_metric(&s, "silt_pop_gathered_total") - gathered, 2);
    char name[3][96], pid[3][96], lease[3][96];
    for (int i = 0; i < 3; i++) {
        CHECK(sscanf(nth_lease(q, i), "%95s %95s %95s", name[i], pid[i], lease[i]) == 3);
    }
    reply r;
    ack(&s, name[0], pid[0], lease[1], &r);
    CHECK(r.status != 200 || !jbool(&r, "0.success"));   /* another pop's lease */
    reply_fini(&r);
    for (int i = 0; i < 3; i++) {
        ack(&s, name[i], pid[i], lease[i], &r);
        CHECK_INT(r.status, 200);
        CHECK(jbool(&r, "0.success"));
        reply_fini(&r);
    }
    CHECK_STR(leases_of_g(q), "0/0");
    srv_stop(&s);
}

/* A pop whose client leaves while it waits to be gathered is never sent:
 * it leases nothing, and the pop gathered beside it is served. A long-poll
 * and pops that do not wait are of one kind. */
TEST(a_pop_whose_client_left_while_it_waited_to_be_gathered_leases_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("gathergone"));
    narrow_queue(&s, q);
    PGconn *lock = hold_looks();
    bg_req first, beside;
    bg_start(&first, &s, "GET", pop_path(q), NULL);
    await_silt_lock_waiters(1);
    int64_t looks = srv_metric(&s, "silt_pop_queries_total");
    bg_req gone;   /* a long-poll: the server watches its connection (a wait=false pop's is not) */
    bg_start(&gone, &s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&batch=1&wait=true&timeout=30000", q), NULL);
    bg_start(&beside, &s, "GET", pop_path(q), NULL);
    srv_await_metric(&s, "silt_pop_queries_total", looks + 2, 10000);
    CHECK_INT(srv_metric(&s, "silt_pops_gathering"), 2);
    kill(gone.pid, SIGKILL);   /* the client vanishes; the kernel closes its socket */
    waitpid(gone.pid, NULL, 0);
    close(gone.fd);
    srv_await_metric(&s, "silt_pops_gathering", 1, 10000);   /* the server saw it leave: dropped unsent */
    session_release(lock);
    int status;
    int64_t elapsed;
    bg_wait(&first, &status, &elapsed);
    CHECK_INT(status, 200);
    bg_wait(&beside, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK_STR(leases_of_g(q), "2/2");
    srv_stop(&s);
}

/* A long-poll whose deadline passes while it waits to be gathered answers
 * at its deadline, never sent. */
TEST(a_long_poll_whose_deadline_passes_while_it_waits_to_be_gathered_answers_unsent)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("gatherlate"));
    narrow_queue(&s, q);
    PGconn *lock = hold_looks();
    bg_req first, late;
    bg_start(&first, &s, "GET", pop_path(q), NULL);
    await_silt_lock_waiters(1);
    bg_start(&late, &s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&batch=1&wait=true&timeout=300", q), NULL);
    int status;
    int64_t elapsed;
    bg_wait(&late, &status, &elapsed);   /* while the first still waits in PostgreSQL */
    CHECK_INT(status, 204);
    CHECK_INT(srv_metric(&s, "silt_pops_gathering"), 0);
    session_release(lock);
    bg_wait(&first, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK_STR(leases_of_g(q), "1/1");
    srv_stop(&s);
}

/* An autoAck pop is never gathered: it goes alone, so it can still be
 * dropped unsent until it leaves for PostgreSQL. */
TEST(an_autoack_pop_goes_alone_beside_a_statement_of_leased_pops)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("gatherauto"));
    narrow_queue(&s, q);
    reply r;   /* g's first contact, so neither pop below passes over the other's making it */
    CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=g&batch=1&wait=false", &r), 200);
    reply_fini(&r);
    PGconn *lock = hold_looks();
    bg_req leased, autoack;
    bg_start(&leased, &s, "GET", pop_path(q), NULL);
    await_silt_lock_waiters(1);
    bg_start(&autoack, &s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g&batch=1&wait=false&autoAck=true", q), NULL);
    await_silt_lock_waiters(2);   /* sent at once */
    CHECK_INT(srv_metric(&s, "silt_pops_gathering"), 0);
    session_release(lock);
    int status;
    int64_t elapsed;
    bg_wait(&leased, &status, &elapsed);
    CHECK_INT(status, 200);
    bg_wait(&autoack, &status, &elapsed);
    CHECK_INT(status, 200);
    srv_stop(&s);
}

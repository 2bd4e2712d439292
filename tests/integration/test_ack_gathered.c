/* Integration: acks of one lease's span gathered while a transaction of
 * them is in flight (src/streams/ack.c, "gathered acks"). The first ack is
 * held in PostgreSQL by a lock on its cursor row; the acks sent meanwhile
 * wait in the server and then commit together, each as if alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

#define PARTITIONS 4

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

static void await_held_ack(void)
{
    sql_await("1", 10000, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                          "AND application_name = 'silt' AND wait_event_type = 'Lock'");
}

/* "<committed>/<leased>" of group g's cursor on the partition. */
static const char *cursor_of(const char *pid)
{
    return sql("SELECT committed || '/' || (lease_id IS NOT NULL) FROM queen.log_consumers"
               " WHERE partition_id = '%s' AND consumer_group = 'g'", pid);
}

TEST(acks_sent_while_one_is_in_flight_commit_together_each_as_if_alone)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("ackgather"));
    leased l[PARTITIONS];
    pop_each(&s, q, l);
    int64_t gathered = srv_metric(&s, "silt_acks_gathered_total");
    PGconn *lock = hold_cursor(l[0].pid);
    bg_req acks[PARTITIONS];
    bg_start(&acks[0], &s, "POST", "/api/v1/ack", ack_body(&l[0], 0));
    await_held_ack();
    for (int i = 1; i < PARTITIONS; i++) bg_start(&acks[i], &s, "POST", "/api/v1/ack", ack_body(&l[i], i));
    srv_await_metric(&s, "silt_acks_gathering", PARTITIONS - 1, 10000);   /* they wait behind the first */
    CHECK_STR(cursor_of(l[1].pid), "-1/true");
    release_cursor(lock);
    for (int i = 0; i < PARTITIONS; i++) {
        int status;
        int64_t elapsed;
        bg_wait(&acks[i], &status, &elapsed);
        CHECK_INT(status, 200);
    }
    CHECK_INT(srv_metric(&s, "silt_acks_gathered_total") - gathered, PARTITIONS - 1);
    CHECK_INT(srv_metric(&s, "silt_acks_gathering"), 0);
    for (int i = 0; i < PARTITIONS; i++) CHECK_STR(cursor_of(l[i].pid), "0/false");   /* committed, lease given back */
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
    PGconn *lock = hold_cursor(l[0].pid);
    bg_req held, waiting[2];
    bg_start(&held, &s, "POST", "/api/v1/ack", ack_body(&l[0], 0));
    await_held_ack();
    for (int i = 0; i < 2; i++) bg_start(&waiting[i], &s, "POST", "/api/v1/ack", ack_body(&l[i + 1], i + 1));
    srv_await_metric(&s, "silt_acks_gathering", 2, 10000);
    int status;
    int64_t elapsed;
    for (int i = 0; i < 2; i++) {
        bg_wait(&waiting[i], &status, &elapsed);
        CHECK_INT(status, 503);   /* never sent: not written */
    }
    bg_wait(&held, &status, &elapsed);
    CHECK_INT(status, 504);   /* sent: its outcome was not known when the timeout answered */
    release_cursor(lock);
    srv_await_metric(&s, "silt_acks_gathering", 0, 10000);
    sql_await("0/false", 10000, "SELECT committed || '/' || (lease_id IS NOT NULL) FROM queen.log_consumers"
                            " WHERE partition_id = '%s' AND consumer_group = 'g'", l[0].pid);
    CHECK_STR(cursor_of(l[1].pid), "-1/true");
    CHECK_STR(cursor_of(l[2].pid), "-1/true");
    srv_stop(&s);
}

/* Integration: which partition a pop takes. It passes over a cursor another
 * transaction holds (sql/034). It used to wait for that transaction to
 * commit, only to find the partition served; now it takes the next
 * partition, or answers empty at once, and the partition is served once the
 * holder lets go. A partition the group has no cursor on comes first, then
 * the least recently served. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "harness.h"
#include "support.h"

/* An autoAck pop of group g from queue q: the partition it served, or ""
 * when it answered 204. */
static const char *pop_partition(silt_server *s, const char *q)
{
    reply r;
    int status = pop_from(s, q, NULL, "consumerGroup=g&wait=false&autoAck=true&batch=1", &r);
    if (status != 200 && status != 204)
        harness_failf(__FILE__, __LINE__, "pop: %d %s", status, r.raw.body.data ? r.raw.body.data : "");
    const char *part = status == 200 ? sfmt("%s", jstr(&r, "partition")) : "";
    reply_fini(&r);
    return part;
}

/* Holds the cursor as a pop or an ack holds it: updated in a transaction
 * not yet committed (a row lock alone does not make an insert wait). */
static PGconn *hold_cursor(const char *q, const char *partition)
{
    PGconn *pg = PQconnectdb(sfmt("host=127.0.0.1 port=%s user=postgres dbname=%s", pg_port(), test_db()));
    CHECK(PQstatus(pg) == CONNECTION_OK);
    PQclear(PQexec(pg, "BEGIN"));
    PGresult *r = PQexec(pg, sfmt("UPDATE queen.log_consumers c SET last_activity_at = now() FROM queen.log_partitions p"
                                  " WHERE p.id = c.partition_id AND p.queue = '%s' AND p.name = '%s'"
                                  " AND c.consumer_group = 'g'", q, partition));
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK && strcmp(PQcmdTuples(r), "1") == 0);
    PQclear(r);
    return pg;
}

/* Serves one message of each named partition, in the order given, so the
 * group has a cursor on each and they were last served in that order. */
static void serve_in_order(silt_server *s, const char *q, const char *const *partitions)
{
    for (size_t i = 0; partitions[i]; i++) {
        reply r;
        CHECK_INT(pop_from(s, q, partitions[i], "consumerGroup=g&wait=false&autoAck=true&batch=1", &r), 200);
        reply_fini(&r);
    }
}

/* Lets go of a cursor hold_cursor took. */
static void release_cursor(PGconn *holder)
{
    PQclear(PQexec(holder, "COMMIT"));
    PQfinish(holder);
}

TEST(pop_passes_over_a_cursor_another_transaction_holds_without_waiting_for_it)
{
    silt_server s;
    /* a pop that waited for the holder would be answered 503 by the timeout */
    srv_start(&s, (const char *[]){ "REQUEST_TIMEOUT_MS=4000", NULL });
    const char *q = uniq("held");
    push_one(&s, q, "p1", "a", "1");
    push_one(&s, q, "p1", "b", "2");
    push_one(&s, q, "p2", "c", "3");
    serve_in_order(&s, q, (const char *[]){ "p1", NULL });   /* p1's cursor exists */

    PGconn *holder = hold_cursor(q, "p1");
    CHECK_STR(pop_partition(&s, q), "p2");
    int64_t t0 = now_ms();
    CHECK_STR(pop_partition(&s, q), "");   /* p1 still has "b", but its cursor is held */
    CHECK(now_ms() - t0 < 3000);
    release_cursor(holder);
    CHECK_STR(pop_partition(&s, q), "p1");
    CHECK_STR(pop_partition(&s, q), "");
    CHECK_INT(srv_stop(&s), 0);
}

/* With a cursor on every partition, a queue-wide pop takes the least
 * recently served partition with something to deliver, passing over a
 * cursor another transaction holds. */
TEST(pop_takes_the_least_recently_served_partition_and_passes_over_a_held_one)
{
    silt_server s;
    srv_start(&s, (const char *[]){ "REQUEST_TIMEOUT_MS=4000", NULL });
    const char *q = uniq("order");
    const char *parts[] = { "p1", "p2", "p3", NULL };
    for (int i = 0; parts[i]; i++) {
        push_one(&s, q, parts[i], sfmt("%s-a", parts[i]), "1");
        push_one(&s, q, parts[i], sfmt("%s-b", parts[i]), "2");
    }
    serve_in_order(&s, q, parts);   /* p1 served longest ago, p3 last */

    PGconn *holder = hold_cursor(q, "p1");
    int64_t t0 = now_ms();
    CHECK_STR(pop_partition(&s, q), "p2");
    CHECK_STR(pop_partition(&s, q), "p3");
    CHECK_STR(pop_partition(&s, q), "");   /* p1 still has "p1-b", but its cursor is held */
    CHECK(now_ms() - t0 < 3000);
    release_cursor(holder);
    CHECK_STR(pop_partition(&s, q), "p1");
    CHECK_STR(pop_partition(&s, q), "");
    CHECK_INT(srv_stop(&s), 0);
}

/* A partition the group has never popped comes before every partition it
 * has a cursor on, however long ago those were served. */
TEST(pop_takes_a_partition_the_group_has_no_cursor_on_first)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("first");
    push_one(&s, q, "p1", "a", "1");
    push_one(&s, q, "p1", "b", "2");
    push_one(&s, q, "p2", "c", "3");
    push_one(&s, q, "p2", "d", "4");
    serve_in_order(&s, q, (const char *[]){ "p1", "p2", NULL });
    push_one(&s, q, "p3", "e", "5");
    CHECK_STR(pop_partition(&s, q), "p3");
    CHECK_STR(pop_partition(&s, q), "p1");
    CHECK_STR(pop_partition(&s, q), "p2");
    CHECK_STR(pop_partition(&s, q), "");
    CHECK_INT(srv_stop(&s), 0);
}

/* Makes group's first cursor on one partition of q as a pop makes it, in a
 * transaction left open: an autoAck pop of one message through queen.pop. */
static PGconn *make_first_cursor(const char *q, const char *partition, const char *group)
{
    PGconn *pg = PQconnectdb(sfmt("host=127.0.0.1 port=%s user=postgres dbname=%s", pg_port(), test_db()));
    CHECK(PQstatus(pg) == CONNECTION_OK);
    PQclear(PQexec(pg, "BEGIN"));
    PGresult *r = PQexec(pg, sfmt("SELECT count(*) FROM queen.pop('%s', '%s', NULL, NULL, '%s', 1, 1, true, NULL, NULL)",
                                  q, partition, group));
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK && strcmp(PQgetvalue(r, 0, 0), "1") == 0);
    PQclear(r);
    return pg;
}

/* An autoAck pop of one message of q in queue mode: the partition it
 * served, or "" when it answered 204. */
static const char *pop_queue_mode(silt_server *s, const char *q)
{
    reply r;
    int status = pop_from(s, q, NULL, "wait=false&autoAck=true&batch=1", &r);
    if (status != 200 && status != 204)
        harness_failf(__FILE__, __LINE__, "pop: %d %s", status, r.raw.body.data ? r.raw.body.data : "");
    const char *part = status == 200 ? sfmt("%s", jstr(&r, "partition")) : "";
    reply_fini(&r);
    return part;
}

/* Issue 33: a pop that came to a partition whose first cursor another pop
 * was making inserted it too, and waited for the other pop to commit, only
 * to insert nothing. It passes that partition over at once now, and takes
 * it once the other pop has committed. */
TEST(pop_passes_over_a_partition_whose_first_cursor_another_pop_is_making)
{
    silt_server s;
    /* a pop that waited for the maker would be answered 503 by the timeout */
    srv_start(&s, (const char *[]){ "REQUEST_TIMEOUT_MS=4000", NULL });
    const char *q = uniq("first-made");
    push_one(&s, q, "p1", "a", "1");
    push_one(&s, q, "p1", "b", "2");
    push_one(&s, q, "p2", "c", "3");

    PGconn *maker = make_first_cursor(q, "p1", "__QUEUE_MODE__");   /* took "a", not committed */
    int64_t t0 = now_ms();
    CHECK_STR(pop_queue_mode(&s, q), "p2");
    CHECK_STR(pop_queue_mode(&s, q), "");   /* p1 still has "b" */
    CHECK(now_ms() - t0 < 3000);
    release_cursor(maker);
    CHECK_STR(pop_queue_mode(&s, q), "p1");
    CHECK_STR(pop_queue_mode(&s, q), "");
    CHECK_INT(srv_stop(&s), 0);
}

/* The same for a group's first contact with a queue, which records the
 * group's subscription: a pop meeting another pop that is recording it
 * answers at once (it seeds no cursor meanwhile), and serves the queue once
 * the other pop has committed, from the subscription that pop recorded. */
TEST(pop_does_not_wait_for_another_pop_making_its_groups_first_contact)
{
    silt_server s;
    srv_start(&s, (const char *[]){ "REQUEST_TIMEOUT_MS=4000", NULL });
    const char *q = uniq("first-contact");
    push_one(&s, q, "p1", "a", "1");
    push_one(&s, q, "p1", "b", "2");
    push_one(&s, q, "p2", "c", "3");

    PGconn *maker = make_first_cursor(q, "p1", "g");   /* took "a", not committed */
    int64_t t0 = now_ms();
    CHECK_STR(pop_partition(&s, q), "");
    CHECK(now_ms() - t0 < 3000);
    release_cursor(maker);
    CHECK_STR(pop_partition(&s, q), "p2");   /* no cursor on p2 yet: first */
    CHECK_STR(pop_partition(&s, q), "p1");
    CHECK_STR(pop_partition(&s, q), "");
    CHECK_INT(srv_stop(&s), 0);
}

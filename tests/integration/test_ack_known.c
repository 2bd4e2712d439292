/* Integration: acks resolved from what the server handed out (sql/033,
 * src/streams/lease_book.c). The server that answered a pop sends each
 * completed item's offset with the ack; queen.ack_span commits from those
 * offsets only while the named lease is the cursor's live one, and every
 * other case takes the general path. The outcomes are the ack contract's
 * (test_ack.c runs it through this path too); these tests prove the path
 * is taken, and that offsets are never trusted past the lease they came
 * with. queen.ack is also called directly with forged offsets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"

#define QM "__QUEUE_MODE__"

typedef struct popped {
    char pid[96], lease[96];
} popped;

static popped pop_n(silt_server *s, const char *q, int n)
{
    reply r;
    popped p;
    CHECK_INT(pop_from(s, q, NULL, sfmt("batch=%d", n), &r), 200);
    keep_str(p.pid, jstr(&r, "partitionId"));
    keep_str(p.lease, jstr(&r, "leaseId"));
    reply_fini(&r);
    return p;
}

/* POST /api/v1/ack/batch of tx<first>..tx<first+n-1>, completed, under lease. */
static void ack_span(silt_server *s, const popped *p, int first, int n, reply *r)
{
    char body[4096];
    size_t len = (size_t)snprintf(body, sizeof body, "{\"acknowledgments\":[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(body + len, sizeof body - len,
                                "%s{\"transactionId\":\"tx%d\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"completed\"}",
                                i ? "," : "", first + i, p->pid, p->lease);
    snprintf(body + len, sizeof body - len, "]}");
    rq(s, "POST", "/api/v1/ack/batch", body, r);
    CHECK_INT(r->status, 200);
}

static long long committed(const char *pid)
{
    return atoll(sql("SELECT committed FROM queen.log_consumers WHERE partition_id = '%s' AND consumer_group = '%s'",
                     pid, QM));
}

/* queen.ack called directly for tx0..tx<n-1>, completed under lease, with
 * the offsets given (a literal such as '{0,1,9}'): what each item
 * answered, "true/" or "false/<error>", joined by ';'. The hashes are the sidecar's. */
static const char *ack_forged(const popped *p, int n, const char *offsets)
{
    return sql("SELECT string_agg(a.success || '/' || coalesce(a.error, ''), ';' ORDER BY a.idx)"
               "  FROM queen.ack(array_fill('%s'::text, ARRAY[%d]), array_fill('%s'::uuid, ARRAY[%d]),"
               "                 (SELECT substring(t.hashes FROM 1 FOR %d) FROM queen.log_txns t"
               "                   WHERE t.partition_id = '%s' AND t.base_offset = 0),"
               "                 array_fill('completed'::text, ARRAY[%d]), array_fill('%s'::uuid, ARRAY[%d]),"
               "                 '%s'::bigint[]) a",
               QM, n, p->pid, n, 16 * n, p->pid, n, p->lease, n, offsets);
}

TEST(ack_known_a_batch_acked_on_the_server_that_popped_it_is_resolved_from_its_lease_book)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("known");
    push_queued(&s, q, "Default", 0, 5, "tx");
    popped p = pop_n(&s, q, 5);
    CHECK_INT(srv_metric(&s, "silt_lease_book_messages"), 5);

    reply r;
    ack_span(&s, &p, 0, 3, &r);   /* part of the span: the lease stays */
    for (int i = 0; i < 3; i++) {
        CHECK(jbool(&r, sfmt("%d.success", i)));
        CHECK(!jbool(&r, sfmt("%d.leaseReleased", i)));
        CHECK(!jbool(&r, sfmt("%d.noop", i)));
    }
    reply_fini(&r);
    CHECK_INT(committed(p.pid), 2);
    CHECK_INT(srv_metric(&s, "silt_ack_items_known_total"), 3);

    ack_span(&s, &p, 1, 4, &r);   /* tx1, tx2 again (noops) and the rest: released */
    CHECK(jbool(&r, "0.noop"));
    CHECK(jbool(&r, "1.noop"));
    CHECK(!jbool(&r, "2.noop"));
    for (int i = 0; i < 4; i++) {
        CHECK(jbool(&r, sfmt("%d.success", i)));
        CHECK(jbool(&r, sfmt("%d.leaseReleased", i)));
    }
    reply_fini(&r);
    CHECK_INT(committed(p.pid), 4);
    CHECK_INT(srv_metric(&s, "silt_ack_items_known_total"), 7);
    CHECK_STR(sql("SELECT lease_id IS NULL FROM queen.log_consumers WHERE partition_id = '%s'", p.pid), "t");
    CHECK_INT(srv_metric(&s, "silt_lease_book_messages"), 0);   /* the released lease is forgotten */
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_known_a_batch_popped_through_another_server_is_acked_through_the_general_path)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    const char *q = uniq("known-other");
    push_queued(&a, q, "Default", 0, 4, "tx");
    popped p = pop_n(&a, q, 4);
    reply r;
    ack_span(&b, &p, 0, 4, &r);
    for (int i = 0; i < 4; i++) CHECK(jbool(&r, sfmt("%d.success", i)));
    CHECK(jbool(&r, "3.leaseReleased"));
    reply_fini(&r);
    CHECK_INT(committed(p.pid), 3);
    CHECK_INT(srv_metric(&b, "silt_ack_items_known_total"), 0);
    CHECK_INT(srv_stop(&b), 0);
    CHECK_INT(srv_stop(&a), 0);
}

TEST(ack_known_offsets_are_not_trusted_once_their_lease_is_not_the_live_one)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("known-stale");
    push_queued(&s, q, "Default", 0, 3, "tx");
    popped first = pop_n(&s, q, 3);
    sql("UPDATE queen.log_consumers SET lease_expires = now() - interval '1 second' WHERE partition_id = '%s'",
        first.pid);
    const char *expired = "false/invalid or expired lease;false/invalid or expired lease;false/invalid or expired lease";
    CHECK_STR(ack_forged(&first, 3, "{0,1,2}"), expired);
    CHECK_INT(committed(first.pid), -1);

    popped again = pop_n(&s, q, 3);   /* handed out again: the first lease is not the live one */
    CHECK(strcmp(again.lease, first.lease) != 0);
    CHECK_STR(ack_forged(&first, 3, "{0,1,2}"), expired);
    CHECK_INT(committed(first.pid), -1);
    CHECK_STR(sql("SELECT lease_id FROM queen.log_consumers WHERE partition_id = '%s'", first.pid), again.lease);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_known_an_offset_past_the_leased_span_sends_the_batch_to_the_general_path)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("known-past");
    push_queued(&s, q, "Default", 0, 3, "tx");
    popped p = pop_n(&s, q, 3);
    push_queued(&s, q, "Default", 3, 5, "tx");   /* offsets 3..7, not leased */
    /* tx2 claimed at 7: the hashes say 2, and the general path commits to 2 */
    CHECK_STR(ack_forged(&p, 3, "{0,1,7}"), "true/;true/;true/");
    CHECK_INT(committed(p.pid), 2);
    CHECK_STR(sql("SELECT lease_id IS NULL FROM queen.log_consumers WHERE partition_id = '%s'", p.pid), "t");
    CHECK_INT(srv_stop(&s), 0);
}

TEST(ack_known_a_batch_with_a_failed_item_takes_the_general_path_whole)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("known-failed");
    push_queued(&s, q, "Default", 0, 3, "tx");
    popped p = pop_n(&s, q, 3);
    char body[2048];
    snprintf(body, sizeof body,
             "{\"acknowledgments\":["
             "{\"transactionId\":\"tx0\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"completed\"},"
             "{\"transactionId\":\"tx1\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"failed\"},"
             "{\"transactionId\":\"tx2\",\"partitionId\":\"%s\",\"leaseId\":\"%s\",\"status\":\"completed\"}]}",
             p.pid, p.lease, p.pid, p.lease, p.pid, p.lease);
    reply r;
    rq(&s, "POST", "/api/v1/ack/batch", body, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "0.success"));
    CHECK(jbool(&r, "1.success"));
    CHECK(jbool(&r, "1.leaseReleased"));   /* the failure gives the lease back for a retry */
    reply_fini(&r);
    CHECK_INT(committed(p.pid), 0);        /* never past the failed item */
    CHECK_STR(sql("SELECT retry_count FROM queen.log_consumers WHERE partition_id = '%s'", p.pid), "1");
    CHECK_INT(srv_stop(&s), 0);
}

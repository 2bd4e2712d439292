/* Integration: the queue, group and task lists searched and sorted by the
 * server (?search=, ?sort=, ?order=), with the filtered set's size: the
 * X-Total-Count header on the queue and group lists (their body is Queen's
 * array), "total" on the task list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "raw_support.h"
#include "support.h"

/* GET path; the whole response, headers included (static ring). */
static const char *raw_get(silt_server *s, const char *path)
{
    int fd = raw_connect(s);
    raw_send_str(fd, sfmt("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path));
    const char *resp = raw_response(fd, 10000);
    close(fd);
    return resp;
}

/* The names of a list's page, "a,b,c". */
static const char *names(silt_server *s, const char *path)
{
    reply r;
    rq(s, "GET", path, NULL, &r);
    CHECK_INT(r.status, 200);
    static char out[1024];
    out[0] = '\0';
    for (int i = 0; i < (int)r.doc.tokens[0].count; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? "," : "", jstr(&r, sfmt("%d.name", i)));
    reply_fini(&r);
    return out;
}

TEST(queue_list_is_searched_and_sorted_by_the_server_with_the_filtered_total)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *p = uniq("Find");   /* search is case-insensitive: the names hold it in capitals */
    char a[96], b[96], c[96], other[96];
    keep_str(a, sfmt("%s_a", p));
    keep_str(b, sfmt("%s_b", p));
    keep_str(c, sfmt("%s_c", p));
    keep_str(other, uniq("elsewhere"));
    push_simple(&s, a, "Default", 1);
    push_simple(&s, b, "Default", 3);
    push_simple(&s, c, "Default", 2);
    push_simple(&s, other, "Default", 9);
    sql("update queen.queues set created_at = now() - interval '1 day' where name = '%s'", c);
    /* b has 3 unread by a group; a dead letter on a */
    reply r;
    CHECK_INT(pop_from(&s, a, NULL, "batch=1&consumerGroup=g", &r), 200);
    reply_fini(&r);
    CHECK_INT(pop_from(&s, b, NULL, "batch=1&consumerGroup=g", &r), 200);
    reply_fini(&r);
    sql("insert into queen.log_dlq (queue, partition_id, partition, consumer_group, message_offset, message_id,"
        " transaction_id, payload, encrypted, error_message, retry_count, created_at)"
        " select '%s', id, name, 'g', 0, gen_random_uuid(), 'x', '1', false, 'e', 0, now()"
        " from queen.log_partitions where queue = '%s'", a, a);
    const char *lower = sfmt("%s", p);
    char search[96];
    keep_str(search, lower);
    for (char *k = search; *k; k++) *k = (char)(*k >= 'A' && *k <= 'Z' ? *k - 'A' + 'a' : *k);
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s", search)), sfmt("%s,%s,%s", a, b, c));
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=name&order=desc", search)),
              sfmt("%s,%s,%s", c, b, a));
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=messages", search)), sfmt("%s,%s,%s", b, c, a));
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=messages&order=asc", search)),
              sfmt("%s,%s,%s", a, c, b));
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=lag", search)), sfmt("%s,%s,%s", b, a, c));
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=failures", search)), sfmt("%s,%s,%s", a, b, c));
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=age", search)), sfmt("%s,%s,%s", c, a, b));
    /* rate: the last rolled minute's pushes per second (a later minute than
     * any the server rolls in this test); an earlier minute does not count */
    sql("insert into queen.minute_rolls (minute, read_at, seconds) values"
        " (date_trunc('minute', now()) + interval '1 hour', now(), 60),"
        " (date_trunc('minute', now()) + interval '59 minutes', now(), 60)");
    sql("insert into queen.minute_stats (minute, queue, pushed) values"
        " (date_trunc('minute', now()) + interval '1 hour', '%s', 120),"
        " (date_trunc('minute', now()) + interval '1 hour', '%s', 60),"
        " (date_trunc('minute', now()) + interval '59 minutes', '%s', 100000)", b, c, a);
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=rate", search)), sfmt("%s,%s,%s", b, c, a));
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=rate&order=asc", search)),
              sfmt("%s,%s,%s", a, c, b));
    /* a page of the sorted set, and the set's size beside it */
    CHECK_STR(names(&s, sfmt("/api/v1/resources/queues?search=%s&sort=messages&limit=1&offset=1", search)), c);
    const char *resp = raw_get(&s, sfmt("/api/v1/resources/queues?search=%s&limit=1", search));
    CHECK_INT(raw_status(resp), 200);
    CHECK_STR(raw_header(resp, "X-Total-Count"), "3");
    resp = raw_get(&s, sfmt("/api/v1/resources/queues?search=%s", "no-such-queue-anywhere"));
    CHECK_STR(raw_header(resp, "X-Total-Count"), "0");
    CHECK_STR(raw_body(resp), "[]");
    srv_stop(&s);
}

TEST(group_list_is_searched_and_sorted_by_lag_and_age_with_the_filtered_total)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("findgroups");
    char qk[96], g1[96], g2[96], g3[96];
    keep_str(qk, q);
    keep_str(g1, uniq("gfind_one"));
    keep_str(g2, uniq("gfind_two"));
    keep_str(g3, uniq("other"));
    for (int i = 0; i < 4; i++) push_simple(&s, qk, "Default", 1);   /* a segment each, offset 0 the oldest */
    sql("update queen.log_segments set created_at = created_at - interval '1 minute' * (10 - base_offset)"
        " where partition_id in (select id from queen.log_partitions where queue = '%s')", qk);
    reply r;
    /* g1 consumes 3 of 4 (lag 1, its oldest unread the newest), g2 is subscribed and read nothing (lag 4),
     * g3 holds a lease on the first (lag 4, as old as g2's) */
    CHECK_INT(pop_from(&s, qk, NULL, sfmt("batch=3&consumerGroup=%s", g1), &r), 200);
    char body[2048] = "{\"acknowledgments\":[";
    for (int i = 0; i < 3; i++)
        snprintf(body + strlen(body), sizeof body - strlen(body), "%s{\"transactionId\":\"%s\",\"partitionId\":\"%s\","
                 "\"leaseId\":\"%s\",\"status\":\"completed\",\"consumerGroup\":\"%s\"}", i ? "," : "",
                 jstr(&r, sfmt("messages.%d.transactionId", i)), jstr(&r, "partitionId"), jstr(&r, "leaseId"), g1);
    strcat(body, "]}");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack/batch", body, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    sql("insert into queen.subscriptions (consumer_group, queue) values ('%s', '%s') on conflict do nothing", g2, qk);
    CHECK_INT(pop_from(&s, qk, NULL, sfmt("batch=1&consumerGroup=%s", g3), &r), 200);
    reply_fini(&r);
    CHECK_STR(names(&s, sfmt("/api/v1/consumer-groups?queue=%s&search=GFIND", qk)), sfmt("%s,%s", g1, g2));
    CHECK_STR(names(&s, sfmt("/api/v1/consumer-groups?queue=%s&search=gfind&sort=lag", qk)), sfmt("%s,%s", g2, g1));
    CHECK_STR(names(&s, sfmt("/api/v1/consumer-groups?queue=%s&search=gfind&sort=lag&order=asc", qk)),
              sfmt("%s,%s", g1, g2));
    CHECK_STR(names(&s, sfmt("/api/v1/consumer-groups?queue=%s&sort=age&limit=1", qk)), g2);
    const char *resp = raw_get(&s, sfmt("/api/v1/consumer-groups?queue=%s&search=gfind&limit=1", qk));
    CHECK_STR(raw_header(resp, "X-Total-Count"), "2");
    srv_stop(&s);
}

TEST(task_list_is_searched_by_name_newest_first_on_asking_with_the_filtered_total)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("findtasks");
    char qk[96];
    keep_str(qk, q);
    const char *ids[4];
    char kept[4][96];
    const char *task_names[4] = { "send_Email", "resize", "email_digest", "bill" };
    for (int i = 0; i < 4; i++) {
        reply r;
        rq(&s, "POST", "/api/v1/tasks", sfmt("{\"name\":\"%s\",\"queue\":\"%s\",\"args\":{}}", task_names[i], qk), &r);
        CHECK_INT(r.status, 201);
        keep_str(kept[i], jstr(&r, "id"));
        ids[i] = kept[i];
        reply_fini(&r);
    }
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks?queue=%s&search=EMAIL", qk), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "total"), 2);
    CHECK(!jbool(&r, "totalCapped"));
    CHECK_STR(jstr(&r, "tasks.0.id"), ids[0]);
    CHECK_STR(jstr(&r, "tasks.1.id"), ids[2]);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/tasks?queue=%s&order=desc&limit=2", qk), NULL, &r);
    CHECK_INT(jint(&r, "total"), 4);
    CHECK_STR(jstr(&r, "tasks.0.id"), ids[3]);
    CHECK_STR(jstr(&r, "tasks.1.id"), ids[2]);
    char cursor[96];
    keep_str(cursor, jstr(&r, "nextCursor"));
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/tasks?queue=%s&order=desc&limit=2&cursor=%s", qk, cursor), NULL, &r);
    CHECK_STR(jstr(&r, "tasks.0.id"), ids[1]);
    CHECK_STR(jstr(&r, "tasks.1.id"), ids[0]);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(list_search_sort_and_order_refuse_bad_values_naming_the_parameter)
{
    silt_server s;
    srv_start(&s, NULL);
    char longname[300];
    memset(longname, 's', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    char long_groups[400], long_tasks[400];   /* not in sfmt's ring: the loop's requests reuse it */
    snprintf(long_groups, sizeof long_groups, "/api/v1/consumer-groups?search=%s", longname);
    snprintf(long_tasks, sizeof long_tasks, "/api/v1/tasks?search=%s", longname);
    const char *cases[][2] = {
        { "/api/v1/resources/queues?sort=size", "sort" },
        { "/api/v1/resources/queues?sort=lag&order=up", "order" },
        { "/api/v1/consumer-groups?sort=failures", "sort" },
        { "/api/v1/consumer-groups?order=DESC", "order" },
        { long_groups, "search" },
        { "/api/v1/tasks?order=newest", "order" },
        { long_tasks, "search" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) rq_refused(&s, "GET", cases[i][0], NULL, cases[i][1]);
    srv_stop(&s);
}

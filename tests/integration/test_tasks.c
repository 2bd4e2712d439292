/* Integration: the task engine over HTTP — sends, claims, runs, retries,
 * cancels, waits and the fencing of late calls. Recovery has its own file
 * (test_task_recovery.c). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "base/buf.h"
#include "harness.h"
#include "support.h"
#include "task_support.h"

TEST(a_sent_task_is_pending_and_reads_back_its_args_verbatim)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"add\",\"queue\":\"math\",\"args\":{\"a\": 1, \"b\":[2, 3.50]}}"));
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "status"), "PENDING");
    CHECK_STR(jstr(&r, "name"), "add");
    CHECK_STR(jstr(&r, "queue"), "math");
    CHECK_STR(jraw(&r, "args"), "{\"a\": 1, \"b\":[2, 3.50]}");
    CHECK_INT(jint(&r, "priority"), 100);
    CHECK_INT(jint(&r, "attempt"), 0);
    reply_fini(&r);
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", id), "PENDING");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_history"), "0");
    srv_stop(&s);
}

TEST(a_task_id_is_a_uuidv7)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *id = task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    CHECK(strlen(id) == 36 && id[14] == '7');
    srv_stop(&s);
}

TEST(a_second_send_with_the_same_idempotency_key_returns_the_first_task)
{
    silt_server s;
    srv_start(&s, NULL);
    char first[96];
    keep_str(first, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"idempotencyKey\":\"order-7\"}"));
    reply r;
    rq(&s, "POST", "/api/v1/tasks", "{\"name\":\"other\",\"queue\":\"q\",\"idempotencyKey\":\"order-7\"}", &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "id"), first);
    CHECK(!jbool(&r, "created"));
    reply_fini(&r);
    /* in one batch too: the first of the batch wins */
    rq(&s, "POST", "/api/v1/tasks", "{\"tasks\":[{\"name\":\"a\",\"queue\":\"q\",\"idempotencyKey\":\"k2\"},"
       "{\"name\":\"b\",\"queue\":\"q\",\"idempotencyKey\":\"k2\"}]}", &r);
    CHECK_INT(r.status, 201);
    CHECK(jbool(&r, "tasks.0.created"));
    CHECK(!jbool(&r, "tasks.1.created"));
    CHECK_STR(jstr(&r, "tasks.1.id"), jstr(&r, "tasks.0.id"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "2");
    /* and after the first one finished */
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    CHECK_STR(c.id, first);
    task_call(&s, "start", &c, NULL);
    task_call(&s, "complete", &c, NULL);
    rq(&s, "POST", "/api/v1/tasks", "{\"name\":\"t\",\"queue\":\"q\",\"idempotencyKey\":\"order-7\"}", &r);
    CHECK_STR(jstr(&r, "id"), first);
    CHECK(!jbool(&r, "created"));
    reply_fini(&r);
    srv_stop(&s);
}

/* Most batches carry no idempotency key: theirs neither read nor write the
 * key table (a probe of it per task, an insert statement a batch, before).
 * A batch mixing keyed and unkeyed tasks creates the unkeyed ones and still
 * lets the first of a key win. */
TEST(a_batch_without_idempotency_keys_leaves_the_key_table_alone)
{
    CHECK_STR(sql("SELECT string_agg(created::text, ',') FROM tasks.send_tasks("
                  "'[{\"name\":\"a\",\"queue\":\"q\"},{\"name\":\"b\",\"queue\":\"q\"}]');"
                  " SELECT (SELECT seq_scan + coalesce(idx_scan, 0) + n_tup_ins FROM pg_stat_xact_user_tables"
                  "         WHERE relid = 'horsies_task_idempotency'::regclass)"
                  "  || ' ' || (SELECT count(*) FROM horsies_tasks)"),
              "0 2");
    CHECK_STR(sql("SELECT string_agg(created::text, ',' ORDER BY n) || ' ' || count(DISTINCT id)"
                  " FROM tasks.send_tasks('[{\"name\":\"a\",\"queue\":\"q\",\"idempotencyKey\":\"k\"},"
                  "{\"name\":\"b\",\"queue\":\"q\"},{\"name\":\"c\",\"queue\":\"q\",\"idempotencyKey\":\"k\"}]')"
                  " WITH ORDINALITY AS t(id, created, changed, n)"),
              "true,true,false 2");
    CHECK_STR(sql("SELECT string_agg(task_name, ',' ORDER BY task_name) FROM horsies_tasks"), "a,a,b,b");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_idempotency"), "1");
}

/* A batch reads the silt.conf settings of its queues (tasks.send_queues,
 * written at a server's start) once for the batch, not once a task: 200
 * tasks of one queue probe that table's key a few times (with the plans a
 * session keeps after a few sends), and still take the queue's priority. */
TEST(a_batch_reads_its_queues_settings_once_not_once_a_task)
{
    sql("INSERT INTO tasks.send_queues (queue, declared, priority, retention_class) VALUES ('sq', true, 7, NULL)");
#define QUEUE_KEY_SCANS "pg_stat_get_xact_numscans('tasks.send_queues_pkey'::regclass)"
    CHECK_STR(sql("DO $$ BEGIN FOR i IN 1 .. 8 LOOP"   /* the session's plans, as a server's connection has them */
                  "  PERFORM tasks.send_tasks('[{\"name\":\"t\",\"queue\":\"sq\"},{\"name\":\"t\",\"queue\":\"sq\"}]');"
                  " END LOOP; END $$;"
                  " SELECT set_config('silt_test.scans', " QUEUE_KEY_SCANS "::text, false);"
                  " SELECT count(*) FROM tasks.send_tasks((SELECT json_agg(json_build_object('name', 't', 'queue', 'sq'))"
                  "                                         FROM generate_series(1, 200)));"
                  " SELECT (" QUEUE_KEY_SCANS " - current_setting('silt_test.scans')::bigint < 5)"
                  "  || ' ' || (SELECT string_agg(DISTINCT priority::text, ',') FROM horsies_tasks WHERE queue_name = 'sq')"
                  "  || ' ' || (SELECT count(*) FROM horsies_tasks WHERE queue_name = 'sq')"),
              "true 7 216");
#undef QUEUE_KEY_SCANS
}

TEST(a_task_runs_claim_start_complete_and_leaves_live_for_history_in_one_step)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"args\":[1]}"));
    task_claimed c;
    CHECK(task_claim_one(&s, "w1", "q", &c));
    CHECK_STR(c.id, id);
    CHECK_STR(sql("SELECT status || ' ' || worker_id FROM horsies_tasks WHERE id = '%s'", id), "CLAIMED w1");
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", id), "RUNNING");
    /* the attempt is the task row's while it runs: the start writes no other row */
    CHECK_STR(sql("SELECT attempt || ' ' || (started_at = last_heartbeat_at) FROM horsies_tasks WHERE id = '%s'", id),
              "1 true");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_attempts WHERE task_id = '%s'", id), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_heartbeats WHERE task_id = '%s'", id), "0");
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":{\"sum\":3}"), 200);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    CHECK_STR(sql("SELECT status || ' ' || result::text FROM horsies_task_history WHERE id = '%s'", id),
              "COMPLETED {\"sum\":3}");
    CHECK_STR(sql("SELECT attempt || ' ' || outcome || ' ' || worker_id || ' ' || (finished_at >= started_at)"
                  " FROM horsies_task_attempts WHERE task_id = '%s'", id), "1 COMPLETED w1 true");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "COMPLETED");
    CHECK_STR(jraw(&r, "result"), "{\"sum\":3}");
    CHECK_INT(jint(&r, "attempt"), 1);
    CHECK_STR(jstr(&r, "workerId"), "w1");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_late_completion_is_refused_and_never_applied_twice)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&s, "w1", "q", &c);
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":1"), 200);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":2"), 409);
    CHECK_INT(task_call(&s, "fail", &c, "\"errorCode\":\"X\""), 409);
    CHECK_STR(sql("SELECT result::text FROM horsies_task_history"), "1");
    /* a claim that is not the task's: refused before anything moves */
    task_send(&s, "{\"name\":\"t2\",\"queue\":\"q\"}");
    task_claimed d;
    task_claim_one(&s, "w1", "q", &d);
    task_claimed forged = d;
    strcpy(forged.claim, "00000000-0000-4000-8000-000000000000");
    CHECK_INT(task_call(&s, "start", &forged, NULL), 409);
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", d.id), "CLAIMED");
    srv_stop(&s);
}

TEST(claims_take_priority_first_then_enqueue_time)
{
    silt_server s;
    srv_start(&s, NULL);
    char low[96], high1[96], high2[96];
    keep_str(low, task_send(&s, "{\"name\":\"low\",\"queue\":\"q\",\"priority\":50}"));
    keep_str(high1, task_send(&s, "{\"name\":\"h1\",\"queue\":\"q\",\"priority\":1}"));
    keep_str(high2, task_send(&s, "{\"name\":\"h2\",\"queue\":\"q\",\"priority\":1}"));
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    CHECK_STR(c.id, high1);
    task_claim_one(&s, "w", "q", &c);
    CHECK_STR(c.id, high2);
    task_claim_one(&s, "w", "q", &c);
    CHECK_STR(c.id, low);
    CHECK(!task_claim_one(&s, "w", "q", &c));
    srv_stop(&s);
}

TEST(a_delayed_task_is_not_claimed_before_its_time)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"delayMs\":3600000}"));
    task_send(&s, "{\"name\":\"later\",\"queue\":\"q\",\"runAt\":\"2999-01-01T00:00:00Z\"}");
    task_claimed c;
    CHECK(!task_claim_one(&s, "w", "q", &c));
    CHECK_STR(sql("SELECT run_at > now() + interval '59 minutes' FROM horsies_tasks WHERE id = '%s'", id), "t");
    sql("UPDATE horsies_tasks SET run_at = now() - interval '1 second' WHERE id = '%s'", id);   /* its time came */
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_STR(c.id, id);
    srv_stop(&s);
}

/* Fails the running attempt with code; returns the status the reply gives. */
static const char *fail_with(silt_server *s, task_claimed *c, const char *code)
{
    reply r;
    rq(s, "POST", sfmt("/api/v1/tasks/%s/fail", c->id),
       sfmt("{\"claimId\":\"%s\",\"errorCode\":\"%s\",\"errorMessage\":\"it broke\"}", c->claim, code), &r);
    CHECK_INT(r.status, 200);
    const char *st = sfmt("%s", jstr(&r, "status"));
    reply_fini(&r);
    return st;
}

TEST(a_failure_is_retried_by_its_policy_until_the_retries_run_out)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":2,\"delaysMs\":[0]}}"));
    for (int attempt = 1; attempt <= 3; attempt++) {
        task_claimed c;
        CHECK(task_claim_one(&s, "w", "q", &c));
        CHECK_INT(c.attempt, attempt);
        CHECK_INT(task_call(&s, "start", &c, NULL), 200);
        CHECK_STR(fail_with(&s, &c, "BOOM"), attempt < 3 ? "PENDING" : "FAILED");
    }
    CHECK_STR(sql("SELECT status || ' ' || error_code || ' ' || retry_count FROM horsies_task_history"),
              "FAILED BOOM 2");
    CHECK_STR(sql("SELECT string_agg(attempt || ':' || outcome, ',' ORDER BY attempt) FROM horsies_task_attempts"),
              "1:FAILED,2:FAILED,3:FAILED");
    srv_stop(&s);
}

/* The delay (ms) before the retry a failed first attempt of the task sent
 * with policy gets: run_at minus the moment of the failure. */
static double first_retry_delay_ms(silt_server *s, const char *policy)
{
    task_send(s, sfmt("{\"name\":\"t\",\"queue\":\"q\",\"retry\":%s}", policy));
    task_claimed c;
    CHECK(task_claim_one(s, "w", "q", &c));
    CHECK_INT(task_call(s, "start", &c, NULL), 200);
    CHECK_STR(fail_with(s, &c, "BOOM"), "PENDING");
    double ms = atof(sql("SELECT extract(epoch FROM run_at - enqueued_at) * 1000 FROM horsies_tasks WHERE id = '%s'",
                         c.id));
    sql("DELETE FROM horsies_tasks");
    return ms;
}

TEST(retry_delays_follow_the_list_or_the_capped_exponential_within_the_jitter)
{
    silt_server s;
    srv_start(&s, NULL);
    double d = first_retry_delay_ms(&s, "{\"maxRetries\":3,\"delaysMs\":[60000,120000]}");
    CHECK(d > 59990 && d < 60010);
    d = first_retry_delay_ms(&s, "{\"maxRetries\":3,\"backoff\":{\"baseMs\":40000,\"capMs\":50000}}");
    CHECK(d > 39990 && d < 40010);
    for (int i = 0; i < 20; i++) {   /* jitter 0.5 around 100 s: 50..150 s, never outside */
        d = first_retry_delay_ms(&s, "{\"maxRetries\":1,\"delaysMs\":[100000],\"jitter\":0.5}");
        CHECK(d >= 49990 && d <= 150010);
    }
    /* later retries: the list's last entry repeats; the exponential doubles up to its cap */
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":9,\"delaysMs\":[1000,2000]}}");
    task_send(&s, "{\"name\":\"u\",\"queue\":\"q\",\"retry\":{\"maxRetries\":9,\"backoff\":{\"baseMs\":1000,\"capMs\":5000}}}");
    CHECK_STR(sql("SELECT string_agg(tasks.retry_delay_ms(t, n)::text, ',' ORDER BY n) FROM horsies_tasks t,"
                  " generate_series(1, 5) n WHERE t.task_name = 't'"), "1000,2000,2000,2000,2000");
    CHECK_STR(sql("SELECT string_agg(tasks.retry_delay_ms(t, n)::text, ',' ORDER BY n) FROM horsies_tasks t,"
                  " generate_series(1, 5) n WHERE t.task_name = 'u'"), "1000,2000,4000,5000,5000");
    srv_stop(&s);
}

TEST(a_code_the_policy_does_not_retry_fails_at_once)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":5,\"retryOn\":[\"TIMEOUT_UPSTREAM\"]}}");
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    task_call(&s, "start", &c, NULL);
    CHECK_STR(fail_with(&s, &c, "BAD_INPUT"), "FAILED");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":5,\"retryOn\":[\"TIMEOUT_UPSTREAM\"]}}");
    task_claim_one(&s, "w", "q", &c);
    task_call(&s, "start", &c, NULL);
    CHECK_STR(fail_with(&s, &c, "TIMEOUT_UPSTREAM"), "PENDING");
    srv_stop(&s);
}

TEST(cancel_ends_a_pending_task_at_once)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", id), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "status"), "CANCELLED");
    CHECK(jbool(&r, "cancelled"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT status FROM horsies_task_history WHERE id = '%s'", id), "CANCELLED");
    task_claimed c;
    CHECK(!task_claim_one(&s, "w", "q", &c));
    rq(&s, "POST", "/api/v1/tasks/01a233f6-7074-706c-a9b9-8691edad8860/cancel", NULL, &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(cancel_of_a_running_task_is_told_on_its_heartbeat_and_ends_it_cancelled)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":5}}");
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    task_call(&s, "start", &c, NULL);
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", c.id), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "RUNNING");
    CHECK(jbool(&r, "cancelRequested"));
    reply_fini(&r);
    CHECK_STR(task_heartbeat(&s, "w", &c), "cancelled");
    CHECK_STR(fail_with(&s, &c, "CANCELLED"), "CANCELLED");   /* not retried, whatever the policy */
    CHECK_STR(sql("SELECT status FROM horsies_task_history WHERE id = '%s'", c.id), "CANCELLED");
    CHECK_STR(task_heartbeat(&s, "w", &c), "lost");
    srv_stop(&s);
}

TEST(released_claims_go_back_to_pending_for_the_next_claimer)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&s, "w1", "q", &c);
    reply r;
    rq(&s, "POST", "/api/v1/workers/w1/release", sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\"}]}", c.id, c.claim),
       &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "released"), 1);
    reply_fini(&r);
    task_claimed d;
    CHECK(task_claim_one(&s, "w2", "q", &d));
    CHECK_STR(d.id, c.id);
    CHECK(strcmp(d.claim, c.claim) != 0);
    CHECK_INT(task_call(&s, "start", &c, NULL), 409);   /* the old claim is fenced off */
    srv_stop(&s);
}

TEST(wait_returns_as_soon_as_the_task_ends)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    task_call(&s, "start", &c, NULL);
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/tasks/%s?wait=20000", c.id), NULL);
    srv_await_metric(&s, "silt_task_waits_parked", 1, 5000);
    task_call(&s, "complete", &c, "\"result\":true");
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 10000);
    srv_await_metric(&s, "silt_task_waits_parked", 0, 5000);
    srv_stop(&s);
}

TEST(a_wait_is_woken_by_a_completion_through_another_server)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    task_wait_woken_across(&a, &b);
    srv_stop(&a);
    srv_stop(&b);
}

/* The ends of one batch travel to the other servers as few announcements as
 * fit a notification (under 8,000 bytes: about 200 ids): 300 ended in one
 * request are two payloads, and waits on another server for the first and
 * the last are both woken by them, the last one's id in the second. */
TEST(waits_on_another_server_hear_every_end_of_a_large_batch)
{
    enum { N = 300 };
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    for (int sent = 0; sent < N; sent += 100) {
        buf body;
        buf_init(&body);
        buf_puts(&body, "{\"tasks\":[");
        for (int i = 0; i < 100; i++) buf_printf(&body, "%s{\"name\":\"t\",\"queue\":\"q\"}", i ? "," : "");
        buf_puts(&body, "]}");
        reply r;
        rq(&b, "POST", "/api/v1/tasks", body.data, &r);
        CHECK_INT(r.status, 201);
        reply_fini(&r);
        buf_fini(&body);
    }
    reply r;
    rq(&b, "POST", "/api/v1/workers/w/claim", sfmt("{\"queues\":[\"q\"],\"max\":%d,\"start\":true}", N), &r);
    CHECK(jpath(&r, sfmt("tasks.%d.id", N - 1)) >= 0);
    buf finish;
    buf_init(&finish);
    buf_puts(&finish, "{\"tasks\":[");
    for (int i = 0; i < N; i++)
        buf_printf(&finish, "%s{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":%d}", i ? "," : "",
                   jstr(&r, sfmt("tasks.%d.id", i)), jstr(&r, sfmt("tasks.%d.claimId", i)), i);
    buf_puts(&finish, "]}");
    bg_req first, last;
    bg_start(&first, &a, "GET", sfmt("/api/v1/tasks/%s?wait=20000", jstr(&r, "tasks.0.id")), NULL);
    bg_start(&last, &a, "GET", sfmt("/api/v1/tasks/%s?wait=20000", jstr(&r, sfmt("tasks.%d.id", N - 1))), NULL);
    reply_fini(&r);
    srv_await_metric(&a, "silt_task_waits_parked", 2, 5000);
    PGconn *ear = test_session();
    session_run(ear, "LISTEN silt_tasks");
    rq(&b, "POST", "/api/v1/workers/w/finish", finish.data, &r);
    int64_t finished = now_ms();
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, sfmt("tasks.%d.status", N - 1)), "COMPLETED");
    reply_fini(&r);
    buf_fini(&finish);
    bg_req *waits[2] = { &first, &last };
    for (int i = 0; i < 2; i++) {
        int status;
        int64_t elapsed;
        bg_wait(waits[i], &status, &elapsed);
        CHECK_INT(status, 200);
        CHECK(waits[i]->ended_ms - finished < 3000);   /* woken, not rechecked 5 s after parking */
    }
    int payloads = 0, ids = 0;
    int64_t deadline = now_ms() + 5000;
    for (const char *n; ids < N && (n = session_notification(ear, deadline)) != NULL; ) {
        const char *done = strstr(n, " done:");
        if (!done) continue;
        payloads++;
        CHECK(strlen(n) < 8000);
        for (const char *p = done; p; p = strchr(p + 1, ',')) ids++;
    }
    CHECK_INT(ids, N);
    CHECK_INT(payloads, 2);
    PQfinish(ear);
    srv_stop(&a);
    srv_stop(&b);
}

TEST(a_parked_claim_is_woken_by_a_send_through_another_server)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    bg_req w;
    bg_start(&w, &a, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"waitMs\":20000}");
    srv_await_metric(&a, "silt_task_claims_parked", 1, 5000);
    int64_t t0 = now_ms();
    task_send(&b, "{\"name\":\"t\",\"queue\":\"q\"}");
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(now_ms() - t0 < 5000);
    CHECK_STR(sql("SELECT status FROM horsies_tasks"), "CLAIMED");
    srv_stop(&a);
    srv_stop(&b);
}

TEST(a_claim_with_nothing_to_do_answers_empty_when_its_wait_ends)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    int64_t t0 = now_ms();
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"waitMs\":300}", &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jpath(&r, "tasks.0"), -1);
    CHECK(now_ms() - t0 >= 300);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(lists_filter_by_queue_and_status_and_page_with_a_cursor)
{
    silt_server s;
    srv_start(&s, NULL);
    for (int i = 0; i < 5; i++) task_send(&s, "{\"name\":\"t\",\"queue\":\"a\"}");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"b\"}");
    task_claimed c;
    task_claim_one(&s, "w", "a", &c);
    task_call(&s, "start", &c, NULL);
    task_call(&s, "complete", &c, NULL);
    reply r;
    rq(&s, "GET", "/api/v1/tasks?queue=a&status=PENDING&limit=3", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(jpath(&r, "tasks.2") >= 0 && jpath(&r, "tasks.3") < 0);
    char cursor[96];
    keep_str(cursor, jstr(&r, "nextCursor"));
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/tasks?queue=a&status=PENDING&limit=3&cursor=%s", cursor), NULL, &r);
    CHECK(jpath(&r, "tasks.0") >= 0 && jpath(&r, "tasks.1") < 0);
    CHECK_INT(jpath(&r, "nextCursor") >= 0 && r.doc.tokens[jpath(&r, "nextCursor")].type == JSON_NULL, 1);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/tasks?status=COMPLETED", NULL, &r);
    CHECK_STR(jstr(&r, "tasks.0.id"), c.id);
    CHECK(jpath(&r, "tasks.1") < 0);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/tasks?status=DONE", NULL, &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(workers_register_and_are_listed_with_what_they_hold)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    rq(&s, "POST", "/api/v1/workers", "{\"workerId\":\"w9\",\"hostname\":\"box\",\"pid\":42,\"queues\":[\"q\"],"
       "\"concurrency\":3}", &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "workerId"), "w9");
    reply_fini(&r);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&s, "w9", "q", &c);
    task_heartbeat(&s, "w9", &c);
    CHECK_STR(sql("SELECT claimed || ' ' || running FROM horsies_worker_states WHERE worker_id = 'w9'"), "1 0");
    CHECK_STR(sql("SELECT role FROM horsies_heartbeats WHERE task_id = '%s'", c.id), "claimer");
    rq(&s, "GET", "/api/v1/workers", NULL, &r);
    CHECK_STR(jstr(&r, "workers.0.workerId"), "w9");
    CHECK_INT(jint(&r, "workers.0.claimed"), 1);
    CHECK_STR(jstr(&r, "workers.0.queues.0"), "q");
    CHECK_INT(jint(&r, "workers.0.heartbeatIntervalMs"), 30000);   /* the claimer's: it runs nothing */
    CHECK(jint(&r, "workers.0.lastSeenAgeMs") < 30000);
    CHECK(!jbool(&r, "workers.0.late"));
    reply_fini(&r);
    srv_stop(&s);
}

/* GET /api/v1/task-queues: the declared queues with their cap, and a
 * queue at its max_concurrency with a task due is held back by it. */
TEST(task_queues_say_a_queue_at_its_cap_with_a_task_due_is_held_back)
{
    const char *path = test_file("silt.conf", "[queue.capped]\nmax_concurrency = 1\npriority = 5\n[queue.free]\n");
    const char *env[] = { sfmt("SILT_CONFIG=%s", path), NULL };
    silt_server s;
    srv_start(&s, env);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"capped\"}");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"capped\"}");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"free\"}");
    reply r;
    rq(&s, "GET", "/api/v1/task-queues", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "queues.0.queue"), "capped");   /* in the file's order */
    CHECK_INT(jint(&r, "queues.0.priority"), 5);
    CHECK_INT(jint(&r, "queues.0.maxConcurrency"), 1);
    CHECK(jbool(&r, "queues.0.due") && !jbool(&r, "queues.0.atCap") && !jbool(&r, "queues.0.heldBack"));
    reply_fini(&r);
    task_claimed c;
    CHECK(task_claim_one(&s, "w1", "capped", &c));
    task_claimed d;
    CHECK(task_claim_one(&s, "w2", "free", &d));
    rq(&s, "GET", "/api/v1/task-queues", NULL, &r);
    CHECK_INT(jint(&r, "queues.0.claimedOrRunning"), 1);
    CHECK(jbool(&r, "queues.0.atCap") && jbool(&r, "queues.0.due") && jbool(&r, "queues.0.heldBack"));
    CHECK_STR(jstr(&r, "queues.1.queue"), "free");
    CHECK_INT(jint(&r, "queues.1.maxConcurrency"), 0);   /* unlimited: never at a cap */
    CHECK(!jbool(&r, "queues.1.atCap") && !jbool(&r, "queues.1.heldBack"));
    reply_fini(&r);
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":1"), 200);
    rq(&s, "GET", "/api/v1/task-queues", NULL, &r);
    CHECK(!jbool(&r, "queues.0.atCap") && !jbool(&r, "queues.0.heldBack") && jbool(&r, "queues.0.due"));
    reply_fini(&r);
    srv_stop(&s);
}

/* A worker that holds a task and has not been seen for two of its
 * heartbeat intervals is late (the dashboard flags it); one that holds
 * nothing is never late, however long it has been quiet. */
TEST(workers_holding_tasks_unseen_for_two_heartbeat_intervals_are_late)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    for (int i = 0; i < 2; i++) {
        rq(&s, "POST", "/api/v1/workers", sfmt("{\"workerId\":\"w%d\",\"queues\":[\"q\"],\"concurrency\":1}", i), &r);
        CHECK_INT(r.status, 201);
        reply_fini(&r);
    }
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&s, "w0", "q", &c);
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/start", c.id), sfmt("{\"claimId\":\"%s\"}", c.claim), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    sql("UPDATE horsies_workers SET last_seen_at = now() - interval '61 seconds'");   /* two runner intervals and a second */
    rq(&s, "GET", "/api/v1/workers", NULL, &r);
    CHECK_STR(jstr(&r, "workers.0.workerId"), "w0");
    CHECK_INT(jint(&r, "workers.0.running"), 1);
    CHECK_INT(jint(&r, "workers.0.heartbeatIntervalMs"), 30000);   /* the runner's */
    CHECK(jint(&r, "workers.0.lastSeenAgeMs") >= 61000);
    CHECK(jbool(&r, "workers.0.late"));
    CHECK(!jbool(&r, "workers.1.late"));   /* quiet, holding nothing */
    reply_fini(&r);
    sql("UPDATE horsies_workers SET last_seen_at = now() - interval '59 seconds' WHERE worker_id = 'w0'");
    rq(&s, "GET", "/api/v1/workers", NULL, &r);
    CHECK(!jbool(&r, "workers.0.late"));
    reply_fini(&r);
    srv_stop(&s);
}

/* A bad request answers 400 naming the problem and writes nothing. */
static void refused(silt_server *s, const char *path, const char *body, const char *error)
{
    reply r;
    rq(s, "POST", path, body, &r);
    if (r.status != 400 || !strstr(jstr(&r, "error"), error))
        harness_failf(__FILE__, __LINE__, "%s %s: %d %s, expected 400 with \"%s\"", path, body, r.status,
                      r.raw.body.data, error);
    reply_fini(&r);
}

TEST(bad_task_input_is_refused_with_its_reason_and_nothing_is_written)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *p = "/api/v1/tasks";
    refused(&s, p, "{\"queue\":\"q\"}", "name is required");
    refused(&s, p, "{\"name\":\"t\"}", "queue is required");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"priority\":0}", "priority must be an integer from 1 to 100");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":21}}", "maxRetries must be an integer from 0 to 20");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"jitter\":1.5}}", "retry.jitter must be a number from 0 to 1");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"delaysMs\":[10],\"backoff\":{\"baseMs\":5}}}",
            "cannot both be given");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"backoff\":{\"baseMs\":500,\"capMs\":100}}}",
            "capMs must be at least baseMs");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"runAt\":\"tomorrow\"}", "runAt must be an ISO 8601 timestamp");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"runAt\":\"2030-01-01T00:00:00Z\",\"delayMs\":5}",
            "cannot both be given");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"timeoutMs\":0}", "timeoutMs must be an integer from 1");
    refused(&s, p, "{\"tasks\":[{\"name\":\"t\",\"queue\":\"q\"},{\"name\":\"t\"}]}", "tasks[1]: queue is required");
    refused(&s, p, "{\"tasks\":[]}", "tasks must be an array of 1 to 1000 tasks");
    refused(&s, "/api/v1/workers/w/claim", "{\"queues\":[]}", "queues must be an array");
    refused(&s, "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"max\":0}", "max must be an integer from 1");
    refused(&s, "/api/v1/tasks/0192d5e0-0000-7000-8000-000000000000/start", "{}", "claimId is required");
    refused(&s, "/api/v1/tasks/nope/start", "{\"claimId\":\"x\"}", "id must be a uuid");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"max_retries\":3}}",
            "unknown field \"max_retries\" in retry");
    refused(&s, p, "{\"name\":\"t\",\"queue\":\"q\",\"delay\":5}", "unknown field \"delay\" in a task");
    refused(&s, p, "{\"tasks\":[{\"name\":\"t\",\"queue\":\"q\",\"runAt\":\"2026-01-01T00:00:00+23:59\"}]}",
            "tasks[0]: runAt must be an ISO 8601 timestamp");
    refused(&s, "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"start\":\"yes\"}", "start must be true or false");
    refused(&s, "/api/v1/workers/%ff/claim", "{\"queues\":[\"q\"]}", "the path must be UTF-8");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_idempotency"), "0");
    srv_stop(&s);
}

/* The refusal of an over-long name: the streams API's words, naming field. */
static void name_refused(silt_server *s, const char *path, const char *body, const char *error, const char *field)
{
    reply r;
    rq(s, "POST", path, body, &r);
    const char *e = jstr(&r, "error"), *f = jstr(&r, "field");
    if (r.status != 400 || !e || strcmp(e, error) != 0 || !f || strcmp(f, field) != 0)
        harness_failf(__FILE__, __LINE__, "%s: %d %.300s, expected 400 \"%s\" naming %s", path, r.status,
                      r.raw.body.data, error, field);
    reply_fini(&r);
}

static const char *name_of(size_t len)
{
    static char n[2][300];
    static int next;
    char *out = n[next++ % 2];
    memset(out, 'n', len);
    out[len] = '\0';
    return out;
}

/* Task and task queue names have the streams API's one limit, 255 bytes
 * (base/names.h): the longest is sent, claimed and read back whole; one
 * byte more is refused before anything is written. */
TEST(task_and_queue_names_of_255_bytes_are_taken_and_of_256_refused_writing_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *p = "/api/v1/tasks", *over = name_of(256);
    name_refused(&s, p, sfmt("{\"name\":\"%s\",\"queue\":\"q\"}", over), "name is longer than 255 bytes", "name");
    name_refused(&s, p, sfmt("{\"name\":\"t\",\"queue\":\"%s\"}", over), "queue is longer than 255 bytes", "queue");
    name_refused(&s, p, sfmt("{\"tasks\":[{\"name\":\"t\",\"queue\":\"q\"},{\"name\":\"%s\",\"queue\":\"q\"}]}", over),
                 "tasks[1]: name is longer than 255 bytes", "name");
    name_refused(&s, "/api/v1/workers/w/claim", sfmt("{\"queues\":[\"q\",\"%s\"]}", over),
                 "queues[1] is longer than 255 bytes", "queues");
    name_refused(&s, "/api/v1/workflows", sfmt("{\"name\":\"wf\",\"nodes\":[{\"id\":\"a\",\"task\":\"%s\",\"queue\":\"q\"}]}",
                 over), "nodes[0]: task is longer than 255 bytes", "task");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows"), "0");

    char longest[300];
    snprintf(longest, sizeof longest, "%s", name_of(255));
    char id[96];
    keep_str(id, task_send(&s, sfmt("{\"name\":\"%s\",\"queue\":\"%s\"}", longest, longest)));
    task_claimed c;
    CHECK(task_claim_one(&s, "w", longest, &c));
    CHECK_STR(c.id, id);
    CHECK_STR(sql("SELECT octet_length(task_name) || ' ' || octet_length(queue_name) FROM horsies_tasks"), "255 255");
    srv_stop(&s);
}

TEST(a_claim_that_starts_begins_the_attempt_on_the_task_row_and_its_end_writes_the_attempt_row)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}"));
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"max\":5,\"start\":true}", &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "tasks.0.status"), "RUNNING");
    CHECK_INT(jint(&r, "tasks.0.attempt"), 1);
    task_claimed c;
    keep_str(c.id, jstr(&r, "tasks.0.id"));
    keep_str(c.claim, jstr(&r, "tasks.0.claimId"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT status || ' ' || attempt || ' ' || (started_at = last_heartbeat_at) FROM horsies_tasks"
                  " WHERE id = '%s'", id), "RUNNING 1 true");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_attempts WHERE task_id = '%s'", id), "0");
    CHECK_INT(task_call(&s, "start", &c, NULL), 409);   /* already running */
    CHECK_INT(task_call(&s, "complete", &c, NULL), 200);
    CHECK_STR(sql("SELECT attempt || ' ' || outcome || ' ' || claim_id FROM horsies_task_attempts WHERE task_id = '%s'",
                  id), sfmt("1 COMPLETED %s", c.claim));
    srv_stop(&s);
}

TEST(one_finish_request_ends_many_attempts_each_by_its_own_claim)
{
    silt_server s;
    srv_start(&s, NULL);
    for (int i = 0; i < 3; i++) task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":1}}");
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"max\":3,\"start\":true}", &r);
    char id[3][96], claim[3][96];
    for (int i = 0; i < 3; i++) {
        keep_str(id[i], jstr(&r, sfmt("tasks.%d.id", i)));
        keep_str(claim[i], jstr(&r, sfmt("tasks.%d.claimId", i)));
    }
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/workers/w/finish",
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":{\"n\":0}},"
            "{\"id\":\"%s\",\"claimId\":\"%s\",\"errorCode\":\"E\",\"errorMessage\":\"m\"},"
            "{\"id\":\"%s\",\"claimId\":\"00000000-0000-4000-8000-000000000000\",\"result\":2}]}",
            id[0], claim[0], id[1], claim[1], id[2]), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "tasks.0.status"), "COMPLETED");
    CHECK_STR(jstr(&r, "tasks.1.status"), "PENDING");   /* retried */
    CHECK_INT(r.doc.tokens[jpath(&r, "tasks.2.status")].type, JSON_NULL);
    CHECK(strstr(jstr(&r, "tasks.2.error"), "not the task's current one") != NULL);
    reply_fini(&r);
    CHECK_STR(sql("SELECT status || ' ' || result::text FROM horsies_task_history WHERE id = '%s'", id[0]),
              "COMPLETED {\"n\":0}");
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", id[2]), "RUNNING");
    /* a bad item refuses the whole request before anything is written */
    rq(&s, "POST", "/api/v1/workers/w/finish",
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\"},{\"id\":\"x\"}]}", id[2], claim[2]), &r);
    CHECK_INT(r.status, 400);
    CHECK(strstr(jstr(&r, "error"), "tasks[1]: ") != NULL);
    reply_fini(&r);
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", id[2]), "RUNNING");
    srv_stop(&s);
}

/* Holds horsies_tasks locked (EXCLUSIVE) in a transaction of its own, so
 * the engine's statements on it wait until unlock_tasks. */
static PGconn *lock_tasks(void)
{
    PGconn *lock = test_session();
    PQclear(PQexec(lock, "BEGIN"));
    PGresult *lr = PQexec(lock, "LOCK TABLE horsies_tasks IN EXCLUSIVE MODE");
    CHECK_INT(PQresultStatus(lr), PGRES_COMMAND_OK);
    PQclear(lr);
    return lock;
}

static void unlock_tasks(PGconn *lock)
{
    PQclear(PQexec(lock, "COMMIT"));
    PQfinish(lock);
}

/* A long-polling claim (start: true) on a raw connection the test can hang
 * up by closing the descriptor it returns. */
static int raw_claim(const silt_server *s)
{
    const char *body = "{\"queues\":[\"q\"],\"waitMs\":30000,\"start\":true}";
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)s->port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    const char *head = sfmt("POST /api/v1/workers/ghost/claim HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                            strlen(body), body);
    CHECK(write(fd, head, strlen(head)) == (ssize_t)strlen(head));
    return fd;
}

/* While the table is locked, the first two flushes wait in the database;
 * every send that arrives meanwhile gathers into the next batch, so forty
 * concurrent sends take three transactions, not forty. */
TEST(concurrent_sends_are_gathered_into_one_transaction_while_others_are_in_flight)
{
    silt_server s;
    srv_start(&s, NULL);
    PGconn *lock = lock_tasks();
    enum { N = 40 };
    bg_req b[N];
    for (int i = 0; i < N; i++) bg_start(&b[i], &s, "POST", "/api/v1/tasks", "{\"name\":\"t\",\"queue\":\"q\"}");
    srv_await_metric(&s, "silt_http_requests_in_flight", N, 10000);   /* all of them are in the server */
    unlock_tasks(lock);
    for (int i = 0; i < N; i++) {
        int status;
        int64_t elapsed;
        bg_wait(&b[i], &status, &elapsed);
        CHECK_INT(status, 201);
    }
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "40");
    CHECK_INT(srv_metric(&s, "silt_task_flushes_total{kind=\"send\"}"), 3);
    srv_stop(&s);
}

/* The connection that listens for other servers' announcements is lost: it
 * comes back by itself, and what was announced meanwhile is not lost (a
 * reconnect makes every parked request look again). */
TEST(a_lost_listener_reconnects_and_a_wait_still_ends_with_the_completion)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    task_send(&a, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&b, "w", "q", &c);
    task_call(&b, "start", &c, NULL);
#define LISTENERS "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
    sql_await("2", 10000, LISTENERS);
    bg_req w;
    bg_start(&w, &a, "GET", sfmt("/api/v1/tasks/%s?wait=20000", c.id), NULL);
    srv_await_metric(&a, "silt_task_waits_parked", 1, 5000);
    CHECK_STR(sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database()"
                  " AND query LIKE 'LISTEN%%'"), "2");
    sql_await("2", 10000, LISTENERS);   /* both back */
    int64_t t0 = now_ms();
    task_call(&b, "complete", &c, "\"result\":1");
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(now_ms() - t0 < 4000);   /* woken, not the 5 s re-read */
    srv_stop(&a);
    srv_stop(&b);
}

TEST(a_long_error_message_is_shortened_at_a_character_boundary)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    task_call(&s, "start", &c, NULL);
    buf msg;
    buf_init(&msg);
    for (int i = 0; i < 4095; i++) buf_putc(&msg, 'a');
    buf_puts(&msg, "\xc3\xa9 and more");   /* an é straddling byte 4096 */
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/fail", c.id),
       sfmt("{\"claimId\":\"%s\",\"errorCode\":\"X\",\"errorMessage\":\"%s\"}", c.claim, msg.data), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "status"), "FAILED");
    reply_fini(&r);
    CHECK_STR(sql("SELECT length(error_message) FROM horsies_task_history WHERE id = '%s'", c.id), "4095");
    buf_fini(&msg);
    srv_stop(&s);
}

/* A claim whose wait ends within a millisecond of its query used to find no
 * park to arm (and the server fell over): many short waits, all answered. */
TEST(claims_with_waits_ending_any_moment_are_all_answered)
{
    silt_server s;
    srv_start(&s, NULL);
    for (int round = 0; round < 3; round++) {
        enum { N = 30 };
        bg_req b[N];
        for (int i = 0; i < N; i++)
            bg_start(&b[i], &s, "POST", "/api/v1/workers/w/claim", sfmt("{\"queues\":[\"empty\"],\"waitMs\":%d}", 1 + i % 3));
        for (int i = 0; i < N; i++) {
            int status;
            int64_t elapsed;
            bg_wait(&b[i], &status, &elapsed);
            CHECK_INT(status, 200);
        }
    }
    CHECK_INT(srv_stop(&s), 0);
}

TEST(a_task_past_good_until_is_not_claimed)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"goodUntil\":\"2020-01-01T00:00:00Z\"}");
    task_claimed c;
    CHECK(!task_claim_one(&s, "w", "q", &c));
    srv_stop(&s);
}

TEST(the_same_completion_twice_in_one_request_is_applied_once_and_the_repeat_refused)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    task_call(&s, "start", &c, NULL);
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/finish",
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":1},{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":2}]}",
            c.id, c.claim, c.id, c.claim), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "tasks.0.status"), "COMPLETED");
    CHECK_INT(r.doc.tokens[jpath(&r, "tasks.1.status")].type, JSON_NULL);
    reply_fini(&r);
    CHECK_STR(sql("SELECT result::text FROM horsies_task_history WHERE id = '%s'", c.id), "1");
    srv_stop(&s);
}

/* A completion ends its task under the task's running claim only: beside
 * the current claim's report in one request, a report under the task's
 * earlier claim (given back and claimed again) is refused, whichever comes
 * first, and the result kept is the current claim's. */
TEST(a_completion_under_an_earlier_claim_beside_the_current_one_is_refused_and_the_current_one_kept)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed old, cur;
    CHECK(task_claim_one(&s, "w", "q", &old));
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/release", sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\"}]}", old.id, old.claim),
       &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK(task_claim_one(&s, "w", "q", &cur));
    CHECK_STR(cur.id, old.id);
    task_call(&s, "start", &cur, NULL);
    rq(&s, "POST", "/api/v1/workers/w/finish",
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":1},{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":2}]}",
            old.id, old.claim, cur.id, cur.claim), &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.doc.tokens[jpath(&r, "tasks.0.status")].type, JSON_NULL);
    CHECK_STR(jstr(&r, "tasks.1.status"), "COMPLETED");
    reply_fini(&r);
    CHECK_STR(sql("SELECT result::text FROM horsies_task_history WHERE id = '%s'", cur.id), "2");
    CHECK_STR(sql("SELECT count(*) || ' ' || max(claim_id::text) FROM horsies_task_attempts WHERE task_id = '%s'", cur.id),
              sfmt("1 %s", cur.claim));
    srv_stop(&s);
}

/* Claims one task of queue q for worker w, started: its id and claim. */
static void claim_started(silt_server *s, char id[96], char claim[96])
{
    reply r;
    rq(s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"max\":1,\"start\":true}", &r);
    CHECK_INT(r.status, 200);
    keep_str(id, jstr(&r, "tasks.0.id"));
    keep_str(claim, jstr(&r, "tasks.0.claimId"));
    reply_fini(&r);
}

/* Waits until a finish of the test's database waits for a row lock. */
static void await_finish_waiting(void)
{
    sql_await("1", 10000, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
              " AND wait_event_type = 'Lock' AND query LIKE '%%tasks.finish_many%%'");
}

/* A finish of completions locks its tasks in id order, whatever order its
 * items name them in and wherever their rows lie: while it waits for the
 * earlier task, which a heartbeat holds, the later one is still free. In
 * the items' order or the table's it would hold the later one meanwhile,
 * and a heartbeat locking both in id order would wait for it: a circle.
 * The later task is claimed first, so its row comes first in the table. */
TEST(a_finish_of_completions_locks_its_tasks_in_id_order_whatever_order_it_names_them)
{
    silt_server s;
    srv_start(&s, NULL);
    char first[96], later[96], first_claim[96], later_claim[96], id[96];
    keep_str(first, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"priority\":50}"));
    keep_str(later, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"priority\":1}"));
    CHECK_STR(sql("SELECT '%s'::uuid < '%s'::uuid", first, later), "t");
    claim_started(&s, id, later_claim);
    CHECK_STR(id, later);
    claim_started(&s, id, first_claim);
    CHECK_STR(id, first);
    CHECK_STR(sql("SELECT (SELECT ctid FROM horsies_tasks WHERE id = '%s') < (SELECT ctid FROM horsies_tasks WHERE id = '%s')",
                  later, first), "t");
    PGconn *beat = test_session();
    session_run(beat, "BEGIN");
    session_run(beat, sfmt("SELECT 1 FROM horsies_tasks WHERE id = '%s' FOR UPDATE", first));
    bg_req b;
    bg_start(&b, &s, "POST", "/api/v1/workers/w/finish",
             sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\"},{\"id\":\"%s\",\"claimId\":\"%s\"}]}", later,
                  later_claim, first, first_claim));
    await_finish_waiting();
    session_run(beat, sfmt("SELECT 1 FROM horsies_tasks WHERE id = '%s' FOR UPDATE NOWAIT", later));
    session_run(beat, "COMMIT");
    PQfinish(beat);
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK_STR(sql("SELECT count(*) || ' ' || (SELECT count(*) FROM horsies_tasks) FROM horsies_task_history"
                  " WHERE status = 'COMPLETED'"), "2 0");
    srv_stop(&s);
}

/* Two servers' finishes of the same two tasks, naming them in opposite
 * orders, both waiting behind a heartbeat that holds the earlier task:
 * neither waits for the other in a circle (PostgreSQL would abort one as a
 * deadlock, a 5xx); the first to reach a row ends it, the other's claim is
 * then no longer the task's, and each task is completed once. */
TEST(overlapping_finishes_of_the_same_tasks_complete_each_once_without_a_deadlock)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    char first[96], later[96], first_claim[96], later_claim[96];
    task_send(&a, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_send(&a, "{\"name\":\"t\",\"queue\":\"q\"}");
    claim_started(&a, first, first_claim);
    claim_started(&a, later, later_claim);
    PGconn *beat = test_session();
    session_run(beat, "BEGIN");
    session_run(beat, sfmt("SELECT 1 FROM horsies_tasks WHERE id = '%s' FOR UPDATE", first));
    const char *items[2] = { sfmt("{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":1}", first, first_claim),
                             sfmt("{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":2}", later, later_claim) };
    bg_req fa, fb;
    bg_start(&fa, &a, "POST", "/api/v1/workers/w/finish", sfmt("{\"tasks\":[%s,%s]}", items[0], items[1]));
    bg_start(&fb, &b, "POST", "/api/v1/workers/w/finish", sfmt("{\"tasks\":[%s,%s]}", items[1], items[0]));
    sql_await("2", 10000, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
              " AND wait_event_type = 'Lock' AND query LIKE '%%tasks.finish_many%%'");
    session_run(beat, "COMMIT");
    PQfinish(beat);
    int status;
    int64_t elapsed;
    bg_wait(&fa, &status, &elapsed);
    CHECK_INT(status, 200);
    bg_wait(&fb, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK_STR(sql("SELECT string_agg(h.result::text || ' ' || (SELECT count(*) FROM horsies_task_attempts a"
                  " WHERE a.task_id = h.id), ',' ORDER BY h.result::text) FROM horsies_task_history h WHERE h.status = 'COMPLETED'"),
              "1 1,2 1");
    srv_stop(&a);
    srv_stop(&b);
}

/* A completion that waits for its task's row while recovery holds it sees
 * the row as recovery left it: the claim taken back, the completion is
 * refused, and the task keeps recovery's end of the attempt (retried). */
TEST(a_completion_waiting_while_recovery_takes_its_claim_back_is_refused)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96], claim[96];
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"retry\":{\"maxRetries\":1}}");
    claim_started(&s, id, claim);
    PGconn *recovery = test_session();
    session_run(recovery, "BEGIN");
    CHECK_STR(session_run(recovery, "SELECT action FROM tasks.recover(0, 0, '-infinity')"), "WORKER_CRASHED");
    bg_req b;
    bg_start(&b, &s, "POST", "/api/v1/workers/w/finish",
             sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\",\"result\":1}]}", id, claim));
    await_finish_waiting();
    session_run(recovery, "COMMIT");
    PQfinish(recovery);
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK_STR(sql("SELECT status || ' ' || (claim_id IS NULL) FROM horsies_tasks WHERE id = '%s'", id), "PENDING true");
    CHECK_STR(sql("SELECT string_agg(outcome || ' ' || error_code, ',') FROM horsies_task_attempts WHERE task_id = '%s'",
                  id), "FAILED WORKER_CRASHED");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_history WHERE id = '%s'", id), "0");
    srv_stop(&s);
}

/* One request that PostgreSQL refuses must not take the others of its
 * batch down with it: a trigger refuses tasks named "poison"; while the
 * table is locked, a poisoned send and good ones gather into one batch. */
TEST(a_request_that_fails_its_batch_fails_alone)
{
    silt_server s;
    srv_start(&s, NULL);
    sql("CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        " IF NEW.task_name = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF; RETURN NEW; END $$");
    sql("CREATE TRIGGER refuse_poison BEFORE INSERT ON horsies_tasks FOR EACH ROW EXECUTE FUNCTION refuse_poison()");
    PGconn *lock = lock_tasks();
    enum { N = 12 };
    bg_req b[N];
    for (int i = 0; i < N; i++)
        bg_start(&b[i], &s, "POST", "/api/v1/tasks", sfmt("{\"name\":\"%s\",\"queue\":\"q\"}", i == 5 ? "poison" : "good"));
    srv_await_metric(&s, "silt_http_requests_in_flight", N, 10000);
    unlock_tasks(lock);
    for (int i = 0; i < N; i++) {
        int status;
        int64_t elapsed;
        bg_wait(&b[i], &status, &elapsed);
        if (i == 5) CHECK(status >= 400);
        else CHECK_INT(status, 201);
    }
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "11");
    srv_stop(&s);
}

/* A long-polling claimer that hangs up takes nothing with it: what its
 * claim would have taken goes to the next claimer, untouched. */
TEST(a_claimer_that_hangs_up_while_parked_takes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    int fd = raw_claim(&s);
    srv_await_metric(&s, "silt_task_claims_parked", 1, 5000);
    close(fd);   /* the client hangs up */
    srv_await_metric(&s, "silt_task_claims_parked", 0, 5000);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}"));
    CHECK_STR(sql("SELECT status || ' ' || attempt FROM horsies_tasks WHERE id = '%s'", id), "PENDING 0");
    task_claimed c;
    CHECK(task_claim_one(&s, "real", "q", &c));
    CHECK_INT(c.attempt, 1);
    srv_stop(&s);
}

/* The same while its claim is with the database (held there by a lock): the
 * claim's take comes back, attempt and all, as if never made. */
TEST(a_claimer_that_hangs_up_while_its_claim_runs_gives_back_what_it_took)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}"));
    PGconn *lock = lock_tasks();
    int fd = raw_claim(&s);
    srv_await_metric(&s, "silt_task_claims_parked", 1, 5000);   /* registered, its claim waiting on the lock */
    close(fd);
    srv_await_metric(&s, "silt_task_claims_abandoned_total", 1, 5000);
    unlock_tasks(lock);
    sql_await("PENDING 0 0", 10000, "SELECT t.status || ' ' || t.attempt || ' ' ||"
              " (SELECT count(*) FROM horsies_task_attempts a WHERE a.task_id = t.id) FROM horsies_tasks t WHERE id = '%s'", id);
    /* PENDING 0 0 is also the state before the hung-up claim, unblocked now,
     * takes the task: the real claim waits for the give-back (which wakes
     * it), and would time out if the task were kept. */
    task_claimed c;
    CHECK(task_claim_waiting(&s, "real", "q", 10000, &c));
    CHECK_INT(c.attempt, 1);
    srv_stop(&s);
}

/* One claim-and-finish cycle in SQL, as the server's gathered calls make it:
 * a task of queue q sent, claimed and started, and completed. */
#define CLAIM_FINISH_CYCLE(q)                                                                              \
    "INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status)"                       \
    " VALUES (tasks.uuid7(), 't', '" q "', 'null', 100, 'PENDING');"                                      \
    " PERFORM tasks.finish_many(array_agg(c.id), array_agg(c.claim_id), array_agg('COMPLETED'::text),"     \
    "  array_agg(NULL::text), array_agg(NULL::text), array_agg(NULL::text))"                               \
    " FROM tasks.claim_many(ARRAY['w'], ARRAY['{" q "}'], ARRAY['{0}'], ARRAY[10], ARRAY[true]) c;"

/* Claims and finishes reach the live table's rows by key and by address,
 * never by reading it whole, whatever its size was when their plans were
 * made: a session's plans last as long as it does, and plans made while
 * the table was small (a new database, a quiet queue) chose a sequential
 * scan, kept while dead rows grew the table to thousands of pages. */
TEST(claims_and_finishes_never_read_the_live_table_whole)
{
    silt_server s;
    srv_start(&s, NULL);   /* the history's leaves of today */
    CHECK_STR(sql("DO $$ BEGIN FOR i IN 1 .. 8 LOOP " CLAIM_FINISH_CYCLE("seq") " END LOOP; END $$;"
                  " INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status)"
                  "  SELECT tasks.uuid7(), 't', 'other', 'null', 100, 'PENDING' FROM generate_series(1, 5000);"
                  " DO $$ BEGIN " CLAIM_FINISH_CYCLE("seq") " END $$;"
                  " SELECT (SELECT count(*) FROM horsies_task_history WHERE queue_name = 'seq') || ' '"
                  "  || (SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = 'horsies_tasks'::regclass)"),
              "9 0");
    srv_stop(&s);
}

/* A parked claim asks when its queues' next delayed task is due: the answer
 * comes from the delayed tasks alone (horsies_tasks_delayed), not from
 * reading every task waiting in the queue. Tasks due already, whether sent
 * without a delay or with a runAt in the past, are not delayed. */
TEST(the_next_delayed_task_is_found_without_reading_the_backlog)
{
    sql("INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, run_at)"
        " SELECT tasks.uuid7(), 't', 'dq', 'null', 100, 'PENDING', CASE g WHEN 1 THEN now() + interval '2 hours'"
        "   WHEN 2 THEN now() + interval '1 hour' WHEN 3 THEN now() - interval '1 minute' ELSE now() END"
        " FROM generate_series(1, 3000) g");
    sql("INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, run_at)"
        " VALUES (tasks.uuid7(), 't', 'other', 'null', 100, 'PENDING', now() + interval '1 minute')");
    char due[96];
    keep_str(due, sql("SELECT min(run_at) FROM horsies_tasks WHERE queue_name = 'dq' AND run_at > now()"));
    /* what the session read of the table before (its counts are flushed
     * to the shared statistics only now and then), then the call's own */
#define TASK_ROWS_READ "(SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables" \
                       " WHERE relid = 'horsies_tasks'::regclass)"
    CHECK_STR(sql("SELECT set_config('silt_test.read', " TASK_ROWS_READ "::text, false);"
                  " SELECT (tasks.next_run_at('{dq}') = '%s')"
                  "  || ' ' || (" TASK_ROWS_READ " - current_setting('silt_test.read')::bigint < 10)"
                  "  || ' ' || (tasks.next_run_at('{dq,other}') < now() + interval '2 minutes')"
                  "  || ' ' || (tasks.next_run_at('{none}') IS NULL)", due),
              "true true true true");
#undef TASK_ROWS_READ
    CHECK(strcmp(sql("SELECT '%s'::timestamptz > now() + interval '59 minutes'", due), "t") == 0);
}

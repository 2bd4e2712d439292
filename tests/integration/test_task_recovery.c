/* Integration: the task engine's recovery and its cluster-wide concurrency
 * caps, both configured in silt.conf. Time is never slept through: rows are
 * backdated past a threshold and the server's next pass (every second here)
 * is waited for with a deadline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

/* A silt.conf for this test: recovery every second, plus extra lines. */
static const char *write_conf(const char *extra)
{
    return test_file("silt.conf", sfmt("[recovery]\ncheck_interval_ms = 1000\n%s", extra ? extra : ""));
}

static void start_with_conf(silt_server *s, const char *extra)
{
    const char *env[] = { sfmt("SILT_CONFIG=%s", write_conf(extra)), NULL };
    srv_start(s, env);
}

/* One running task of queue q (policy: the send's retry member or none). */
static void running_task(silt_server *s, const char *retry, task_claimed *c)
{
    task_send(s, sfmt("{\"name\":\"t\",\"queue\":\"q\"%s%s}", retry ? ",\"retry\":" : "", retry ? retry : ""));
    CHECK(task_claim_one(s, "w", "q", c));
    CHECK_INT(task_call(s, "start", c, NULL), 200);
}

TEST(a_stale_claim_goes_back_to_pending_and_its_old_claim_is_fenced_off)
{
    silt_server s;
    start_with_conf(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    sql("UPDATE horsies_tasks SET last_heartbeat_at = now() - interval '1 hour'");
    sql_await("PENDING", 10000, "SELECT status FROM horsies_tasks WHERE id = '%s'", c.id);
    CHECK_STR(task_heartbeat(&s, "w", &c), "lost");
    CHECK_INT(task_call(&s, "start", &c, NULL), 409);
    task_claimed d;
    CHECK(task_claim_one(&s, "w2", "q", &d));
    CHECK_STR(d.id, c.id);
    srv_stop(&s);
}

TEST(a_claim_kept_alive_by_heartbeats_is_not_recovered)
{
    silt_server s;
    start_with_conf(&s, "claimer_heartbeat_interval_ms = 1000\nclaimed_stale_after_ms = 2000\n");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_send(&s, "{\"name\":\"u\",\"queue\":\"q\"}");
    task_claimed kept, dropped;
    task_claim_one(&s, "w", "q", &kept);
    task_claim_one(&s, "w", "q", &dropped);
    /* until the silent one is recovered, the other keeps beating */
    int64_t deadline = now_ms() + 15000;
    while (strcmp(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", dropped.id), "PENDING") != 0) {
        CHECK(now_ms() < deadline);
        CHECK_STR(task_heartbeat(&s, "w", &kept), "ok");
        pause_ms(200);
    }
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", kept.id), "CLAIMED");
    srv_stop(&s);
}

TEST(a_stale_runner_fails_with_worker_crashed_unless_its_policy_retries_that_code)
{
    silt_server s;
    start_with_conf(&s, NULL);
    task_claimed plain, retried;
    running_task(&s, NULL, &plain);
    running_task(&s, "{\"maxRetries\":2,\"retryOn\":[\"WORKER_CRASHED\"]}", &retried);
    sql("UPDATE horsies_tasks SET last_heartbeat_at = now() - interval '1 hour'");
    sql_await("FAILED WORKER_CRASHED", 10000,
              "SELECT status || ' ' || error_code FROM horsies_task_history WHERE id = '%s'", plain.id);
    sql_await("PENDING 1", 10000, "SELECT status || ' ' || retry_count FROM horsies_tasks WHERE id = '%s'", retried.id);
    CHECK_STR(sql("SELECT outcome || ' ' || error_code FROM horsies_task_attempts WHERE task_id = '%s'", retried.id),
              "FAILED WORKER_CRASHED");
    /* the crashed worker's late completion changes nothing */
    CHECK_INT(task_call(&s, "complete", &plain, "\"result\":1"), 409);
    CHECK_INT(task_call(&s, "complete", &retried, "\"result\":1"), 409);
    CHECK_STR(sql("SELECT status FROM horsies_task_history WHERE id = '%s'", plain.id), "FAILED");
    srv_stop(&s);
}

TEST(a_task_running_past_its_timeout_fails_with_task_timeout)
{
    silt_server s;
    start_with_conf(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"timeoutMs\":60000}");
    task_claimed c;
    task_claim_one(&s, "w", "q", &c);
    task_call(&s, "start", &c, NULL);
    task_heartbeat(&s, "w", &c);   /* alive, just slow */
    sql("UPDATE horsies_tasks SET started_at = now() - interval '61 seconds'");
    sql_await("FAILED TASK_TIMEOUT", 10000,
              "SELECT status || ' ' || error_code FROM horsies_task_history WHERE id = '%s'", c.id);
    srv_stop(&s);
}

TEST(a_pending_task_past_good_until_expires)
{
    silt_server s;
    start_with_conf(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"goodUntil\":\"2999-01-01T00:00:00Z\"}"));
    task_send(&s, "{\"name\":\"u\",\"queue\":\"q\",\"goodUntil\":\"2999-01-01T00:00:00Z\"}");
    sql("UPDATE horsies_tasks SET good_until = now() - interval '1 second' WHERE id = '%s'", id);
    sql_await("EXPIRED", 10000, "SELECT status FROM horsies_task_history WHERE id = '%s'", id);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "1");   /* the other one is still good */
    srv_stop(&s);
}

TEST(two_servers_recover_a_crashed_task_once)
{
    silt_server a, b;
    start_with_conf(&a, NULL);
    const char *env[] = { sfmt("SILT_CONFIG=%s", write_conf(NULL)), NULL };
    srv_start(&b, env);
    task_claimed c;
    running_task(&a, "{\"maxRetries\":5}", &c);
    sql("UPDATE horsies_tasks SET last_heartbeat_at = now() - interval '1 hour'");
    sql_await("PENDING", 10000, "SELECT status FROM horsies_tasks WHERE id = '%s'", c.id);
    CHECK_STR(sql("SELECT retry_count FROM horsies_tasks WHERE id = '%s'", c.id), "1");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_attempts WHERE task_id = '%s'", c.id), "1");
    srv_stop(&a);
    srv_stop(&b);
}

/* Property: however many claimers race, on however many servers, a queue
 * capped at N never has more than N tasks CLAIMED or RUNNING. Each round
 * fires concurrent claims through two servers, then checks the count and
 * completes a random share of the running tasks. */
TEST(max_concurrency_is_never_exceeded_by_concurrent_claimers_on_two_servers)
{
    silt_server a, b;
    const char *extra = "[queue.capped]\nmax_concurrency = 3\n";
    start_with_conf(&a, extra);
    const char *env[] = { sfmt("SILT_CONFIG=%s", write_conf(extra)), NULL };
    srv_start(&b, env);
    reply r;
    rq(&a, "POST", "/api/v1/tasks", sfmt("{\"tasks\":[%s]}",
       "{\"name\":\"t\",\"queue\":\"capped\"},{\"name\":\"t\",\"queue\":\"capped\"},{\"name\":\"t\",\"queue\":\"capped\"},"
       "{\"name\":\"t\",\"queue\":\"capped\"},{\"name\":\"t\",\"queue\":\"capped\"},{\"name\":\"t\",\"queue\":\"capped\"},"
       "{\"name\":\"t\",\"queue\":\"capped\"},{\"name\":\"t\",\"queue\":\"capped\"},{\"name\":\"t\",\"queue\":\"capped\"},"
       "{\"name\":\"t\",\"queue\":\"capped\"},{\"name\":\"t\",\"queue\":\"capped\"},{\"name\":\"t\",\"queue\":\"capped\"}"), &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    srand(7);
    for (int round = 0; round < 6; round++) {
        enum { CLAIMERS = 8 };
        bg_req b8[CLAIMERS];
        for (int i = 0; i < CLAIMERS; i++)
            bg_start(&b8[i], i % 2 ? &b : &a, "POST", sfmt("/api/v1/workers/w%d/claim", i),
                     "{\"queues\":[\"capped\"],\"max\":2,\"start\":true}");
        for (int i = 0; i < CLAIMERS; i++) {
            int status;
            int64_t elapsed;
            bg_wait(&b8[i], &status, &elapsed);
            CHECK_INT(status, 200);
        }
        int held = atoi(sql("SELECT count(*) FROM horsies_tasks WHERE queue_name = 'capped' AND status <> 'PENDING'"));
        int left = atoi(sql("SELECT count(*) FROM horsies_tasks WHERE queue_name = 'capped'"));
        CHECK(held <= 3);
        CHECK_INT(held, left < 3 ? left : 3);   /* and the cap is reached when there is work */
        /* complete some of them, through the finish of their own claims */
        sql("WITH done AS (SELECT id, claim_id FROM horsies_tasks WHERE status = 'RUNNING' ORDER BY random()"
            " LIMIT %d) SELECT count(*) FROM done, tasks.finish_many(ARRAY[done.id], ARRAY[done.claim_id],"
            " ARRAY['COMPLETED'], ARRAY['null'], ARRAY[NULL], ARRAY[NULL]) f", 1 + rand() % 3);
    }
    srv_stop(&a);
    srv_stop(&b);
}

TEST(sends_and_claims_on_an_undeclared_queue_are_refused_when_queues_are_declared)
{
    silt_server s;
    start_with_conf(&s, "[queue.emails]\npriority = 10\n");
    reply r;
    rq(&s, "POST", "/api/v1/tasks", "{\"name\":\"t\",\"queue\":\"nope\"}", &r);
    CHECK_INT(r.status, 400);
    CHECK(strstr(jstr(&r, "error"), "queue \"nope\" is not declared") != NULL);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"nope\"]}", &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"emails\"}"));
    CHECK_STR(sql("SELECT priority FROM horsies_tasks WHERE id = '%s'", id), "10");   /* the queue's */
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"emails\",\"priority\":3}"));
    CHECK_STR(sql("SELECT priority FROM horsies_tasks WHERE id = '%s'", id), "3");    /* the send's */
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "2");
    srv_stop(&s);
}

TEST(a_claimer_of_several_queues_serves_the_most_urgent_declared_queue_first)
{
    silt_server s;
    start_with_conf(&s, "[queue.bulk]\npriority = 90\n[queue.alerts]\npriority = 5\n[queue.zeta]\npriority = 5\n");
    char bulk[96], alert[96], zeta[96];
    keep_str(bulk, task_send(&s, "{\"name\":\"t\",\"queue\":\"bulk\",\"priority\":1}"));   /* urgent task, lax queue */
    keep_str(zeta, task_send(&s, "{\"name\":\"t\",\"queue\":\"zeta\"}"));
    keep_str(alert, task_send(&s, "{\"name\":\"t\",\"queue\":\"alerts\"}"));
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"bulk\",\"zeta\",\"alerts\"],\"max\":3}", &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "tasks.0.id"), alert);   /* priority 5, and alerts < zeta by name */
    CHECK_STR(jstr(&r, "tasks.1.id"), zeta);
    CHECK_STR(jstr(&r, "tasks.2.id"), bulk);
    reply_fini(&r);
    srv_stop(&s);
}

/* A task whose cancel was asked is not run again by a retry: a crash or a
 * timeout ends it CANCELLED, whatever its policy. */
TEST(a_cancelled_running_task_whose_worker_crashed_ends_cancelled_not_retried)
{
    silt_server s;
    start_with_conf(&s, NULL);
    task_claimed c;
    running_task(&s, "{\"maxRetries\":3}", &c);
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", c.id), NULL, &r);
    CHECK(jbool(&r, "cancelRequested"));
    reply_fini(&r);
    sql("UPDATE horsies_tasks SET last_heartbeat_at = now() - interval '1 hour'");
    sql_await("CANCELLED", 10000, "SELECT status FROM horsies_task_history WHERE id = '%s'", c.id);
    CHECK_STR(sql("SELECT outcome FROM horsies_task_attempts WHERE task_id = '%s'", c.id), "CANCELLED");
    srv_stop(&s);
}

/* A worker that names a task twice, under the claim recovery took back and
 * under its new one, hears "lost" for the old and "ok" for the new. */
TEST(a_heartbeat_answers_each_claim_it_names_not_each_task)
{
    silt_server s;
    start_with_conf(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed old, now;
    CHECK(task_claim_one(&s, "w", "q", &old));
    sql("UPDATE horsies_tasks SET last_heartbeat_at = now() - interval '1 hour'");
    sql_await("PENDING", 10000, "SELECT status FROM horsies_tasks WHERE id = '%s'", old.id);
    CHECK(task_claim_one(&s, "w", "q", &now));
    CHECK_STR(now.id, old.id);
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/heartbeat",
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\"},{\"id\":\"%s\",\"claimId\":\"%s\"}]}",
            old.id, old.claim, now.id, now.claim), &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "tasks.0.state"), "lost");   /* answered in the order named */
    CHECK_STR(jstr(&r, "tasks.1.state"), "ok");
    reply_fini(&r);
    srv_stop(&s);
}

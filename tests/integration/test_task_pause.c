/* Integration: pausing a task queue (POST /api/v1/task-queues/:queue/pause,
 * /resume; GET /api/v1/task-queues). A paused queue accepts sends and hands
 * nothing out; what runs finishes; the state lives in the database, so
 * every server honours it and it outlives restarts; a send to a paused
 * queue wakes no parked claimer, and a resume wakes them. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

static void pause_queue(silt_server *s, const char *queue, const char *verb, bool changed)
{
    reply r;
    rq(s, "POST", sfmt("/api/v1/task-queues/%s/%s", queue, verb), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "queue"), queue);
    CHECK(jbool(&r, "paused") == (strcmp(verb, "pause") == 0));
    CHECK(jbool(&r, "changed") == changed);
    reply_fini(&r);
}

/* The first paused queue GET /api/v1/task-queues lists, or "" for none. */
static const char *first_paused(silt_server *s)
{
    reply r;
    rq(s, "GET", "/api/v1/task-queues", NULL, &r);
    CHECK_INT(r.status, 200);
    const char *q = jpath(&r, "paused.0") >= 0 ? sfmt("%s", jstr(&r, "paused.0.queue")) : "";
    reply_fini(&r);
    return q;
}

TEST(a_paused_queue_accepts_sends_and_hands_nothing_out_until_resumed)
{
    silt_server s;
    srv_start(&s, NULL);
    pause_queue(&s, "q", "pause", true);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}"));
    task_claimed c;
    CHECK(!task_claim_one(&s, "w", "q", &c));
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", id), "PENDING");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"other\"}");
    CHECK(task_claim_one(&s, "w", "other", &c));   /* other queues are not held */
    pause_queue(&s, "q", "resume", true);
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_STR(c.id, id);
    srv_stop(&s);
}

TEST(pausing_a_paused_queue_or_resuming_a_running_one_changes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    CHECK_STR(first_paused(&s), "");
    pause_queue(&s, "q", "pause", true);
    const char *at = sql("SELECT paused_at FROM tasks.paused_queues WHERE queue_name = 'q'");
    char first_at[96];
    keep_str(first_at, at);
    pause_queue(&s, "q", "pause", false);
    CHECK_STR(sql("SELECT paused_at FROM tasks.paused_queues WHERE queue_name = 'q'"), first_at);
    CHECK_STR(first_paused(&s), "q");
    pause_queue(&s, "q", "resume", true);
    pause_queue(&s, "q", "resume", false);
    CHECK_STR(first_paused(&s), "");
    srv_stop(&s);
}

TEST(a_task_running_when_its_queue_is_paused_finishes)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    task_claimed running, claimed;
    CHECK(task_claim_one(&s, "w", "q", &running));
    CHECK(task_claim_one(&s, "w", "q", &claimed));
    CHECK_INT(task_call(&s, "start", &running, NULL), 200);
    pause_queue(&s, "q", "pause", true);
    CHECK_INT(task_call(&s, "start", &claimed, NULL), 200);   /* claimed before the pause: it may start */
    CHECK_INT(task_call(&s, "complete", &running, "\"result\":1"), 200);
    CHECK_INT(task_call(&s, "complete", &claimed, "\"result\":2"), 200);
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_history WHERE status = 'COMPLETED'"), "2");
    srv_stop(&s);
}

TEST(a_pause_through_one_server_holds_every_server_and_a_resume_through_another_frees_it)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    pause_queue(&a, "q", "pause", true);
    char id[96];
    keep_str(id, task_send(&b, "{\"name\":\"t\",\"queue\":\"q\"}"));
    task_claimed c;
    CHECK(!task_claim_one(&b, "w", "q", &c));
    CHECK(!task_claim_one(&a, "w", "q", &c));
    CHECK_STR(first_paused(&b), "q");
    pause_queue(&b, "q", "resume", true);
    CHECK_STR(first_paused(&a), "");
    CHECK(task_claim_one(&a, "w", "q", &c));
    CHECK_STR(c.id, id);
    srv_stop(&a);
    srv_stop(&b);
}

TEST(a_pause_outlives_a_restart_of_the_server)
{
    silt_server s;
    srv_start(&s, NULL);
    pause_queue(&s, "q", "pause", true);
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    CHECK_INT(srv_stop(&s), 0);
    silt_server again;   /* a new process on the same database */
    srv_start(&again, NULL);
    CHECK_STR(first_paused(&again), "q");
    task_claimed c;
    CHECK(!task_claim_one(&again, "w", "q", &c));
    pause_queue(&again, "q", "resume", true);
    CHECK(task_claim_one(&again, "w", "q", &c));
    srv_stop(&again);
}

/* A parked claimer of a paused queue looks again on its own timer (every
 * TASK_RECHECK_MS), never because of a send: twenty sends cost no more
 * claim statements than the time they took allows rechecks. */
TEST(sends_to_a_paused_queue_do_not_wake_its_parked_claimers)
{
    silt_server s;
    srv_start(&s, NULL);
    pause_queue(&s, "q", "pause", true);
    bg_req w;
    bg_start(&w, &s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"waitMs\":60000}");
    srv_await_metric(&s, "silt_task_claims_parked", 1, 5000);
    int64_t before = srv_metric(&s, "silt_task_flushes_total{kind=\"claim\"}"), t0 = now_ms();
    for (int i = 0; i < 20; i++) task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}");
    int64_t flushes = srv_metric(&s, "silt_task_flushes_total{kind=\"claim\"}") - before;
    CHECK(flushes <= (now_ms() - t0) / 1000 + 2);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE status = 'PENDING'"), "20");
    kill(w.pid, SIGKILL);
    waitpid(w.pid, NULL, 0);
    close(w.fd);
    srv_stop(&s);
}

TEST(a_resume_through_another_server_wakes_a_parked_claimer)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    pause_queue(&a, "q", "pause", true);
    task_send(&a, "{\"name\":\"t\",\"queue\":\"q\"}");
    bg_req w;
    bg_start(&w, &a, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"waitMs\":20000}");
    srv_await_metric(&a, "silt_task_claims_parked", 1, 5000);
    pause_queue(&b, "q", "resume", true);
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 10000);
    CHECK_STR(sql("SELECT status FROM horsies_tasks"), "CLAIMED");
    srv_stop(&a);
    srv_stop(&b);
}

TEST(pausing_a_queue_the_configuration_does_not_declare_is_404_and_a_long_name_400)
{
    silt_server s;
    const char *env[] = { sfmt("SILT_CONFIG=%s", test_file("silt.conf", "[queue.q]\npriority = 1\n")), NULL };
    srv_start(&s, env);
    reply r;
    rq(&s, "POST", "/api/v1/task-queues/nope/pause", NULL, &r);
    CHECK_INT(r.status, 404);
    CHECK(strstr(r.raw.body.data, "nope") != NULL);
    reply_fini(&r);
    char longname[300];
    memset(longname, 'x', 299);
    longname[299] = '\0';
    rq(&s, "POST", sfmt("/api/v1/task-queues/%s/pause", longname), NULL, &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "field"), "queue");
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/task-queues/q/pause", NULL, &r);
    CHECK_INT(r.status, 405);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM tasks.paused_queues"), "0");
    pause_queue(&s, "q", "pause", true);
    srv_stop(&s);
}

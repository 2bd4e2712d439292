/* Integration: `silt worker` when something dies — the server as a command
 * ends (its end is kept and resent until the server answers), the worker
 * itself (its commands die with it, so a retry never runs beside them),
 * PostgreSQL while a task runs (recovery does not count time it could not
 * see) — and how promptly it reacts: a delayed task starts when it is due,
 * not at a parked claim's next periodic look. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"
#include "worker_support.h"

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static void kill_server(silt_server *s, int sig)
{
    CHECK(kill(s->pid, sig) == 0);
    CHECK(waitpid(s->pid, NULL, 0) == s->pid);
}

/* The command ends while the server is away: the worker keeps the end and
 * resends it once the server is back, so the task completes at attempt 1
 * with the command's result, and the command ran once. */
static void end_survives_a_server_stopped_by(int sig)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"gate\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    await_file(sfmt("%s/%s.running", w.dir, id), NULL);
    kill_server(&s, sig);
    touch(sfmt("%s/go", w.dir));
    await_file(w.log, "finish:");   /* tried, and failed: the server is away */
    srv_restart(&s, NULL);
    reply r;
    await_task(&s, id, "COMPLETED", &r);
    CHECK_STR(jraw(&r, "result"), "\"finished\"");
    CHECK_INT(jint(&r, "attempt"), 1);
    reply_fini(&r);
    CHECK_INT(count_lines(sfmt("%s/%s.runs", w.dir, id)), 1);
    CHECK_STR(sql("SELECT count(*) || ' ' || string_agg(outcome, ',') FROM horsies_task_attempts WHERE task_id = '%s'",
                  id), "1 COMPLETED");
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(an_end_the_killed_server_missed_is_resent_and_the_task_completes_at_attempt_1)
{
    end_survives_a_server_stopped_by(SIGKILL);
}

TEST(an_end_a_gracefully_restarting_server_missed_is_resent_and_the_task_completes_at_attempt_1)
{
    end_survives_a_server_stopped_by(SIGTERM);
}

/* kill -9 of a worker running four commands, each with a child of its own:
 * within a second none of them is left, and the retry (after the runner
 * went stale) finds nothing of attempt 1 alive. Alone: the second is
 * measured, and a neighbour's load can stretch it. */
TEST_ALONE(a_killed_workers_commands_die_within_a_second_and_the_retry_runs_alone)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", worker_fast_recovery_conf()), NULL });
    char ids[4][96];
    for (int i = 0; i < 4; i++)
        keep_str(ids[i], task_send(&s, "{\"name\":\"family\",\"queue\":\"jobs\","
                                       "\"retry\":{\"maxRetries\":1,\"retryOn\":[\"WORKER_CRASHED\"]}}"));
    test_worker w;
    worker_start(&w, &s, "jobs", (const char *const[]){ "--concurrency", "4", NULL });
    pid_t procs[8];
    for (int i = 0; i < 4; i++) {
        procs[2 * i] = read_pid(sfmt("%s/%s.pid", w.dir, ids[i]));
        procs[2 * i + 1] = read_pid(sfmt("%s/%s.kid", w.dir, ids[i]));
    }
    CHECK(kill(w.pid, SIGKILL) == 0);
    CHECK_INT(worker_wait(&w, DEADLINE_MS), 128 + SIGKILL);
    int64_t killed = now_ms(), alive_until = killed;
    for (int i = 0; i < 8; i++) {
        while (process_alive(procs[i]) && now_ms() - killed < 5000) pause_ms(10);
        CHECK(!process_alive(procs[i]));
        if (now_ms() > alive_until) alive_until = now_ms();
    }
    printf("    the last command died %lld ms after the worker\n", (long long)(alive_until - killed));
    CHECK(alive_until - killed < 1000);
    test_worker again;
    worker_start(&again, &s, "jobs", (const char *const[]){ "--concurrency", "4", NULL });
    for (int i = 0; i < 4; i++) {
        reply r;
        await_task(&s, ids[i], "COMPLETED", &r);
        CHECK_STR(jraw(&r, "result"), "\"alone\"");
        CHECK_INT(jint(&r, "attempt"), 2);
        reply_fini(&r);
    }
    CHECK_INT(worker_stop(&again, DEADLINE_MS), 0);
    worker_cleanup(&again);
    w.pid = 0;
    worker_cleanup(&w);
    srv_stop(&s);
}

/* A claim parked when a delayed task is sent looks again when the task is
 * due. Before, it looked once a second from when it parked: a task due
 * 1.5 s after the park started half a second late. Alone: "started within
 * 300 ms of its due time" holds on a quiet machine, and a neighbour's load
 * delays the claim's wake-up past it. */
TEST_ALONE(a_parked_claim_takes_a_delayed_task_when_it_is_due)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"later\",\"delayMs\":1500}"));
    reply r;
    rq(&s, "POST", "/api/v1/workers/w1/claim", "{\"queues\":[\"later\"],\"max\":1,\"waitMs\":10000,\"start\":true}", &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "tasks.0.id"), id);
    reply_fini(&r);
    const char *late = sql("SELECT (extract(epoch FROM started_at - run_at) * 1000)::int FROM horsies_tasks"
                           " WHERE id = '%s'", id);
    printf("    started %s ms after it was due\n", late);
    CHECK(atoi(late) >= 0 && atoi(late) < 300);
    srv_stop(&s);
}

/* PostgreSQL stops for longer than running_stale_after_ms while a task
 * runs: its worker, alive throughout, completes it at attempt 1. A worker
 * killed during the same outage is failed WORKER_CRASHED once the database
 * is back and its heartbeats stay missing. Alone: it stops the suite's
 * PostgreSQL, which every other test uses. */
TEST_ALONE(a_postgresql_outage_fails_no_live_task_but_a_worker_that_died_in_it_is_recovered)
{
    const char *dir = getenv("SILT_TEST_PGDIR");
    if (!dir || !*dir || access("scripts/pgcluster.sh", X_OK) != 0) {
        printf("    note: SILT_TEST_PGDIR unset (or scripts/pgcluster.sh not here): outage not checked\n");
        return;
    }
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", worker_fast_recovery_conf()), NULL });
    char live[96], dead[96];
    keep_str(live, task_send(&s, "{\"name\":\"gate\",\"queue\":\"alive\"}"));
    keep_str(dead, task_send(&s, "{\"name\":\"hang\",\"queue\":\"dies\"}"));
    test_worker a, b;
    worker_start(&a, &s, "alive", NULL);
    worker_start(&b, &s, "dies", NULL);
    await_file(sfmt("%s/%s.running", a.dir, live), NULL);
    read_pid(sfmt("%s/%s.pid", b.dir, dead));
    CHECK_INT(system(sfmt("scripts/pgcluster.sh stop '%s'", dir)), 0);
    CHECK(kill(b.pid, SIGKILL) == 0);
    CHECK_INT(worker_wait(&b, DEADLINE_MS), 128 + SIGKILL);
    pause_ms(4000);   /* the outage itself: twice running_stale_after_ms */
    CHECK_INT(system(sfmt("scripts/pgcluster.sh start '%s' %s fast", dir, pg_port())), 0);
    sql_await("FAILED WORKER_CRASHED", DEADLINE_MS,
              "SELECT status || ' ' || error_code FROM horsies_task_history WHERE id = '%s'", dead);
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", live), "RUNNING");
    touch(sfmt("%s/go", a.dir));
    reply r;
    await_task(&s, live, "COMPLETED", &r);
    CHECK_INT(jint(&r, "attempt"), 1);
    CHECK_STR(jraw(&r, "result"), "\"finished\"");
    reply_fini(&r);
    CHECK_INT(worker_stop(&a, DEADLINE_MS), 0);
    worker_cleanup(&a);
    worker_cleanup(&b);
    srv_stop(&s);
}

/* An end the server cannot read (a result nested deeper than it reads
 * inside the finish call) does not hold back the ends sent with it: the
 * batch goes again one end at a time, and the one refused becomes a
 * failure the server can take. */
TEST(an_end_the_server_refuses_becomes_invalid_result_and_the_others_complete)
{
    silt_server s;
    srv_start(&s, NULL);
    char deep[96], ids[3][96];
    keep_str(deep, task_send(&s, "{\"name\":\"deep\",\"queue\":\"jobs\"}"));
    for (int i = 0; i < 3; i++) keep_str(ids[i], task_send(&s, "{\"name\":\"quiet\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", (const char *const[]){ "--concurrency", "4", NULL });
    reply r;
    await_task(&s, deep, "FAILED", &r);
    CHECK_STR(jstr(&r, "errorCode"), "INVALID_RESULT");
    CHECK(strstr(jstr(&r, "errorMessage"), "the server refused the end") != NULL);
    reply_fini(&r);
    for (int i = 0; i < 3; i++) {
        await_task(&s, ids[i], "COMPLETED", &r);
        reply_fini(&r);
    }
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

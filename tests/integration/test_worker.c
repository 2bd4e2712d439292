/* Integration: `silt worker` running a shell script against a per-test
 * server — results, exit codes and signals turned into error codes,
 * timeouts, retries, cancels, a graceful stop and concurrency — and the
 * task commands (`silt task send|get|list|cancel`, `silt workers`) run as
 * the real binary. The script does what the task's name says (WK_SCRIPT, worker_support.c);
 * a task that must stay running waits for a file the test creates, so no
 * test sleeps through a fixed time: every wait is a condition polled with a
 * deadline. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"
#include "worker_support.h"

/* ---- what the command's end becomes ------------------------------------ */

TEST(worker_completes_a_task_with_the_commands_stdout_and_tells_it_its_task_in_the_environment)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96], quiet[96];
    keep_str(id, task_send(&s, "{\"name\":\"echo\",\"queue\":\"jobs\",\"args\":{\"x\": [1, 2], \"s\": \"é\"}}"));
    keep_str(quiet, task_send(&s, "{\"name\":\"quiet\",\"queue\":\"jobs\",\"args\":[1]}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    reply r;
    await_task(&s, id, "COMPLETED", &r);
    CHECK_STR(jraw(&r, "result.args"), "{\"x\": [1, 2], \"s\": \"é\"}");   /* verbatim */
    CHECK_STR(jstr(&r, "result.id"), id);
    CHECK_INT(jint(&r, "result.attempt"), 1);
    CHECK_STR(jstr(&r, "result.name"), "echo");
    CHECK_STR(jstr(&r, "result.queue"), "jobs");
    reply_fini(&r);
    await_task(&s, quiet, "COMPLETED", &r);   /* empty stdout: a null result */
    CHECK_STR(jraw(&r, "result"), "null");
    reply_fini(&r);
    CHECK_STR(sql("SELECT status || ' ' || result::text FROM horsies_task_history WHERE id = '%s'", quiet),
              "COMPLETED null");
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_fails_a_nonzero_exit_with_exit_code_and_the_last_stderr_line)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"fail\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    reply r;
    await_task(&s, id, "FAILED", &r);
    CHECK_STR(jstr(&r, "errorCode"), "EXIT_3");
    CHECK_STR(jstr(&r, "errorMessage"), "it broke: code 3");
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_fails_stdout_that_is_not_json_with_invalid_result)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"garbage\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    reply r;
    await_task(&s, id, "FAILED", &r);
    CHECK_STR(jstr(&r, "errorCode"), "INVALID_RESULT");
    CHECK(strstr(jstr(&r, "errorMessage"), "not a JSON value") != NULL);
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_fails_more_than_16_mib_of_stdout_with_result_too_large)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"big\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    reply r;
    await_task(&s, id, "FAILED", &r);
    CHECK_STR(jstr(&r, "errorCode"), "RESULT_TOO_LARGE");
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_hands_a_large_argument_to_the_command_and_takes_a_large_result_back)
{
    silt_server s;
    srv_start(&s, NULL);
    size_t n = 1u << 20;   /* 1 MiB: far beyond a pipe's buffer either way */
    char *task = malloc(n + 128);
    CHECK(task != NULL);
    int at = sprintf(task, "{\"name\":\"echo\",\"queue\":\"jobs\",\"args\":\"");
    memset(task + at, 'a', n);
    strcpy(task + at + n, "\"}");
    char id[96];
    keep_str(id, task_send(&s, task));
    free(task);
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    reply r;
    await_task(&s, id, "COMPLETED", &r);
    reply_fini(&r);
    CHECK_STR(sql("SELECT length(result->>'args') || ' ' || (result->>'attempt') FROM horsies_task_history"
                  " WHERE id = '%s'", id), sfmt("%zu 1", n));
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_kills_a_command_past_its_timeout_and_fails_it_task_timeout)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96], own[96];
    keep_str(id, task_send(&s, "{\"name\":\"hang\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", (const char *const[]){ "--timeout", "1", NULL });
    pid_t child = read_pid(sfmt("%s/%s.pid", w.dir, id));
    reply r;
    await_task(&s, id, "FAILED", &r);
    CHECK_STR(jstr(&r, "errorCode"), "TASK_TIMEOUT");
    reply_fini(&r);
    CHECK(!process_alive(child));   /* killed and reaped before the report */
    /* a task's own timeoutMs wins over --timeout */
    keep_str(own, task_send(&s, "{\"name\":\"hang\",\"queue\":\"jobs\",\"timeoutMs\":300}"));
    await_task(&s, own, "FAILED", &r);
    CHECK_STR(jstr(&r, "errorCode"), "TASK_TIMEOUT");
    CHECK(strstr(jstr(&r, "errorMessage"), "300 ms") != NULL);
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_reports_death_by_signal_as_signal_n)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"hang\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    pid_t child = read_pid(sfmt("%s/%s.pid", w.dir, id));
    CHECK(kill(child, SIGKILL) == 0);   /* from outside: neither a timeout nor a cancel */
    reply r;
    await_task(&s, id, "FAILED", &r);
    CHECK_STR(jstr(&r, "errorCode"), "SIGNAL_9");
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

/* A path that names nothing, and a bare name PATH does not hold (looked
 * up once when the worker starts, and again at each run when not found). */
TEST(worker_fails_a_command_that_cannot_run_with_exit_127_saying_why)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *commands[] = { "/nonexistent/silt-task-cmd", "silt-no-such-task-cmd" };
    for (int i = 0; i < 2; i++) {
        char id[96];
        keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"jobs\"}"));
        test_worker w;
        worker_start_cmd(&w, &s, "jobs", NULL, (const char *const[]){ commands[i], NULL });
        reply r;
        await_task(&s, id, "FAILED", &r);
        CHECK_STR(jstr(&r, "errorCode"), "EXIT_127");
        CHECK_STR(jstr(&r, "errorMessage"), sfmt("silt worker: cannot run %s: No such file or directory", commands[i]));
        reply_fini(&r);
        CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
        worker_cleanup(&w);
    }
    srv_stop(&s);
}

TEST(worker_runs_a_retried_task_again_and_its_second_attempt_completes)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"flaky\",\"queue\":\"jobs\",\"retry\":{\"maxRetries\":2,\"delaysMs\":[0]}}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    reply r;
    await_task(&s, id, "COMPLETED", &r);
    CHECK_INT(jint(&r, "attempt"), 2);
    CHECK_INT(jint(&r, "retryCount"), 1);
    CHECK_STR(jraw(&r, "result"), "\"second time lucky\"");
    reply_fini(&r);
    CHECK_STR(sql("SELECT string_agg(attempt || ':' || outcome || ':' || coalesce(error_code, '-') || ':' ||"
                  " coalesce(error_message, '-'), ',' ORDER BY attempt) FROM horsies_task_attempts WHERE task_id = '%s'",
                  id), "1:FAILED:EXIT_1:attempt 1 fails,2:COMPLETED:-:-");
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_stops_a_cancelled_running_task_with_sigterm_and_reports_it_cancelled)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"trap\",\"queue\":\"jobs\",\"retry\":{\"maxRetries\":3}}"));
    test_worker w;
    worker_start(&w, &s, "jobs", (const char *const[]){ "--heartbeat-ms", "200", NULL });
    pid_t child = read_pid(sfmt("%s/%s.pid", w.dir, id));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", id), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "RUNNING");
    reply_fini(&r);
    await_task(&s, id, "CANCELLED", &r);
    CHECK_STR(jstr(&r, "errorCode"), "CANCELLED");
    reply_fini(&r);
    await_file(sfmt("%s/%s.term", w.dir, id), "got TERM");   /* the command saw the SIGTERM */
    CHECK(!process_alive(child));
    CHECK_STR(sql("SELECT outcome || ' ' || error_code FROM horsies_task_attempts WHERE task_id = '%s'", id),
              "CANCELLED CANCELLED");
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(sigterm_lets_a_running_task_finish_claims_nothing_more_and_exits_0)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96], later[96];
    keep_str(id, task_send(&s, "{\"name\":\"gate\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    await_file(sfmt("%s/%s.running", w.dir, id), NULL);
    CHECK(kill(w.pid, SIGTERM) == 0);
    await_file(w.log, "stopping");
    keep_str(later, task_send(&s, "{\"name\":\"echo\",\"queue\":\"jobs\"}"));
    touch(sfmt("%s/go", w.dir));
    reply r;
    await_task(&s, id, "COMPLETED", &r);
    CHECK_STR(jraw(&r, "result"), "\"finished\"");
    reply_fini(&r);
    CHECK_INT(worker_wait(&w, DEADLINE_MS), 0);
    CHECK_STR(sql("SELECT status || ' ' || attempt FROM horsies_tasks WHERE id = '%s'", later), "PENDING 0");
    worker_cleanup(&w);
    srv_stop(&s);
}

/* A task sent after SIGTERM reached an idle worker is not started: the
 * worker gives its parked claim up (the server hears it leave and hands
 * nothing out) and exits at once. Alone: "at once" is 100 ms on a quiet
 * machine, checked with a second's slack that a neighbour's load eats. */
TEST_ALONE(a_task_sent_after_sigterm_is_not_started_and_an_idle_worker_exits_at_once)
{
    silt_server s;
    srv_start(&s, NULL);
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);
    srv_await_metric(&s, "silt_task_claims_parked", 1, DEADLINE_MS);
    int64_t t0 = now_ms();
    CHECK(kill(w.pid, SIGTERM) == 0);
    CHECK_INT(worker_wait(&w, DEADLINE_MS), 0);
    int64_t took = now_ms() - t0;
    printf("    an idle worker exited %lld ms after SIGTERM\n", (long long)took);
    CHECK(took < 1000);   /* 100 ms is the rule on a quiet machine; the slack is for a loaded one */
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"echo\",\"queue\":\"jobs\"}"));
    srv_await_metric(&s, "silt_task_claims_parked", 0, DEADLINE_MS);
    CHECK_STR(sql("SELECT status || ' ' || attempt || ' ' || coalesce(worker_id, '-') FROM horsies_tasks"
                  " WHERE id = '%s'", id), "PENDING 0 -");
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(sigterm_past_the_grace_kills_the_task_fails_it_worker_crashed_and_exits_promptly)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"hang\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", (const char *const[]){ "--grace", "1", NULL });
    pid_t child = read_pid(sfmt("%s/%s.pid", w.dir, id));
    int64_t t0 = now_ms();
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    int64_t took = now_ms() - t0;
    CHECK(took >= 1000 && took < 20000);   /* the grace of 1 s, not the default 30 */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "FAILED");
    CHECK_STR(jstr(&r, "errorCode"), "WORKER_CRASHED");
    reply_fini(&r);
    CHECK(!process_alive(child));
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(a_second_signal_kills_the_commands_and_exits_at_once)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"hang\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", NULL);   /* the default grace: 30 s */
    pid_t child = read_pid(sfmt("%s/%s.pid", w.dir, id));
    CHECK(kill(w.pid, SIGTERM) == 0);
    await_file(w.log, "stopping");
    CHECK(kill(w.pid, SIGINT) == 0);
    CHECK_INT(worker_wait(&w, 10000), 1);
    int64_t end = now_ms() + DEADLINE_MS;
    while (process_alive(child) && now_ms() < end) pause_ms(20);   /* killed by the handler, not reaped by it */
    CHECK(!process_alive(child));
    /* unreported: the server's recovery takes it back */
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE id = '%s'", id), "RUNNING");
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_with_concurrency_2_runs_two_tasks_at_once)
{
    silt_server s;
    srv_start(&s, NULL);
    char a[96], b[96];
    keep_str(a, task_send(&s, "{\"name\":\"gate\",\"queue\":\"jobs\"}"));
    keep_str(b, task_send(&s, "{\"name\":\"gate\",\"queue\":\"jobs\"}"));
    test_worker w;
    worker_start(&w, &s, "jobs", (const char *const[]){ "--concurrency", "2", NULL });
    await_file(sfmt("%s/%s.running", w.dir, a), NULL);
    await_file(sfmt("%s/%s.running", w.dir, b), NULL);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE status = 'RUNNING'"), "2");
    touch(sfmt("%s/go", w.dir));
    reply r;
    await_task(&s, a, "COMPLETED", &r);
    reply_fini(&r);
    await_task(&s, b, "COMPLETED", &r);
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

/* A claim answered at once brings tasks it already started: one given up
 * because a command ended meanwhile would hand them back unrun (and cost
 * the worker its connection). A busy worker draining a backlog gives up at
 * most the few claims that found the queue empty at its end; giving one up
 * for every command that ended during it gave up about 180 of 1,000. */
TEST(a_busy_worker_keeps_the_claims_that_bring_tasks)
{
    silt_server s;
    srv_start(&s, NULL);
    buf body;
    buf_init(&body);
    buf_puts(&body, "{\"tasks\":[");
    for (int i = 0; i < 1000; i++) buf_printf(&body, "%s{\"name\":\"noop\",\"queue\":\"busy\"}", i ? "," : "");
    buf_puts(&body, "]}");
    reply r;
    rq(&s, "POST", "/api/v1/tasks", body.data, &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    buf_fini(&body);
    test_worker w;
    worker_start_cmd(&w, &s, "busy", (const char *const[]){ "--concurrency", "8", NULL },
                     (const char *const[]){ "true", NULL });
    sql_await("0", DEADLINE_MS * 2, "SELECT count(*) FROM horsies_tasks WHERE queue_name = 'busy'");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_history WHERE status = 'COMPLETED' AND attempt = 1"), "1000");
    int64_t abandoned = srv_metric(&s, "silt_task_claims_abandoned_total");
    if (abandoned > 20)
        harness_failf(__FILE__, __LINE__, "%lld claims given up while draining 1,000 tasks", (long long)abandoned);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_heartbeats_while_idle_and_is_listed_with_its_queues)
{
    silt_server s;
    srv_start(&s, NULL);
    test_worker w;
    worker_start(&w, &s, "jobs", (const char *const[]){ "--worker-id", "w-idle", "--queue", "more", "--concurrency",
                                                         "3", "--heartbeat-ms", "200", NULL });
    sql_await("2", DEADLINE_MS, "SELECT least(count(*), 2) FROM horsies_worker_states WHERE worker_id = 'w-idle'");
    reply r;
    rq(&s, "GET", "/api/v1/workers", NULL, &r);
    CHECK_STR(jstr(&r, "workers.0.workerId"), "w-idle");
    CHECK_INT(jint(&r, "workers.0.pid"), w.pid);
    CHECK_INT(jint(&r, "workers.0.concurrency"), 3);
    CHECK_STR(jraw(&r, "workers.0.queues"), "[\"jobs\",\"more\"]");
    reply_fini(&r);
    CHECK_INT(worker_stop(&w, DEADLINE_MS), 0);
    worker_cleanup(&w);
    srv_stop(&s);
}

TEST(worker_refuses_bad_usage_and_an_unreachable_server)
{
    char out[CLI_OUT];
    CHECK_INT(run_cmd(sfmt("'%s' worker -- true 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "--queue is required") != NULL);
    CHECK_INT(run_cmd(sfmt("'%s' worker --queue q 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK_INT(run_cmd(sfmt("'%s' worker --queue q --concurrency 0 -- true 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK_INT(run_cmd(sfmt("SILT_URL=http://127.0.0.1:1 '%s' worker --queue q -- true 2>&1", silt_bin()), out,
                      sizeof out), 1);
    CHECK(strstr(out, "registration") != NULL);
    CHECK_INT(run_cmd(sfmt("'%s' worker --help", silt_bin()), out, sizeof out), 0);
    CHECK(strstr(out, "SILT_TASK_ATTEMPT") != NULL);
}

/* ---- silt task and silt workers ---------------------------------------- */

static int cli(const silt_server *s, char *out, const char *args)
{
    return run_cmd(sfmt("SILT_URL='%s' '%s' %s 2>&1", s->url, silt_bin(), args), out, CLI_OUT);
}

/* The id a `silt task send` printed (its first word). */
static const char *first_word(const char *out)
{
    return sfmt("%.*s", (int)strcspn(out, " \n"), out);
}

TEST(task_send_sends_every_option_and_prints_the_id)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    CHECK_INT(cli(&s, out, "task send resize --queue img --args '{\"w\": 640}' --priority 7 --delay-ms 60000"
                           " --good-until 2099-01-01T00:00:00Z --timeout-ms 5000 --max-retries 4"
                           " --retry-delays 1000,5000 --jitter 0.25 --retry-on EXIT_3,TASK_TIMEOUT"
                           " --idempotency-key k-1"), 0);
    char id[96];
    keep_str(id, first_word(out));
    CHECK(strlen(id) == 36);
    CHECK_STR(sql("SELECT task_name || ' ' || queue_name || ' ' || args::text || ' ' || priority || ' ' || timeout_ms"
                  " || ' ' || max_retries || ' ' || retry_delays_ms::text || ' ' || retry_jitter || ' ' ||"
                  " retry_on::text || ' ' || idempotency_key || ' ' || (run_at > now() + interval '50 seconds') ||"
                  " ' ' || good_until FROM horsies_tasks WHERE id = '%s'", id),
              "resize img {\"w\": 640} 7 5000 4 {1000,5000} 0.25 {EXIT_3,TASK_TIMEOUT} k-1 true"
              " 2099-01-01 00:00:00+00");
    /* the same key again: the first task, said so */
    CHECK_INT(cli(&s, out, "task send other --queue img --idempotency-key k-1"), 0);
    CHECK_STR(out, sfmt("%s (existing task)\n", id));
    /* exponential backoff, args from a file, and --json */
    CHECK_INT(run_cmd(sfmt("echo '[1, 2]' | SILT_URL='%s' '%s' task send b --queue img --args-file -"
                           " --max-retries 2 --backoff-base-ms 100 --backoff-cap-ms 900 --json", s.url, silt_bin()),
                      out, CLI_OUT), 0);
    CHECK(strstr(out, "\"created\": true") != NULL);
    CHECK_STR(sql("SELECT args::text || ' ' || retry_base_ms || ' ' || retry_cap_ms FROM horsies_tasks"
                  " WHERE task_name = 'b'"), "[1, 2] 100 900");
    srv_stop(&s);
}

TEST(task_send_refuses_bad_options_before_sending_anything)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    static const char *const bad[][2] = {
        { "task send t", "--queue is required" },
        { "task send t --queue q --args '{bad'", "not valid JSON" },
        { "task send t --queue q --args 1 --args-file /dev/null", "cannot both" },
        { "task send t --queue q --delay-ms 5 --run-at 2099-01-01T00:00:00Z", "cannot both" },
        { "task send t --queue q --retry-delays 1,x", "--retry-delays" },
        { "task send t --queue q --jitter 2", "--jitter" },
        { "task send t --queue q --backoff-cap-ms 5", "needs --backoff-base-ms" },
        { "task send t --queue q --retry-delays 1 --backoff-base-ms 5", "cannot both" },
        { "task send t --queue q --priority x", "non-negative integer" },
        { "task send --queue q", "missing arguments" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = cli(&s, out, bad[i][0]);
        if (rc != 2 || !strstr(out, bad[i][1]))
            harness_failf(__FILE__, __LINE__, "%s: exit %d, %s (expected 2 and \"%s\")", bad[i][0], rc, out, bad[i][1]);
    }
    /* what only the server knows is its 400, exit 1 */
    CHECK_INT(cli(&s, out, "task send t --queue q --priority 500"), 1);
    CHECK(strstr(out, "priority") != NULL);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    srv_stop(&s);
}

TEST(task_get_shows_a_task_and_waits_for_its_end)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"args\":{\"n\":1}}"));
    CHECK_INT(cli(&s, out, sfmt("task get %s", id)), 0);
    CHECK(strstr(out, "status ") && strstr(out, "PENDING"));
    CHECK(strstr(out, "{\"n\":1}") != NULL);
    /* --wait returns once a worker completes it */
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {   /* completes once the get is parked */
        silt_server again = s;
        again.http = http_client_new(s.url);
        srv_await_metric(&again, "silt_task_waits_parked", 1, DEADLINE_MS);
        _exit(task_call(&again, "complete", &c, "\"result\":{\"ok\":true}") == 200 ? 0 : 1);
    }
    CHECK_INT(cli(&s, out, sfmt("task get %s --wait 30000", id)), 0);
    CHECK(strstr(out, "COMPLETED") != NULL);
    CHECK(strstr(out, "{\"ok\":true}") != NULL);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_INT(cli(&s, out, sfmt("task get %s --json", id)), 0);
    CHECK(strstr(out, "\"status\": \"COMPLETED\"") != NULL);
    CHECK_INT(cli(&s, out, "task get 01a233f6-7074-706c-a9b9-8691edad8860"), 1);
    CHECK(strstr(out, "no task") != NULL);
    srv_stop(&s);
}

TEST(task_cancel_ends_a_pending_task_asks_a_running_one_and_refuses_an_ended_one)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char pending[96];
    keep_str(pending, task_send(&s, "{\"name\":\"t\",\"queue\":\"q\"}"));
    CHECK_INT(cli(&s, out, sfmt("task cancel %s", pending)), 0);
    CHECK_STR(out, sfmt("cancelled %s\n", pending));
    task_send(&s, "{\"name\":\"r\",\"queue\":\"q\"}");
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(cli(&s, out, sfmt("task cancel %s", c.id)), 0);
    CHECK(strstr(out, "cancel requested") != NULL);
    CHECK_STR(sql("SELECT cancel_requested FROM horsies_tasks WHERE id = '%s'", c.id), "t");
    CHECK_INT(task_call(&s, "complete", &c, NULL), 200);
    CHECK_INT(cli(&s, out, sfmt("task cancel %s", c.id)), 1);
    CHECK(strstr(out, "already ended COMPLETED") != NULL);
    srv_stop(&s);
}

TEST(task_list_filters_and_pages_with_the_cursor_it_prints)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    for (int i = 0; i < 3; i++) task_send(&s, "{\"name\":\"a\",\"queue\":\"qa\"}");
    task_send(&s, "{\"name\":\"b\",\"queue\":\"qb\"}");
    CHECK_INT(cli(&s, out, "task list --queue qa --status pending --limit 2"), 0);
    CHECK(strncmp(out, "ID ", 3) == 0 && strstr(out, "SENT_AT") != NULL);
    const char *next = strstr(out, "next cursor: ");
    CHECK(next != NULL);
    char cursor[96];
    keep_str(cursor, sfmt("%.36s", next + strlen("next cursor: ")));
    int rows = 0;
    for (const char *p = out; (p = strstr(p, " qa ")); p++) rows++;
    CHECK_INT(rows, 2);
    CHECK_INT(cli(&s, out, sfmt("task list --queue qa --limit 2 --cursor %s", cursor)), 0);
    rows = 0;
    for (const char *p = out; (p = strstr(p, " qa ")); p++) rows++;
    CHECK_INT(rows, 1);
    CHECK(strstr(out, "next cursor") == NULL);
    CHECK_INT(cli(&s, out, "task list --queue nothing-here"), 0);
    CHECK_STR(out, "(no tasks)\n");
    CHECK_INT(cli(&s, out, "task list --status DONE"), 1);
    CHECK_INT(cli(&s, out, "task list --json --queue qb"), 0);
    CHECK(strstr(out, "\"nextCursor\": null") != NULL);
    srv_stop(&s);
}

TEST(workers_lists_the_registered_workers)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    CHECK_INT(cli(&s, out, "workers"), 0);
    CHECK_STR(out, "(no workers)\n");
    reply r;
    rq(&s, "POST", "/api/v1/workers", "{\"workerId\":\"w7\",\"hostname\":\"box\",\"pid\":42,\"queues\":[\"q1\",\"q2\"],"
       "\"concurrency\":3}", &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    CHECK_INT(cli(&s, out, "workers"), 0);
    CHECK(strncmp(out, "WORKER_ID", 9) == 0);
    CHECK(strstr(out, "w7 ") && strstr(out, " box ") && strstr(out, " 42 ") && strstr(out, " q1,q2 "));
    CHECK_INT(cli(&s, out, "workers --json"), 0);
    CHECK(strstr(out, "\"workerId\": \"w7\"") != NULL);
    CHECK_INT(cli(&s, out, "task"), 2);
    CHECK_INT(cli(&s, out, "task frobnicate"), 2);
    srv_stop(&s);
}

/* A worker killed with -9 mid-task reports nothing; the server's recovery
 * notices the silent runner (heartbeats every second, stale after two) and
 * the task's policy retries WORKER_CRASHED: a second worker completes it. */
TEST(a_worker_killed_with_sigkill_mid_task_is_recovered_and_its_task_retried)
{
    char conf[128];
    keep_str(conf, worker_fast_recovery_conf());
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"flaky\",\"queue\":\"jobs\","
                               "\"retry\":{\"maxRetries\":1,\"retryOn\":[\"WORKER_CRASHED\"]}}"));
    /* the first worker's command only waits: the worker dies under it */
    test_worker w;
    worker_start_cmd(&w, &s, "jobs", NULL,
                     (const char *const[]){ "sh", "-c", "echo $$ > \"$DIR/$SILT_TASK_ID.pid\"; exec sleep 120", NULL });
    pid_t child = read_pid(sfmt("%s/%s.pid", w.dir, id));
    CHECK(kill(w.pid, SIGKILL) == 0);
    CHECK_INT(worker_wait(&w, DEADLINE_MS), 128 + SIGKILL);
    kill(-child, SIGKILL);   /* its command, left behind in a process group of its own */
    kill(child, SIGKILL);
    sql_await("PENDING WORKER_CRASHED", DEADLINE_MS,
              "SELECT status || ' ' || last_error_code FROM horsies_tasks WHERE id = '%s'", id);
    CHECK_STR(sql("SELECT outcome || ' ' || error_code FROM horsies_task_attempts WHERE task_id = '%s' AND attempt = 1",
                  id), "FAILED WORKER_CRASHED");
    test_worker again;
    worker_start(&again, &s, "jobs", NULL);   /* the script's flaky: attempt 2 succeeds */
    reply r;
    await_task(&s, id, "COMPLETED", &r);
    CHECK_STR(jraw(&r, "result"), "\"second time lucky\"");
    CHECK_INT(jint(&r, "attempt"), 2);
    reply_fini(&r);
    CHECK_INT(worker_stop(&again, DEADLINE_MS), 0);
    worker_cleanup(&w);
    worker_cleanup(&again);
    srv_stop(&s);
}

/* Integration: rate limits of task queues (silt.conf `rate_limit` and
 * `rate_limit_per_key`, docs/tasks.md "Rate limits"). Claims across every
 * server never exceed a limit in any window, counted from the tasks' own
 * rows (claimed_at); waiting tasks start as the window reopens; keys are
 * limited one by one and never hold each other back; a queue without a
 * limit records nothing. Windows are a few hundred milliseconds, and every
 * wait has a deadline. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"
#include "net/http_client.h"

/* Two servers on the test's one database, both reading conf. */
static void start_two(silt_server *a, silt_server *b, const char *conf)
{
    const char *env[] = { sfmt("SILT_CONFIG=%s", test_file("silt.conf", conf)), NULL };
    srv_start(a, env);
    srv_start(b, env);
}

/* n tasks of queue q in one send; key(i) is task i's rateKey (NULL: none). */
static void send_tasks(silt_server *s, const char *q, int n, const char *(*key)(int))
{
    buf body;
    buf_init(&body);
    buf_puts(&body, "{\"tasks\":[");
    for (int i = 0; i < n; i++) {
        const char *k = key ? key(i) : NULL;
        buf_printf(&body, "%s{\"name\":\"t%d\",\"queue\":\"%s\"", i ? "," : "", i, q);
        if (k) buf_printf(&body, ",\"rateKey\":\"%s\"", k);
        buf_putc(&body, '}');
    }
    buf_puts(&body, "]}");
    reply r;
    rq(s, "POST", "/api/v1/tasks", body.data, &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    buf_fini(&body);
}

/* A claimer process: claims (and starts) up to max at a time, long-polling
 * wait_ms, until a claim finds nothing for its whole wait; exits 0, or 1
 * when a claim was refused. */
static pid_t claimer(const silt_server *s, const char *queue, int worker, int max, int wait_ms)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid > 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    http_client *c = http_client_new(s->url);
    http_client_set_timeout(c, 60000);
    char path[64], body[160];
    snprintf(path, sizeof path, "/api/v1/workers/w%d/claim", worker);
    snprintf(body, sizeof body, "{\"queues\":[\"%s\"],\"max\":%d,\"start\":true,\"waitMs\":%d}", queue, max, wait_ms);
    for (;;) {
        http_response r;
        http_response_init(&r);
        if (http_request(c, "POST", path, body, strlen(body), &r) < 0 || r.status != 200) _exit(1);
        bool none = strstr(r.body.data, "\"tasks\":[]") != NULL;
        http_response_fini(&r);
        if (none) _exit(0);
    }
}

static void await_claimers(const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        int st;
        CHECK(waitpid(pids[i], &st, 0) == pids[i]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
}

/* The most claims of queue q (of rate key key, when not NULL) in any window
 * of period_ms, from the tasks' rows: each claim time opens a window that
 * ends just before period_ms later. */
static int most_in_a_window(const char *q, const char *key, int period_ms)
{
    return atoi(sql("SELECT coalesce(max(n), 0) FROM (SELECT count(*) OVER (ORDER BY claimed_at RANGE BETWEEN"
                    " CURRENT ROW AND interval '%d ms' - interval '1 microsecond' FOLLOWING) AS n"
                    " FROM horsies_tasks WHERE queue_name = '%s' AND claimed_at IS NOT NULL %s%s%s) w",
                    period_ms, q, key ? "AND rate_key = '" : "", key ? key : "", key ? "'" : ""));
}

/* Milliseconds from the first claim of queue q to its last. */
static int claims_span_ms(const char *q)
{
    return atoi(sql("SELECT round(extract(epoch FROM max(claimed_at) - min(claimed_at)) * 1000)"
                    " FROM horsies_tasks WHERE queue_name = '%s'", q));
}

/* Property: however many claimers race on two servers, no window of the
 * period holds more claims than the limit, and the backlog drains at the
 * limit's pace (a window that reopens is used at once). */
TEST(a_rate_limit_holds_every_window_against_many_claimers_on_two_servers)
{
    enum { LIMIT = 5, PERIOD_MS = 300, TASKS = 40, CLAIMERS = 8 };
    silt_server a, b;
    start_two(&a, &b, "[queue.rated]\nrate_limit = 5/300ms\n");
    send_tasks(&a, "rated", TASKS, NULL);
    pid_t pids[CLAIMERS];
    for (int i = 0; i < CLAIMERS; i++) pids[i] = claimer(i % 2 ? &b : &a, "rated", i, 1 + i % 3, 1000);
    await_claimers(pids, CLAIMERS);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE queue_name = 'rated' AND status = 'RUNNING'"), "40");
    CHECK_INT(most_in_a_window("rated", NULL, PERIOD_MS), LIMIT);
    /* 8 windows' worth: the last claims come 7 periods after the first, and
     * not much later (each reopening is claimed as it comes) */
    int span = claims_span_ms("rated");
    printf("    40 tasks claimed over %d ms\n", span);
    CHECK(span >= (TASKS / LIMIT - 1) * PERIOD_MS);
    CHECK(span < (TASKS / LIMIT - 1) * PERIOD_MS + 2000);
    srv_stop(&a);
    srv_stop(&b);
}

static const char *three_keys(int i)
{
    return i % 4 == 3 ? NULL : (const char *[]){ "a", "b", "c" }[i % 4];
}

/* Each key has its own window; tasks without a key are held by none of
 * them; a full key never holds back the others, on two servers. */
TEST(a_limit_per_key_holds_each_key_and_never_the_others_on_two_servers)
{
    enum { KEY_LIMIT = 2, PERIOD_MS = 300, TASKS = 24, CLAIMERS = 6 };
    silt_server a, b;
    start_two(&a, &b, "[queue.keyed]\nrate_limit_per_key = 2/300ms\n");
    send_tasks(&a, "keyed", TASKS, three_keys);   /* 6 of each key, 6 without */
    pid_t pids[CLAIMERS];
    for (int i = 0; i < CLAIMERS; i++) pids[i] = claimer(i % 2 ? &b : &a, "keyed", i, 1 + i % 3, 1000);
    await_claimers(pids, CLAIMERS);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE queue_name = 'keyed' AND status = 'RUNNING'"), "24");
    CHECK_INT(most_in_a_window("keyed", "a", PERIOD_MS), KEY_LIMIT);
    CHECK_INT(most_in_a_window("keyed", "b", PERIOD_MS), KEY_LIMIT);
    CHECK_INT(most_in_a_window("keyed", "c", PERIOD_MS), KEY_LIMIT);
    /* the keys ran side by side: 6 of each is three windows, not nine */
    int span = claims_span_ms("keyed");
    printf("    24 tasks of 3 keys claimed over %d ms\n", span);
    CHECK(span >= 2 * PERIOD_MS);
    CHECK(span < 2 * PERIOD_MS + 2000);
    /* the tasks without a key were not held back by the keys' windows */
    CHECK_STR(sql("SELECT max(claimed_at) - min(claimed_at) < interval '%d ms' FROM horsies_tasks"
                  " WHERE queue_name = 'keyed' AND rate_key IS NULL", PERIOD_MS), "t");
    srv_stop(&a);
    srv_stop(&b);
}

/* One claim takes a full key's budget and goes on to the other keys (it
 * does not stop at the head of the queue, where the full key's tasks wait). */
TEST(one_claim_takes_each_keys_budget_and_passes_over_a_full_keys_backlog)
{
    silt_server s;
    const char *conf = test_file("silt.conf", "[queue.k]\nrate_limit_per_key = 2/1m\n");
    const char *env[] = { sfmt("SILT_CONFIG=%s", conf), NULL };
    srv_start(&s, env);
    send_tasks(&s, "k", 10, NULL);
    sql("UPDATE horsies_tasks SET rate_key = 'big'");   /* ten of one key at the head */
    task_send(&s, "{\"name\":\"t\",\"queue\":\"k\",\"rateKey\":\"small\"}");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"k\"}");
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"k\"],\"max\":10}", &r);
    CHECK_INT(r.status, 200);
    CHECK(jpath(&r, "tasks.3") >= 0 && jpath(&r, "tasks.4") < 0);   /* 2 of big, small, the keyless one */
    reply_fini(&r);
    CHECK_STR(sql("SELECT string_agg(coalesce(rate_key, '-') || '=' || n, ' ' ORDER BY rate_key) FROM"
                  " (SELECT rate_key, count(*) AS n FROM horsies_tasks WHERE status = 'CLAIMED' GROUP BY 1) x"),
              "big=2 small=1 -=1");
    task_claimed c;
    CHECK(!task_claim_one(&s, "w", "k", &c));   /* big waits for its window */
    srv_stop(&s);
}

/* A parked claim on one server takes the next task when the window opened
 * by a claim through another server reopens: within a small bound of that
 * moment, measured from the two claims' own times. Alone: the bound is
 * tight enough that a neighbour's load would break it. */
TEST_ALONE(a_parked_claim_takes_a_waiting_task_as_soon_as_the_window_reopens)
{
    enum { PERIOD_MS = 400, BOUND_MS = 50 };
    silt_server a, b;
    start_two(&a, &b, "[queue.slow]\nrate_limit = 1/400ms\n");
    for (int round = 0; round < 3; round++) {
        send_tasks(&a, "slow", 2, NULL);
        task_claimed first, second;
        CHECK(task_claim_one(&a, "w1", "slow", &first));
        CHECK(!task_claim_one(&a, "w1", "slow", &second));   /* the window is full */
        CHECK(task_claim_waiting(&b, "w2", "slow", 5000, &second));
        int gap = atoi(sql("SELECT round(extract(epoch FROM s.claimed_at - f.claimed_at) * 1000) FROM"
                           " horsies_tasks f, horsies_tasks s WHERE f.id = '%s' AND s.id = '%s'", first.id, second.id));
        printf("    round %d: the second claim came %d ms after the first (window %d ms)\n", round, gap, PERIOD_MS);
        CHECK(gap >= PERIOD_MS);
        CHECK(gap <= PERIOD_MS + BOUND_MS);
        sql("DELETE FROM horsies_tasks");
        sql("DELETE FROM tasks.rate_claims");
    }
    srv_stop(&a);
    srv_stop(&b);
}

/* GET /api/v1/task-queues: is queue 0 at its rate limit, and held back by it? */
static void check_rate_state(silt_server *s, bool at_rate, bool held_back)
{
    reply r;
    rq(s, "GET", "/api/v1/task-queues", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "queues.0.atRateLimit") == at_rate);
    CHECK(jbool(&r, "queues.0.heldBackByRateLimit") == held_back);
    reply_fini(&r);
}

/* A queue with both: its claims stay within the cap and within the rate;
 * the queue list says when the rate, not the cap, holds its tasks back. */
TEST(a_cap_and_a_rate_limit_together_hold_both)
{
    silt_server s;
    const char *conf = test_file("silt.conf", "[queue.both]\nmax_concurrency = 2\nrate_limit = 3/1m\n");
    const char *env[] = { sfmt("SILT_CONFIG=%s", conf), NULL };
    srv_start(&s, env);
    send_tasks(&s, "both", 6, NULL);
    reply r;
    rq(&s, "GET", "/api/v1/task-queues", NULL, &r);
    CHECK_INT(jint(&r, "queues.0.rateLimit.limit"), 3);
    CHECK_INT(jint(&r, "queues.0.rateLimit.periodMs"), 60000);
    CHECK(strcmp(jraw(&r, "queues.0.rateLimitPerKey"), "null") == 0);
    reply_fini(&r);
    check_rate_state(&s, false, false);
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"both\"],\"max\":10,\"start\":true}", &r);
    CHECK(jpath(&r, "tasks.1") >= 0 && jpath(&r, "tasks.2") < 0);   /* the cap: 2 */
    reply_fini(&r);
    sql("SELECT count(*) FROM horsies_tasks t, tasks.finish_many(ARRAY[t.id], ARRAY[t.claim_id], ARRAY['COMPLETED'],"
        " ARRAY['null'], ARRAY[NULL], ARRAY[NULL]) f WHERE t.status = 'RUNNING'");
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"both\"],\"max\":10,\"start\":true}", &r);
    CHECK(jpath(&r, "tasks.0") >= 0 && jpath(&r, "tasks.1") < 0);   /* room for 2, the rate's budget: 1 */
    reply_fini(&r);
    sql("SELECT count(*) FROM horsies_tasks t, tasks.finish_many(ARRAY[t.id], ARRAY[t.claim_id], ARRAY['COMPLETED'],"
        " ARRAY['null'], ARRAY[NULL], ARRAY[NULL]) f WHERE t.status = 'RUNNING'");
    task_claimed c;
    CHECK(!task_claim_one(&s, "w", "both", &c));   /* nothing held, and still the rate says no */
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE queue_name = 'both'"), "3");
    check_rate_state(&s, true, true);
    sql("UPDATE horsies_tasks SET run_at = now() + interval '1 hour'");   /* nothing due: held back by nothing */
    check_rate_state(&s, true, false);
    srv_stop(&s);
}

/* A queue without a rate limit claims as it always did: a rateKey on it is
 * kept (shown by get and list, kept in history and by a rerun) and counted
 * by nothing; no claim of it writes a rate row. */
TEST(a_queue_without_a_rate_limit_keeps_rate_keys_and_records_nothing)
{
    silt_server s;
    const char *conf = test_file("silt.conf", "[queue.free]\n[queue.rated]\nrate_limit = 100/1s\n");
    const char *env[] = { sfmt("SILT_CONFIG=%s", conf), NULL };
    srv_start(&s, env);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"free\",\"rateKey\":\"customer-7\"}"));
    send_tasks(&s, "free", 9, NULL);
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"free\"],\"max\":10,\"start\":true}", &r);
    CHECK(jpath(&r, "tasks.9") >= 0);   /* all ten at once */
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM tasks.rate_claims"), "0");
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, &r);
    CHECK_STR(jstr(&r, "rateKey"), "customer-7");
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/tasks?queue=free&limit=2", NULL, &r);
    CHECK_STR(jstr(&r, "tasks.0.rateKey"), "customer-7");
    CHECK(strcmp(jraw(&r, "tasks.1.rateKey"), "null") == 0);
    reply_fini(&r);
    sql("SELECT count(*) FROM horsies_tasks t, tasks.finish_many(ARRAY[t.id], ARRAY[t.claim_id], ARRAY['FAILED'],"
        " ARRAY[NULL], ARRAY['BOOM'], ARRAY['it broke']) f WHERE t.id = '%s'", id);
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "FAILED");
    CHECK_STR(jstr(&r, "rateKey"), "customer-7");   /* kept in history */
    reply_fini(&r);
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/rerun", id), NULL, &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(sql("SELECT rate_key FROM horsies_tasks WHERE id = '%s'", jstr(&r, "id")), "customer-7");
    reply_fini(&r);
    /* a claim of the limited queue records its claim, one row per claim statement */
    send_tasks(&s, "rated", 3, NULL);
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"free\",\"rated\"],\"max\":10}", &r);
    reply_fini(&r);
    CHECK_STR(sql("SELECT queue_name || ' ' || claims FROM tasks.rate_claims"), "rated 3");
    srv_stop(&s);
}

static void refused(silt_server *s, const char *body, const char *message)
{
    reply r;
    rq(s, "POST", "/api/v1/tasks", body, &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "field"), "rateKey");
    if (!strstr(jstr(&r, "error"), message)) harness_failf(__FILE__, __LINE__, "%s: %s", body, jstr(&r, "error"));
    reply_fini(&r);
}

TEST(a_bad_rate_key_is_400_naming_it_and_nothing_is_written)
{
    silt_server s;
    srv_start(&s, NULL);
    char longest[300];
    memset(longest, 'k', 256);
    longest[256] = '\0';
    refused(&s, "{\"name\":\"t\",\"queue\":\"q\",\"rateKey\":7}", "rateKey");
    refused(&s, "{\"name\":\"t\",\"queue\":\"q\",\"rateKey\":\"\"}", "rateKey must be a non-empty string");
    refused(&s, "{\"name\":\"t\",\"queue\":\"q\",\"rateKey\":{\"a\":1}}", "rateKey");
    refused(&s, sfmt("{\"name\":\"t\",\"queue\":\"q\",\"rateKey\":\"%s\"}", longest), "longer than 255 bytes");
    refused(&s, "{\"tasks\":[{\"name\":\"t\",\"queue\":\"q\",\"rateKey\":\"ok\"},"
                "{\"name\":\"t\",\"queue\":\"q\",\"rateKey\":false}]}", "tasks[1]: rateKey");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    longest[255] = '\0';   /* the limit itself is fine, and null is none */
    task_send(&s, sfmt("{\"name\":\"t\",\"queue\":\"q\",\"rateKey\":\"%s\"}", longest));
    task_send(&s, "{\"name\":\"t\",\"queue\":\"q\",\"rateKey\":null}");
    CHECK_STR(sql("SELECT string_agg(coalesce(length(rate_key)::text, '-'), ' ' ORDER BY id) FROM horsies_tasks"),
              "255 -");
    srv_stop(&s);
}

/* silt check-config reports a bad rate limit with its line, in the seed's
 * format (every form of it: tests/unit/test_conffile.c). */
TEST(check_config_reports_a_bad_rate_limit_at_its_line)
{
    const char *path = test_file("silt.conf", "[queue.q]\nrate_limit = 10 per second\n");
    char out[2048];
    int rc = run_cmd(sfmt("%s check-config %s 2>&1", silt_bin(), path), out, sizeof out);
    CHECK(rc != 0);
    CHECK(strstr(out, "error[HRS-205]: rate_limit in [queue.q] must be N/PERIOD") != NULL);
    CHECK(strstr(out, sfmt("--> %s:2", path)) != NULL);
    CHECK(strstr(out, "found rate_limit = 10 per second: not N/PERIOD") != NULL);
}

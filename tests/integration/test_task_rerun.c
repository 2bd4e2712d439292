/* Integration: rerunning finished tasks (POST /api/v1/tasks/:id/rerun, POST
 * /api/v1/tasks/rerun). A rerun is a new task naming the original
 * (rerunOf) with its name, queue, args, priority, retry policy, timeout and
 * retention class unless overridden; a task is rerun at most once; bad
 * input is a 400 naming the field and writes nothing; an unknown task is
 * 404 and a live one 409. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

#define UNKNOWN_TASK "01a233f6-7074-706c-a9b9-8691edad8860"

/* Sends task_json, runs it once and fails it with code: its id. */
static const char *failed_task(silt_server *s, const char *task_json, const char *code)
{
    char id[96];
    keep_str(id, task_send(s, task_json));
    task_claimed c;
    const char *queue = sql("SELECT queue_name FROM horsies_tasks WHERE id = '%s'", id);
    CHECK(task_claim_one(s, "w", queue, &c));
    CHECK_STR(c.id, id);
    CHECK_INT(task_call(s, "start", &c, NULL), 200);
    CHECK_INT(task_call(s, "fail", &c, sfmt("\"errorCode\":\"%s\",\"errorMessage\":\"no\"", code)), 200);
    CHECK_STR(sql("SELECT status FROM horsies_task_history WHERE id = '%s'", id), "FAILED");
    return sfmt("%s", id);
}

static const char *cancelled_task(silt_server *s, const char *task_json)
{
    char id[96];
    keep_str(id, task_send(s, task_json));
    reply r;
    rq(s, "POST", sfmt("/api/v1/tasks/%s/cancel", id), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    return sfmt("%s", id);
}

static int tasks_count(void) { return atoi(sql("SELECT count(*) FROM tasks.all_tasks")); }

TEST(a_failed_task_is_rerun_as_a_new_task_naming_it_with_everything_it_was_sent_with)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96], again[96];
    keep_str(id, failed_task(&s, "{\"name\":\"resize\",\"queue\":\"img\",\"args\":{\"id\": 7},\"priority\":9,"
                                 "\"timeoutMs\":5000,\"retentionClassKey\":\"forever\",\"retry\":{\"maxRetries\":2,"
                                 "\"delaysMs\":[10,20],\"jitter\":0.5,\"retryOn\":[\"BOOM\"]}}", "OTHER"));
    reply r;
    CHECK_INT(task_rerun(&s, id, NULL, &r), 201);
    CHECK_STR(jstr(&r, "rerunOf"), id);
    CHECK(jbool(&r, "created"));
    keep_str(again, jstr(&r, "id"));
    CHECK(strcmp(again, id) != 0);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", again), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "rerunOf"), id);
    CHECK_STR(jstr(&r, "status"), "PENDING");
    CHECK_STR(jstr(&r, "name"), "resize");
    CHECK_STR(jstr(&r, "queue"), "img");
    CHECK_STR(jraw(&r, "args"), "{\"id\": 7}");
    CHECK_INT(jint(&r, "priority"), 9);
    CHECK_INT(jint(&r, "maxRetries"), 2);
    CHECK_INT(jint(&r, "timeoutMs"), 5000);
    CHECK_INT(jint(&r, "attempt"), 0);
    CHECK_STR(jstr(&r, "retentionClassKey"), "forever");
    reply_fini(&r);
    CHECK_STR(sql("SELECT format('%%s %%s %%s %%s', retry_delays_ms, retry_jitter, retry_on, retry_base_ms IS NULL)"
                  " FROM horsies_tasks WHERE id = '%s'", again), "{10,20} 0.5 {BOOM} t");
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, &r);   /* the original names nothing */
    CHECK_STR(jraw(&r, "rerunOf"), "null");
    CHECK_INT(jint(&r, "timeoutMs"), 5000);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/tasks?queue=img", NULL, &r);
    CHECK_STR(jstr(&r, "tasks.1.rerunOf"), id);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_rerun_takes_the_overrides_its_request_gives)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96], again[96];
    keep_str(id, failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\",\"args\":1,"
                                 "\"retry\":{\"maxRetries\":3,\"retryOn\":[\"X\"]}}", "E"));
    reply r;
    CHECK_INT(task_rerun(&s, id, "{\"name\":\"b\",\"queue\":\"q2\",\"args\":{\"k\":[1]},\"priority\":2,\"timeoutMs\":77,"
                            "\"retry\":{\"backoff\":{\"baseMs\":100}},\"retentionClassKey\":null}", &r), 201);
    keep_str(again, jstr(&r, "id"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT format('%%s %%s %%s %%s %%s %%s %%s %%s', task_name, queue_name, args, priority, timeout_ms,"
                  " max_retries, retry_base_ms, retention_class_key) FROM horsies_tasks WHERE id = '%s'", again),
              "b q2 {\"k\":[1]} 2 77 0 100 forever");
    srv_stop(&s);
}

TEST(a_task_is_rerun_at_most_once_and_asking_again_answers_its_rerun)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96], first[96];
    keep_str(id, failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "E"));
    reply r;
    CHECK_INT(task_rerun(&s, id, NULL, &r), 201);
    keep_str(first, jstr(&r, "id"));
    reply_fini(&r);
    CHECK_INT(task_rerun(&s, id, "{\"priority\":1}", &r), 200);
    CHECK_STR(jstr(&r, "id"), first);
    CHECK(!jbool(&r, "created"));
    reply_fini(&r);
    CHECK_INT(tasks_count(), 2);
    CHECK_STR(sql("SELECT priority FROM horsies_tasks WHERE id = '%s'", first), "100");
    srv_stop(&s);
}

TEST(rerun_refuses_a_live_task_409_an_unknown_one_404_and_a_bad_id_400)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"a\",\"queue\":\"q\"}"));
    reply r;
    CHECK_INT(task_rerun(&s, id, NULL, &r), 409);
    CHECK(strstr(r.raw.body.data, "PENDING") != NULL);
    reply_fini(&r);
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_INT(task_rerun(&s, id, NULL, &r), 409);
    CHECK(strstr(r.raw.body.data, "CLAIMED") != NULL);
    reply_fini(&r);
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_rerun(&s, id, NULL, &r), 409);
    CHECK(strstr(r.raw.body.data, "RUNNING") != NULL);
    reply_fini(&r);
    CHECK_INT(task_rerun(&s, UNKNOWN_TASK, NULL, &r), 404);
    reply_fini(&r);
    CHECK_INT(task_rerun(&s, "not-a-uuid", NULL, &r), 400);
    CHECK_STR(jstr(&r, "field"), "id");
    reply_fini(&r);
    CHECK_INT(tasks_count(), 1);
    srv_stop(&s);
}

/* Each bad field: 400 naming it, and nothing written. */
TEST(a_bad_field_of_a_rerun_is_a_400_naming_it_and_writes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "E"));
    static const char *const cases[][2] = {
        { "{\"priority\":0}", "priority" },
        { "{\"priority\":\"high\"}", "priority" },
        { "{\"timeoutMs\":0}", "timeoutMs" },
        { "{\"name\":\"\"}", "name" },
        { "{\"queue\":7}", "queue" },
        { "{\"retry\":{\"maxRetries\":99}}", "maxRetries" },
        { "{\"retry\":{\"what\":1}}", "what" },
        { "{\"retentionClassKey\":\"nope\"}", "retentionClassKey" },
        { "{\"includeCompleted\":\"yes\"}", "includeCompleted" },
        { "{\"limit\":5}", "limit" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reply r;
        CHECK_INT(task_rerun(&s, id, cases[i][0], &r), 400);
        CHECK_STR(jstr(&r, "field"), cases[i][1]);
        reply_fini(&r);
    }
    reply r;
    CHECK_INT(task_rerun(&s, id, "[1]", &r), 400);
    reply_fini(&r);
    CHECK_INT(tasks_count(), 1);
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_idempotency"), "0");
    srv_stop(&s);
}

TEST(a_completed_task_is_rerun_only_with_include_completed_and_a_cancelled_one_as_is)
{
    silt_server s;
    srv_start(&s, NULL);
    char done[96], gone[96];
    keep_str(done, task_send(&s, "{\"name\":\"a\",\"queue\":\"q\"}"));
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":1"), 200);
    reply r;
    CHECK_INT(task_rerun(&s, done, NULL, &r), 409);
    CHECK(strstr(r.raw.body.data, "includeCompleted") != NULL);
    reply_fini(&r);
    CHECK_INT(tasks_count(), 1);
    CHECK_INT(task_rerun(&s, done, "{\"includeCompleted\":true}", &r), 201);
    reply_fini(&r);
    keep_str(gone, cancelled_task(&s, "{\"name\":\"b\",\"queue\":\"q\"}"));
    CHECK_INT(task_rerun(&s, gone, NULL, &r), 201);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE rerun_of IS NOT NULL AND status = 'PENDING'"), "2");
    srv_stop(&s);
}

TEST(a_rerun_is_claimable_at_once_and_wakes_a_parked_claimer)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96];
    keep_str(id, failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "E"));
    bg_req w;
    bg_start(&w, &s, "POST", "/api/v1/workers/w2/claim", "{\"queues\":[\"q\"],\"waitMs\":20000}");
    srv_await_metric(&s, "silt_task_claims_parked", 1, 5000);
    reply r;
    CHECK_INT(task_rerun(&s, id, NULL, &r), 201);
    reply_fini(&r);
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK_STR(sql("SELECT status FROM horsies_tasks WHERE rerun_of = '%s'", id), "CLAIMED");
    srv_stop(&s);
}

/* ---- by filter ---- */

static void bulk(silt_server *s, const char *body, int want_status, reply *r)
{
    rq(s, "POST", "/api/v1/tasks/rerun", body, r);
    if (r->status != want_status)
        harness_failf(__FILE__, __LINE__, "bulk %s: %d %s", body, r->status, r->raw.body.data);
}

TEST(a_bulk_rerun_takes_what_its_filters_match_bounded_by_its_limit_and_goes_on_when_asked_again)
{
    silt_server s;
    srv_start(&s, NULL);
    for (int i = 0; i < 3; i++) failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "BOOM");
    failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "OTHER");
    failed_task(&s, "{\"name\":\"b\",\"queue\":\"q\"}", "BOOM");
    failed_task(&s, "{\"name\":\"a\",\"queue\":\"q2\"}", "BOOM");
    cancelled_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}");
    int before = tasks_count();
    reply r;
    const char *filter = "\"queue\":\"q\",\"name\":\"a\",\"errorCode\":\"BOOM\"";
    bulk(&s, sfmt("{%s,\"dryRun\":true}", filter), 200, &r);   /* counts, writes nothing */
    CHECK(jbool(&r, "dryRun"));
    CHECK_INT(jint(&r, "count"), 3);
    CHECK(!jbool(&r, "more"));
    reply_fini(&r);
    bulk(&s, sfmt("{%s,\"dryRun\":true,\"limit\":2}", filter), 200, &r);
    CHECK_INT(jint(&r, "count"), 2);
    CHECK(jbool(&r, "more"));
    reply_fini(&r);
    CHECK_INT(tasks_count(), before);
    bulk(&s, sfmt("{%s,\"limit\":2,\"priority\":4}", filter), 200, &r);
    CHECK_INT(jint(&r, "count"), 2);
    CHECK(jbool(&r, "more"));
    CHECK(jbool(&r, "tasks.0.created"));
    CHECK(jpath(&r, "tasks.2") < 0);
    reply_fini(&r);
    bulk(&s, sfmt("{%s,\"limit\":2}", filter), 200, &r);   /* made again: the one left */
    CHECK_INT(jint(&r, "count"), 1);
    CHECK(!jbool(&r, "more"));
    reply_fini(&r);
    bulk(&s, sfmt("{%s}", filter), 200, &r);   /* and again: nothing is sent twice */
    CHECK_INT(jint(&r, "count"), 0);
    reply_fini(&r);
    CHECK_INT(tasks_count(), before + 3);
    CHECK_STR(sql("SELECT string_agg(DISTINCT h.error_code || '/' || h.task_name || '/' || h.queue_name, ',')"
                  " FROM horsies_tasks t JOIN horsies_task_history h ON h.id = t.rerun_of"), "BOOM/a/q");
    CHECK_STR(sql("SELECT string_agg(priority::text, ',' ORDER BY id) FROM horsies_tasks"), "4,4,100");
    bulk(&s, "{\"status\":\"CANCELLED\"}", 200, &r);
    CHECK_INT(jint(&r, "count"), 1);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_bulk_rerun_filters_by_the_time_its_tasks_ended)
{
    silt_server s;
    srv_start(&s, NULL);
    char old_id[96];
    keep_str(old_id, failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "E"));
    failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "E");
    const char *cut = sql("SELECT to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
                          " FROM horsies_task_history WHERE id > '%s' ORDER BY id LIMIT 1", old_id);
    char at[96];
    keep_str(at, cut);
    reply r;
    bulk(&s, sfmt("{\"finishedBefore\":\"%s\"}", at), 200, &r);
    CHECK_INT(jint(&r, "count"), 1);
    CHECK_STR(jstr(&r, "tasks.0.rerunOf"), old_id);
    reply_fini(&r);
    bulk(&s, sfmt("{\"finishedAfter\":\"%s\",\"dryRun\":true}", at), 200, &r);
    CHECK_INT(jint(&r, "count"), 1);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_bulk_rerun_includes_completed_tasks_only_when_asked)
{
    silt_server s;
    srv_start(&s, NULL);
    task_send(&s, "{\"name\":\"a\",\"queue\":\"q\"}");
    task_claimed c;
    CHECK(task_claim_one(&s, "w", "q", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":1"), 200);
    reply r;
    bulk(&s, "{\"queue\":\"q\",\"dryRun\":true}", 200, &r);
    CHECK_INT(jint(&r, "count"), 0);
    reply_fini(&r);
    bulk(&s, "{\"queue\":\"q\",\"includeCompleted\":true}", 200, &r);
    CHECK_INT(jint(&r, "count"), 1);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_bad_field_of_a_bulk_rerun_is_a_400_naming_it_and_writes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "E");
    static const char *const cases[][2] = {
        { "{\"limit\":0}", "limit" },
        { "{\"limit\":1001}", "limit" },
        { "{\"status\":\"RUNNING\"}", "status" },
        { "{\"finishedAfter\":\"yesterday\"}", "finishedAfter" },
        { "{\"finishedBefore\":3}", "finishedBefore" },
        { "{\"dryRun\":1}", "dryRun" },
        { "{\"errorCode\":\"\"}", "errorCode" },
        { "{\"priority\":101}", "priority" },
        { "{\"args\":1}", "args" },
        { "{\"retentionClassKey\":\"nope\"}", "retentionClassKey" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        reply r;
        bulk(&s, cases[i][0], 400, &r);
        CHECK_STR(jstr(&r, "field"), cases[i][1]);
        reply_fini(&r);
    }
    CHECK_INT(tasks_count(), 1);
    srv_stop(&s);
}

/* ---- the command line ---- */

TEST(silt_task_pause_resume_and_rerun_from_the_command_line)
{
    silt_server s;
    srv_start(&s, NULL);
    char id[96], out[8192];
    keep_str(id, failed_task(&s, "{\"name\":\"a\",\"queue\":\"q\"}", "E"));
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task pause q 2>&1", s.url, silt_bin()), out, sizeof out), 0);
    CHECK(strstr(out, "q paused") != NULL);
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task paused 2>&1", s.url, silt_bin()), out, sizeof out), 0);
    CHECK(strstr(out, "q ") != NULL);
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task rerun --queue q --dry-run 2>&1", s.url, silt_bin()), out,
                      sizeof out), 0);
    CHECK(strstr(out, "1 tasks would be rerun") != NULL);
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task rerun %s 2>&1", s.url, silt_bin(), id), out, sizeof out), 0);
    CHECK(strstr(out, sfmt("(rerun of %s)", id)) != NULL);
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task rerun 2>&1", s.url, silt_bin()), out, sizeof out), 2);
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task rerun %s --queue q 2>&1", s.url, silt_bin(), id), out,
                      sizeof out), 2);
    char live[96];
    keep_str(live, sql("SELECT id FROM horsies_tasks"));
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task rerun %s 2>&1", s.url, silt_bin(), live), out, sizeof out), 1);
    CHECK(strstr(out, "only a finished task") != NULL);
    CHECK_STR(sql("SELECT status FROM horsies_tasks"), "PENDING");   /* paused: not claimed */
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task resume q 2>&1", s.url, silt_bin()), out, sizeof out), 0);
    CHECK(strstr(out, "q running") != NULL);
    srv_stop(&s);
}

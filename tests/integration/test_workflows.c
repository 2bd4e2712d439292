/* Integration: workflows — definitions refused whole, advancement in the
 * ending transaction (joins, argsFrom, skips), a node's retries, control
 * (pause, resume, cancel, onError PAUSE, and controls that do not apply),
 * waits, and crashed nodes through the outbox.
 * Node tasks are run by the test itself: claim with start, then complete
 * or fail each by its task name ("ok" completes with {"node": <id>}, "bad"
 * fails with BOOM). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"
#include "workflow_support.h"

TEST(a_diamond_runs_in_order_and_args_from_carries_results_forward)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"diamond\",\"output\":\"d\",\"nodes\":["
                           "{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\",\"args\":{\"x\":1}},"
                           "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"],\"argsFrom\":{\"fromA\":\"a\"}},"
                           "{\"id\":\"c\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"]},"
                           "{\"id\":\"d\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"b\",\"c\"]}]}"));
    CHECK_STR(wf_node_status(wf, "a"), "ENQUEUED");
    CHECK_STR(wf_node_status(wf, "b"), "PENDING");
    CHECK_INT(wf_run_round(&s, "q"), 1);   /* a alone */
    CHECK_STR(wf_node_status(wf, "b"), "ENQUEUED");
    CHECK_STR(sql("SELECT t.args::text FROM horsies_tasks t JOIN horsies_workflow_tasks n ON n.task_id = t.id"
                  " WHERE n.workflow_id = '%s' AND n.node_id = 'b'", wf), "{\"fromA\": {\"node\": \"a\"}}");
    CHECK_INT(wf_run_round(&s, "q"), 2);   /* b and c */
    CHECK_INT(wf_run_round(&s, "q"), 1);   /* d, once both are done */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/workflows/%s", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "COMPLETED");
    CHECK_STR(jraw(&r, "result"), "{\"node\":\"d\"}");
    CHECK_STR(jstr(&r, "nodes.3.status"), "COMPLETED");
    reply_fini(&r);
    srv_stop(&s);
}

TEST(a_bad_definition_is_refused_with_every_problem_and_nothing_is_written)
{
    silt_server s;
    srv_start(&s, NULL);
    reply r;
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"bad\",\"output\":\"zz\",\"nodes\":["
       "{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"b\"]},"
       "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"]},"
       "{\"id\":\"c\",\"task\":\"ok\",\"queue\":\"q\",\"join\":\"quorum\",\"minSuccess\":3,\"waitsFor\":[\"a\"]},"
       "{\"id\":\"c\",\"task\":\"ok\",\"queue\":\"q\"}]}", &r);
    CHECK_INT(r.status, 400);
    CHECK(jpath(&r, "problems.3") >= 0);   /* output, duplicate, quorum, cycle */
    CHECK(strstr(r.raw.body.data, "cycle") != NULL);
    CHECK(strstr(r.raw.body.data, "defined twice") != NULL);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"bad\",\"nodes\":[{\"id\":\"a\",\"queue\":\"q\"}]}", &r);
    CHECK_INT(r.status, 400);
    CHECK(strstr(jstr(&r, "error"), "nodes[0]: task is required") != NULL);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"bad\",\"onEror\":\"PAUSE\",\"nodes\":["
       "{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"}]}", &r);   /* a misspelt option is not ignored */
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "error"), "unknown field \"onEror\" in a workflow");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"bad\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"},"
       "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\",\"a\"]}]}", &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "error"), "node \"b\" waits for \"a\" twice");
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    srv_stop(&s);
}

TEST(joins_any_and_quorum_run_as_soon_as_enough_succeeded_and_all_skips_after_a_failure)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"joins\",\"nodes\":["
                           "{\"id\":\"ok1\",\"task\":\"ok\",\"queue\":\"q\"},{\"id\":\"ok2\",\"task\":\"ok\",\"queue\":\"q\"},"
                           "{\"id\":\"bad\",\"task\":\"bad\",\"queue\":\"q\"},"
                           "{\"id\":\"any\",\"task\":\"ok\",\"queue\":\"later\",\"join\":\"any\",\"waitsFor\":[\"bad\",\"ok1\"]},"
                           "{\"id\":\"q2\",\"task\":\"ok\",\"queue\":\"later\",\"join\":\"quorum\",\"minSuccess\":2,"
                           "\"waitsFor\":[\"ok1\",\"bad\",\"ok2\"]},"
                           "{\"id\":\"all\",\"task\":\"ok\",\"queue\":\"later\",\"waitsFor\":[\"ok1\",\"bad\"]},"
                           "{\"id\":\"after\",\"task\":\"ok\",\"queue\":\"later\",\"waitsFor\":[\"all\"]},"
                           "{\"id\":\"tolerant\",\"task\":\"ok\",\"queue\":\"later\",\"waitsFor\":[\"bad\"],"
                           "\"allowFailedDeps\":true}]}"));
    CHECK_INT(wf_run_round(&s, "q"), 3);
    CHECK_STR(wf_node_status(wf, "bad"), "FAILED");
    CHECK_STR(wf_node_status(wf, "any"), "ENQUEUED");
    CHECK_STR(wf_node_status(wf, "q2"), "ENQUEUED");
    CHECK_STR(wf_node_status(wf, "all"), "SKIPPED");
    CHECK_STR(wf_node_status(wf, "after"), "SKIPPED");      /* skips propagate */
    CHECK_STR(wf_node_status(wf, "tolerant"), "ENQUEUED");
    wf_run_until_settled(&s, "later", wf);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", wf), "FAILED");   /* sink "after" skipped */
    srv_stop(&s);
}

TEST(on_error_pause_pauses_at_the_first_failure_and_resume_goes_on)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"p\",\"onError\":\"PAUSE\",\"nodes\":["
                           "{\"id\":\"bad\",\"task\":\"bad\",\"queue\":\"first\"},{\"id\":\"ok\",\"task\":\"ok\",\"queue\":\"q\"},"
                           "{\"id\":\"next\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"ok\"]}]}"));
    CHECK_INT(wf_run_round(&s, "first"), 1);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", wf), "PAUSED");
    CHECK_INT(wf_run_round(&s, "q"), 1);   /* ok was enqueued before the failure: it finishes */
    CHECK_STR(wf_node_status(wf, "next"), "READY");   /* ready, not enqueued while paused */
    CHECK_INT(wf_run_round(&s, "q"), 0);
    reply r;
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/resume", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "RUNNING");
    reply_fini(&r);
    CHECK_INT(wf_run_round(&s, "q"), 1);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", wf), "FAILED");   /* bad is a failed sink */
    srv_stop(&s);
}

TEST(pause_lets_running_nodes_finish_and_starts_nothing_new_until_resume)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"p\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"},"
                           "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"]}]}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/pause", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "PAUSED");
    reply_fini(&r);
    CHECK_INT(wf_run_round(&s, "q"), 1);   /* a was enqueued before the pause: it runs */
    CHECK_STR(wf_node_status(wf, "a"), "COMPLETED");
    CHECK_STR(wf_node_status(wf, "b"), "READY");
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/resume", wf), NULL, &r);
    reply_fini(&r);
    CHECK_INT(wf_run_round(&s, "q"), 1);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", wf), "COMPLETED");
    srv_stop(&s);
}

TEST(cancel_skips_what_has_not_started_and_cancels_enqueued_tasks)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"c\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"},"
                           "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"]}]}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/cancel", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "CANCELLED");
    reply_fini(&r);
    CHECK_STR(wf_node_status(wf, "a"), "SKIPPED");
    CHECK_STR(wf_node_status(wf, "b"), "SKIPPED");
    CHECK_STR(sql("SELECT status FROM horsies_task_history"), "CANCELLED");
    CHECK_INT(wf_run_round(&s, "q"), 0);
    srv_stop(&s);
}

TEST(a_wait_on_a_workflow_returns_when_it_ends)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"w\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"}]}"));
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/workflows/%s?wait=20000", wf), NULL);
    srv_await_metric(&s, "silt_task_waits_parked", 1, 5000);
    CHECK_INT(wf_run_round(&s, "q"), 1);
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(elapsed < 10000);
    srv_stop(&s);
}

/* A node whose worker crashed: recovery ends its task and leaves the
 * evidence in the outbox; the maintenance owner advances the workflow from
 * it, once. */
TEST(a_crashed_node_advances_through_the_outbox_once)
{
    const char *conf = test_file("silt.conf", "[recovery]\ncheck_interval_ms = 1000\n");
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"crash\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"},"
                           "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"],\"allowFailedDeps\":true}]}"));
    reply r;
    rq(&s, "POST", "/api/v1/workers/w/claim", "{\"queues\":[\"q\"],\"start\":true}", &r);   /* and never heard of again */
    reply_fini(&r);
    sql("UPDATE horsies_tasks SET last_heartbeat_at = now() - interval '1 hour'");
    sql_await("FAILED", 10000, "SELECT status FROM horsies_workflow_tasks WHERE workflow_id = '%s' AND node_id = 'a'", wf);
    CHECK_STR(wf_node_status(wf, "b"), "ENQUEUED");   /* allowFailedDeps: it runs after the crash */
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflow_phase2_pending"), "0");   /* applied, gone */
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE workflow_id = '%s'", wf), "1");   /* b's, once */
    srv_stop(&s);
}

/* Claims and starts one task of queue q, waiting for one (a retry is
 * claimable once its delay has passed, which nothing announces). */
static void claim_started(silt_server *s, const char *q, task_claimed *c)
{
    int64_t end = now_ms() + 20000;
    while (now_ms() < end) {
        reply r;
        rq(s, "POST", "/api/v1/workers/w/claim",
           sfmt("{\"queues\":[\"%s\"],\"max\":1,\"start\":true,\"waitMs\":1000}", q), &r);
        CHECK_INT(r.status, 200);
        bool got = jpath(&r, "tasks.0") >= 0;
        if (got) {
            keep_str(c->id, jstr(&r, "tasks.0.id"));
            keep_str(c->claim, jstr(&r, "tasks.0.claimId"));
            c->attempt = (int)jint(&r, "tasks.0.attempt");
        }
        reply_fini(&r);
        if (got) return;
    }
    harness_failf(__FILE__, __LINE__, "nothing to claim on %s", q);
}

/* Fails the attempt c holds with BOOM: the task's status afterwards
 * (PENDING when its policy retries). */
static const char *fail_attempt(silt_server *s, const task_claimed *c)
{
    reply r;
    rq(s, "POST", sfmt("/api/v1/tasks/%s/fail", c->id),
       sfmt("{\"claimId\":\"%s\",\"errorCode\":\"BOOM\",\"errorMessage\":\"attempt %d\"}", c->claim, c->attempt), &r);
    CHECK_INT(r.status, 200);
    const char *status = sfmt("%s", jstr(&r, "status"));
    reply_fini(&r);
    return status;
}

/* A node's task that fails but has retries left is not a node failure:
 * the node waits for its task's last attempt (ENQUEUED again, the same
 * task), its successors wait, the workflow runs on; onError PAUSE does not
 * pause on it. Only the last attempt's failure fails the node, skips what
 * needed it and fails the workflow. */
TEST(a_workflow_node_fails_only_when_its_task_has_exhausted_its_retries)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96], paused[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"retry\",\"nodes\":["
                           "{\"id\":\"flaky\",\"task\":\"bad\",\"queue\":\"q\",\"retry\":{\"maxRetries\":2,\"delaysMs\":[0]}},"
                           "{\"id\":\"after\",\"task\":\"ok\",\"queue\":\"later\",\"waitsFor\":[\"flaky\"]}]}"));
    keep_str(paused, wf_start(&s, "{\"name\":\"retry-pause\",\"onError\":\"PAUSE\",\"nodes\":["
                               "{\"id\":\"flaky\",\"task\":\"bad\",\"queue\":\"p\",\"retry\":{\"maxRetries\":1,"
                               "\"delaysMs\":[0]}}]}"));
    char first_task[96];
    keep_str(first_task, sql("SELECT task_id FROM horsies_workflow_tasks WHERE workflow_id = '%s' AND node_id = 'flaky'", wf));
    for (int attempt = 1; attempt <= 2; attempt++) {
        task_claimed c;
        claim_started(&s, "q", &c);
        CHECK_INT(c.attempt, attempt);
        CHECK_STR(c.id, first_task);   /* a retry is the same task, not a new node task */
        CHECK_STR(wf_node_status(wf, "flaky"), "RUNNING");
        CHECK_STR(fail_attempt(&s, &c), "PENDING");
        CHECK_STR(wf_node_status(wf, "flaky"), "ENQUEUED");
        CHECK_STR(wf_node_status(wf, "after"), "PENDING");
        CHECK_STR(wf_status(wf), "RUNNING");
        CHECK_STR(sql("SELECT open_nodes FROM horsies_workflows WHERE id = '%s'", wf), "2");
    }
    task_claimed c;
    claim_started(&s, "p", &c);   /* onError PAUSE: the first attempt failing pauses nothing */
    CHECK_STR(fail_attempt(&s, &c), "PENDING");
    CHECK_STR(wf_status(paused), "RUNNING");
    CHECK_STR(wf_node_status(paused, "flaky"), "ENQUEUED");
    claim_started(&s, "q", &c);   /* the last attempt */
    CHECK_INT(c.attempt, 3);
    CHECK_STR(fail_attempt(&s, &c), "FAILED");
    CHECK_STR(sql("SELECT status || ' ' || error_code || ' ' || error_message FROM horsies_workflow_tasks"
                  " WHERE workflow_id = '%s' AND node_id = 'flaky'", wf), "FAILED BOOM attempt 3");
    CHECK_STR(wf_node_status(wf, "after"), "SKIPPED");   /* all join, no allowFailedDeps */
    CHECK_STR(wf_status(wf), "FAILED");
    CHECK_STR(sql("SELECT error_code || ' ' || error_message FROM horsies_workflows WHERE id = '%s'", wf),
              "BOOM node flaky failed: attempt 3");   /* the workflow says which node and why */
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_attempts WHERE task_id = '%s'", first_task), "3");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE workflow_id = '%s'", wf), "0");   /* after never sent */
    claim_started(&s, "p", &c);   /* and onError PAUSE pauses at the last attempt's failure */
    CHECK_STR(fail_attempt(&s, &c), "FAILED");
    CHECK_STR(wf_status(paused), "PAUSED");
    CHECK_STR(wf_node_status(paused, "flaky"), "FAILED");
    srv_stop(&s);
}

/* A control that does not apply to the workflow's status answers 200 with
 * the status it has (as a task cancel on a finished task does), never
 * the one the action would have made, and writes nothing. */
static void control_refused(silt_server *s, const char *wf, const char *action, const char *status)
{
    char *before = wf_state();
    reply r;
    rq(s, "POST", sfmt("/api/v1/workflows/%s/%s", wf, action), NULL, &r);
    if (r.status != 200 || strcmp(jstr(&r, "status"), status) != 0)
        harness_failf(__FILE__, __LINE__, "%s of a %s workflow: %d %s", action, status, r.status, r.raw.body.data);
    reply_fini(&r);
    char *after = wf_state();
    if (strcmp(before, after) != 0)
        harness_failf(__FILE__, __LINE__, "%s of a %s workflow changed the database:\n%s\n---\n%s", action, status,
                      before, after);
    free(before);
    free(after);
}

/* The error a control of no such workflow answers; nothing written. */
static void control_error(silt_server *s, const char *id, const char *action, int code, const char *error)
{
    char *before = wf_state();
    reply r;
    rq(s, "POST", sfmt("/api/v1/workflows/%s/%s", id, action), NULL, &r);
    if (r.status != code || !strstr(jstr(&r, "error"), error))
        harness_failf(__FILE__, __LINE__, "%s of %s: %d %s", action, id, r.status, r.raw.body.data);
    reply_fini(&r);
    char *after = wf_state();
    CHECK_STR(after, before);
    free(before);
    free(after);
}

TEST(workflow_controls_that_do_not_apply_change_nothing_and_unknown_or_malformed_ids_are_refused)
{
    silt_server s;
    srv_start(&s, NULL);
    char running[96], completed[96], failed[96], cancelled[96];
    keep_str(running, wf_start(&s, "{\"name\":\"r\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"r\"},"
                                "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"r\",\"waitsFor\":[\"a\"]}]}"));
    keep_str(completed, wf_start(&s, "{\"name\":\"c\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"}]}"));
    keep_str(failed, wf_start(&s, "{\"name\":\"f\",\"nodes\":[{\"id\":\"a\",\"task\":\"bad\",\"queue\":\"q\"}]}"));
    CHECK_INT(wf_run_round(&s, "q"), 2);
    CHECK_STR(wf_status(completed), "COMPLETED");
    CHECK_STR(wf_status(failed), "FAILED");
    keep_str(cancelled, wf_start(&s, "{\"name\":\"x\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"x\"}]}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/cancel", cancelled), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "CANCELLED");
    reply_fini(&r);

    control_refused(&s, running, "resume", "RUNNING");   /* not paused: nothing to resume */
    char paused[96];
    keep_str(paused, wf_start(&s, "{\"name\":\"p\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"p\"}]}"));
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/pause", paused), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "PAUSED");
    reply_fini(&r);
    control_refused(&s, paused, "pause", "PAUSED");   /* paused already: pausedAt stays */
    static const char *const actions[] = { "pause", "resume", "cancel" };
    for (int i = 0; i < 3; i++) {   /* an ended workflow stays as it ended */
        control_refused(&s, completed, actions[i], "COMPLETED");
        control_refused(&s, failed, actions[i], "FAILED");
        control_refused(&s, cancelled, actions[i], "CANCELLED");
        control_error(&s, "01a233f6-7074-706c-a9b9-8691edad8860", actions[i], 404, "no workflow");
        control_error(&s, "not-a-uuid", actions[i], 400, "id");
    }
    CHECK_STR(wf_node_status(running, "a"), "ENQUEUED");   /* the running one still runs */
    CHECK_INT(wf_run_round(&s, "r"), 1);
    CHECK_INT(wf_run_round(&s, "r"), 1);
    CHECK_STR(wf_status(running), "COMPLETED");
    srv_stop(&s);
}

/* Issue 11's "pause during a running node and resume after it finished":
 * the node paused under finishes and counts, its successor becomes READY
 * but is not sent until resume. */
TEST(workflow_pause_during_a_running_node_lets_it_finish_and_its_successor_waits_for_resume)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"p\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"},"
                           "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"],\"argsFrom\":{\"in\":\"a\"}}]}"));
    task_claimed a;
    claim_started(&s, "q", &a);
    CHECK_STR(wf_node_status(wf, "a"), "RUNNING");
    reply r;
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/pause", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "PAUSED");
    reply_fini(&r);
    CHECK_STR(task_heartbeat(&s, "w", &a), "ok");   /* a pause does not stop what runs */
    CHECK_INT(task_call(&s, "complete", &a, "\"result\":{\"from\":\"a\"}"), 200);
    CHECK_STR(wf_node_status(wf, "a"), "COMPLETED");
    CHECK_STR(wf_node_status(wf, "b"), "READY");
    CHECK_STR(wf_status(wf), "PAUSED");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE workflow_id = '%s'", wf), "0");   /* b not sent */
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/resume", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "RUNNING");
    reply_fini(&r);
    CHECK_STR(wf_node_status(wf, "b"), "ENQUEUED");
    CHECK_STR(sql("SELECT t.args::text FROM horsies_tasks t WHERE t.workflow_id = '%s'", wf),
              "{\"in\": {\"from\": \"a\"}}");   /* a's result, though it ended while paused */
    CHECK_INT(wf_run_round(&s, "q"), 1);
    CHECK_STR(wf_status(wf), "COMPLETED");
    srv_stop(&s);
}

/* The last node ends while the workflow is paused: it stays PAUSED (a
 * pause is the operator's to lift), and resume finds nothing left to run
 * and ends it there and then, with the output node's result. */
TEST(a_workflow_whose_last_node_ended_while_paused_ends_on_resume)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"p\",\"output\":\"a\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"}]}"));
    task_claimed a;
    claim_started(&s, "q", &a);
    reply r;
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/pause", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "PAUSED");
    reply_fini(&r);
    CHECK_INT(task_call(&s, "complete", &a, "\"result\":{\"done\":true}"), 200);
    CHECK_STR(wf_node_status(wf, "a"), "COMPLETED");
    CHECK_STR(sql("SELECT status || ' ' || open_nodes || ' ' || (finished_at IS NULL) FROM horsies_workflows"
                  " WHERE id = '%s'", wf), "PAUSED 0 true");
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/resume", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "COMPLETED");
    reply_fini(&r);
    CHECK_STR(sql("SELECT status || ' ' || result::text || ' ' || (finished_at IS NOT NULL) FROM horsies_workflows"
                  " WHERE id = '%s'", wf), "COMPLETED {\"done\":true} true");
    srv_stop(&s);
}

/* docs/workflows.md's example definition, as written, starts: its nodes
 * without predecessors enqueued, the others waiting. */
TEST(the_example_of_docs_workflows_is_a_good_workflow_definition)
{
    char *example = doc_block("docs/workflows.md", "```json");
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, example));
    free(example);
    CHECK_STR(sql("SELECT string_agg(node_id || ':' || status, ' ' ORDER BY node_id) FROM horsies_workflow_tasks"
                  " WHERE workflow_id = '%s'", wf),
              "extract-eu:ENQUEUED extract-us:ENQUEUED load:PENDING merge:PENDING notify:PENDING");
    CHECK_STR(sql("SELECT name || ' ' || output_node FROM horsies_workflows WHERE id = '%s'", wf), "nightly-etl load");
    srv_stop(&s);
}

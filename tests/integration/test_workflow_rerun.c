/* Integration: a workflow node's task rerun into its node (POST
 * /api/v1/tasks/:id/rerun). The node runs again and the workflow goes on
 * from there: what its end skipped downstream waits again, unless another
 * failure still rules it out; a FAILED workflow runs again, a PAUSED one
 * stays paused. A node is rerun once per task; a rerun that does not apply
 * is a 409 saying why and writes nothing. Node tasks end by their name
 * (workflow_support.h): a rerun named "ok" completes. */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"
#include "workflow_support.h"

/* The task a node runs now. */
static const char *node_task(const char *wf, const char *node)
{
    return sql("SELECT task_id FROM horsies_workflow_tasks WHERE workflow_id = '%s' AND node_id = '%s'", wf, node);
}

/* A rerun of task refused 409 with an error holding want; nothing written. */
static void refused(silt_server *s, const char *task, const char *body, const char *want)
{
    char *before = wf_state();
    reply r;
    if (task_rerun(s, task, body, &r) != 409 || !strstr(jstr(&r, "error"), want))
        harness_failf(__FILE__, __LINE__, "rerun of %s: %d %s (want 409 \"%s\")", task, r.status, r.raw.body.data,
                      want);
    reply_fini(&r);
    char *after = wf_state();
    CHECK_STR(after, before);
    free(before);
    free(after);
}

TEST(a_failed_node_rerun_runs_again_and_its_failed_workflow_goes_on_to_complete)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96], failed[96], again[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"etl\",\"output\":\"load\",\"nodes\":["
                              "{\"id\":\"extract\",\"task\":\"bad\",\"queue\":\"q\",\"args\":{\"day\":7}},"
                              "{\"id\":\"side\",\"task\":\"ok\",\"queue\":\"q\"},"
                              "{\"id\":\"merge\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"extract\",\"side\"]},"
                              "{\"id\":\"load\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"merge\"],"
                              "\"argsFrom\":{\"rows\":\"merge\"}}]}"));
    CHECK_INT(wf_run_round(&s, "q"), 2);
    CHECK_STR(wf_status(wf), "FAILED");
    CHECK_STR(wf_node_status(wf, "merge"), "SKIPPED");
    CHECK_STR(wf_node_status(wf, "load"), "SKIPPED");
    keep_str(failed, node_task(wf, "extract"));

    reply r;
    CHECK_INT(task_rerun(&s, failed, "{\"name\":\"ok\"}", &r), 201);
    CHECK(jbool(&r, "created"));
    CHECK_STR(jstr(&r, "rerunOf"), failed);
    CHECK_STR(jstr(&r, "workflowId"), wf);
    CHECK_STR(jstr(&r, "workflowStatus"), "RUNNING");
    keep_str(again, jstr(&r, "id"));
    reply_fini(&r);
    CHECK_STR(node_task(wf, "extract"), again);
    CHECK_STR(wf_node_status(wf, "extract"), "ENQUEUED");
    CHECK_STR(wf_node_status(wf, "side"), "COMPLETED");
    CHECK_STR(wf_node_status(wf, "merge"), "PENDING");   /* waits again, side's end counted */
    CHECK_STR(wf_node_status(wf, "load"), "PENDING");
    CHECK_STR(sql("SELECT format('%%s %%s %%s %%s', open_nodes, finished_at IS NULL, error_code IS NULL,"
                  " error_message IS NULL) FROM horsies_workflows WHERE id = '%s'", wf), "3 t t t");
    CHECK_STR(sql("SELECT format('%%s %%s %%s', deps_done, deps_failed, error_code IS NULL)"
                  " FROM horsies_workflow_tasks WHERE workflow_id = '%s' AND node_id = 'merge'", wf), "1 0 t");
    CHECK_STR(sql("SELECT format('%%s %%s %%s', workflow_id, workflow_node, args) FROM horsies_tasks WHERE id = '%s'",
                  again), sfmt("%s extract {\"day\":7}", wf));

    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_status(wf), "COMPLETED");
    CHECK_STR(sql("SELECT result::text FROM horsies_workflows WHERE id = '%s'", wf), "{\"node\":\"load\"}");
    CHECK_STR(sql("SELECT args->'rows'->>'node' FROM horsies_task_history WHERE workflow_id = '%s'"
                  " AND workflow_node = 'load'", wf), "merge");

    /* asked again, the rerun already made: nothing sent, the workflow as it ended */
    char *before = wf_state();
    CHECK_INT(task_rerun(&s, failed, NULL, &r), 200);
    CHECK(!jbool(&r, "created"));
    CHECK_STR(jstr(&r, "id"), again);
    CHECK_STR(jstr(&r, "workflowStatus"), "COMPLETED");
    reply_fini(&r);
    char *after = wf_state();
    CHECK_STR(after, before);
    free(before);
    free(after);
    srv_stop(&s);
}

/* Two reruns of one node at once: one sends, the other answers it. */
TEST(two_reruns_of_a_node_at_once_send_one_task)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96], failed[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"w\",\"nodes\":[{\"id\":\"a\",\"task\":\"bad\",\"queue\":\"q\"},"
                              "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"]}]}"));
    CHECK_INT(wf_run_round(&s, "q"), 1);
    keep_str(failed, node_task(wf, "a"));
    bg_req one, two;
    bg_start(&one, &s, "POST", sfmt("/api/v1/tasks/%s/rerun", failed), "{\"name\":\"ok\"}");
    bg_start(&two, &s, "POST", sfmt("/api/v1/tasks/%s/rerun", failed), "{\"name\":\"ok\"}");
    int st1, st2;
    int64_t elapsed;
    bg_wait(&one, &st1, &elapsed);
    bg_wait(&two, &st2, &elapsed);
    CHECK_INT(st1 + st2, 201 + 200);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE rerun_of = '%s'", failed), "1");
    CHECK_STR(sql("SELECT open_nodes FROM horsies_workflows WHERE id = '%s'", wf), "2");
    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_status(wf), "COMPLETED");
    srv_stop(&s);
}

/* "all" waits for x and y, both failed: rerunning x leaves it skipped (y
 * still rules it out) and the workflow fails again, naming y; rerunning y
 * then lets it run on x's completion. */
TEST(a_node_rerun_leaves_skipped_what_another_failure_still_rules_out)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96], x[96], y[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"w\",\"nodes\":[{\"id\":\"x\",\"task\":\"bad\",\"queue\":\"q\"},"
                              "{\"id\":\"y\",\"task\":\"bad\",\"queue\":\"q\"},"
                              "{\"id\":\"all\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"x\",\"y\"]},"
                              "{\"id\":\"after\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"all\"]}]}"));
    CHECK_INT(wf_run_round(&s, "q"), 2);
    CHECK_STR(wf_status(wf), "FAILED");
    keep_str(x, node_task(wf, "x"));
    keep_str(y, node_task(wf, "y"));
    reply r;
    CHECK_INT(task_rerun(&s, x, "{\"name\":\"ok\"}", &r), 201);
    reply_fini(&r);
    CHECK_STR(wf_status(wf), "RUNNING");
    CHECK_STR(wf_node_status(wf, "all"), "SKIPPED");
    CHECK_STR(wf_node_status(wf, "after"), "SKIPPED");
    CHECK_STR(sql("SELECT open_nodes FROM horsies_workflows WHERE id = '%s'", wf), "1");
    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_status(wf), "FAILED");
    CHECK_STR(sql("SELECT error_message FROM horsies_workflows WHERE id = '%s'", wf), "node y failed");

    CHECK_INT(task_rerun(&s, y, "{\"name\":\"ok\"}", &r), 201);
    reply_fini(&r);
    CHECK_STR(wf_node_status(wf, "all"), "PENDING");   /* x completed, y open again */
    CHECK_STR(sql("SELECT format('%%s %%s', deps_done, deps_failed) FROM horsies_workflow_tasks"
                  " WHERE workflow_id = '%s' AND node_id = 'all'", wf), "1 0");
    CHECK_STR(wf_node_status(wf, "after"), "PENDING");
    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_status(wf), "COMPLETED");
    srv_stop(&s);
}

/* Quorum and any joins a failure had ruled out wait again after a rerun
 * upstream, counting the ends that came after their skip, and run on the
 * rerun's completion. */
TEST(quorum_and_any_joins_decide_again_after_a_rerun_upstream)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"w\",\"nodes\":[{\"id\":\"x\",\"task\":\"bad\",\"queue\":\"q\"},"
                              "{\"id\":\"y\",\"task\":\"bad\",\"queue\":\"q\"},{\"id\":\"z\",\"task\":\"ok\",\"queue\":\"q\"},"
                              "{\"id\":\"two\",\"task\":\"ok\",\"queue\":\"q\",\"join\":\"quorum\",\"minSuccess\":2,"
                              "\"waitsFor\":[\"x\",\"y\",\"z\"]},"
                              "{\"id\":\"one\",\"task\":\"ok\",\"queue\":\"q\",\"join\":\"any\",\"waitsFor\":[\"x\",\"y\"]}]}"));
    CHECK_INT(wf_run_round(&s, "q"), 3);
    CHECK_STR(wf_node_status(wf, "two"), "SKIPPED");
    CHECK_STR(wf_node_status(wf, "one"), "SKIPPED");
    CHECK_STR(wf_status(wf), "FAILED");
    reply r;
    CHECK_INT(task_rerun(&s, node_task(wf, "x"), "{\"name\":\"ok\"}", &r), 201);
    reply_fini(&r);
    CHECK_STR(sql("SELECT string_agg(format('%%s %%s %%s/%%s', node_id, status, deps_done, deps_failed), ', '"
                  " ORDER BY node_id) FROM horsies_workflow_tasks WHERE workflow_id = '%s' AND node_id IN ('one', 'two')",
                  wf), "one PENDING 0/1, two PENDING 1/1");
    CHECK_STR(sql("SELECT open_nodes FROM horsies_workflows WHERE id = '%s'", wf), "3");
    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_node_status(wf, "two"), "COMPLETED");
    CHECK_STR(wf_node_status(wf, "one"), "COMPLETED");
    CHECK_STR(wf_status(wf), "COMPLETED");
    srv_stop(&s);
}

/* A node that ran on its predecessor's failure (allowFailedDeps) is rerun
 * only once that predecessor, rerun, has ended again, and then with its
 * argsFrom taken from the predecessor's new result; a name or queue
 * override becomes the node's. */
TEST(a_node_rerun_waits_for_reopened_predecessors_and_takes_their_new_results)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96], b_task[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"w\",\"nodes\":[{\"id\":\"a\",\"task\":\"bad\",\"queue\":\"q\"},"
                              "{\"id\":\"b\",\"task\":\"bad\",\"queue\":\"q\",\"waitsFor\":[\"a\"],"
                              "\"allowFailedDeps\":true,\"args\":{\"k\":1},\"argsFrom\":{\"x\":\"a\"}}]}"));
    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_status(wf), "FAILED");
    keep_str(b_task, node_task(wf, "b"));
    CHECK_STR(sql("SELECT args::text FROM horsies_task_history WHERE id = '%s'", b_task), "{\"k\": 1, \"x\": null}");
    reply r;
    CHECK_INT(task_rerun(&s, node_task(wf, "a"), "{\"name\":\"ok\"}", &r), 201);
    reply_fini(&r);
    refused(&s, b_task, "{\"name\":\"ok\"}", "waits for predecessors that have not ended");
    CHECK_INT(wf_run_round(&s, "q"), 1);
    CHECK_STR(wf_status(wf), "FAILED");   /* b, a sink, failed */
    CHECK_INT(task_rerun(&s, b_task, "{\"name\":\"ok\"}", &r), 201);
    reply_fini(&r);
    CHECK_STR(sql("SELECT args::text FROM horsies_tasks WHERE id = '%s'", node_task(wf, "b")),
              "{\"k\": 1, \"x\": {\"node\": \"a\"}}");
    CHECK_STR(sql("SELECT task_name FROM horsies_workflow_tasks WHERE workflow_id = '%s' AND node_id = 'b'", wf), "ok");
    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_status(wf), "COMPLETED");
    srv_stop(&s);
}

/* onError PAUSE: the rerun's task runs at once, the workflow stays paused,
 * and what the rerun makes ready waits for resume. */
TEST(a_node_rerun_in_a_paused_workflow_runs_and_its_successors_wait_for_resume)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"p\",\"onError\":\"PAUSE\",\"nodes\":["
                              "{\"id\":\"a\",\"task\":\"bad\",\"queue\":\"q\"},"
                              "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"]}]}"));
    CHECK_INT(wf_run_round(&s, "q"), 1);
    CHECK_STR(wf_status(wf), "PAUSED");
    sql("UPDATE horsies_workflows SET paused_at = now() - interval '1 day' WHERE id = '%s'", wf);
    reply r;
    CHECK_INT(task_rerun(&s, node_task(wf, "a"), "{\"name\":\"ok\"}", &r), 201);
    CHECK_STR(jstr(&r, "workflowStatus"), "PAUSED");
    reply_fini(&r);
    /* attended to: its pause counts from the rerun (paused_workflow_auto_cancel_after) */
    CHECK_STR(sql("SELECT paused_at > now() - interval '1 minute' FROM horsies_workflows WHERE id = '%s'", wf), "t");
    CHECK_INT(wf_run_round(&s, "q"), 1);   /* the rerun */
    CHECK_STR(wf_node_status(wf, "a"), "COMPLETED");
    CHECK_STR(wf_node_status(wf, "b"), "READY");
    CHECK_INT(wf_run_round(&s, "q"), 0);
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/resume", wf), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "RUNNING");
    reply_fini(&r);
    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_status(wf), "COMPLETED");
    srv_stop(&s);
}

/* A node whose task was cancelled alone (SKIPPED) runs again too; the
 * command line prints the workflow and its status. */
TEST(a_node_skipped_by_its_cancelled_task_is_rerun)
{
    silt_server s;
    srv_start(&s, NULL);
    char wf[96], cancelled[96];
    keep_str(wf, wf_start(&s, "{\"name\":\"w\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\"},"
                              "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"]}]}"));
    keep_str(cancelled, node_task(wf, "a"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", cancelled), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(wf_node_status(wf, "a"), "SKIPPED");
    CHECK_STR(wf_status(wf), "FAILED");
    char out[4096];
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' task rerun %s 2>&1", s.url, silt_bin(), cancelled), out, sizeof out), 0);
    CHECK(strstr(out, sfmt("(rerun of %s)", cancelled)) != NULL);
    CHECK(strstr(out, sfmt("workflow %s is RUNNING", wf)) != NULL);
    wf_run_until_settled(&s, "q", wf);
    CHECK_STR(wf_status(wf), "COMPLETED");
    srv_stop(&s);
}

TEST(a_node_rerun_that_does_not_apply_is_refused_saying_why_and_writes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    char done[96], cancelled[96], live[96], failed[96];
    /* a completed node: its dependents ran on its result */
    keep_str(done, wf_start(&s, "{\"name\":\"d\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"d\"}]}"));
    wf_run_until_settled(&s, "d", done);
    refused(&s, node_task(done, "a"), "{\"includeCompleted\":true}", "its dependents ran on its result");
    /* a node not yet ended: its task is live */
    keep_str(live, wf_start(&s, "{\"name\":\"l\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"l\"}]}"));
    refused(&s, node_task(live, "a"), NULL, "is PENDING: only a finished task can be rerun");
    /* a cancelled workflow's node */
    keep_str(cancelled, wf_start(&s, "{\"name\":\"c\",\"nodes\":[{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"c\"}]}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/workflows/%s/cancel", cancelled), NULL, &r);
    reply_fini(&r);
    refused(&s, node_task(cancelled, "a"), NULL, "which is CANCELLED");
    /* a failed node whose end recovery's outbox has not applied yet */
    keep_str(failed, wf_start(&s, "{\"name\":\"f\",\"nodes\":[{\"id\":\"a\",\"task\":\"bad\",\"queue\":\"f\"},"
                                  "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"f\",\"waitsFor\":[\"a\"]}]}"));
    CHECK_INT(wf_run_round(&s, "f"), 1);
    char task[96];
    keep_str(task, node_task(failed, "a"));
    sql("UPDATE horsies_workflow_tasks SET status = 'ENQUEUED' WHERE task_id = '%s'", task);
    refused(&s, task, NULL, "has not taken its end yet");
    sql("UPDATE horsies_workflow_tasks SET status = 'FAILED' WHERE task_id = '%s'", task);
    /* no longer the node's task (its rerun's key dropped with the rerun's record) */
    CHECK_INT(task_rerun(&s, task, NULL, &r), 201);
    reply_fini(&r);
    sql("DELETE FROM horsies_task_idempotency WHERE idempotency_key = 'rerun:%s'", task);
    refused(&s, task, NULL, "no longer its workflow node's task");
    /* the workflow's record gone */
    sql("DELETE FROM horsies_workflows WHERE id = '%s'", cancelled);
    refused(&s, sql("SELECT id FROM horsies_task_history WHERE workflow_id = '%s'", cancelled), NULL,
            "whose record is gone");
    /* a bad field is still a 400, nothing written */
    char *before = wf_state();
    CHECK_INT(task_rerun(&s, node_task(failed, "a"), "{\"priority\":0}", &r), 400);
    CHECK_STR(jstr(&r, "field"), "priority");
    reply_fini(&r);
    char *after = wf_state();
    CHECK_STR(after, before);
    free(before);
    free(after);
    /* a bulk rerun leaves nodes' tasks out: they are rerun one at a time */
    rq(&s, "POST", "/api/v1/tasks/rerun", "{\"queue\":\"f\",\"dryRun\":true}", &r);
    CHECK_INT(jint(&r, "count"), 0);
    reply_fini(&r);
    srv_stop(&s);
}

/* Integration: the row-delete sweep and paused-workflow expiry of the
 * Retention Config document (tasks/sweep.h, sql/021): terminal workflow
 * records and worker-state snapshots past their settings deleted in
 * batches, with the outbox evidence of a deleted workflow; PAUSED
 * workflows past paused_workflow_auto_cancel_after EXPIRED; None turning
 * each off; one server sweeping at a time. Rounds are run through POST
 * /api/v1/system/task-retention/sweep (the timer runs the same rounds);
 * ages are made by moving timestamps back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

/* A server (with silt.conf text, or none) whose first sweep round, the one
 * its timer runs soon after start, is over: the rounds a test asks for are
 * then the only ones until the next interval (300 s by default), so none
 * runs beside them. */
static void start_swept(silt_server *s, const char *conf)
{
    if (conf) srv_start(s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    else srv_start(s, NULL);
    srv_await_metric(s, "silt_task_sweeps_total", 1, 15000);
}

/* One round of the sweep; r keeps its reply (200 checked). */
static void sweep(silt_server *s, reply *r)
{
    rq(s, "POST", "/api/v1/system/task-retention/sweep", NULL, r);
    if (r->status != 200) harness_failf(__FILE__, __LINE__, "sweep: %d %s", r->status, r->raw.body.data);
}

static const char *start_workflow(silt_server *s, const char *name, const char *queue)
{
    reply r;
    rq(s, "POST", "/api/v1/workflows",
       sfmt("{\"name\":\"%s\",\"nodes\":[{\"id\":\"a\",\"task\":\"t\",\"queue\":\"%s\"},"
            "{\"id\":\"b\",\"task\":\"t\",\"queue\":\"%s\",\"waitsFor\":[\"a\"]}]}", name, queue, queue), &r);
    CHECK_INT(r.status, 201);
    const char *id = sfmt("%s", jstr(&r, "id"));
    reply_fini(&r);
    return id;
}

static void control(silt_server *s, const char *wf, const char *action, const char *want)
{
    reply r;
    rq(s, "POST", sfmt("/api/v1/workflows/%s/%s", wf, action), NULL, &r);
    CHECK_STR(jstr(&r, "status"), want);
    reply_fini(&r);
}

/* n terminal workflows (COMPLETED, with one node each) that finished
 * hours_ago, written directly: the sweep reads only these columns. */
static void old_workflows(int n, int hours_ago)
{
    sql("WITH w AS (INSERT INTO horsies_workflows (id, name, status, on_error, created_at, finished_at)"
        " SELECT gen_random_uuid(), 'old', 'COMPLETED', 'FAIL', now() - interval '%d hours',"
        "        now() - interval '%d hours' FROM generate_series(1, %d) RETURNING id)"
        " INSERT INTO horsies_workflow_tasks (workflow_id, node_id, task_name, queue_name, args, priority, status,"
        "                                     retention_class_key)"
        " SELECT id, 'a', 't', 'q', 'null', 100, 'COMPLETED', 'standard_30d' FROM w", hours_ago + 1, hours_ago, n);
}

/* terminal_record_retention_hours (720 by default): a terminal workflow
 * that finished longer ago is deleted with its nodes and the outbox
 * evidence still waiting for it; younger ones, and running ones however
 * old, stay. More rows than one batch (retention_delete_batch_size 500)
 * go in one round. */
TEST(terminal_workflows_past_terminal_record_retention_hours_are_deleted_with_their_nodes_and_outbox)
{
    silt_server s;
    start_swept(&s, NULL);
    old_workflows(1200, 721);
    old_workflows(3, 719);
    char running[96], cancelled[96];
    keep_str(running, start_workflow(&s, "running", "q"));
    keep_str(cancelled, start_workflow(&s, "cancelled", "q2"));
    control(&s, cancelled, "cancel", "CANCELLED");
    sql("UPDATE horsies_workflows SET created_at = now() - interval '800 hours' WHERE id = '%s'", running);
    sql("UPDATE horsies_workflows SET finished_at = now() - interval '721 hours' WHERE id = '%s'", cancelled);
    sql("INSERT INTO horsies_workflow_phase2_pending (task_id, workflow_id, node_id, task_status)"
        " VALUES (gen_random_uuid(), '%s', 'a', 'FAILED')", cancelled);
    reply r;
    sweep(&s, &r);
    CHECK_INT(jint(&r, "workflowsDeleted"), 1201);
    CHECK(!jbool(&r, "yielded"));
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows WHERE name = 'old'"), "3");
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows WHERE id = '%s'", cancelled), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflow_phase2_pending"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflow_tasks WHERE workflow_id = '%s'", cancelled), "0");
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", running), "RUNNING");
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflow_tasks"), "5");   /* the 3 young ones' and running's 2 */
    CHECK_INT(srv_metric(&s, "silt_task_sweep_rows_deleted_total{kind=\"workflows\"}"), 1201);
    srv_stop(&s);
}

/* A cancelled workflow whose node task still runs (its worker is told on
 * the next heartbeat) is kept, however old, until that task ends. */
TEST(a_terminal_workflow_with_a_live_node_task_is_kept_until_it_ends)
{
    silt_server s;
    start_swept(&s, NULL);
    char wf[96];
    keep_str(wf, start_workflow(&s, "live", "q"));
    task_claimed c;
    CHECK(task_claim_one(&s, "w1", "q", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    control(&s, wf, "cancel", "CANCELLED");
    sql("UPDATE horsies_workflows SET finished_at = now() - interval '1000 hours' WHERE id = '%s'", wf);
    reply r;
    sweep(&s, &r);
    CHECK_INT(jint(&r, "workflowsDeleted"), 0);
    reply_fini(&r);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":1"), 200);
    sweep(&s, &r);
    CHECK_INT(jint(&r, "workflowsDeleted"), 1);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows"), "0");
    srv_stop(&s);
}

/* worker_state_retention_hours (168 by default): snapshots older go, and
 * so do registrations of workers not seen for as long; newer ones stay. */
TEST(worker_states_past_worker_state_retention_hours_are_deleted)
{
    silt_server s;
    start_swept(&s, NULL);
    sql("INSERT INTO horsies_workers (worker_id, hostname, pid, queues, concurrency, last_seen_at) VALUES"
        " ('gone', 'h', 1, '{q}', 1, now() - interval '169 hours'), ('here', 'h', 2, '{q}', 1, now())");
    sql("INSERT INTO horsies_worker_states (worker_id, snapshot_at, hostname, pid, queues, concurrency, claimed, running)"
        " SELECT 'here', now() - make_interval(hours => h), 'h', 2, '{q}', 1, 0, 0"
        "   FROM unnest(ARRAY[169, 169, 200, 167, 1]) h");
    reply r;
    sweep(&s, &r);
    CHECK_INT(jint(&r, "workerStatesDeleted"), 4);   /* three snapshots and one registration */
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_worker_states"), "2");
    CHECK_STR(sql("SELECT string_agg(worker_id, ',') FROM horsies_workers"), "here");
    srv_stop(&s);
}

/* None turns each part off: nothing of theirs is deleted however old. */
TEST(none_disables_the_workflow_and_worker_state_sweeps)
{
    silt_server s;
    const char *conf = test_file("silt.conf", "[retention]\nterminal_record_retention_hours = None\n"
                                              "worker_state_retention_hours = None\n");
    start_swept(&s, conf);
    old_workflows(5, 100000);
    sql("INSERT INTO horsies_worker_states (worker_id, snapshot_at, hostname, pid, queues, concurrency, claimed, running)"
        " VALUES ('w', now() - interval '10000 hours', 'h', 1, '{q}', 1, 0, 0)");
    reply r;
    sweep(&s, &r);
    CHECK_INT(jint(&r, "workflowsDeleted"), 0);
    CHECK_INT(jint(&r, "workerStatesDeleted"), 0);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows"), "5");
    CHECK_STR(sql("SELECT count(*) FROM horsies_worker_states"), "1");
    srv_stop(&s);
}

/* Settings are the file's: a shorter terminal_record_retention_hours and
 * a small retention_delete_batch_size take effect. */
TEST(terminal_record_retention_hours_and_retention_delete_batch_size_come_from_silt_conf)
{
    silt_server s;
    const char *conf = test_file("silt.conf", "[retention]\nterminal_record_retention_hours = 2\n"
                                              "retention_delete_batch_size = 50\n");
    start_swept(&s, conf);
    old_workflows(120, 3);
    old_workflows(2, 1);
    reply r;
    sweep(&s, &r);
    CHECK_INT(jint(&r, "workflowsDeleted"), 120);   /* three batches: 50, 50, 20 */
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows"), "2");
    srv_stop(&s);
}

/* paused_workflow_auto_cancel_after: a workflow PAUSED longer than it is
 * EXPIRED (WORKFLOW_EXPIRED; nodes not started SKIPPED, enqueued tasks
 * cancelled), counted from the pause; a younger pause, a running workflow
 * and a resumed one are not. None (the default) expires nothing. */
TEST(paused_workflows_past_paused_workflow_auto_cancel_after_are_expired)
{
    silt_server s;
    start_swept(&s, NULL);
    char old[96];
    keep_str(old, start_workflow(&s, "old", "q"));
    control(&s, old, "pause", "PAUSED");
    sql("UPDATE horsies_workflows SET paused_at = now() - interval '100 days' WHERE id = '%s'", old);
    reply r;
    sweep(&s, &r);
    CHECK_INT(jint(&r, "workflowsExpired"), 0);   /* None: no expiry */
    reply_fini(&r);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", old), "PAUSED");
    srv_stop(&s);

    /* paused just now while the next server starts, so its first round has nothing to expire */
    sql("UPDATE horsies_workflows SET paused_at = now() WHERE id = '%s'", old);
    const char *conf = test_file("silt.conf", "[retention]\npaused_workflow_auto_cancel_after = 2h\n");
    start_swept(&s, conf);
    sql("UPDATE horsies_workflows SET paused_at = now() - interval '3 hours' WHERE id = '%s'", old);
    char young[96], running[96], resumed[96];
    keep_str(young, start_workflow(&s, "young", "q3"));
    keep_str(running, start_workflow(&s, "running", "q4"));
    keep_str(resumed, start_workflow(&s, "resumed", "q5"));
    control(&s, young, "pause", "PAUSED");
    control(&s, resumed, "pause", "PAUSED");
    sql("UPDATE horsies_workflows SET paused_at = now() - interval '3 hours' WHERE id = '%s'", resumed);
    control(&s, resumed, "resume", "RUNNING");
    sql("UPDATE horsies_workflows SET paused_at = now() - interval '1 hour' WHERE id = '%s'", young);
    sql("UPDATE horsies_workflows SET created_at = now() - interval '3 hours' WHERE id = '%s'", running);
    char task[96];
    keep_str(task, sql("SELECT task_id FROM horsies_workflow_tasks WHERE workflow_id = '%s' AND node_id = 'a'", old));
    sweep(&s, &r);
    CHECK_INT(jint(&r, "workflowsExpired"), 1);
    reply_fini(&r);
    CHECK_STR(sql("SELECT status || ' ' || error_code FROM horsies_workflows WHERE id = '%s'", old),
              "EXPIRED WORKFLOW_EXPIRED");
    CHECK_STR(sql("SELECT string_agg(node_id || ' ' || status, ',' ORDER BY node_id) FROM horsies_workflow_tasks"
                  " WHERE workflow_id = '%s'", old), "a SKIPPED,b SKIPPED");
    CHECK_STR(sql("SELECT status FROM horsies_task_history WHERE id = '%s'", task), "CANCELLED");
    CHECK_STR(sql("SELECT string_agg(status, ',' ORDER BY name) FROM horsies_workflows WHERE id <> '%s'", old),
              "RUNNING,RUNNING,PAUSED");   /* resumed, running, young */
    CHECK_INT(srv_metric(&s, "silt_workflows_expired_total"), 1);
    srv_stop(&s);
}

/* One server sweeps at a time: while another holds the sweep's lock, a
 * round deletes nothing and says it yielded. */
TEST(a_sweep_yields_to_the_server_already_sweeping)
{
    silt_server s;
    start_swept(&s, NULL);
    old_workflows(3, 1000);
    PGconn *other = test_session();
    PQclear(PQexec(other, "SELECT pg_advisory_lock(hashtextextended('silt.task_sweep', 0))"));
    reply r;
    sweep(&s, &r);
    CHECK(jbool(&r, "yielded"));
    CHECK_INT(jint(&r, "workflowsDeleted"), 0);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows"), "3");
    PQclear(PQexec(other, "SELECT pg_advisory_unlock(hashtextextended('silt.task_sweep', 0))"));
    PQfinish(other);   /* unlocked first: a closed session's locks go a moment after PQfinish returns */
    sweep(&s, &r);
    CHECK(!jbool(&r, "yielded"));
    CHECK_INT(jint(&r, "workflowsDeleted"), 3);
    reply_fini(&r);
    srv_stop(&s);
}

/* The timer sweeps on its own: the first round runs soon after start. */
TEST(the_sweep_runs_by_itself_after_start)
{
    sql("SELECT 1");   /* the test's database, before the server */
    old_workflows(4, 1000);
    silt_server s;
    srv_start(&s, NULL);
    sql_await("0", 15000, "SELECT count(*) FROM horsies_workflows");
    srv_await_metric(&s, "silt_task_sweeps_total", 1, 5000);   /* the round ends after its other steps */
    CHECK_INT(srv_metric(&s, "silt_task_sweep_rows_deleted_total{kind=\"workflows\"}"), 4);
    srv_stop(&s);
}

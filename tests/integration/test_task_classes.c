/* Integration: the retention class a task gets at enqueue (the Retention
 * Config document, "Which class a send gets"; base/retention_class.h):
 * what the send names, else its queue's queue_retention mapping, else
 * standard_30d; null keeps it forever; a key this server's silt.conf does
 * not know is refused with nothing written. The same for every enqueue:
 * HTTP sends and batches, the CLI, workflow nodes, schedule fires. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

static const char *const CONF =
    "[queue.emails]\n[queue.reports]\n[queue.audit]\n[queue.plain]\n"
    "[retention]\n"
    "queue_retention.emails = 7d\n"
    "queue_retention.reports = 90d\n"
    "queue_retention.audit = None\n"
    "retention_classes.audit_1y = 365d\n";

static void start_with_conf(silt_server *s, const char *text)
{
    srv_start(s, (const char *const[]){ sfmt("SILT_CONFIG=%s", test_file("silt.conf", text)), NULL });
}

static const char *class_of(const char *id)
{
    return sql("SELECT retention_class_key FROM horsies_tasks WHERE id = '%s'", id);
}

/* Without a key: the queue's mapping (7d -> q_emails_7d, 90d ->
 * q_reports_90d, None -> forever), and standard_30d for a queue with none. */
TEST(a_send_without_a_key_gets_its_queues_mapping_else_standard_30d)
{
    silt_server s;
    start_with_conf(&s, CONF);
    CHECK_STR(class_of(task_send(&s, "{\"name\":\"t\",\"queue\":\"emails\"}")), "q_emails_7d");
    CHECK_STR(class_of(task_send(&s, "{\"name\":\"t\",\"queue\":\"reports\"}")), "q_reports_90d");
    CHECK_STR(class_of(task_send(&s, "{\"name\":\"t\",\"queue\":\"audit\"}")), "forever");
    CHECK_STR(class_of(task_send(&s, "{\"name\":\"t\",\"queue\":\"plain\"}")), "standard_30d");
    reply r;   /* the reply says it too */
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", task_send(&s, "{\"name\":\"t\",\"queue\":\"emails\",\"delayMs\":60000}")),
       NULL, &r);
    CHECK_STR(jstr(&r, "retentionClassKey"), "q_emails_7d");   /* a delayed send: the same */
    reply_fini(&r);
    srv_stop(&s);
}

/* A key the send names wins over the mapping; null keeps the record
 * forever; standard_30d and forever may be named on any queue, and so may
 * a derived key of another queue's mapping. */
TEST(the_key_a_send_names_wins_and_null_keeps_the_task_forever)
{
    silt_server s;
    start_with_conf(&s, CONF);
    CHECK_STR(class_of(task_send(&s, "{\"name\":\"t\",\"queue\":\"emails\",\"retentionClassKey\":\"audit_1y\"}")),
              "audit_1y");
    CHECK_STR(class_of(task_send(&s, "{\"name\":\"t\",\"queue\":\"emails\",\"retentionClassKey\":null}")),
              "forever");
    CHECK_STR(class_of(task_send(&s, "{\"name\":\"t\",\"queue\":\"audit\",\"retentionClassKey\":\"standard_30d\"}")),
              "standard_30d");
    CHECK_STR(class_of(task_send(&s, "{\"name\":\"t\",\"queue\":\"plain\",\"retentionClassKey\":\"q_reports_90d\"}")),
              "q_reports_90d");
    srv_stop(&s);
}

/* A key this server does not know, silt's heartbeats class, or a value
 * that is not a key is a 400 naming retentionClassKey, and a batch with
 * one such task writes nothing. */
TEST(an_unknown_or_reserved_class_key_is_refused_and_nothing_is_written)
{
    silt_server s;
    start_with_conf(&s, CONF);
    reply r;
    rq(&s, "POST", "/api/v1/tasks", "{\"tasks\":[{\"name\":\"t\",\"queue\":\"plain\"},"
       "{\"name\":\"t\",\"queue\":\"plain\",\"retentionClassKey\":\"audit_2y\"}]}", &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "field"), "retentionClassKey");
    CHECK_STR(jstr(&r, "error"), "tasks[1]: unknown retention class audit_2y: this server's silt.conf knows "
                                 "standard_30d, forever, audit_1y, q_emails_7d, q_reports_90d");
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/tasks", "{\"name\":\"t\",\"queue\":\"plain\",\"retentionClassKey\":\"heartbeats\"}", &r);
    CHECK_INT(r.status, 400);
    CHECK(strstr(jstr(&r, "error"), "heartbeats is silt's own") != NULL);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/tasks", "{\"name\":\"t\",\"queue\":\"plain\",\"retentionClassKey\":7}", &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "error"), "retentionClassKey must be a retention class key or null");
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    srv_stop(&s);
}

/* A node's class is chosen when the workflow is accepted (its enqueue),
 * from its own retentionClassKey or else its queue: the task it runs,
 * sent later, carries it. */
TEST(a_workflow_nodes_task_carries_the_class_resolved_for_its_node)
{
    silt_server s;
    start_with_conf(&s, CONF);
    reply r;
    rq(&s, "POST", "/api/v1/workflows",
       "{\"name\":\"w\",\"nodes\":[{\"id\":\"a\",\"task\":\"t\",\"queue\":\"emails\"},"
       "{\"id\":\"b\",\"task\":\"t\",\"queue\":\"plain\",\"waitsFor\":[\"a\"],\"retentionClassKey\":\"audit_1y\"},"
       "{\"id\":\"c\",\"task\":\"t\",\"queue\":\"plain\",\"retentionClassKey\":\"nope\"}]}", &r);
    CHECK_INT(r.status, 400);   /* a node's unknown key refuses the workflow */
    CHECK(strstr(jstr(&r, "error"), "nodes[2]: unknown retention class nope") != NULL);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows"), "0");
    rq(&s, "POST", "/api/v1/workflows",
       "{\"name\":\"w\",\"nodes\":[{\"id\":\"a\",\"task\":\"t\",\"queue\":\"emails\"},"
       "{\"id\":\"b\",\"task\":\"t\",\"queue\":\"plain\",\"waitsFor\":[\"a\"],\"retentionClassKey\":\"audit_1y\"}]}",
       &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    CHECK_STR(sql("SELECT retention_class_key FROM horsies_tasks WHERE workflow_node = 'a'"), "q_emails_7d");
    task_claimed c;
    CHECK(task_claim_one(&s, "w1", "emails", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":1"), 200);
    CHECK_STR(sql("SELECT retention_class_key FROM horsies_task_history WHERE id = '%s'", c.id), "q_emails_7d");
    CHECK_STR(sql("SELECT retention_class_key FROM horsies_tasks WHERE workflow_node = 'b'"), "audit_1y");
    srv_stop(&s);
}

/* silt task send --retention-class-key. */
TEST(cli_task_send_names_a_retention_class)
{
    silt_server s;
    start_with_conf(&s, CONF);
    char out[4096];
    CHECK_INT(run_cmd(sfmt("SILT_URL=%s %s task send t --queue emails --retention-class-key audit_1y 2>&1", s.url,
                           silt_bin()), out, sizeof out), 0);
    out[strcspn(out, "\n")] = '\0';
    CHECK_STR(class_of(out), "audit_1y");
    CHECK_INT(run_cmd(sfmt("SILT_URL=%s %s task send t --queue emails --retention-class-key q_x_1d 2>&1", s.url,
                           silt_bin()), out, sizeof out), 1);
    CHECK(strstr(out, "unknown retention class q_x_1d") != NULL);
    srv_stop(&s);
}

/* A schedule's fire is an enqueue too: its retention_class_key, else its
 * queue's mapping. */
TEST(a_scheduled_task_gets_its_schedules_class_else_its_queues)
{
    sql("INSERT INTO horsies_schedule_state (schedule_name, last_slot) SELECT s,"
        " date_trunc('minute', now()) - interval '2 minutes 1 second' FROM unnest(ARRAY['tick', 'tock']) s");
    silt_server s;
    start_with_conf(&s, sfmt("%s[schedule.tick]\ncron = * * * * *\ntask = tick\nqueue = reports\ncatch_up = 1\n"
                             "[schedule.tock]\ncron = * * * * *\ntask = tock\nqueue = reports\ncatch_up = 1\n"
                             "retention_class_key = audit_1y\n", CONF));
    sql_await("2", 15000, "SELECT count(DISTINCT task_name) FROM horsies_tasks");
    CHECK_STR(sql("SELECT string_agg(DISTINCT task_name || ' ' || retention_class_key, ',') FROM horsies_tasks"),
              "tick q_reports_90d,tock audit_1y");
    srv_stop(&s);
}

/* Each server registers its classes at startup (the declared ones and the
 * ones its mappings derive; standard_30d and forever are the schema's); a
 * server whose silt.conf gives a registered key another duration is
 * refused before it listens, naming the key in silt.conf's report, and
 * registers nothing. */
TEST(classes_are_registered_at_startup_and_a_changed_duration_is_refused_naming_it)
{
    silt_server s;
    start_with_conf(&s, CONF);
    CHECK_STR(sql("SELECT string_agg(class_key || ' ' || coalesce(duration_s::text, '-') || ' ' || origin, ','"
                  " ORDER BY class_key) FROM horsies_retention_classes"),
              "audit_1y 31536000 declared,forever - silt,heartbeats 3600 heartbeats,q_emails_7d 604800 mapping,"
              "q_reports_90d 7776000 mapping,standard_30d 2592000 silt");   /* heartbeats: the heartbeat window */
    srv_stop(&s);
    const char *changed = test_file("silt.conf", "[retention]\nretention_classes.transient_2d = 2d\n"
                                                 "retention_classes.audit_1y = 180d\n");
    char out[4096];
    int rc = run_cmd(sfmt("SILT_CONFIG=%s PG_HOST=127.0.0.1 PG_PORT=%s PG_USER=postgres PG_DB=%s PORT=6632 "
                          "LOG_LEVEL=warn timeout 20 %s server 2>&1", changed, pg_port(), test_db(), silt_bin()),
                     out, sizeof out);
    CHECK(rc != 0 && rc != 124);   /* refused, not running */
    CHECK_STR(out, sfmt("error[HRS-216]: retention class `audit_1y` is registered with 365d; silt.conf declares 180d\n"
                        "  --> %s:3\n"
                        "   = note: classes are immutable: rows already carry the 365d window\n"
                        "   = help: declare the new duration under a new key, e.g. audit_180d\n"
                        "error: aborting due to 1 previous error\n", changed));
    CHECK_STR(sql("SELECT count(*) FROM horsies_retention_classes WHERE class_key = 'transient_2d'"), "0");
}

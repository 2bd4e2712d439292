/* Integration: the SQL API (docs/sql-api.md; sql/functions/sql_api.sql).
 * A task sent by tasks.send_task or tasks.send_tasks inside an
 * application's transaction exists exactly when that transaction commits,
 * and parked claims on every server wake at the commit; the rules are
 * those of POST /api/v1/tasks (one implementation: tasks.enqueue), a bad
 * argument raises 22023 with the HTTP 400's words and writes nothing; the
 * role silt_producer may call the API and nothing else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

/* A wake-up is due this soon after the commit (issue 34). */
#define WAKE_WITHIN_MS 50

static const char *const CONF =
    "[queue.emails]\npriority = 7\n[queue.plain]\n"
    "[retention]\n"
    "queue_retention.emails = 7d\n"
    "retention_classes.audit_1y = 365d\n";

static void start_with_conf(silt_server *s)
{
    srv_start(s, (const char *const[]){ sfmt("SILT_CONFIG=%s", test_file("silt.conf", CONF)), NULL });
}

static void park_claim(bg_req *w, silt_server *s, const char *worker, const char *queue, int wait_ms)
{
    bg_start(w, s, "POST", sfmt("/api/v1/workers/%s/claim", worker),
             sfmt("{\"queues\":[\"%s\"],\"waitMs\":%d}", queue, wait_ms));
}

/* Rolled back: no task, no idempotency key, and the parked claim is not
 * woken: it answers empty when its wait ends. */
TEST(a_task_sent_in_a_transaction_that_rolls_back_is_never_seen_and_wakes_nobody)
{
    silt_server s;
    srv_start(&s, NULL);
    bg_req w;
    park_claim(&w, &s, "w", "q", 1500);
    srv_await_metric(&s, "silt_task_claims_parked", 1, 5000);
    PGconn *pg = test_session();
    session_run(pg, "BEGIN");
    session_run(pg, "SELECT tasks.send_task('t', 'q', idempotency_key => 'k1')");
    session_run(pg, "SELECT * FROM tasks.send_tasks('[{\"name\":\"u\",\"queue\":\"q\"}]')");
    CHECK_STR(session_run(pg, "SELECT count(*) FROM horsies_tasks"), "2");   /* the transaction sees its own */
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");        /* nobody else does */
    session_run(pg, "ROLLBACK");
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 200);
    /* its whole wait: nothing woke it (the server's timers run on the event
     * loop's cached clock, so a deadline may end a few ms early) */
    CHECK(elapsed >= 1500 - 20);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_idempotency"), "0");
    reply r;
    rq(&s, "GET", "/api/v1/tasks?queue=q", NULL, &r);
    CHECK_INT(jpath(&r, "tasks.0"), -1);
    reply_fini(&r);
    PQfinish(pg);
    srv_stop(&s);
}

/* Committed: the claim parked before the commit takes the task, within
 * WAKE_WITHIN_MS of the commit's return. Alone: the bound is tight. */
TEST_ALONE(a_committed_sql_send_wakes_a_parked_claim_within_50_ms_of_the_commit)
{
    silt_server s;
    srv_start(&s, NULL);
    PGconn *pg = test_session();
    session_run(pg, "SELECT 1");   /* connected and warm before the clock starts */
    bg_req w;
    park_claim(&w, &s, "w", "q", 20000);
    srv_await_metric(&s, "silt_task_claims_parked", 1, 5000);
    session_run(pg, "BEGIN");
    char id[96];
    keep_str(id, session_run(pg, "SELECT tasks.send_task('t', 'q', '{\"n\":1}')"));
    int64_t committed = now_ms();
    session_run(pg, "COMMIT");
    int status;
    int64_t elapsed;
    bg_wait(&w, &status, &elapsed);
    CHECK_INT(status, 200);
    printf("    woken %lld ms after the commit was sent\n", (long long)(w.ended_ms - committed));
    CHECK(w.ended_ms - committed < WAKE_WITHIN_MS);
    CHECK_STR(sql("SELECT status || ' ' || worker_id FROM horsies_tasks WHERE id = '%s'", id), "CLAIMED w");
    PQfinish(pg);
    srv_stop(&s);
}

/* Every server hears the commit: a claim parked on each of two servers
 * wakes within the bound. Alone: the bound is tight. */
TEST_ALONE(a_committed_sql_batch_wakes_claims_parked_on_every_server)
{
    silt_server a, b;
    srv_start(&a, NULL);
    srv_start(&b, NULL);
    PGconn *pg = test_session();
    session_run(pg, "SELECT 1");
    bg_req wa, wb;
    park_claim(&wa, &a, "wa", "qa", 20000);
    park_claim(&wb, &b, "wb", "qb", 20000);
    srv_await_metric(&a, "silt_task_claims_parked", 1, 5000);
    srv_await_metric(&b, "silt_task_claims_parked", 1, 5000);
    session_run(pg, "BEGIN");
    session_run(pg, "SELECT count(*) FROM tasks.send_tasks('[{\"name\":\"t\",\"queue\":\"qa\"},{\"name\":\"t\",\"queue\":\"qb\"}]')");
    int64_t committed = now_ms();
    session_run(pg, "COMMIT");
    int status;
    int64_t elapsed;
    bg_wait(&wa, &status, &elapsed);
    CHECK_INT(status, 200);
    bg_wait(&wb, &status, &elapsed);
    CHECK_INT(status, 200);
    printf("    woken %lld and %lld ms after the commit was sent\n", (long long)(wa.ended_ms - committed),
           (long long)(wb.ended_ms - committed));
    CHECK(wa.ended_ms - committed < WAKE_WITHIN_MS);
    CHECK(wb.ended_ms - committed < WAKE_WITHIN_MS);
    CHECK_STR(sql("SELECT string_agg(queue_name || ':' || worker_id, ',' ORDER BY queue_name) FROM horsies_tasks"
                  " WHERE status = 'CLAIMED'"), "qa:wa,qb:wb");
    PQfinish(pg);
    srv_stop(&a);
    srv_stop(&b);
}

/* The columns a send decides, to compare two tasks' rows. */
static const char *row_of(const char *id)
{
    return sql("SELECT concat_ws(' | ', task_name, queue_name, args::text, priority, status, timeout_ms, max_retries,"
               " retry_delays_ms, retry_base_ms, retry_cap_ms, retry_jitter, retry_on, good_until,"
               " retention_class_key, run_at > sent_at + interval '50 s')"
               " FROM horsies_tasks WHERE id = '%s'", id);
}

/* The same task sent over HTTP and by SQL gets the same row: the queue's
 * priority and class mapping, the retry policy, the delay; the same
 * idempotency rule (a key sent before answers the first task's id). */
TEST(a_task_sent_by_sql_gets_the_same_row_as_the_same_task_sent_over_http)
{
    silt_server s;
    start_with_conf(&s);
    char http[96], viasql[96], batch[96];
    keep_str(http, task_send(&s, "{\"name\":\"mail\",\"queue\":\"emails\",\"args\":{\"to\": [1,2]},\"delayMs\":60000,"
                                 "\"timeoutMs\":5000,\"goodUntil\":\"2030-01-01T00:00:00Z\",\"retry\":{\"maxRetries\":3,"
                                 "\"backoff\":{\"baseMs\":100},\"jitter\":0.25,\"retryOn\":[\"TASK_TIMEOUT\"]},"
                                 "\"idempotencyKey\":\"h1\"}"));
    keep_str(viasql, sql("SELECT tasks.send_task('mail', 'emails', '{\"to\": [1,2]}', delay_ms => 60000,"
                         " timeout_ms => 5000, good_until => '2030-01-01T00:00:00Z', max_retries => 3,"
                         " backoff_base_ms => 100, jitter => 0.25, retry_on => ARRAY['TASK_TIMEOUT'])"));
    keep_str(batch, sql("SELECT id FROM tasks.send_tasks('[{\"name\":\"mail\",\"queue\":\"emails\",\"args\":{\"to\": [1,2]},"
                        "\"delayMs\":60000,\"timeoutMs\":5000,\"goodUntil\":\"2030-01-01T00:00:00Z\",\"retry\":{"
                        "\"maxRetries\":3,\"backoff\":{\"baseMs\":100},\"jitter\":0.25,\"retryOn\":[\"TASK_TIMEOUT\"]}}]')"));
    char want[512];
    snprintf(want, sizeof want, "%s", row_of(http));
    CHECK(strstr(want, "| 7 |") != NULL);                 /* [queue.emails] priority */
    CHECK(strstr(want, "q_emails_7d") != NULL);           /* its queue_retention mapping */
    CHECK(strstr(want, "| 86400000 |") != NULL);          /* a backoff's cap: a day */
    CHECK_STR(row_of(viasql), want);
    CHECK_STR(row_of(batch), want);
    /* defaults where the queue says nothing: priority 100, standard_30d */
    char plain_http[96], plain_sql[96];
    keep_str(plain_http, task_send(&s, "{\"name\":\"p\",\"queue\":\"plain\",\"retentionClassKey\":\"audit_1y\"}"));
    keep_str(plain_sql, sql("SELECT tasks.send_task('p', 'plain', retention_class_key => 'audit_1y')"));
    CHECK_STR(row_of(plain_sql), row_of(plain_http));
    CHECK_STR(sql("SELECT priority || ' ' || retention_class_key FROM horsies_tasks WHERE id = '%s'", plain_sql),
              "100 audit_1y");
    char forever[96];
    keep_str(forever, sql("SELECT tasks.send_task('p', 'plain', retention_class_key => 'forever')"));
    CHECK_STR(sql("SELECT retention_class_key FROM horsies_tasks WHERE id = '%s'", forever), "forever");
    /* a key sent over HTTP answers its task by SQL, in both forms, writing nothing */
    int before = atoi(sql("SELECT count(*) FROM horsies_tasks"));
    CHECK_STR(sql("SELECT tasks.send_task('other', 'plain', idempotency_key => 'h1')"), http);
    CHECK_STR(sql("SELECT id || ' ' || created FROM tasks.send_tasks('[{\"name\":\"x\",\"queue\":\"plain\","
                  "\"idempotencyKey\":\"h1\"}]')"), sfmt("%s false", http));
    CHECK_INT(atoi(sql("SELECT count(*) FROM horsies_tasks")), before);
    /* and a key sent by SQL answers over HTTP */
    char keyed[96];
    keep_str(keyed, sql("SELECT tasks.send_task('k', 'plain', idempotency_key => 's1')"));
    reply r;
    rq(&s, "POST", "/api/v1/tasks", "{\"name\":\"k\",\"queue\":\"plain\",\"idempotencyKey\":\"s1\"}", &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "id"), keyed);
    CHECK(!jbool(&r, "created"));
    reply_fini(&r);
    srv_stop(&s);
}

/* A bad argument raises 22023 with the words of the HTTP 400 (naming the
 * task in a batch), and nothing of the call is written. */
TEST(a_bad_sql_send_raises_silts_message_and_writes_nothing)
{
    silt_server s;
    start_with_conf(&s);
    PGconn *pg = test_session();
    static const struct { const char *call, *message; } cases[] = {
        { "tasks.send_task('t', 'plain', priority => 0)", "priority must be an integer from 1 to 100" },
        { "tasks.send_task('t', 'nowhere')", "queue \"nowhere\" is not declared in the configuration file" },
        { "tasks.send_task(NULL, 'plain')", "name is required" },
        { "tasks.send_task('t', 'plain', delay_ms => 5, run_at => now())", "runAt and delayMs cannot both be given" },
        { "tasks.send_task('t', 'plain', max_retries => 21)", "maxRetries must be an integer from 0 to 20" },
        { "tasks.send_task('t', 'plain', retry_delays_ms => '{}')",
          "retry.delaysMs must be an array of 1 to 20 integers" },
        { "tasks.send_task('t', 'plain', backoff_base_ms => 10, retry_delays_ms => '{5}')",
          "retry.backoff and retry.delaysMs cannot both be given" },
        { "tasks.send_task('t', 'plain', backoff_cap_ms => 10)", "retry.backoff.baseMs is required" },
        { "tasks.send_task('t', 'plain', jitter => 1.5)", "retry.jitter must be a number from 0 to 1" },
        { "tasks.send_task('t', 'plain', retention_class_key => 'audit_2y')",
          "unknown retention class audit_2y: this server's silt.conf knows standard_30d, forever, audit_1y, q_emails_7d" },
        { "tasks.send_task('t', 'plain', retention_class_key => 'heartbeats')",
          "retention class heartbeats is silt's own, for heartbeat partitions: a task cannot use it" },
        { "tasks.send_tasks('[{\"name\":\"t\",\"queue\":\"plain\"},{\"name\":\"t\",\"queue\":\"plain\",\"priority\":500}]')",
          "tasks[1]: priority must be an integer from 1 to 100" },
        { "tasks.send_tasks('[{\"name\":\"t\",\"queue\":\"plain\"},{\"name\":\"t\",\"queue\":\"nowhere\"}]')",
          "tasks[1]: queue \"nowhere\" is not declared in the configuration file" },
        { "tasks.send_tasks('[{\"name\":\"t\",\"queue\":\"plain\",\"max_retries\":3}]')",
          "tasks[0]: unknown field \"max_retries\" in a task" },
        { "tasks.send_tasks('[{\"name\":\"t\",\"queue\":\"plain\",\"runAt\":\"tomorrow\"}]')",
          "tasks[0]: runAt must be an ISO 8601 timestamp, e.g. 2026-12-01T07:04:30.501Z" },
        { "tasks.send_tasks('[]')", "tasks must be an array of 1 to 1000 tasks" },
        { "tasks.send_task('t', 'plain', unique_key => 'k', unique_while => 'pending')",
          "unique.while must be \"live\"" },
        { "tasks.send_tasks('[{\"name\":\"t\",\"queue\":\"plain\",\"unique\":{\"byArgs\":true,\"forMs\":-1}}]')",
          "tasks[0]: unique.forMs must be an integer from 1 to 31622400000" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_STR(session_refused(pg, sfmt("SELECT * FROM %s", cases[i].call), "22023"), cases[i].message);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_idempotency"), "0");
    CHECK_STR(sql("SELECT count(*) FROM tasks.unique_keys"), "0");
    /* the same rule answers over HTTP, as a 400 naming the field */
    reply r;
    rq(&s, "POST", "/api/v1/tasks", "{\"tasks\":[{\"name\":\"t\",\"queue\":\"plain\"},{\"name\":\"t\","
       "\"queue\":\"nowhere\"}]}", &r);
    CHECK_INT(r.status, 400);
    CHECK_STR(jstr(&r, "field"), "queue");
    CHECK_STR(jstr(&r, "error"), "tasks[1]: queue \"nowhere\" is not declared in the configuration file");
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    PQfinish(pg);
    srv_stop(&s);
}

/* A login role granted silt_producer sends, and can neither read nor
 * change silt's tables nor call its internal functions. */
TEST(a_role_granted_silt_producer_may_send_and_do_nothing_else)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *role = uniq("app");
    char name[96];
    keep_str(name, role);
    sql("CREATE ROLE \"%s\" LOGIN; GRANT silt_producer TO \"%s\"", name, name);
    PGconn *pg = PQconnectdb(sfmt("host=127.0.0.1 port=%s user=%s dbname=%s", pg_port(), name, test_db()));
    CHECK(PQstatus(pg) == CONNECTION_OK);
    char id[96];
    keep_str(id, session_run(pg, "SELECT tasks.send_task('t', 'q')"));
    CHECK_STR(session_run(pg, "SELECT count(*) FROM tasks.send_tasks('[{\"name\":\"t\",\"queue\":\"q\"}]')"), "1");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "2");
    session_refused(pg, "SELECT count(*) FROM horsies_tasks", "42501");
    session_refused(pg, "SELECT count(*) FROM queen.queues", "42501");
    session_refused(pg, sfmt("DELETE FROM horsies_tasks WHERE id = '%s'", id), "42501");
    session_refused(pg, "UPDATE tasks.send_settings SET queues_declared = true", "42501");
    session_refused(pg, sfmt("SELECT tasks.cancel('%s')", id), "42501");
    session_refused(pg, "SELECT tasks.uuid7()", "42501");
    session_refused(pg, "SELECT * FROM tasks.enqueue('{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',"
                " '{}', '{}', '{}', '{}', '{}', '{}', false)", "42501");
    session_refused(pg, "DELETE FROM tasks.unique_keys", "42501");
    session_refused(pg, "SELECT tasks.send_settings_store('{}', '{}', '{}', '{}', true, '{}')", "42501");
    session_refused(pg, "SELECT * FROM queen.push_flush('{}', '{}', '{}', '', '{}', '', '', '{}', '{}')", "42501");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks WHERE id = '%s'", id), "1");
    PQfinish(pg);
    sql("DROP ROLE \"%s\"", name);
    srv_stop(&s);
}

/* Roles belong to the cluster: a second database migrated in it finds
 * silt_producer made and grants it the API there too; sends there, before
 * any server stored its settings, take silt.conf's defaults. */
TEST(a_second_database_in_the_cluster_migrates_with_silt_producer_already_made)
{
    const char *db = uniq("silt_second");
    char name[96];
    keep_str(name, db);
    db_create(name);
    static char out[65536];
    CHECK_INT(migrate_output(name, out, sizeof out), 0);
    CHECK_STR(sql_in(name, "SELECT has_function_privilege('silt_producer', 'tasks.send_tasks(json)', 'EXECUTE')"),
              "t");
    CHECK_STR(sql_in(name, "SELECT has_function_privilege('silt_producer', 'tasks.cancel(uuid)', 'EXECUTE')"), "f");
    CHECK_STR(sql_in(name, "SELECT has_table_privilege('silt_producer', 'horsies_tasks', 'SELECT')"), "f");
    CHECK_STR(sql_in(name, "SELECT count(*) FROM pg_roles WHERE rolname = 'silt_producer' AND NOT rolcanlogin"),
              "1");
    /* no server has stored silt.conf's settings there yet: the defaults */
    char id[96];
    keep_str(id, sql_in(name, "SELECT tasks.send_task('t', 'q')"));
    CHECK_STR(sql_in(name, "SELECT priority || ' ' || retention_class_key FROM horsies_tasks WHERE id = '%s'", id),
              "100 standard_30d");
}

/* docs/sql-api.md's psql example runs as written: the order and its task
 * commit together, and the batch sends its two. */
TEST(the_psql_example_of_the_sql_api_document_runs_as_written)
{
    silt_server s;
    srv_start(&s, NULL);
    char *example = doc_block("docs/sql-api.md", "### psql");
    sql("CREATE TABLE orders (id integer PRIMARY KEY, customer text)");
    PGconn *pg = test_session();
    session_run(pg, example);
    free(example);
    CHECK_STR(sql("SELECT count(*) FROM orders"), "1");
    CHECK_STR(sql("SELECT max_retries || ' ' || retry_base_ms || ' ' || idempotency_key || ' ' || args::text"
                  " FROM horsies_tasks WHERE task_name = 'send-receipt'"), "3 1000 receipt:42 {\"order\": 42}");
    CHECK_STR(sql("SELECT string_agg(priority || ':' || (run_at > sent_at + interval '50 s'), ',' ORDER BY id)"
                  " FROM horsies_tasks WHERE queue_name = 'images'"), "10:false,100:true");   /* ids in batch order */
    PQfinish(pg);
    srv_stop(&s);
}

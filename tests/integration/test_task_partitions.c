/* Integration: terminal task records and heartbeats age by partition drop
 * (the Retention Config document, "What ages by what", "Partition
 * coverage", "A partition dropped outside the library"; sql/024,
 * tasks/partition_pass.h). Passes are run through POST
 * /api/v1/system/task-retention/run (the timer runs the same passes, every
 * partition_maintenance_interval_s); time is controlled by making leaves of
 * past days (tasks.history_leaf_ensure, as an operator may) and moving
 * records into them, never by waiting. Days and hours are counted from the
 * newest pass (BASE_DAY, BASE_HOUR), the one whose leaves a test checks,
 * so a test that runs across midnight or the top of an hour still compares
 * like with like; leaves of at least two days ago are used for drops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

static const char *const CONF =
    "[queue.emails]\n[queue.plain]\n"
    "[retention]\n"
    "queue_retention.emails = 7d\n"
    "retention_classes.short_45s = 45s\n";

/* A server with silt.conf text whose first pass, the one its timer runs
 * soon after start, is over: the passes a test asks for are then the only
 * ones until the next interval (900 s by default). */
static void start_passed(silt_server *s, const char *text, const char *extra_env)
{
    const char *env[3] = { sfmt("SILT_CONFIG=%s", test_file("silt.conf", text)), extra_env, NULL };
    srv_start(s, env);
    srv_await_metric(s, "silt_task_partition_passes_total", 1, 15000);
}

/* One pass; r keeps its report (200 checked). */
static void pass(silt_server *s, reply *r)
{
    rq(s, "POST", "/api/v1/system/task-retention/run", NULL, r);
    if (r->status != 200) harness_failf(__FILE__, __LINE__, "pass: %d %s", r->status, r->raw.body.data);
    CHECK(!jbool(r, "yielded"));
}

/* The UTC day, and hour, the newest pass started in (SQL expressions). */
#define BASE_DAY "(SELECT (max(started_at) AT TIME ZONE 'UTC')::date FROM horsies_retention_passes)"
#define BASE_HOUR "(SELECT date_trunc('hour', max(started_at) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'" \
                  " FROM horsies_retention_passes)"

/* The UTC day `offset` days from BASE_DAY, as leaf names spell it. */
static const char *day(int offset)
{
    return sql("SELECT to_char(" BASE_DAY " + %d, 'YYYY_MM_DD')", offset);
}

static const char *leaf(const char *class_key, int offset)
{
    return sfmt("horsies_task_history_%s_%s", class_key, day(offset));
}

static void make_leaf(const char *class_key, int offset)
{
    CHECK_STR(sql("SELECT tasks.history_leaf_ensure('%s', " BASE_DAY " + %d)", class_key, offset),
              "created");
}

static bool exists(const char *relation)
{
    return strcmp(sql("SELECT to_regclass('%s') IS NOT NULL", relation), "t") == 0;
}

static bool cataloged(const char *leaf_name)
{
    return strcmp(sql("SELECT count(*) FROM horsies_task_history_leaf_catalog WHERE leaf_name = '%s'", leaf_name),
                  "1") == 0;
}

/* Whether the JSON array at path of r names name. */
static bool lists(const reply *r, const char *path, const char *name)
{
    return strstr(jraw(r, path), sfmt("\"%s\"", name)) != NULL;
}

/* A task of queue sent, claimed and completed: its id. */
static const char *completed_task(silt_server *s, const char *queue, const char *extra)
{
    char id[96];
    keep_str(id, task_send(s, sfmt("{\"name\":\"t\",\"queue\":\"%s\"%s}", queue, extra ? extra : "")));
    task_claimed c;
    CHECK(task_claim_one(s, "w1", queue, &c));
    CHECK_STR(c.id, id);
    CHECK_INT(task_call(s, "start", &c, NULL), 200);
    CHECK_INT(task_call(s, "complete", &c, "\"result\":1"), 200);
    return sfmt("%s", id);
}

/* Moves a finished task's record to a day `offset` days from today (its
 * leaf made first): PostgreSQL moves the row into that leaf. */
static void backdate(const char *id, const char *class_key, int offset)
{
    if (!exists(leaf(class_key, offset))) make_leaf(class_key, offset);
    sql("UPDATE horsies_task_history SET finished_at = (" BASE_DAY " + %d)::timestamp"
        " AT TIME ZONE 'UTC' + interval '12 hours' WHERE id = '%s'", offset, id);
}

static const char *const ABSENT_MESSAGE =
    "Partition coverage: cataloged leaves have no relation and were excluded from the staged readers: %s. "
    "Reads and terminalization are restored; the records those leaves held are gone. The catalog rows are kept "
    "as evidence and resolving them is an operator decision.";

/* ---- coverage ------------------------------------------------------------- */

/* "Each class carries its own parent relation, history_leaf_horizon_days + 1
 * daily leaves, and two indexes per leaf": for standard_30d, a mapped
 * queue's q_emails_7d and a declared class, at the default horizon 3. */
TEST(each_class_has_its_parent_and_horizon_plus_one_daily_leaves_with_two_indexes_each)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    const char *classes[] = { "standard_30d", "q_emails_7d", "short_45s" };
    for (int c = 0; c < 3; c++) {
        CHECK_STR(sql("SELECT inhparent::regclass::text FROM pg_inherits WHERE inhrelid = 'horsies_task_history_%s'"
                      "::regclass", classes[c]), "horsies_task_history");
        CHECK_STR(sql("SELECT partstrat FROM pg_partitioned_table WHERE partrelid = 'horsies_task_history_%s'::regclass",
                      classes[c]), "r");
        for (int d = 0; d <= 3; d++) {
            const char *l = leaf(classes[c], d);
            CHECK(exists(l));
            CHECK(cataloged(l));
            CHECK_STR(sql("SELECT string_agg(indexrelid::regclass::text, ',' ORDER BY indexrelid::regclass::text) FROM pg_index"
                          " WHERE indrelid = '%s'::regclass", l), sfmt("%s_enqueued_idx,%s_id_idx", l, l));
        }
        CHECK(!exists(leaf(classes[c], 4)));
        CHECK(!exists(leaf(classes[c], -1)));
    }
    CHECK(exists("horsies_task_history_forever"));   /* one leaf, never dropped */
    srv_stop(&s);
}

/* "complete future daily history partitions kept ahead of writes (2–14)":
 * history_leaf_horizon_days = 5 keeps today and five days ahead. */
TEST(history_leaf_horizon_days_sets_how_many_days_of_leaves_are_kept_ahead)
{
    silt_server s;
    start_passed(&s, "[retention]\nhistory_leaf_horizon_days = 5\n", NULL);
    CHECK(exists(leaf("standard_30d", 5)));
    CHECK(!exists(leaf("standard_30d", 6)));
    srv_stop(&s);
}

/* "records live in horsies_task_history, partitioned by the retention
 * class assigned at enqueue": a completed task's record is in its class's
 * leaf of the day it ended, and is read back by id. */
TEST(a_task_record_lands_in_its_class_leaf_of_the_day_it_ended)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    char mapped[96];
    keep_str(mapped, completed_task(&s, "emails", NULL));
    CHECK_STR(sql("SELECT tableoid::regclass::text FROM horsies_task_history WHERE id = '%s'", mapped),
              sql("SELECT 'horsies_task_history_q_emails_7d_' || to_char(finished_at AT TIME ZONE 'UTC', 'YYYY_MM_DD')"
                  " FROM horsies_task_history WHERE id = '%s'", mapped));
    const char *plain = completed_task(&s, "plain", NULL);
    CHECK_STR(sql("SELECT tableoid::regclass::text FROM horsies_task_history WHERE id = '%s'", plain),
              sql("SELECT 'horsies_task_history_standard_30d_' || to_char(finished_at AT TIME ZONE 'UTC', 'YYYY_MM_DD')"
                  " FROM horsies_task_history WHERE id = '%s'", plain));
    const char *kept = completed_task(&s, "plain", ",\"retentionClassKey\":null");
    CHECK_STR(sql("SELECT tableoid::regclass::text FROM horsies_task_history WHERE id = '%s'", kept),
              "horsies_task_history_forever");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", mapped), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "status"), "COMPLETED");
    CHECK_STR(jstr(&r, "retentionClassKey"), "q_emails_7d");
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- pruning -------------------------------------------------------------- */

/* "a partition past its class's window is dropped whole": q_emails_7d's
 * leaf of 9 days ago (its day ended 8 days ago: past 7 days) goes with its
 * records; the one of 6 days ago (ended 5 days ago) stays; the catalog
 * forgets the dropped one. */
TEST(a_leaf_is_dropped_whole_once_its_day_plus_its_class_duration_has_passed)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    char old_id[96], old_leaf[96], young_leaf[96];
    keep_str(old_id, completed_task(&s, "emails", NULL));
    keep_str(old_leaf, leaf("q_emails_7d", -9));
    keep_str(young_leaf, leaf("q_emails_7d", -6));
    backdate(old_id, "q_emails_7d", -9);
    make_leaf("q_emails_7d", -6);
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    CHECK(lists(&r, "dropped", old_leaf));
    CHECK(!lists(&r, "dropped", young_leaf));
    reply_fini(&r);
    CHECK(!exists(old_leaf));
    CHECK(!cataloged(old_leaf));
    CHECK(exists(young_leaf));
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_history WHERE id = '%s'", old_id), "0");
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", old_id), NULL, &r);
    CHECK_INT(r.status, 404);   /* its record went with its leaf */
    reply_fini(&r);
    CHECK_INT(srv_metric(&s, "silt_task_leaves_dropped_total"), 1);
    srv_stop(&s);
}

/* "duration is a minimum ... a row survives between duration and duration
 * + 1 day": a 45-second class drops a leaf only once its whole day has
 * passed, never today's. */
TEST(a_sub_day_class_drops_a_leaf_only_once_its_whole_day_has_passed)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    make_leaf("short_45s", -2);
    reply r;
    pass(&s, &r);
    CHECK(lists(&r, "dropped", leaf("short_45s", -2)));
    reply_fini(&r);
    CHECK(exists(leaf("short_45s", 0)));
    srv_stop(&s);
}

/* "Records enqueued under the old mapping age out under the old mapping":
 * after emails moves from 7d to 14d, q_emails_7d's leaf of 9 days ago is
 * dropped and q_emails_14d's of the same day is kept; both classes keep
 * getting leaves (records of the old class may still be in flight). */
TEST(records_of_the_old_mapping_age_out_under_the_old_mapping)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    srv_stop(&s);
    start_passed(&s, "[queue.emails]\n[retention]\nqueue_retention.emails = 14d\n", NULL);
    make_leaf("q_emails_7d", -9);
    make_leaf("q_emails_14d", -9);
    reply r;
    pass(&s, &r);
    CHECK(lists(&r, "dropped", leaf("q_emails_7d", -9)));
    CHECK(!lists(&r, "dropped", leaf("q_emails_14d", -9)));
    reply_fini(&r);
    CHECK(exists(leaf("q_emails_14d", -9)));
    CHECK(exists(leaf("q_emails_7d", 3)));
    CHECK(exists(leaf("q_emails_14d", 3)));
    srv_stop(&s);
}

/* An idempotency key is free again once its task's record is dropped (the
 * key would otherwise outlive what it points at). */
TEST(an_idempotency_key_is_released_when_its_task_record_is_dropped)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    char first[96];
    keep_str(first, completed_task(&s, "plain", ",\"idempotencyKey\":\"k1\""));
    CHECK_STR(task_send(&s, "{\"name\":\"t\",\"queue\":\"plain\",\"idempotencyKey\":\"k1\"}"), first);
    backdate(first, "standard_30d", -40);
    reply r;
    pass(&s, &r);
    CHECK(lists(&r, "dropped", leaf("standard_30d", -40)));
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_idempotency WHERE idempotency_key = 'k1'"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_attempts WHERE task_id = '%s'", first), "0");
    rq(&s, "GET", sfmt("/api/v1/tasks/%s/attempts", first), NULL, &r);   /* the task is gone, attempts with it */
    CHECK_INT(r.status, 404);
    reply_fini(&r);
    CHECK(strcmp(task_send(&s, "{\"name\":\"t\",\"queue\":\"plain\",\"idempotencyKey\":\"k1\"}"), first) != 0);
    srv_stop(&s);
}

/* ---- refused drops ---------------------------------------------------------- */

/* "A refused drop — recovery evidence still pinning it ... — is skipped,
 * reported with its reason on the health surface, and retried each pass
 * until the blocker clears." */
TEST(a_leaf_pinned_by_unconsumed_recovery_evidence_is_refused_and_dropped_once_it_clears)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    char pinned[96];
    keep_str(pinned, leaf("q_emails_7d", -9));
    make_leaf("q_emails_7d", -9);
    sql("INSERT INTO horsies_workflows (id, name, status, on_error) VALUES ('%s', 'w', 'RUNNING', 'FAIL')",
        "00000000-0000-7000-8000-000000000001");
    sql("INSERT INTO horsies_workflow_phase2_pending (task_id, workflow_id, node_id, task_status, history_class_key,"
        " history_finished_at) VALUES (gen_random_uuid(), '00000000-0000-7000-8000-000000000001', 'a', 'FAILED',"
        " 'q_emails_7d', (" BASE_DAY " - 9)::timestamp AT TIME ZONE 'UTC' + interval '1 hour')");
    reply r;
    for (int round = 0; round < 2; round++) {   /* retried, and refused again, each pass */
        pass(&s, &r);
        CHECK_STR(jstr(&r, "outcome"), "incomplete");
        CHECK_STR(jstr(&r, "refusals.0.leaf"), pinned);
        CHECK(strstr(jstr(&r, "refusals.0.reason"), "recovery evidence pins it") != NULL);
        reply_fini(&r);
        CHECK(exists(pinned));
    }
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 503);
    CHECK(!jbool(&r, "healthy"));
    CHECK_STR(jstr(&r, "lastPass.refusals.0.leaf"), pinned);
    reply_fini(&r);
    CHECK_INT(srv_metric(&s, "silt_task_leaf_drops_refused_total"), 2);
    sql("DELETE FROM horsies_workflow_phase2_pending");
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    CHECK(lists(&r, "dropped", pinned));
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "healthy"));
    reply_fini(&r);
    srv_stop(&s);
}

/* "... or a reader holding the detach past its timeout": a transaction
 * reading the class keeps DETACH CONCURRENTLY waiting past
 * TASK_RETENTION_DETACH_TIMEOUT_MS; the drop is refused with that reason
 * and the leaf left detach-pending. Once the reader ends, the next pass
 * finalizes the interrupted detach first, then drops the leaf. */
TEST(a_reader_holding_the_detach_past_its_timeout_is_refused_and_the_detach_finalized_next_pass)
{
    silt_server s;
    start_passed(&s, CONF, "TASK_RETENTION_DETACH_TIMEOUT_MS=300");
    char held[96];
    keep_str(held, leaf("q_emails_7d", -9));
    make_leaf("q_emails_7d", -9);
    PGconn *reader = test_session();
    PQclear(PQexec(reader, "BEGIN"));
    PGresult *res = PQexec(reader, "SELECT count(*) FROM horsies_task_history_q_emails_7d");
    CHECK(PQresultStatus(res) == PGRES_TUPLES_OK);
    PQclear(res);
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "refusals.0.leaf"), held);
    CHECK(strstr(jstr(&r, "refusals.0.reason"), "a reader held the detach past its timeout") != NULL);
    reply_fini(&r);
    CHECK(exists(held));
    rq(&s, "GET", "/api/v1/task-retention/leaves?class=q_emails_7d", NULL, &r);
    CHECK_STR(jstr(&r, "leaves.0.leaf"), held);
    CHECK_STR(jstr(&r, "leaves.0.state"), "detach_pending");
    reply_fini(&r);
    pass(&s, &r);   /* the reader still there: the finalize is refused, once, and nothing else is tried */
    CHECK_STR(jstr(&r, "refusals.0.leaf"), held);
    CHECK(strncmp(jstr(&r, "refusals.0.reason"), "finalizing its detach: ", 23) == 0);
    CHECK(jpath(&r, "refusals.1") < 0);
    reply_fini(&r);
    PQclear(PQexec(reader, "COMMIT"));
    PQfinish(reader);
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    CHECK(lists(&r, "finalized", held));
    CHECK(lists(&r, "dropped", held));
    reply_fini(&r);
    CHECK(!exists(held));
    srv_stop(&s);
}

/* ---- containment ------------------------------------------------------------ */

/* "A class that cannot be served is contained to itself": two classes
 * whose leaf of two days ahead was dropped outside silt fail, each against
 * its own key and both named by the pass, and stop gaining leaves (the day
 * after is not made); standard_30d, sorting after both, still gets its
 * missing leaf; the health surface goes red. */
TEST(a_class_that_cannot_be_served_is_contained_and_the_pass_names_every_failed_class)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    sql("DROP TABLE %s", leaf("q_emails_7d", 2));
    sql("DROP TABLE %s", leaf("short_45s", 2));
    char n7[96], nstd[96];
    keep_str(n7, leaf("q_emails_7d", 3));
    keep_str(nstd, leaf("standard_30d", 3));
    sql("DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name IN ('%s', '%s')", n7, nstd);
    sql("DROP TABLE %s", n7);
    sql("DROP TABLE %s", nstd);
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "incomplete");
    CHECK_STR(jstr(&r, "failedClasses.0.classKey"), "q_emails_7d");
    CHECK_STR(jstr(&r, "failedClasses.1.classKey"), "short_45s");
    CHECK(jpath(&r, "failedClasses.2") < 0);
    CHECK(strstr(jstr(&r, "failedClasses.0.reason"), sfmt("cataloged leaf %s has no relation", leaf("q_emails_7d", 2)))
          != NULL);
    CHECK(lists(&r, "created", nstd));
    CHECK(!lists(&r, "created", n7));
    reply_fini(&r);
    CHECK(exists(nstd));
    CHECK(!exists(n7));
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 503);
    CHECK_STR(jstr(&r, "lastPass.failedClasses.1.classKey"), "short_45s");
    reply_fini(&r);
    CHECK_INT(srv_metric(&s, "silt_task_retention_classes_failed"), 2);
    CHECK(srv_metric(&s, "silt_task_leaves_created_total") >= 1);   /* and a heartbeat hour, if one began */
    srv_stop(&s);
}

/* ---- a partition dropped outside the library ------------------------------- */

/* "The next maintenance pass detects the divergence ... and reports it" in
 * the document's words; "The name also appears under absent_leaves on the
 * coverage health surface." A leaf older than the horizon blocks nothing:
 * the class is not failed. Deleting its catalog row resolves it. */
TEST(a_leaf_dropped_outside_silt_is_reported_in_the_documents_words_and_under_absent_leaves)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    char gone[96];
    keep_str(gone, leaf("standard_30d", -3));
    make_leaf("standard_30d", -3);
    sql("DROP TABLE %s", gone);
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "incomplete");
    CHECK_STR(jstr(&r, "message"), sfmt(ABSENT_MESSAGE, gone));
    CHECK_STR(jraw(&r, "absent_leaves"), sfmt("[\"%s\"]", gone));
    CHECK(jpath(&r, "failedClasses.0") < 0);   /* outside the horizon: nothing blocked */
    reply_fini(&r);
    CHECK(cataloged(gone));   /* "The catalog rows are kept as evidence" */
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 503);
    CHECK_STR(jraw(&r, "absent_leaves"), sfmt("[\"%s\"]", gone));
    reply_fini(&r);
    CHECK_INT(srv_metric(&s, "silt_task_leaves_absent"), 1);
    sql("DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name = '%s'", gone);
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "absent_leaves"), "[]");
    reply_fini(&r);
    srv_stop(&s);
}

/* "A partition inside the coverage horizon ... cannot be recreated while
 * its catalog row survives ... That class stops gaining new partitions";
 * reads and the terminalization of other days and classes go on; after the
 * document's DELETE "The next pass creates the class's partitions again
 * from its horizon." */
TEST(inside_the_horizon_a_class_waits_for_the_documented_delete_then_the_next_pass_recreates_its_leaves)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    char earlier[96], gone[96];
    keep_str(earlier, completed_task(&s, "plain", NULL));
    keep_str(gone, leaf("standard_30d", 2));
    sql("DROP TABLE %s", gone);
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "failedClasses.0.classKey"), "standard_30d");
    CHECK(lists(&r, "absent_leaves", gone));
    reply_fini(&r);
    CHECK(!exists(gone));
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", earlier), NULL, &r);   /* reads are restored */
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "status"), "COMPLETED");
    reply_fini(&r);
    completed_task(&s, "plain", NULL);   /* today's leaf takes records */
    completed_task(&s, "emails", NULL);  /* every other class is unaffected */
    sql("DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name = '%s'", gone);   /* the document's statement */
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    CHECK(lists(&r, "created", gone));
    reply_fini(&r);
    CHECK(exists(gone));
    srv_stop(&s);
}

/* "To remove partitions without entering this state, delete the catalog
 * rows first, let the readers republish, and drop the relations last": for
 * a past leaf and for one inside the horizon, whose uncataloged relation
 * the pass leaves alone, then makes again once it is gone. */
TEST(the_safe_removal_order_leaves_no_absent_leaf)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    char old[96], ahead[96];
    keep_str(old, leaf("standard_30d", -3));
    keep_str(ahead, leaf("standard_30d", 2));
    make_leaf("standard_30d", -3);
    sql("DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name IN ('%s', '%s')", old, ahead);
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    CHECK_STR(jraw(&r, "uncataloged"), sfmt("[\"%s\",\"%s\"]", old, ahead));   /* named, left alone */
    reply_fini(&r);
    sql("DROP TABLE %s", old);
    sql("DROP TABLE %s", ahead);
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    CHECK_STR(jraw(&r, "absent_leaves"), "[]");
    CHECK(lists(&r, "created", ahead));   /* inside the horizon: made again */
    reply_fini(&r);
    CHECK(!exists(old));
    srv_stop(&s);
}

/* "two indexes per leaf, all maintained on every pass": an index dropped
 * by hand is made again by the next pass, on a dated leaf and on forever's. */
TEST(a_pass_makes_a_missing_leaf_index_again)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    char l[96];
    keep_str(l, leaf("q_emails_7d", 1));
    sql("DROP INDEX %s_enqueued_idx", l);
    sql("DROP INDEX horsies_task_history_forever_id_idx");
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    CHECK_STR(jraw(&r, "repaired"), sfmt("[\"horsies_task_history_forever\",\"%s\"]", l));
    reply_fini(&r);
    CHECK(exists(sfmt("%s_enqueued_idx", l)));
    CHECK(exists("horsies_task_history_forever_id_idx"));
    srv_stop(&s);
}

/* The forever class's one leaf dropped outside silt: like a lost leaf
 * inside the horizon, the class fails and the leaf is absent until the
 * catalog row is deleted; then the next pass makes it again. */
TEST(a_forever_leaf_dropped_outside_silt_waits_for_the_documented_delete)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    sql("DROP TABLE horsies_task_history_forever");
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "failedClasses.0.classKey"), "forever");
    CHECK_STR(jraw(&r, "absent_leaves"), "[\"horsies_task_history_forever\"]");
    reply_fini(&r);
    CHECK(!exists("horsies_task_history_forever"));
    sql("DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name = 'horsies_task_history_forever'");
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    reply_fini(&r);
    CHECK(exists("horsies_task_history_forever"));   /* made again by the pass's registration */
    completed_task(&s, "plain", ",\"retentionClassKey\":null");
    srv_stop(&s);
}

/* "a pass that cannot do its job must never read the same as one that
 * succeeded": a pass stopped by an error is recorded as failed, with the
 * error, and the coverage surface goes red. */
TEST(a_pass_that_cannot_complete_is_recorded_as_failed_and_the_surface_goes_red)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    sql("CREATE FUNCTION public.refuse_classes() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'the registry refuses writes'; END $$");
    sql("CREATE TRIGGER refuse BEFORE INSERT ON horsies_retention_classes"
        " FOR EACH ROW EXECUTE FUNCTION public.refuse_classes()");
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "failed");
    CHECK_STR(jstr(&r, "error"), "registering the classes: the registry refuses writes");
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 503);
    CHECK_STR(jstr(&r, "outcome"), "failed");
    reply_fini(&r);
    CHECK_INT(srv_metric(&s, "silt_task_partition_passes_failed_total"), 1);
    CHECK_INT(srv_metric(&s, "silt_task_retention_coverage_healthy"), 0);
    srv_stop(&s);
}

/* ---- heartbeats --------------------------------------------------------------- */

/* "Heartbeats — Partition drop — hourly partitions drop whole", with
 * heartbeat_leaf_horizon_hours of coverage ahead: a heartbeat lands in its
 * hour's leaf; an hour a day old (past the heartbeat window) is dropped. */
TEST(heartbeats_live_in_hourly_leaves_kept_ahead_and_dropped_whole)
{
    silt_server s;
    start_passed(&s, "[retention]\nheartbeat_leaf_horizon_hours = 4\n", NULL);
    const char *hour = BASE_HOUR;
    CHECK(exists(sql("SELECT tasks.heartbeat_leaf_name(%s + interval '4 hours')", hour)));
    CHECK(!exists(sql("SELECT tasks.heartbeat_leaf_name(%s + interval '5 hours')", hour)));
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"t\",\"queue\":\"plain\"}"));
    task_claimed c;
    CHECK(task_claim_one(&s, "w1", "plain", &c));
    CHECK_STR(sql("SELECT tableoid::regclass::text FROM horsies_heartbeats WHERE task_id = '%s'", id),
              sql("SELECT tasks.heartbeat_leaf_name(date_trunc('hour', (SELECT sent_at FROM horsies_heartbeats"
                  " WHERE task_id = '%s') AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')", id));
    char old[96];
    keep_str(old, sql("SELECT tasks.heartbeat_leaf_name(%s - interval '1 day')", hour));
    CHECK_STR(sql("SELECT tasks.heartbeat_leaf_ensure(%s - interval '1 day')", hour), "created");
    reply r;
    pass(&s, &r);
    CHECK(lists(&r, "dropped", old));
    reply_fini(&r);
    CHECK(!exists(old));
    srv_stop(&s);
}

/* ---- one pass at a time ----------------------------------------------------- */

/* Passes never race: while another holds the pass (here, a session
 * holding its lock), a pass yields and changes nothing. */
TEST(a_pass_yields_while_another_pass_runs)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    PGconn *other = test_session();
    PQclear(PQexec(other, "SELECT pg_advisory_lock(hashtextextended('silt.partition_pass', 0))"));
    make_leaf("q_emails_7d", -9);
    reply r;
    rq(&s, "POST", "/api/v1/system/task-retention/run", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(jbool(&r, "yielded"));
    reply_fini(&r);
    CHECK(exists(leaf("q_emails_7d", -9)));
    PQclear(PQexec(other, "SELECT pg_advisory_unlock(hashtextextended('silt.partition_pass', 0))"));
    PQfinish(other);
    pass(&s, &r);
    CHECK(lists(&r, "dropped", leaf("q_emails_7d", -9)));
    reply_fini(&r);
    srv_stop(&s);
}

/* "the maintenance owner registers every declared class at startup and on
 * each pass": a class missing from the registry is registered again by the
 * next pass; one the registry holds with another duration (another
 * deployment's) fails that class alone, named with both durations. */
TEST(each_pass_registers_this_servers_classes_and_fails_one_registered_with_another_duration)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    sql("DELETE FROM horsies_retention_classes WHERE class_key = 'short_45s'");
    sql("UPDATE horsies_retention_classes SET duration_s = 86400 WHERE class_key = 'q_emails_7d'");
    reply r;
    pass(&s, &r);
    CHECK_STR(jstr(&r, "outcome"), "incomplete");
    CHECK_STR(jstr(&r, "failedClasses.0.classKey"), "q_emails_7d");
    CHECK_STR(jstr(&r, "failedClasses.0.reason"), "registered with 1d; silt.conf declares 7d (classes are immutable)");
    reply_fini(&r);
    CHECK_STR(sql("SELECT duration_s FROM horsies_retention_classes WHERE class_key = 'short_45s'"), "45");
    CHECK_STR(sql("SELECT duration_s FROM horsies_retention_classes WHERE class_key = 'q_emails_7d'"), "86400");
    srv_stop(&s);
}

/* The classes surface: every class with its duration as written, its
 * origin and its leaves. */
TEST(the_classes_surface_lists_every_class_with_its_duration_and_leaves)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    reply r;
    rq(&s, "GET", "/api/v1/task-retention/classes", NULL, &r);
    CHECK_INT(r.status, 200);
    const char *keys[] = { "forever", "heartbeats", "q_emails_7d", "short_45s", "standard_30d" };
    const char *durations[] = { "null", NULL, "\"7d\"", "\"45s\"", "\"30d\"" };
    for (int i = 0; i < 5; i++) {
        CHECK_STR(jstr(&r, sfmt("classes.%d.classKey", i)), keys[i]);
        if (durations[i]) CHECK_STR(jraw(&r, sfmt("classes.%d.duration", i)), durations[i]);
    }
    CHECK(jint(&r, "classes.2.leaves") >= 4);   /* today and three ahead (five once a day began) */
    CHECK_STR(jstr(&r, "classes.2.origin"), "mapping");
    reply_fini(&r);
    srv_stop(&s);
}

/* One pass at a time on a server too: asked for a pass while one runs
 * (here, one whose detach waits for a reader), it answers 409 and the
 * running pass goes on. */
TEST(a_pass_asked_of_a_server_already_running_one_is_409)
{
    silt_server s;
    start_passed(&s, CONF, "TASK_RETENTION_DETACH_TIMEOUT_MS=10000");
    make_leaf("q_emails_7d", -9);
    PGconn *reader = test_session();
    PQclear(PQexec(reader, "BEGIN"));
    PQclear(PQexec(reader, "SELECT count(*) FROM horsies_task_history_q_emails_7d"));
    bg_req running;
    bg_start(&running, &s, "POST", "/api/v1/system/task-retention/run", NULL);
    sql_await("1", 15000, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                          " AND application_name = 'silt partition pass'"
                          " AND query LIKE 'ALTER TABLE%%DETACH%%' AND state = 'active'");
    reply r;
    rq(&s, "POST", "/api/v1/system/task-retention/run", NULL, &r);
    CHECK_INT(r.status, 409);
    CHECK_STR(jstr(&r, "error"), "a partition pass is already running on this server");
    reply_fini(&r);
    PQclear(PQexec(reader, "COMMIT"));
    PQfinish(reader);
    int status;
    int64_t elapsed;
    bg_wait(&running, &status, &elapsed);
    CHECK_INT(status, 200);
    CHECK(!exists(leaf("q_emails_7d", -9)));
    srv_stop(&s);
}

/* The health surface never reads an old success as coverage: with no pass
 * finished for more than twice partition_maintenance_interval_s (a pass
 * that hangs, or cannot reach the database, records nothing), it is red
 * and says why. */
TEST(the_coverage_surface_goes_red_when_no_pass_has_finished_lately)
{
    silt_server s;
    start_passed(&s, CONF, NULL);
    reply r;
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "problems"), "[]");
    reply_fini(&r);
    sql("UPDATE horsies_retention_passes SET finished_at = now() - interval '2 hours'");
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 503);
    CHECK(!jbool(&r, "healthy"));
    CHECK(strncmp(jstr(&r, "problems.0"), "no partition pass has finished for ", 35) == 0);
    CHECK_STR(jstr(&r, "outcome"), "ok");
    reply_fini(&r);
    srv_stop(&s);
}

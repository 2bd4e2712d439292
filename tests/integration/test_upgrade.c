/* test_upgrade: `silt migrate` brings a database an earlier silt left to the
 * current schema, keeping its data, and leaves a current one alone.
 *
 * The schema is numbered migrations (sql/migrations: the baseline
 * 018_schema.sql, then one file per change of tables, indexes or data) and
 * the function files (sql/functions), applied whole after the migrations
 * whenever they changed. The databases earlier silts left are made from the
 * repository's history (schema_at.sh: that commit's files, applied as its
 * runner applied them), so these tests need a full clone. They cover every
 * state a database can be in when `silt migrate` meets it:
 *   - empty: it gets every file and reports the latest version;
 *   - current: nothing runs, nothing changes;
 *   - left by the silt of each schema version since the baseline (the last
 *     commit whose newest migration it was) and by 61e362e: upgraded to
 *     exactly the catalog a fresh database gets (functions, tables,
 *     columns, indexes, constraints, triggers, views), keeping its rows;
 *   - left by the migrations the baseline replaced: refused with the reason,
 *     nothing changed.
 *
 * A new migration is covered by the loop with no change here. Add to
 * seed_rows() rows of the tables it rewrites, and a test of its own for what
 * it must do to them, starting from database_from() of the version before
 * it (docs/development.md, "Changing the schema"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "base/buf.h"
#include "base/embed.h"
#include "base/ids.h"
#include "db/migrate.h"
#include "streams/frame.h"
#include "streams/segment.h"

/* ---- what a database holds -------------------------------------------- */

/* Every object of silt's schemas (queen: the log; tasks and the horsies_*
 * tables on the default search path: the task engine), normalized by
 * PostgreSQL's own deparsers, as one hash: two databases with the same hash
 * have the same schema. Partitions (the class parents and the dated leaves
 * of task history and heartbeats) and their indexes are left out: they are
 * made as days pass and classes are registered, so they are data
 * (docs/development.md). */
#define SILT_SCHEMAS "(SELECT oid FROM pg_namespace WHERE nspname IN ('queen', 'tasks', 'public'))"
#define PARTITIONS "(SELECT oid FROM pg_class WHERE relispartition UNION SELECT i.indexrelid FROM pg_index i" \
                   " JOIN pg_class t ON t.oid = i.indrelid WHERE t.relispartition)"
static const char fingerprint_sql[] =
    "SELECT md5(string_agg(d, E'\\n' ORDER BY d)) FROM ("
    " SELECT pg_get_functiondef(p.oid) AS d FROM pg_proc p WHERE p.pronamespace IN " SILT_SCHEMAS
    " UNION ALL SELECT format('%s %s %s', c.relname, c.relkind, c.reloptions) FROM pg_class c"
    "  WHERE c.relnamespace IN " SILT_SCHEMAS " AND c.oid NOT IN " PARTITIONS
    " UNION ALL SELECT format('%s.%s %s %s %s %s %s', c.relname, a.attname, a.attnum,"
    "  format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attstorage, pg_get_expr(d.adbin, d.adrelid))"
    "  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    "  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
    "  WHERE c.relnamespace IN " SILT_SCHEMAS " AND a.attnum > 0 AND NOT a.attisdropped AND c.oid NOT IN " PARTITIONS
    " UNION ALL SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    "  WHERE c.relnamespace IN " SILT_SCHEMAS " AND c.oid NOT IN " PARTITIONS
    " UNION ALL SELECT format('%s %s', co.conname, pg_get_constraintdef(co.oid)) FROM pg_constraint co"
    "  WHERE co.connamespace IN " SILT_SCHEMAS " AND co.conrelid NOT IN " PARTITIONS
    " UNION ALL SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
    "  WHERE c.relnamespace IN " SILT_SCHEMAS " AND NOT t.tgisinternal AND c.oid NOT IN " PARTITIONS
    " UNION ALL SELECT c.relname || ' ' || pg_get_viewdef(c.oid) FROM pg_class c"
    "  WHERE c.relnamespace IN " SILT_SCHEMAS " AND c.relkind = 'v'"
    ") objects";

static void fingerprint(const char *db, char out[96])
{
    keep_str(out, sql_in(db, "%s", fingerprint_sql));
}

/* "table=rows,..." for every table of silt's schemas but the bookkeeping
 * (a partitioned table counts the rows of all its partitions, which are
 * not listed themselves). */
static void row_counts(const char *db, char out[96 * 16])
{
    snprintf(out, 96 * 16, "%s", sql_in(db,
        "SELECT string_agg(c.relname || '=' || (xpath('/row/n/text()', query_to_xml("
        "  format('SELECT count(*) AS n FROM %%I.%%I', n.nspname, c.relname), false, true, '')))[1]::text, ','"
        "  ORDER BY c.relname)"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname IN ('queen', 'tasks', 'public') AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
        "  AND c.relname NOT IN ('schema_migrations', 'schema_functions')"));
}

/* The bookkeeping, with when each version was applied when stamped. */
static const char *versions(const char *db, bool stamped)
{
    return sql_in(db, "SELECT string_agg(version || ':' || name %s, ',' ORDER BY version) FROM queen.schema_migrations",
                  stamped ? "|| '@' || applied_at" : "");
}

/* What versions() says after every embedded migration ran. */
static const char *all_versions(void)
{
    char list[2048] = "";
    for (const embed_file *f = embed_migrations; f->name; f++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d:%s", f == embed_migrations ? "" : ",",
                 atoi(f->name), f->name);
    return sfmt("%s", list);
}

typedef struct snapshot {
    char versions[2048];
    char schema[96];
    char rows[96 * 16];
} snapshot;

static void take(const char *db, snapshot *s)
{
    snprintf(s->versions, sizeof s->versions, "%s", versions(db, true));
    fingerprint(db, s->schema);
    row_counts(db, s->rows);
}

static void check_same(const snapshot *a, const snapshot *b)
{
    CHECK_STR(a->versions, b->versions);
    CHECK_STR(a->schema, b->schema);
    CHECK_STR(a->rows, b->rows);
}

/* ---- databases an earlier silt left ------------------------------------ */

/* A database as an earlier silt left it: `what` is a commit, or a schema
 * version (the last commit whose newest migration it was). */
static void database_from(const char *what, char db[96])
{
    static int made;
    keep_str(db, sfmt("silt_upgrade_%d_%d", (int)getpid(), made++));
    db_create(db);
    char out[4096];
    if (run_cmd(sfmt("tests/integration/schema_at.sh '%s' %s %s 2>&1", what, db, pg_port()), out, sizeof out) != 0)
        harness_failf(__FILE__, __LINE__, "the schema of %s: %s", what, out);
}

/* "\\x<hex>", a bytea literal. */
static const char *bytea_hex(const void *p, size_t n)
{
    char *hex = malloc(2 * n + 1);
    ids_hex(p, n, hex);
    const char *out = sfmt("\\x%s", hex);
    free(hex);
    return out;
}

#define SEEDED 5   /* messages in queue "upgrade", partition "p"; group "g" consumed two */

/* Rows in the baseline's tables, written as its functions write them: five
 * real messages (payloads {"i":0}..{"i":4}, transactionIds t0..t4) in one
 * segment and its sidecar row, a cursor, a subscription, a dead letter, a
 * retention record and a trace. Extend it with rows of the tables a new
 * migration rewrites; a change to these tables may need it to write them
 * per version. */
static void seed_rows(const char *db)
{
    buf frames, blob;
    buf_init(&frames);
    buf_init(&blob);
    uint8_t hashes[SEEDED][16], ids[SEEDED][16];
    for (int i = 0; i < SEEDED; i++) {
        char txn[16], payload[32];
        snprintf(txn, sizeof txn, "t%d", i);
        snprintf(payload, sizeof payload, "{\"i\":%d}", i);
        frame f = { .txn = txn, .txn_len = strlen(txn), .payload = payload, .payload_len = strlen(payload) };
        ids_uuid7(f.message_id);
        memcpy(ids[i], f.message_id, 16);
        ids_txn_hash(txn, strlen(txn), hashes[i]);
        frame_encode(&frames, &f);
    }
    segment_encode(&blob, frames.data, frames.len, 3);
    sql_in(db, "SELECT queen.configure('upgrade', 'ns', 'task', '{\"retryLimit\": 5}')");
    sql_in(db, "INSERT INTO queen.log_partitions (queue, name, last_offset, last_write_at)"
               " VALUES ('upgrade', 'p', %d, now())", SEEDED - 1);
    sql_in(db, "INSERT INTO queen.log_segments SELECT id, 0, %d, now(), '%s' FROM queen.log_partitions",
           SEEDED - 1, bytea_hex(blob.data, blob.len));
    sql_in(db, "INSERT INTO queen.log_txns SELECT id, 0, now(), '%s', '%s' FROM queen.log_partitions",
           bytea_hex(hashes, sizeof hashes), bytea_hex(ids, sizeof ids));
    sql_in(db, "INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)"
               " SELECT id, 'g', 1 FROM queen.log_partitions");
    sql_in(db, "INSERT INTO queen.subscriptions (consumer_group, queue) VALUES ('g', 'upgrade')");
    sql_in(db, "INSERT INTO queen.log_dlq (queue, partition_id, partition, consumer_group, message_offset, message_id,"
               " transaction_id, payload, retry_count, created_at)"
               " SELECT 'upgrade', id, 'p', 'g', 0, gen_random_uuid(), 't0', '\\x7b7d', 3, now() FROM queen.log_partitions");
    sql_in(db, "INSERT INTO queen.retention_history (partition_id, queue, partition, rule, from_offset, to_offset,"
               " offsets_dropped) SELECT id, 'upgrade', 'p', 'retention', 0, 0, 0 FROM queen.log_partitions");
    if (strcmp(sql_in(db, "SELECT to_regclass('queen.message_traces') IS NOT NULL"), "t") == 0)   /* from 018 */
        sql_in(db, "INSERT INTO queen.message_traces SELECT gen_random_uuid(), id, 3, 't3', 'g', 'info', '{}', NULL, now()"
               " FROM queen.log_partitions");
    buf_fini(&frames);
    buf_fini(&blob);
}

/* The seeded messages are still there and still served: group g goes on
 * where it stopped, by the server of this build. */
static void check_seeded_messages(const char *db)
{
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("PG_DB=%s", db), NULL });
    reply r;
    rq(&s, "GET", "/api/v1/pop/queue/upgrade?batch=10&autoAck=true&consumerGroup=g", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_INT(jint(&r, "messages.0.data.i"), 2);
    CHECK_STR(jstr(&r, "messages.1.transactionId"), "t3");
    CHECK_INT(jint(&r, "messages.2.data.i"), SEEDED - 1);
    CHECK(jpath(&r, "messages.3") < 0);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

/* ---- the states ------------------------------------------------------- */

TEST(migrate_on_an_empty_database_applies_every_file_and_reports_the_latest_version)
{
    char db[96], out[4096], fresh[96], cloned[96];
    keep_str(db, sfmt("silt_upgradefresh_%d", (int)getpid()));
    db_create(db);
    CHECK_INT(migrate_output(db, out, sizeof out), 0);
    CHECK(strstr(out, sfmt("applied migration %s\n", embed_migrations[0].name)) != NULL);
    CHECK(strstr(out, sfmt("\nschema is at version %d\n", migrate_latest())) != NULL);
    CHECK_STR(versions(db, false), all_versions());
    fingerprint(db, fresh);
    fingerprint(test_db(), cloned);   /* the suite's template, migrated by the same binary */
    CHECK_STR(fresh, cloned);
}

TEST(migrate_on_a_current_database_changes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    CHECK_INT(push_simple(&s, uniq("current"), "p", 3), 201);
    CHECK_INT(srv_stop(&s), 0);
    snapshot before, after;
    take(test_db(), &before);
    char out[4096];
    CHECK_INT(migrate_output(test_db(), out, sizeof out), 0);
    CHECK_STR(out, sfmt("schema is at version %d\n", migrate_latest()));   /* no "applied migration" line */
    take(test_db(), &after);
    check_same(&before, &after);
}

/* A database a newer silt migrated (a migration this binary does not
 * know) is refused, and its functions are not put back: an older server
 * restarting beside newer ones must not undo their schema. */
TEST(migrate_refuses_a_database_a_newer_silt_migrated_and_changes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    CHECK_INT(srv_stop(&s), 0);
    sql("INSERT INTO queen.schema_migrations (version, name) VALUES (%d, 'from_a_newer_silt.sql')",
        migrate_latest() + 1);
    sql("UPDATE queen.schema_functions SET bundle = 'a newer bundle'");
    snapshot before, after;
    take(test_db(), &before);
    char out[4096];
    CHECK_INT(migrate_output(test_db(), out, sizeof out), 1);
    CHECK(strstr(out, sfmt("the database's schema is at migration %d, newer than this silt's %d", migrate_latest() + 1,
                           migrate_latest())) != NULL);
    CHECK_STR(sql("SELECT bundle FROM queen.schema_functions"), "a newer bundle");
    take(test_db(), &after);
    check_same(&before, &after);
}

/* Tables a migration renamed: their rows are kept under the new name. */
static const char *const renamed[][2] = {
    { "horsies_task_attempts", "attempt_records" },   /* 053: a view of it has the old name */
};

/* The entry of before for table name (its old name if it was renamed):
 * "name=rows" as the table is called now, or "" when before has none. */
static const char *entry_before(const char *before, const char *name, size_t name_len)
{
    const char *old = NULL;
    for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++)
        if (strlen(renamed[i][1]) == name_len && strncmp(renamed[i][1], name, name_len) == 0) old = renamed[i][0];
    for (const char *b = before; *b; ) {
        size_t len = strcspn(b, ",");
        const char *eq = memchr(b, '=', len);
        size_t n = eq ? (size_t)(eq - b) : len;
        if ((n == name_len && strncmp(b, name, n) == 0) || (old && n == strlen(old) && strncmp(b, old, n) == 0))
            return sfmt("%.*s=%.*s", (int)name_len, name, eq ? (int)(len - n - 1) : 0, eq ? eq + 1 : "");
        b += len;
        if (*b) b++;
    }
    return "";
}

/* Every table of before keeps its count in after (a renamed one under its
 * new name); tables a migration added start empty, but system_state, made
 * with its one row (by the baseline, or the bridge). Both lists are
 * "table=rows,..." in name order. */
static void check_rows_kept(const char *before, const char *after)
{
    char expect[96 * 16] = "";
    const char *a = after;
    while (*a) {
        size_t len = strcspn(a, ",");
        char entry[128];
        snprintf(entry, sizeof entry, "%.*s", (int)len, a);
        const char *eq = strchr(entry, '=');
        size_t name_len = eq ? (size_t)(eq - entry) : strlen(entry);
        const char *found = entry_before(before, entry, name_len);
        char kept[128];
        if (*found) snprintf(kept, sizeof kept, "%s", found);
        else if (strncmp(entry, "system_state=", name_len + 1) == 0) snprintf(kept, sizeof kept, "%s", entry);
        else snprintf(kept, sizeof kept, "%.*s=0", (int)name_len, entry);
        snprintf(expect + strlen(expect), sizeof expect - strlen(expect), "%s%s", *expect ? "," : "", kept);
        a += len;
        if (*a) a++;
    }
    CHECK_STR(after, expect);
    char wrapped[96 * 16 + 2];
    snprintf(wrapped, sizeof wrapped, ",%s,", after);
    for (const char *b = before; *b; ) {   /* no table of before went missing */
        size_t len = strcspn(b, ",");
        char entry[130];
        snprintf(entry, sizeof entry, ",%.*s,", (int)len, b);
        for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++) {
            size_t old = strlen(renamed[i][0]);
            if (strncmp(b, renamed[i][0], old) == 0 && b[old] == '=')
                snprintf(entry, sizeof entry, ",%s%.*s,", renamed[i][1], (int)(len - old), b + old);
        }
        if (!strstr(wrapped, entry)) harness_failf(__FILE__, __LINE__, "%s is gone after the upgrade", entry);
        b += len;
        if (*b) b++;
    }
}

/* A database the replaced migrations 001-018 made before version 13 is
 * refused with the reason, unchanged. */
TEST(database_made_by_the_replaced_migrations_before_13_is_refused_with_the_reason)
{
    char db[96], out[4096];
    database_from("12", db);
    snapshot before, after;
    take(db, &before);
    CHECK_INT(migrate_output(db, out, sizeof out), 1);
    CHECK(strstr(out, "schema version 12 was made by the migrations the baseline 018_schema.sql replaced, before 13: "
                      "this silt cannot upgrade it; recreate the database") != NULL);
    take(db, &after);
    check_same(&before, &after);
}

/* Versions whose last commit was a state inside one session's work, never
 * shipped: on 2026-12-02, 020 and 021 stood without the columns 263a00c
 * then added to 020 in place (02:41-02:57), and 024 made the table that
 * d964989 moved to 025 seven minutes later. */
static bool working_state(int version)
{
    return version == 20 || version == 21 || version == 24;
}

/* The silt of every schema version since the baseline, 61e362e, and the
 * last one before the function files. */
static void check_upgraded(const char *version_or_commit, const char *fresh)
{
    char what[96], db[96], rows[96 * 16], after[96 * 16], schema[96], out[4096];
    keep_str(what, version_or_commit);
    database_from(what, db);
    seed_rows(db);
    row_counts(db, rows);
    if (migrate_output(db, out, sizeof out) != 0) harness_failf(__FILE__, __LINE__, "%s: %s", what, out);
    char got[2048], expect[2048];
    snprintf(got, sizeof got, "%s", versions(db, false));
    snprintf(expect, sizeof expect, "%s", all_versions());
    const char *later = strstr(expect, ",19:");   /* bridged: its own versions up to 18 first */
    if (strncmp(got, "1:", 2) == 0 && strlen(got) > strlen(later)) CHECK_STR(got + strlen(got) - strlen(later), later);
    else CHECK_STR(got, expect);
    fingerprint(db, schema);
    if (strcmp(schema, fresh) != 0) harness_failf(__FILE__, __LINE__, "the catalog %s upgraded to is not a fresh one's", what);
    row_counts(db, after);
    check_rows_kept(rows, after);
    check_seeded_messages(db);
}

/* Each version from..to (0: the latest) that a shipped silt left. Some
 * seven schemas built, migrated and served take 6 s on a quiet machine and
 * 40-60 s beside a benchmark and the chaos runs: the harness's 60 s would
 * fail a slow machine, not a wrong upgrade. */
static void check_versions(int from, int to)
{
    harness_allow_seconds(240);
    char fresh[96];
    fingerprint(test_db(), fresh);
    for (const embed_file *f = embed_migrations; f->name; f++) {
        int v = atoi(f->name);
        if (v >= from && (to == 0 || v <= to) && !working_state(v)) check_upgraded(sfmt("%d", v), fresh);
    }
}

/* Several tests, so that each stays well inside the harness's time limit
 * and they run side by side; long ones, started before the others. */
TEST_LONG(database_at_each_version_from_18_to_26_is_upgraded_to_the_fresh_schema_keeping_its_rows)
{
    check_versions(18, 26);
}

TEST_LONG(database_at_each_version_from_27_to_33_is_upgraded_to_the_fresh_schema_keeping_its_rows)
{
    check_versions(27, 33);
}

TEST_LONG(database_at_each_version_from_34_to_40_is_upgraded_to_the_fresh_schema_keeping_its_rows)
{
    check_versions(34, 40);
}

TEST_LONG(database_at_each_later_version_is_upgraded_to_the_fresh_schema_keeping_its_rows)
{
    check_versions(41, 0);
}

TEST(database_of_61e362e_and_of_the_last_silt_before_function_files_is_upgraded_to_the_fresh_schema)
{
    char fresh[96];
    fingerprint(test_db(), fresh);
    check_upgraded("61e362e", fresh);
    check_upgraded("2c4b26d", fresh);   /* the last silt before sql/functions */
}

/* A database the replaced migrations 001-018 made, from version 13 on
 * (feb3701 is at 13; a853d6a, the commit before the baseline, at 18), is
 * bridged (sql/bridge_to_baseline.sql) and upgraded like the others. */
TEST(database_made_by_the_replaced_migrations_from_13_on_is_bridged_to_the_fresh_schema)
{
    char fresh[96];
    fingerprint(test_db(), fresh);
    check_upgraded("feb3701", fresh);
    check_upgraded("a853d6a", fresh);
}

/* Task records and heartbeats kept before the history was partitioned
 * (sql/024) are all still there, each record in the standard_30d leaf of
 * the day it ended (nothing before the classes chose another) and each
 * heartbeat in its hour's leaf, and a record is still served by id. */
TEST(history_rows_from_before_partitioning_survive_the_upgrade_each_in_its_class_leaf)
{
    char db[96], out[4096];
    database_from("23", db);
    sql_in(db, "INSERT INTO horsies_task_history (id, task_name, queue_name, args, priority, status, sent_at, enqueued_at,"
               " max_retries, retry_count, attempt, retention_class_key, finished_at)"
               " SELECT tasks.uuid7(), 't', 'q', '{}', 100, 'COMPLETED', now() - d * interval '1 day',"
               " now() - d * interval '1 day', 0, 0, 1, 'standard_30d', now() - d * interval '1 day'"
               " FROM generate_series(0, 2) d");
    sql_in(db, "INSERT INTO horsies_task_history (id, task_name, queue_name, args, priority, status, sent_at, enqueued_at,"
               " max_retries, retry_count, attempt, retention_class_key, finished_at)"
               " SELECT tasks.uuid7(), 't', 'q', '{}', 100, 'COMPLETED', now(), now(), 0, 0, 1, k, now()"
               " FROM unnest(ARRAY['forever', 'q_x_7d']) k");   /* classes a send chose since 022 */
    sql_in(db, "INSERT INTO horsies_heartbeats (task_id, worker_id, role, sent_at)"
               " VALUES (gen_random_uuid(), 'w', 'runner', now()), (gen_random_uuid(), 'w', 'runner', now() - interval '5 hours')");
    CHECK_INT(migrate_output(db, out, sizeof out), 0);
    CHECK_STR(sql_in(db, "SELECT count(*) FROM horsies_task_history"), "5");
    CHECK_STR(sql_in(db, "SELECT count(*) FROM horsies_task_history h WHERE tableoid::regclass::text ="
                         " 'horsies_task_history_' || h.retention_class_key || '_'"
                         " || to_char(h.finished_at AT TIME ZONE 'UTC', 'YYYY_MM_DD')"), "4");
    CHECK_STR(sql_in(db, "SELECT tableoid::regclass::text FROM horsies_task_history WHERE retention_class_key = 'forever'"),
              "horsies_task_history_forever");
    CHECK_STR(sql_in(db, "SELECT count(*) FROM horsies_heartbeats h WHERE tableoid::regclass::text ="
                         " tasks.heartbeat_leaf_name(date_trunc('hour', h.sent_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"),
              "2");
    CHECK_STR(sql_in(db, "SELECT count(*) FROM horsies_task_history_leaf_catalog WHERE class_key = 'standard_30d'"), "3");
    CHECK_STR(sql_in(db, "SELECT duration_s FROM horsies_retention_classes WHERE class_key = 'standard_30d'"), "2592000");
    char id[96];
    keep_str(id, sql_in(db, "SELECT id FROM horsies_task_history ORDER BY finished_at DESC LIMIT 1"));
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("PG_DB=%s", db), NULL });   /* this database as it is */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jstr(&r, "status"), "COMPLETED");
    reply_fini(&r);
    srv_stop(&s);
}

/* A record that ended before sql/039 kept only maxRetries of its retry
 * policy: it reruns with that and nothing else, and a task live across the
 * upgrade ends into history with its policy and timeout kept. */
TEST(records_from_before_reruns_rerun_with_their_max_retries_and_live_tasks_keep_their_policy)
{
    char db[96], out[4096];
    database_from("38", db);   /* the version before 039 */
    sql_in(db, "SELECT tasks.history_leaf_ensure('standard_30d', (now() AT TIME ZONE 'UTC')::date)");
    char old_id[96], live[96];
    keep_str(old_id, sql_in(db, "INSERT INTO horsies_task_history (id, task_name, queue_name, args, priority, status,"
                                " sent_at, enqueued_at, max_retries, retry_count, attempt, retention_class_key, error_code)"
                                " VALUES (tasks.uuid7(), 't', 'q', '{\"a\": 1}', 5, 'FAILED', now(), now(), 2, 2, 3,"
                                " 'standard_30d', 'BOOM') RETURNING id"));
    keep_str(live, sql_in(db, "INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, timeout_ms,"
                              " max_retries, retry_delays_ms, retry_on) VALUES (tasks.uuid7(), 't', 'q2', 'null', 100,"
                              " 'PENDING', 900, 1, '{5}', '{X}') RETURNING id"));
    CHECK_INT(migrate_output(db, out, sizeof out), 0);
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("PG_DB=%s", db), NULL });
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/rerun", old_id), NULL, &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    CHECK_STR(sql_in(db, "SELECT format('%%s %%s %%s %%s %%s', task_name, args, priority, max_retries,"
                         " retry_delays_ms IS NULL AND timeout_ms IS NULL) FROM horsies_tasks WHERE rerun_of = '%s'",
                     old_id), "t {\"a\": 1} 5 2 t");
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", live), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_STR(sql_in(db, "SELECT format('%%s %%s %%s', timeout_ms, retry_delays_ms, retry_on) FROM horsies_task_history"
                         " WHERE id = '%s'", live), "900 {5} {X}");
    CHECK_INT(srv_stop(&s), 0);
}

/* A dead letter stored before sql/030 has no producerSub (its frame may be
 * gone): it reads null, its other fields as they were, and a hand-off after
 * the upgrade goes through the replaced functions. */
TEST(dead_letters_from_before_producer_sub_read_null_and_new_hand_offs_work)
{
    char db[96], out[4096];
    database_from("29", db);   /* the version before 030 */
    seed_rows(db);
    CHECK_INT(migrate_output(db, out, sizeof out), 0);
    CHECK_STR(sql_in(db, "SELECT count(*) FROM queen.log_dlq WHERE producer_sub IS NULL"), "1");
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("PG_DB=%s", db), NULL });
    reply r;
    rq(&s, "GET", "/api/v1/dlq?queue=upgrade", NULL, &r);
    CHECK_INT(jint(&r, "total"), 1);
    CHECK_STR(jraw(&r, "messages.0.producerSub"), "null");
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "t0");
    CHECK_STR(jraw(&r, "messages.0.data"), "{}");
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/pop/queue/upgrade?batch=1&consumerGroup=g", NULL, &r);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "t2");
    char pid[96];
    keep_str(pid, jstr(&r, "partitionId"));
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"t2\",\"partitionId\":\"%s\",\"consumerGroup\":\"g\","
                                       "\"status\":\"dlq\"}", pid), &r);
    CHECK(jbool(&r, "0.dlq"));
    reply_fini(&r);
    CHECK_STR(sql_in(db, "SELECT count(*) FROM queen.log_dlq WHERE transaction_id = 't2' AND producer_sub IS NULL"), "1");
    CHECK_INT(srv_stop(&s), 0);
}

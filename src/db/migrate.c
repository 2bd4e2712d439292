/* migrate: the schema brought up to date (see migrate.h). This runs before the event loop
 * starts, so it uses plain blocking libpq calls. */
#include "db/migrate.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libpq-fe.h>
#include "base/clock.h"
#include "base/config.h"
#include "base/embed.h"
#include "base/log.h"

#define MIGRATE_LOCK_KEY 0x73696c74   /* "silt" */

static const char setup_sql[] =
    "CREATE SCHEMA IF NOT EXISTS queen;"
    "CREATE TABLE IF NOT EXISTS queen.schema_migrations ("
    " version integer PRIMARY KEY, name text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT now());"
    "CREATE TABLE IF NOT EXISTS queen.schema_functions ("
    " bundle text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())";

/* A file of nothing but comments (a migration whose functions moved to
 * sql/functions) is an empty query: fine. */
static int exec_ok(PGconn *pg, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(pg, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY;
    if (!ok) snprintf(err, errlen, "%s", PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

/* Only a server that is not up yet (no answer, or starting and refusing
 * connections) is waited for. One that accepts connections and refused
 * ours said why for good: a wrong role, password or database name, or a
 * malformed connection string, will not mend itself. */
static bool worth_waiting(const char *const *keys, const char *const *values)
{
    PGPing ping = PQpingParams(keys, values, 1);
    return ping == PQPING_NO_RESPONSE || ping == PQPING_REJECT;
}

static PGconn *connect_waiting(const char *conninfo, int64_t wait_ms, char *err, size_t errlen)
{
    static const char *const keys[] = { "dbname", "application_name", "options", NULL };
    const char *values[] = { conninfo, "silt-migrate", "-c client_min_messages=warning", NULL };
    int64_t started = clock_mono_ms();
    for (int attempt = 0;; attempt++) {
        PGconn *pg = PQconnectdbParams(keys, values, 1);
        if (PQstatus(pg) == CONNECTION_OK) return pg;
        snprintf(err, errlen, "cannot connect to the database: %s", PQerrorMessage(pg));
        err[strcspn(err, "\n")] = '\0';   /* libpq's second line is a hint for its own CLI */
        PQfinish(pg);
        if (!worth_waiting(keys, values)) return NULL;
        if (clock_mono_ms() - started >= wait_ms) return NULL;
        if (attempt == 0) log_info("waiting for the database");
        struct timespec pause = { 0, 250 * 1000000 };
        nanosleep(&pause, NULL);
    }
}

/* The first value of a one-row query as text ("" for none or NULL). */
static void query_text(PGconn *pg, const char *sql, char *out, size_t outlen)
{
    PGresult *r = PQexec(pg, sql);
    bool one = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0;
    snprintf(out, outlen, "%s", one ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
}

static int is_applied(PGconn *pg, int version)
{
    char sql[128], one[8];
    snprintf(sql, sizeof sql, "SELECT 1 FROM queen.schema_migrations WHERE version = %d", version);
    query_text(pg, sql, one, sizeof one);
    return one[0] == '1';
}

/* A database the migrations the baseline replaced made, whole or in part
 * (versions below the baseline's recorded): from version BRIDGE_FROM on,
 * sql/bridge_to_baseline.sql gives it what the baseline has and it lacks,
 * and the baseline is recorded as applied; an older one is refused with
 * the reason, unchanged. */
#define BRIDGE_FROM 13
static int bridge_replaced(PGconn *pg, char *err, size_t errlen)
{
    int baseline = atoi(embed_migrations[0].name);
    char sql[160], version[16];
    snprintf(sql, sizeof sql, "SELECT max(version) FROM queen.schema_migrations HAVING min(version) < %d", baseline);
    query_text(pg, sql, version, sizeof version);
    if (version[0] == '\0') return 0;
    if (atoi(version) < BRIDGE_FROM) {
        snprintf(err, errlen, "schema version %s was made by the migrations the baseline %s replaced, before %d: "
                 "this silt cannot upgrade it; recreate the database", version, embed_migrations[0].name,
                 BRIDGE_FROM);
        return -1;
    }
    if (is_applied(pg, baseline)) {   /* the old 018, traces: bridged once already, or now */
        query_text(pg, "SELECT 1 FROM pg_type WHERE typname = 'ack_item' AND typnamespace = 'queen'::regnamespace",
                   version, sizeof version);
        if (version[0] == '1') return 0;
    }
    snprintf(sql, sizeof sql, "INSERT INTO queen.schema_migrations (version, name) VALUES (%d, '%s')"
             " ON CONFLICT (version) DO NOTHING", baseline, embed_migrations[0].name);
    if (exec_ok(pg, embed_bridge[0].text, err, errlen) == 0 && exec_ok(pg, sql, err, errlen) == 0) {
        log_info("bridged the schema of the replaced migrations to %s", embed_migrations[0].name);
        return 0;
    }
    char why[512];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "sql/bridge_to_baseline.sql failed: %s", why);
    return -1;
}

int migrate_latest(void)
{
    int latest = 0;
    for (const embed_file *f = embed_migrations; f->name; f++) latest = atoi(f->name);
    return latest;
}

static void hash_files(uint64_t *h, const embed_file *files)
{
    for (const embed_file *f = files; f->name; f++)
        for (const char *s[] = { f->name, f->text }, **p = s; p < s + 2; p++)
            for (const unsigned char *c = (const unsigned char *)*p; ; c++) {   /* FNV-1a, the NUL included */
                *h = (*h ^ *c) * 1099511628211u;
                if (!*c) break;
            }
}

const char *migrate_bundle_hash(void)
{
    static char hex[17];
    if (!hex[0]) {
        uint64_t h = 14695981039346656037u;
        hash_files(&h, embed_functions_before);
        hash_files(&h, embed_functions);
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    }
    return hex;
}

static int apply_files(PGconn *pg, const embed_file *files, char *err, size_t errlen)
{
    for (const embed_file *f = files; f->name; f++)
        if (exec_ok(pg, f->text, err, errlen) < 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", err);
            snprintf(err, errlen, "sql/functions/%s failed: %s", f->name, why);
            return -1;
        }
    return 0;
}

/* One migration with its version row. */
static int apply_migration(PGconn *pg, const embed_file *f, char *err, size_t errlen)
{
    char record[256];
    snprintf(record, sizeof record, "INSERT INTO queen.schema_migrations (version, name) VALUES (%d, '%s')",
             atoi(f->name), f->name);
    if (exec_ok(pg, f->text, err, errlen) == 0 && exec_ok(pg, record, err, errlen) == 0) return 0;
    char why[512];
    snprintf(why, sizeof why, "%s", err);
    snprintf(err, errlen, "migration %s failed: %s", f->name, why);
    return -1;
}

/* The pending migrations, between the "before" function files and the
 * others, and the bundle's hash recorded. Function bodies are not checked
 * as they are made (check_function_bodies): a SQL function may call one a
 * later file defines; the suite runs every one. */
static int apply_all(PGconn *pg, const bool *pending, char *err, size_t errlen)
{
    char record[160];
    snprintf(record, sizeof record, "DELETE FROM queen.schema_functions;"
             "INSERT INTO queen.schema_functions (bundle) VALUES ('%s')", migrate_bundle_hash());
    int rc = exec_ok(pg, "SET LOCAL check_function_bodies = off", err, errlen);
    if (rc == 0) rc = apply_files(pg, embed_functions_before, err, errlen);
    for (int i = 0; rc == 0 && embed_migrations[i].name; i++)
        if (pending[i]) rc = apply_migration(pg, &embed_migrations[i], err, errlen);
    if (rc == 0) rc = apply_files(pg, embed_functions, err, errlen);
    if (rc == 0) rc = exec_ok(pg, record, err, errlen);
    return rc;
}

/* A database a newer silt migrated is left alone: this binary's function
 * files would put back the functions that silt replaced, written for
 * tables its migrations changed (servers sharing a database upgrade
 * together, docs/operations.md). */
static int refuse_newer(PGconn *pg, char *err, size_t errlen)
{
    char newest[32];
    query_text(pg, "SELECT coalesce(max(version), 0) FROM queen.schema_migrations", newest, sizeof newest);
    if (atoi(newest) <= migrate_latest()) return 0;
    snprintf(err, errlen, "the database's schema is at migration %s, newer than this silt's %d: a newer silt "
             "upgraded it; run that version (servers sharing a database upgrade together)", newest, migrate_latest());
    return -1;
}

static int migrate_locked(PGconn *pg, char *err, size_t errlen)
{
    if (exec_ok(pg, "BEGIN", err, errlen) < 0) return -1;
    if (exec_ok(pg, setup_sql, err, errlen) < 0 || bridge_replaced(pg, err, errlen) < 0 ||
        refuse_newer(pg, err, errlen) < 0)
        goto fail;
    bool pending[1024] = { false }, any = false;
    for (int i = 0; embed_migrations[i].name && i < 1024; i++)
        any |= pending[i] = !is_applied(pg, atoi(embed_migrations[i].name));
    char have[32];
    query_text(pg, "SELECT bundle FROM queen.schema_functions", have, sizeof have);
    bool stale = strcmp(have, migrate_bundle_hash()) != 0;
    if ((any || stale) && apply_all(pg, pending, err, errlen) < 0) goto fail;
    if (exec_ok(pg, "COMMIT", err, errlen) < 0) goto fail;
    for (int i = 0; embed_migrations[i].name; i++)
        if (pending[i]) log_info("applied migration %s", embed_migrations[i].name);
    if (any || stale) log_info("applied the functions of sql/functions (bundle %s)", migrate_bundle_hash());
    return 0;
fail:
    PQclear(PQexec(pg, "ROLLBACK"));
    return -1;
}

int migrate_run(const char *conninfo, int64_t wait_ms, char *err, size_t errlen)
{
    PGconn *pg = connect_waiting(conninfo, wait_ms, err, errlen);
    if (!pg) return -1;
    char lock[96];
    snprintf(lock, sizeof lock, "SELECT pg_advisory_lock(%d)", MIGRATE_LOCK_KEY);
    int rc = exec_ok(pg, lock, err, errlen);
    if (rc == 0) rc = migrate_locked(pg, err, errlen);
    PQfinish(pg);   /* ends the session, releasing the advisory lock */
    return rc;
}

int migrate_main(int argc, char **argv)
{
    (void)argc; (void)argv;
    silt_config cfg;
    char err[1024];
    if (config_load(&cfg, err, sizeof err) < 0) { fprintf(stderr, "silt: %s\n", err); return 2; }
    char *conninfo = config_conninfo(&cfg);
    int rc = migrate_run(conninfo, cfg.startup_db_wait_ms, err, sizeof err);
    if (rc < 0) fprintf(stderr, "silt: %s\n", err);
    else printf("schema is at version %d\n", migrate_latest());
    free(conninfo);
    config_fini(&cfg);
    return rc < 0 ? 1 : 0;
}

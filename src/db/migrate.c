/* migrate: schema migrations (see migrate.h). This runs before the event loop
 * starts, so it uses plain blocking libpq calls. */
#include "db/migrate.h"
#include "db/result.h"
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
    " applied_at timestamptz NOT NULL DEFAULT now())";

static int exec_ok(PGconn *pg, const char *sql, char *err, size_t errlen)
{
    PGresult *r = PQexec(pg, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
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

static int is_applied(PGconn *pg, int version)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT 1 FROM queen.schema_migrations WHERE version = %d", version);
    PGresult *r = PQexec(pg, sql);
    int applied = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0;
    PQclear(r);
    return applied;
}

/* One migration in one transaction with its version row. */
static int apply_one(PGconn *pg, const embed_file *f, char *err, size_t errlen)
{
    int version = atoi(f->name);
    if (is_applied(pg, version)) return 0;
    char record[256];
    snprintf(record, sizeof record, "INSERT INTO queen.schema_migrations (version, name) VALUES (%d, '%s')",
             version, f->name);
    if (exec_ok(pg, "BEGIN", err, errlen) < 0) return -1;
    if (exec_ok(pg, f->text, err, errlen) < 0 || exec_ok(pg, record, err, errlen) < 0) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "migration %s failed: %s", f->name, why);
        PQclear(PQexec(pg, "ROLLBACK"));
        return -1;
    }
    if (exec_ok(pg, "COMMIT", err, errlen) < 0) return -1;
    log_info("applied migration %s", f->name);
    return 0;
}

/* A database that ran some of the migrations the baseline replaced, but not
 * all: versions below the baseline's are recorded and the baseline's is not.
 * Its tables exist, so running the baseline would fail half way; say why. */
static int check_baseline(PGconn *pg, char *err, size_t errlen)
{
    int baseline = atoi(embed_sql[0].name);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT max(version) FROM queen.schema_migrations WHERE version < %d", baseline);
    PGresult *r = PQexecParams(pg, sql, 0, NULL, NULL, NULL, NULL, 1);   /* binary, for db_int */
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "%s", PQresultErrorMessage(r));
        PQclear(r);
        return -1;
    }
    int below = (int)db_int(r, 0, 0);   /* NULL: 0 */
    PQclear(r);
    if (below == 0 || is_applied(pg, baseline)) return 0;
    snprintf(err, errlen, "schema version %d predates the baseline %s: migrate the database to version %d "
             "with an earlier silt first, or recreate it", below, embed_sql[0].name, baseline);
    return -1;
}

int migrate_latest(void)
{
    int latest = 0;
    for (const embed_file *f = embed_sql; f->name; f++) latest = atoi(f->name);
    return latest;
}

int migrate_run(const char *conninfo, int64_t wait_ms, int upto, char *err, size_t errlen)
{
    PGconn *pg = connect_waiting(conninfo, wait_ms, err, errlen);
    if (!pg) return -1;
    char lock[96];
    snprintf(lock, sizeof lock, "SELECT pg_advisory_lock(%d)", MIGRATE_LOCK_KEY);
    int rc = exec_ok(pg, lock, err, errlen);
    if (rc == 0) rc = exec_ok(pg, setup_sql, err, errlen);
    if (rc == 0) rc = check_baseline(pg, err, errlen);
    for (const embed_file *f = embed_sql; rc == 0 && f->name && atoi(f->name) <= upto; f++)
        rc = apply_one(pg, f, err, errlen);
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
    int rc = migrate_run(conninfo, cfg.startup_db_wait_ms, migrate_latest(), err, sizeof err);
    if (rc < 0) fprintf(stderr, "silt: %s\n", err);
    else printf("schema is at version %d\n", migrate_latest());
    free(conninfo);
    config_fini(&cfg);
    return rc < 0 ? 1 : 0;
}

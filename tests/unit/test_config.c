/* test_config: settings come from the environment through one table. Defaults
 * are what docs/operations.md promises; a bad value stops start-up with a
 * message naming the variable. Each test runs in its own process, so setenv
 * does not leak between tests. */
#include "harness.h"
#include "base/config.h"
#include "base/log.h"
#include <stdio.h>
#include <stdlib.h>

static const char *const all_vars[] = {
    "HOST", "PORT", "DATABASE_URL", "PG_HOST", "PG_PORT", "PG_USER", "PG_PASSWORD", "PG_DB",
    "DB_POOL_SIZE", "DB_PIPELINE_DEPTH", "LOG_LEVEL", "MAX_BODY_BYTES", "MAX_BATCH_ITEMS",
    "MAX_POP_BATCH", "MAX_PAYLOAD_BYTES", "PUSH_MAX_FLUSHES", "PUSH_FLUSH_MESSAGES",
    "LONG_POLL_RECHECK_MS", "SHUTDOWN_TIMEOUT_MS", "STARTUP_DB_WAIT_MS", "ZSTD_LEVEL",
    "GROUP_LAGGING_SECONDS", "GROUP_DEAD_SECONDS", "QUEEN_ENCRYPTION_KEY",
    "JWT_ENABLED", "JWT_ALGORITHM", "JWT_SECRET", "JWT_PUBLIC_KEY", "JWT_ISSUER", "JWT_AUDIENCE",
    "JWT_CLOCK_SKEW", "JWT_SKIP_PATHS", "JWT_ROLES_CLAIM", "JWT_ROLES_ARRAY_CLAIM", "JWT_ROLE_ADMIN",
    "JWT_ROLE_READ_WRITE", "JWT_ROLE_READ_ONLY", "HTTP_BODY_MIN_RATE", "HTTP_CLIENT_SHARE_PERCENT", "PG_TARGET_SESSION_ATTRS",
};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++) unsetenv(all_vars[i]);
}

TEST(config_defaults)
{
    clear_env();
    silt_config c;
    char err[256] = "";
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.host, "127.0.0.1");
    CHECK_INT(c.http_body_min_rate, 1024);
    CHECK_INT(c.http_client_share_percent, 50);
    CHECK_INT(c.port, 6632);
    CHECK_STR(c.database_url, "");
    CHECK_STR(c.pg_host, "localhost");
    CHECK_STR(c.pg_port, "5432");
    CHECK_STR(c.pg_target_session_attrs, "read-write");
    CHECK_STR(c.pg_user, "postgres");
    CHECK_STR(c.pg_password, "");
    CHECK_STR(c.pg_db, "postgres");
    CHECK_INT(c.db_pool_size, 8);
    CHECK_INT(c.db_pipeline_depth, 4);
    CHECK_STR(c.log_level, "info");
    CHECK_INT(c.max_body_bytes, 134217728);
    CHECK_INT(c.max_items, 10000);
    CHECK_INT(c.max_pop_batch, 10000);
    CHECK_INT(c.max_payload_bytes, 67108864);
    CHECK_INT(c.push_max_flushes, 1);
    CHECK_INT(c.push_flush_messages, 20000);
    CHECK_INT(c.long_poll_recheck_ms, 0);   /* parked pops never poll (issue 14) */
    CHECK_INT(c.shutdown_timeout_ms, 10000);
    CHECK_INT(c.startup_db_wait_ms, 60000);
    CHECK_INT(c.zstd_level, 1);
    config_fini(&c);
    CHECK(c.host == NULL);
}

TEST(config_env_overrides_defaults)
{
    clear_env();
    setenv("HOST", "127.0.0.1", 1);
    setenv("PORT", "7001", 1);
    setenv("PG_HOST", "db.internal", 1);
    setenv("PG_PORT", "6543", 1);
    setenv("PG_DB", "silt", 1);
    setenv("DB_POOL_SIZE", "16", 1);
    setenv("LOG_LEVEL", "debug", 1);
    setenv("ZSTD_LEVEL", "-7", 1);
    setenv("SHUTDOWN_TIMEOUT_MS", "0", 1);
    silt_config c;
    char err[256] = "";
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    CHECK_STR(c.host, "127.0.0.1");
    CHECK_INT(c.port, 7001);
    CHECK_STR(c.pg_host, "db.internal");
    CHECK_STR(c.pg_port, "6543");
    CHECK_STR(c.pg_db, "silt");
    CHECK_INT(c.db_pool_size, 16);
    CHECK_STR(c.log_level, "debug");
    CHECK_INT(c.zstd_level, -7);
    CHECK_INT(c.shutdown_timeout_ms, 0);
    CHECK_INT(c.max_items, 10000);   /* untouched ones keep their defaults */
    config_fini(&c);
}

TEST(config_empty_value_means_default)
{
    clear_env();
    setenv("PORT", "", 1);
    setenv("PG_USER", "", 1);
    silt_config c;
    char err[256] = "";
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    CHECK_INT(c.port, 6632);
    CHECK_STR(c.pg_user, "postgres");
    config_fini(&c);
}

TEST(config_port_bounds_are_inclusive)
{
    clear_env();
    const char *ok[] = { "1", "65535" };
    for (int i = 0; i < 2; i++) {
        setenv("PORT", ok[i], 1);
        silt_config c;
        char err[256] = "";
        CHECK_INT(config_load(&c, err, sizeof err), 0);
        CHECK_INT(c.port, atoll(ok[i]));
        config_fini(&c);
    }
}

TEST(config_out_of_range_port_rejected_naming_port)
{
    clear_env();
    const char *bad[] = { "0", "65536", "-1", "99999999999999999999", "abc", "80x", "8.0", "0x50" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("PORT", bad[i], 1);
        silt_config c;
        char err[256] = "";
        if (config_load(&c, err, sizeof err) != -1)
            harness_failf(__FILE__, __LINE__, "PORT=%s accepted", bad[i]);
        if (!strstr(err, "PORT"))
            harness_failf(__FILE__, __LINE__, "PORT=%s: message does not name PORT: %s", bad[i], err);
        CHECK(strstr(err, bad[i]) != NULL);   /* and shows the value */
        config_fini(&c);
    }
}

/* A primary and its standby: libpq tries the hosts in order, and takes
 * only one that can write. */
TEST(config_several_pg_hosts_take_one_port_each_or_one_for_all)
{
    clear_env();
    setenv("PG_HOST", "a,b", 1);
    setenv("PG_PORT", "5432,5433", 1);
    silt_config c;
    char err[256] = "";
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    char *ci = config_conninfo(&c);
    CHECK_STR(ci, "host='a,b' port='5432,5433' user='postgres' dbname='postgres' target_session_attrs='read-write' ");
    free(ci);
    config_fini(&c);
    setenv("PG_PORT", "5432", 1);
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    config_fini(&c);
    const char *bad_ports[] = { "5432,5433,5434", "5432,", ",5432", "5432,0", "5432,x", "5432;5433" };
    for (size_t i = 0; i < sizeof bad_ports / sizeof bad_ports[0]; i++) {
        setenv("PG_PORT", bad_ports[i], 1);
        err[0] = '\0';
        if (config_load(&c, err, sizeof err) != -1)
            harness_failf(__FILE__, __LINE__, "PG_PORT=%s accepted", bad_ports[i]);
        CHECK(strstr(err, "PG_PORT") != NULL);
        config_fini(&c);
    }
    setenv("PG_PORT", "5432", 1);
    setenv("PG_TARGET_SESSION_ATTRS", "read-only", 1);
    err[0] = '\0';
    CHECK_INT(config_load(&c, err, sizeof err), -1);
    CHECK(strstr(err, "PG_TARGET_SESSION_ATTRS: \"read-only\"") != NULL);
    config_fini(&c);
    unsetenv("PG_TARGET_SESSION_ATTRS");
}

TEST(config_other_bad_numbers_name_their_variable)
{
    clear_env();
    setenv("DB_POOL_SIZE", "0", 1);
    silt_config c;
    char err[256] = "";
    CHECK_INT(config_load(&c, err, sizeof err), -1);
    CHECK(strstr(err, "DB_POOL_SIZE") != NULL);
    config_fini(&c);
    unsetenv("DB_POOL_SIZE");
    setenv("ZSTD_LEVEL", "20", 1);
    err[0] = '\0';
    CHECK_INT(config_load(&c, err, sizeof err), -1);
    CHECK(strstr(err, "ZSTD_LEVEL") != NULL);
    config_fini(&c);
}

TEST(config_conninfo_quotes_keywords_and_prefers_url)
{
    clear_env();
    setenv("PG_HOST", "h", 1);
    setenv("PG_PORT", "5433", 1);
    setenv("PG_USER", "u", 1);
    setenv("PG_DB", "d b", 1);
    setenv("PG_PASSWORD", "p'w\\x", 1);
    silt_config c;
    char err[256] = "";
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    char *ci = config_conninfo(&c);
    CHECK_STR(ci, "host='h' port='5433' user='u' dbname='d b' password='p\\'w\\\\x' target_session_attrs='read-write' ");
    free(ci);
    config_fini(&c);

    setenv("DATABASE_URL", "postgresql://x@y:1/z", 1);
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    ci = config_conninfo(&c);
    CHECK_STR(ci, "postgresql://x@y:1/z");
    free(ci);
    config_fini(&c);
}

/* LOG_LEVEL is checked with the rest, so every command (server, migrate)
 * refuses a bad one the same way and logs at a good one. */
TEST(config_refuses_an_unknown_log_level_and_applies_a_known_one)
{
    clear_env();
    setenv("LOG_LEVEL", "loud", 1);
    silt_config c;
    char err[256] = "";
    CHECK_INT(config_load(&c, err, sizeof err), -1);
    CHECK_STR(err, "invalid value for LOG_LEVEL: \"loud\" (expected debug, info, warn or error)");
    setenv("LOG_LEVEL", "error", 1);
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    CHECK(!log_enabled(LOG_WARN) && log_enabled(LOG_ERROR));
    config_fini(&c);
    clear_env();
}

/* Queen's names and defaults: authentication off until JWT_ENABLED. */
TEST(config_jwt_defaults_are_queens_and_off)
{
    clear_env();
    silt_config c;
    char err[256] = "";
    CHECK_INT(config_load(&c, err, sizeof err), 0);
    CHECK_INT(c.jwt_enabled, 0);
    CHECK_STR(c.jwt_algorithm, "HS256");
    CHECK_STR(c.jwt_secret, "");
    CHECK_STR(c.jwt_public_key, "");
    CHECK_STR(c.jwt_issuer, "");
    CHECK_STR(c.jwt_audience, "");
    CHECK_INT(c.jwt_clock_skew, 30);
    CHECK_STR(c.jwt_skip_paths, "/health,/metrics/prometheus");
    CHECK_STR(c.jwt_roles_claim, "role");
    CHECK_STR(c.jwt_roles_array_claim, "roles");
    CHECK_STR(c.jwt_role_admin, "admin");
    CHECK_STR(c.jwt_role_read_write, "read-write");
    CHECK_STR(c.jwt_role_read_only, "read-only");
    config_fini(&c);
    setenv("JWT_CLOCK_SKEW", "-1", 1);
    CHECK_INT(config_load(&c, err, sizeof err), -1);
    CHECK(strstr(err, "JWT_CLOCK_SKEW") != NULL);
    setenv("JWT_CLOCK_SKEW", "5", 1);
    setenv("JWT_ENABLED", "yes", 1);
    CHECK_INT(config_load(&c, err, sizeof err), -1);
    CHECK(strstr(err, "JWT_ENABLED") != NULL);
}

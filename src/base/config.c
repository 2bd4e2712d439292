/* config: the settings table. Each row names an environment variable, its
 * default and, for numbers, its bounds; config_load walks the table once. */
#include "base/config.h"
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/buf.h"
#include "base/log.h"
#include "base/xalloc.h"

typedef enum setting_kind { SETTING_TEXT, SETTING_NUMBER, SETTING_BOOL } setting_kind;

typedef struct setting {
    const char  *env;
    size_t       offset;     /* into silt_config */
    setting_kind kind;       /* text: char *; number: int64_t; bool: int64_t 0 or 1 */
    const char *fallback;   /* default, as text */
    int64_t     min, max;
} setting;

#define TEXT(env, field, def) { env, offsetof(silt_config, field), SETTING_TEXT, def, 0, 0 }
#define NUM(env, field, def, lo, hi) { env, offsetof(silt_config, field), SETTING_NUMBER, def, lo, hi }
#define BOOL(env, field, def) { env, offsetof(silt_config, field), SETTING_BOOL, def, 0, 1 }

static const setting settings[] = {
    TEXT("HOST", host, "127.0.0.1"),   /* open to the network only when asked */
    NUM("PORT", port, "6632", 1, 65535),
    TEXT("DATABASE_URL", database_url, ""),
    TEXT("PG_HOST", pg_host, "localhost"),
    TEXT("PG_PORT", pg_port, "5432"),   /* one port, or one per PG_HOST host (checked below) */
    TEXT("PG_USER", pg_user, "postgres"),
    TEXT("PG_PASSWORD", pg_password, ""),
    TEXT("PG_DB", pg_db, "postgres"),
    TEXT("PG_TARGET_SESSION_ATTRS", pg_target_session_attrs, "read-write"),
    NUM("DB_POOL_SIZE", db_pool_size, "8", 1, 256),
    NUM("DB_PIPELINE_DEPTH", db_pipeline_depth, "4", 1, 64),
    TEXT("LOG_LEVEL", log_level, "info"),
    NUM("MAX_BODY_BYTES", max_body_bytes, "134217728", 1024, 1073741824),
    NUM("MAX_BATCH_ITEMS", max_items, "10000", 1, 1000000),
    NUM("MAX_POP_BATCH", max_pop_batch, "10000", 1, 1000000),
    NUM("MAX_PAYLOAD_BYTES", max_payload_bytes, "67108864", 16, 1073741824),
    NUM("PUSH_MAX_FLUSHES", push_max_flushes, "1", 1, 64),
    NUM("PUSH_FLUSH_MESSAGES", push_flush_messages, "20000", 1, 1000000),
    NUM("LONG_POLL_RECHECK_MS", long_poll_recheck_ms, "0", 0, 60000),   /* 0: parked pops never poll */
    NUM("SHUTDOWN_TIMEOUT_MS", shutdown_timeout_ms, "10000", 0, 600000),
    NUM("STARTUP_DB_WAIT_MS", startup_db_wait_ms, "60000", 0, 3600000),
    NUM("ZSTD_LEVEL", zstd_level, "1", -7, 19),
    NUM("GROUP_LAGGING_SECONDS", group_lagging_s, "60", 0, 2147483647),
    NUM("GROUP_DEAD_SECONDS", group_dead_s, "3600", 1, 2147483647),
    TEXT("QUEEN_ENCRYPTION_KEY", encryption_key, ""),
    NUM("RETENTION_INTERVAL_MS", retention_interval_ms, "60000", 0, 86400000),
    NUM("RETENTION_BATCH_SIZE", retention_batch, "100", 1, 100000),
    NUM("RETENTION_MAX_STEPS", retention_max_steps, "10000", 1, 10000000),
    NUM("RETENTION_CONCURRENCY", retention_concurrency, "4", 1, 64),
    NUM("PARTITION_CLEANUP_DAYS", cleanup_days, "30", 0, 36500),
    BOOL("QUEEN_PARTITION_CLEANUP_ENABLED", cleanup_enabled, "true"),
    NUM("MAINTENANCE_REFRESH_MS", maintenance_refresh_ms, "1000", 10, 60000),
    NUM("PUSH_OUTBOX_INTERVAL_MS", outbox_interval_ms, "1000", 10, 3600000),
    NUM("TASK_RETENTION_DETACH_TIMEOUT_MS", detach_timeout_ms, "10000", 100, 600000),
    BOOL("JWT_ENABLED", jwt_enabled, "false"),
    TEXT("JWT_ALGORITHM", jwt_algorithm, "HS256"),
    TEXT("JWT_SECRET", jwt_secret, ""),
    TEXT("JWT_PUBLIC_KEY", jwt_public_key, ""),
    TEXT("JWT_ISSUER", jwt_issuer, ""),
    TEXT("JWT_AUDIENCE", jwt_audience, ""),
    NUM("JWT_CLOCK_SKEW", jwt_clock_skew, "30", 0, 86400),
    TEXT("JWT_SKIP_PATHS", jwt_skip_paths, "/health,/metrics/prometheus"),
    TEXT("JWT_ROLES_CLAIM", jwt_roles_claim, "role"),
    TEXT("JWT_ROLES_ARRAY_CLAIM", jwt_roles_array_claim, "roles"),
    TEXT("JWT_ROLE_ADMIN", jwt_role_admin, "admin"),
    TEXT("JWT_ROLE_READ_WRITE", jwt_role_read_write, "read-write"),
    TEXT("JWT_ROLE_READ_ONLY", jwt_role_read_only, "read-only"),
    NUM("HTTP_MAX_CONNECTIONS", http_max_connections, "10000", 1, 1000000),
    NUM("WORKERS", workers, "0", 0, 256),
    NUM("HTTP_FD_RESERVE", http_fd_reserve, "64", 0, 100000),
    NUM("HTTP_CLIENT_SHARE_PERCENT", http_client_share_percent, "50", 1, 100),
    NUM("HTTP_HEADER_TIMEOUT_MS", http_header_timeout_ms, "10000", 10, 3600000),
    NUM("HTTP_BODY_TIMEOUT_MS", http_body_timeout_ms, "30000", 10, 3600000),
    NUM("HTTP_BODY_MIN_RATE", http_body_min_rate, "1024", 1, 1073741824),
    NUM("HTTP_IDLE_TIMEOUT_MS", http_idle_timeout_ms, "60000", 10, 3600000),
    NUM("HTTP_ACCEPT_BACKOFF_MS", http_accept_backoff_ms, "100", 1, 60000),
    NUM("REQUEST_TIMEOUT_MS", request_timeout_ms, "30000", 10, 3600000),
    NUM("MAX_PENDING_REQUESTS", max_pending_requests, "1000", 1, 1000000),
    NUM("MAX_PENDING_BYTES", max_pending_bytes, "268435456", 1024, 68719476736),
};

static int parse_number(const setting *s, const char *text, int64_t *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < s->min || v > s->max) {
        snprintf(err, errlen, "invalid value for %s: \"%s\" (expected an integer from %lld to %lld)",
                 s->env, text, (long long)s->min, (long long)s->max);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_bool(const setting *s, const char *text, int64_t *out, char *err, size_t errlen)
{
    if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0) { *out = 1; return 0; }
    if (strcmp(text, "false") == 0 || strcmp(text, "0") == 0) { *out = 0; return 0; }
    snprintf(err, errlen, "invalid value for %s: \"%s\" (expected true or false)", s->env, text);
    return -1;
}

static int count_items(const char *list)
{
    int n = 1;
    for (const char *p = list; *p; p++) n += *p == ',';
    return n;
}

/* PG_HOST may list several hosts (libpq tries them in order: a primary and
 * its standbys); PG_PORT is one port for all or one per host. Only a
 * session that can write is of use to silt (PG_TARGET_SESSION_ATTRS). */
static int check_pg_hosts(const silt_config *cfg, char *err, size_t errlen)
{
    for (const char *p = cfg->pg_port; ; ) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 65535 || (*end && *end != ',')) {
            snprintf(err, errlen, "invalid value for PG_PORT: \"%s\" (expected a port from 1 to 65535, or one per "
                     "PG_HOST host, comma-separated)", cfg->pg_port);
            return -1;
        }
        if (!*end) break;
        p = end + 1;
    }
    int hosts = count_items(cfg->pg_host), ports = count_items(cfg->pg_port);
    if (ports != 1 && ports != hosts) {
        snprintf(err, errlen, "PG_PORT names %d ports for %d PG_HOST hosts (expected one port, or one per host)",
                 ports, hosts);
        return -1;
    }
    const char *attrs = cfg->pg_target_session_attrs;
    if (strcmp(attrs, "read-write") && strcmp(attrs, "primary") && strcmp(attrs, "any")) {
        snprintf(err, errlen, "invalid value for PG_TARGET_SESSION_ATTRS: \"%s\" (expected read-write, primary or "
                 "any: silt writes)", attrs);
        return -1;
    }
    return 0;
}

static int load_settings(silt_config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const setting *s = &settings[i];
        const char *text = getenv(s->env);
        if (!text || !*text) text = s->fallback;
        char *field = (char *)cfg + s->offset;
        if (s->kind == SETTING_TEXT) *(char **)field = xstrdup(text);
        else if (s->kind == SETTING_BOOL && parse_bool(s, text, (int64_t *)field, err, errlen) < 0) return -1;
        else if (s->kind == SETTING_NUMBER && parse_number(s, text, (int64_t *)field, err, errlen) < 0) return -1;
    }
    if (check_pg_hosts(cfg, err, errlen) < 0) return -1;
    if (log_set_level(cfg->log_level) == 0) return 0;   /* applied here: every command logs at its level */
    snprintf(err, errlen, "invalid value for LOG_LEVEL: \"%s\" (expected debug, info, warn or error)", cfg->log_level);
    return -1;
}

int config_load(silt_config *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    if (load_settings(cfg, err, errlen) == 0) return 0;
    config_fini(cfg);   /* a refused configuration holds nothing */
    return -1;
}

void config_fini(silt_config *cfg)
{
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        if (settings[i].kind == SETTING_TEXT) free(*(char **)((char *)cfg + settings[i].offset));
    memset(cfg, 0, sizeof *cfg);
}

/* Values are single-quoted for libpq, with quotes and backslashes escaped. */
static void put_keyword(buf *b, const char *key, const char *value)
{
    buf_printf(b, "%s='", key);
    for (const char *p = value; *p; p++) {
        if (*p == '\'' || *p == '\\') buf_putc(b, '\\');
        buf_putc(b, *p);
    }
    buf_puts(b, "' ");
}

char *config_conninfo(const silt_config *cfg)
{
    buf b;
    buf_init(&b);
    if (cfg->database_url[0]) {
        buf_puts(&b, cfg->database_url);
        return buf_steal(&b);
    }
    put_keyword(&b, "host", cfg->pg_host);
    put_keyword(&b, "port", cfg->pg_port);
    put_keyword(&b, "user", cfg->pg_user);
    put_keyword(&b, "dbname", cfg->pg_db);
    if (cfg->pg_password[0]) put_keyword(&b, "password", cfg->pg_password);
    put_keyword(&b, "target_session_attrs", cfg->pg_target_session_attrs);
    return buf_steal(&b);
}

/* config: every server setting, read from the environment through one table
 * (name, default, bounds), so docs/operations.md and the code agree. */
#ifndef SILT_CONFIG_H
#define SILT_CONFIG_H
#include <stddef.h>
#include <stdint.h>

typedef struct silt_config {
    char   *host;                 /* HOST: listen address */
    int64_t port;                 /* PORT */
    char   *database_url;         /* DATABASE_URL: libpq URI; wins over PG_* */
    char   *pg_host, *pg_user, *pg_password, *pg_db;
    char   *pg_port;              /* one, or one per PG_HOST host */
    char   *pg_target_session_attrs; /* libpq's: only a session that may write */
    int64_t db_pool_size;         /* connections to PostgreSQL */
    int64_t db_pipeline_depth;    /* jobs pipelined on one connection at most */
    char   *log_level;
    int64_t max_body_bytes;       /* request bodies larger than this get 413 */
    int64_t max_items;            /* items in one push or ack request */
    int64_t max_pop_batch;        /* largest pop batch */
    int64_t max_payload_bytes;    /* one message's payload */
    int64_t push_max_flushes;     /* push flushes in flight at once */
    int64_t push_flush_messages;  /* messages one flush gathers at most */
    int64_t long_poll_recheck_ms; /* parked pops re-check the database this often */
    int64_t shutdown_timeout_ms;  /* in-flight work gets this long on SIGTERM */
    int64_t startup_db_wait_ms;   /* how long start-up waits for PostgreSQL */
    int64_t zstd_level;           /* segment compression level */
    int64_t group_lagging_s;      /* backlog older than this makes a group Lagging */
    int64_t group_dead_s;         /* a lagging group idle this long is Dead */
    char   *encryption_key;       /* QUEEN_ENCRYPTION_KEY: 64 hex characters or empty */
    int64_t retention_interval_ms;/* between retention passes; 0: no timer */
    int64_t retention_batch;      /* segments per retention step */
    int64_t retention_max_steps;  /* steps per pass */
    int64_t retention_concurrency;/* retention steps in flight at once */
    int64_t cleanup_days;         /* empty, untouched partitions go after this many days */
    int64_t cleanup_enabled;      /* 1 or 0 */
    int64_t maintenance_refresh_ms;/* how often a server re-reads maintenance mode */
    int64_t outbox_interval_ms;   /* how often a server looks for pushes made from SQL, besides their NOTIFY */
    int64_t detach_timeout_ms;    /* a partition pass's DETACH CONCURRENTLY waits this long for readers */
    /* bearer tokens (src/api/auth.c, token.c); names as Queen's */
    int64_t jwt_enabled;          /* 1: every route but the skip paths needs a token */
    char   *jwt_algorithm;        /* HS256, RS256 or EdDSA */
    char   *jwt_secret;           /* HS256's shared secret */
    char   *jwt_public_key;       /* RS256 or EdDSA: PEM public key */
    char   *jwt_issuer;           /* "": any iss */
    char   *jwt_audience;         /* "": any aud */
    int64_t jwt_clock_skew;       /* seconds exp and nbf may be off by */
    char   *jwt_skip_paths;       /* comma-separated paths answered without a token */
    char   *jwt_roles_claim;      /* claim holding one role */
    char   *jwt_roles_array_claim;/* claim holding an array of roles */
    char   *jwt_role_admin, *jwt_role_read_write, *jwt_role_read_only;   /* the role values */
    int64_t http_max_connections; /* client connections at once; more are answered 503 and closed */
    int64_t workers;              /* HTTP event loops (threads); 0: one per core */
    int64_t http_fd_reserve;      /* descriptors client connections leave to the pool and the server */
    int64_t http_client_share_percent; /* of the connection limit one client address may hold */
    int64_t http_header_timeout_ms;/* a request's first byte to the end of its headers */
    int64_t http_body_timeout_ms; /* longest pause between a body's bytes */
    int64_t http_body_min_rate;   /* bytes per second a body must average past that */
    int64_t http_idle_timeout_ms; /* a kept-alive connection without a request is closed after this */
    int64_t http_accept_backoff_ms;/* accepting pauses this long when out of descriptors */
    int64_t request_timeout_ms;   /* a request not answered by then gets 503 (long-polls excepted) */
    int64_t max_pending_requests; /* requests waiting on the database; more are shed with 503 */
    int64_t max_pending_bytes;    /* request bodies held by those requests, bytes */
} silt_config;

/* Fills cfg from the environment; on a bad value writes a message to err
 * and returns -1. */
int  config_load(silt_config *cfg, char *err, size_t errlen) __attribute__((warn_unused_result));
void config_fini(silt_config *cfg);
/* libpq connection string (keywords form) or the URL; caller frees. */
char *config_conninfo(const silt_config *cfg);

#endif

/* server: wiring and lifecycle of `silt server` (see server.h). */
#include "api/server.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "api/api.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "db/migrate.h"
#include "tasks/class_registry.h"
#include "tasks/send_settings.h"
#include "streams/encryption.h"
#include "db/result.h"

#define DRAIN_CHECK_MS 20
#define DRAIN_GRACE_MS 100
#define SIGNAL_ECHO_MS 1000

void server_log_appended(server *srv, const char *queue, const char *const *partitions, size_t n)
{
    popper_wake(srv->pop, queue, partitions, n);
    task_hub_announce_log(srv->tasks, queue, partitions, n);
}

void server_group_released(server *srv, const char *group)
{
    popper_wake_group(srv->pop, group);
    task_hub_announce_lease(srv->tasks, group);
}

/* A push committed, or maintenance delivered what it held. */
static void on_log_appended(void *arg, const char *queue, const char *const *partitions, size_t n)
{
    server_log_appended(arg, queue, partitions, n);
}

/* A pop gave back a lease on messages it could not read. */
static void on_lease_released(void *arg, const char *group)
{
    server_group_released(arg, group);
}

/* Another server's push committed, or its ack gave a lease of group back
 * (neither: some may have been missed). */
static void on_log_commit(void *arg, const char *queue, const char *group, const char *const *partitions, size_t n)
{
    server *srv = arg;
    if (queue) popper_wake(srv->pop, queue, partitions, n);
    else if (group) popper_wake_group(srv->pop, group);
    else popper_wake_all(srv->pop);
}

/* queen.push committed somewhere (or notifications may have been missed). */
static void on_outbox(void *arg)
{
    server *srv = arg;
    outbox_kick(srv->outbox);
}

static bool chores_idle(const server *srv)
{
    for (int i = 0; i < SERVER_CHORES; i++)
        if (!periodic_idle(srv->chores[i])) return false;
    return true;
}

static bool drained(const server *srv)
{
    /* arriving first: a request stops arriving only once it is in flight */
    return httpd_arriving(srv->http) == 0 && httpd_inflight(srv->http) == 0 && pusher_idle(srv->push) &&
           outbox_idle(srv->outbox) &&
           db_pool_busy(srv->pool) == 0 && retention_engine_idle(srv->retention) &&
           maintenance_idle(srv->maintenance) && task_hub_idle(srv->tasks) && scheduler_idle(srv->schedules) &&
           chores_idle(srv);
}

static void drain_check(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    server *srv = arg;
    if (drained(srv)) {
        /* a moment more of the loop lets the last replies leave their buffers */
        struct timeval grace = { 0, DRAIN_GRACE_MS * 1000 };
        log_info("shutdown complete");
        event_base_loopexit(srv->base, &grace);
        return;
    }
    if (clock_mono_us() >= srv->drain_deadline_us) {
        log_warn("shutdown timeout: %d requests still in flight, %d still arriving", httpd_inflight(srv->http),
                 httpd_arriving(srv->http));
        event_base_loopexit(srv->base, NULL);
        return;
    }
    struct timeval tv = { 0, DRAIN_CHECK_MS * 1000 };
    evtimer_add(srv->drain_timer, &tv);
}

/* A second signal exits at once, except a repeat of the first within
 * SIGNAL_ECHO_MS: one Ctrl-C can arrive twice (the terminal signals the
 * whole process group, and a wrapper such as `make run` may forward it too),
 * and it must still drain. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    server *srv = arg;
    const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (srv->draining && sig == srv->first_signal && clock_mono_us() - srv->first_signal_us < SIGNAL_ECHO_MS * 1000) {
        log_debug("%s again at once: the same request to stop", name);
        return;
    }
    if (srv->draining) { log_warn("second signal: exiting now"); event_base_loopexit(srv->base, NULL); return; }
    log_info("received %s: draining", name);
    srv->draining = true;
    srv->first_signal = (int)sig;
    srv->first_signal_us = clock_mono_us();
    srv->drain_deadline_us = clock_mono_us() + srv->cfg.shutdown_timeout_ms * 1000;
    httpd_drain(srv->http);
    popper_drain(srv->pop);
    retention_engine_stop(srv->retention);
    maintenance_stop(srv->maintenance);
    outbox_stop(srv->outbox);
    task_hub_drain(srv->tasks);
    scheduler_stop(srv->schedules);
    for (int i = 0; i < SERVER_CHORES; i++) periodic_stop(srv->chores[i]);
    drain_check(-1, 0, srv);
}

/* Queues that encrypt need the key: refuse to start without it, and learn
 * which queues encrypt so the first push seals at once. */
static int check_encryption(server *srv, const char *conninfo)
{
    char err[256];
    if (encryption_load_key(srv->cfg.encryption_key, err, sizeof err) < 0) { log_error("%s", err); return -1; }
    PGconn *pg = PQconnectdb(conninfo);
    PGresult *r = PQexecParams(pg, "SELECT name FROM queen.queues WHERE (options->>'encryptionEnabled')::boolean",
                               0, NULL, NULL, NULL, NULL, 1);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0) log_error("cannot read queue options: %s", PQerrorMessage(pg));
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        if (!encryption_has_key()) {
            log_error("queue \"%s\" has encryptionEnabled but QUEEN_ENCRYPTION_KEY is not set "
                      "(64 hex characters, e.g. from openssl rand -hex 32)", db_str(r, i, 0));
            rc = -1;
        }
        encryption_set_queue(db_str(r, i, 0), true);
    }
    PQclear(r);
    PQfinish(pg);
    return rc;
}

/* The classes of silt.conf registered, or the start refused naming each
 * key the database holds with another duration (silt.conf's report); then
 * the settings the SQL API checks stored, the leaves made and the
 * schedules written. */
static int prepare_task_storage(server *srv, const char *conninfo)
{
    PGconn *pg = PQconnectdb(conninfo);
    buf report;
    buf_init(&report);
    int rc = class_registry_register(pg, &srv->conf, &report);
    if (rc == CLASS_REGISTRY_CONFLICT) fputs(report.data, stderr);
    else if (rc == CLASS_REGISTRY_DB_ERROR) log_error("%s", report.data);
    if (rc == 0 && send_settings_store(pg, &srv->conf, &report) < 0) {   /* before any send: tasks.enqueue reads them */
        log_error("%s", report.data);
        rc = -1;
    }
    if (rc == 0 && outbox_store_settings(pg, srv->cfg.max_payload_bytes, srv->cfg.max_items, &report) < 0) {
        log_error("%s", report.data);   /* before any push from SQL is checked against them */
        rc = -1;
    }
    buf_fini(&report);
    if (rc == 0) rc = partition_cover_now(pg, &srv->conf);   /* a task that ends needs its leaf */
    if (rc == 0) rc = scheduler_declare(pg, &srv->conf);      /* listed by every server, refused to the API */
    PQfinish(pg);
    return rc == 0 ? 0 : -1;
}

/* WORKERS: the home loop (this thread: handlers, pool, fusion) serves HTTP
 * too, and WORKERS - 1 more loops do HTTP I/O on threads of their own. */
static int start_loops(server *srv)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int loops = srv->cfg.workers > 0 ? (int)srv->cfg.workers : cores > 0 ? (int)cores : 1;
    if (httpd_add_loops(srv->http, loops - 1) == 0) return 0;
    log_error("cannot start %d HTTP loops (WORKERS): %s", loops, strerror(errno));
    return -1;
}

int server_build(server *srv, const char *conninfo)
{
    srv->base = httpd_base_new();
    srv->pool = db_pool_new(srv->base, conninfo, (int)srv->cfg.db_pool_size, (int)srv->cfg.db_pipeline_depth);
    push_limits limits = { (int)srv->cfg.push_max_flushes, (int)srv->cfg.push_flush_messages, (int)srv->cfg.zstd_level };
    srv->push = pusher_new(srv->base, srv->pool, limits, on_log_appended, srv);
    srv->max_segment_bytes = (size_t)srv->cfg.max_body_bytes * 2 + 1024 * 1024;
    srv->leases = lease_book_new();
    srv->pop = popper_new(srv->base, srv->pool, srv->leases, (int)srv->cfg.long_poll_recheck_ms,
                          srv->max_segment_bytes);
    popper_on_release(srv->pop, on_lease_released, srv);
    srv->acks = acker_new(srv->pool, srv->leases, srv->max_segment_bytes);
    retention_settings rs = { srv->cfg.retention_interval_ms, srv->cfg.retention_batch, srv->cfg.retention_max_steps,
                              srv->cfg.retention_concurrency, srv->cfg.cleanup_days, srv->cfg.cleanup_enabled != 0 };
    srv->retention = retention_engine_new(srv->base, srv->pool, rs);
    srv->maintenance = maintenance_new(srv->base, srv->pool, on_log_appended, srv, srv->cfg.maintenance_refresh_ms);
    srv->tasks = task_hub_new(srv->base, srv->pool, conninfo, &srv->conf);
    task_hub_on_log(srv->tasks, on_log_commit, srv);
    outbox_limits ol = { (int)srv->cfg.push_flush_messages, srv->cfg.max_body_bytes, (int)srv->cfg.zstd_level,
                         srv->cfg.outbox_interval_ms };
    srv->outbox = outbox_new(srv->base, srv->pool, ol, on_log_appended, srv);
    task_hub_on_outbox(srv->tasks, on_outbox, srv);
    srv->schedules = scheduler_new(srv->base, srv->pool, srv->tasks, &srv->conf);
    srv->sweeper = task_sweeper_new(srv->base, srv->pool, &srv->conf.retention);
    srv->history = history_roller_new(srv->base, srv->pool);
    srv->partitions = partition_pass_new(srv->base, conninfo, &srv->conf, srv->cfg.detach_timeout_ms);
    srv->chores[0] = task_sweeper_periodic(srv->sweeper);
    srv->chores[1] = history_roller_periodic(srv->history);
    srv->chores[2] = partition_pass_periodic(srv->partitions);
    const silt_config *c = &srv->cfg;
    httpd_limits limits_http = { (size_t)c->max_body_bytes, (int)c->http_max_connections, (int)c->http_fd_reserve,
                                 (int)c->http_client_share_percent,
                                 c->http_header_timeout_ms, c->http_body_timeout_ms, c->http_body_min_rate,
                                 c->http_idle_timeout_ms,
                                 c->request_timeout_ms, c->http_accept_backoff_ms };
    srv->http = httpd_new(srv->base, srv->cfg.host, (int)srv->cfg.port, &limits_http, api_admit, srv);
    if (!srv->http) {
        log_error("cannot listen on %s:%lld: %s (PORT and HOST choose another)", srv->cfg.host,
                  (long long)srv->cfg.port, strerror(errno));
        return -1;
    }
    httpd_on_leave(srv->http, api_client_left, srv);
    return start_loops(srv);
}

static int start(server *srv)
{
    char err[1024];
    char *conninfo = config_conninfo(&srv->cfg);
    int rc = migrate_run(conninfo, srv->cfg.startup_db_wait_ms, err, sizeof err);
    if (rc < 0) log_error("%s", err);
    if (rc == 0) rc = check_encryption(srv, conninfo);
    if (rc == 0) rc = prepare_task_storage(srv, conninfo);
    if (rc == 0) rc = server_build(srv, conninfo);
    free(conninfo);
    if (rc < 0) return -1;
    srv->sigterm = evsignal_new(srv->base, SIGTERM, on_signal, srv);
    srv->sigint = evsignal_new(srv->base, SIGINT, on_signal, srv);
    srv->drain_timer = evtimer_new(srv->base, drain_check, srv);
    event_add(srv->sigterm, NULL);
    event_add(srv->sigint, NULL);
    return 0;
}

static void stop(server *srv)
{
    if (srv->sigterm) event_free(srv->sigterm);
    if (srv->sigint) event_free(srv->sigint);
    if (srv->drain_timer) event_free(srv->drain_timer);
    httpd_free(srv->http);
    auth_free(srv->auth);
    popper_free(srv->pop);
    acker_free(srv->acks);
    lease_book_free(srv->leases);
    retention_engine_free(srv->retention);
    maintenance_free(srv->maintenance);
    scheduler_free(srv->schedules);
    task_sweeper_free(srv->sweeper);
    history_roller_free(srv->history);
    partition_pass_free(srv->partitions);
    task_hub_free(srv->tasks);
    outbox_free(srv->outbox);
    pusher_free(srv->push);
    db_pool_free(srv->pool);
    if (srv->base) event_base_free(srv->base);
    config_fini(&srv->cfg);
    conffile_free(&srv->conf);
}

/* silt.conf, or every default without one. Errors print the whole report
 * (the one `silt check-config` prints) and refuse to start. */
static int load_conffile(server *srv, const char *path)
{
    if (!path) {
        conffile_defaults(&srv->conf);
        log_debug("no silt.conf (--config or SILT_CONFIG): task queues and recovery on their defaults");
        return 0;
    }
    buf report;
    buf_init(&report);
    int errors = conffile_load(path, &srv->conf, &report);
    if (errors) fputs(report.data, stderr);
    else log_info("configuration: %s (%zu queue%s)", path, srv->conf.nqueues, srv->conf.nqueues == 1 ? "" : "s");
    buf_fini(&report);
    return errors ? -1 : 0;
}

/* HOST names only this machine (an IPv4 127/8 address, ::1 or localhost). */
static bool loopback_only(const char *host)
{
    struct in_addr v4;
    struct in6_addr v6;
    if (strcmp(host, "localhost") == 0) return true;
    if (inet_pton(AF_INET, host, &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

/* Listening beyond this machine without authentication is allowed (a
 * private network may be the operator's choice) but never silent. */
static void warn_if_open(const silt_config *cfg)
{
    if (cfg->jwt_enabled || loopback_only(cfg->host)) return;
    log_warn("authentication is off and silt listens on %s: anyone who can reach port %lld may read, change "
             "and delete every queue and task (set JWT_ENABLED, docs/operations.md \"Security\")",
             cfg->host, (long long)cfg->port);
}

int server_main(const char *conf_path)
{
    server srv;
    memset(&srv, 0, sizeof srv);
    char err[512];
    if (config_load(&srv.cfg, err, sizeof err) < 0) { fprintf(stderr, "silt: %s\n", err); return 2; }
    if (load_conffile(&srv, conf_path) < 0) { stop(&srv); return 2; }
    if (!(srv.auth = auth_new(&srv.cfg, err, sizeof err))) { fprintf(stderr, "silt: %s\n", err); stop(&srv); return 2; }
    signal(SIGPIPE, SIG_IGN);
    int rc = start(&srv);
    if (rc == 0) {
        log_info("silt %s listening on %s:%lld (%d HTTP loops)", SILT_VERSION, srv.cfg.host, (long long)srv.cfg.port,
                 httpd_loops(srv.http));
        warn_if_open(&srv.cfg);
        event_base_dispatch(srv.base);
    }
    stop(&srv);
    return rc < 0 ? 1 : 0;
}

/* health: the readiness gate (/health) and Prometheus metrics. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "api/api.h"
#include "base/clock.h"
#include "base/emit.h"

/* Degraded: requests are being shed (past the bound on what waits for the
 * database), one has waited half its timeout, or one timed out within the
 * last timeout's span. A balancer sees 503 and sends clients elsewhere;
 * it recovers by itself as the database catches up. */
static const char *degraded_because(const server *srv)
{
    int64_t timeout_ms = srv->cfg.request_timeout_ms, last = httpd_last_timeout_us(srv->http);
    if (api_overloaded(srv)) return "too many requests waiting for the database";
    if (httpd_oldest_held_ms(srv->http) >= timeout_ms / 2) return "requests are waiting long for the database";
    if (last && clock_mono_us() - last < timeout_ms * 1000) return "requests timed out waiting for the database";
    return NULL;
}

/* The maintenance state shown is this server's copy, at most
 * MAINTENANCE_REFRESH_MS old: /health never waits on the database. */
void api_health(httpd_req *req, server *srv)
{
    bool up = db_pool_ready(srv->pool) && !srv->draining;
    const char *degraded = up ? degraded_because(srv) : NULL;
    const maintenance_state *m = maintenance_current(srv->maintenance);
    api_reply out;
    emit *e = api_reply_object(&out);
    emit_key(e, "status"); emit_str(e, !up ? "unhealthy" : degraded ? "degraded" : "healthy");
    if (degraded) { emit_key(e, "reason"); emit_str(e, degraded); }
    emit_key(e, "requestsWaiting"); emit_int(e, httpd_held(srv->http) - 1);   /* not this one */
    emit_key(e, "database"); emit_str(e, up ? "connected" : "disconnected");
    emit_key(e, "version"); emit_str(e, SILT_VERSION);
    emit_key(e, "maintenanceMode"); emit_bool(e, m->enabled);
    emit_key(e, "bufferedMessages"); emit_int(e, m->buffered);
    emit_key(e, "auth"); emit_str(e, srv->cfg.jwt_enabled ? "jwt" : "off");
    api_reply_send(&out, req, up && !degraded ? 200 : 503);
}

static long resident_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/* How the kernel spread the work over the loops (WORKERS): one series per loop. */
static void put_loop_requests(buf *out, const httpd *http)
{
    buf_printf(out, "# HELP silt_http_loop_requests_total requests read by each HTTP event loop (0: the home loop)\n"
                    "# TYPE silt_http_loop_requests_total counter\n");
    for (int i = 0; i < httpd_loops(http); i++)
        buf_printf(out, "silt_http_loop_requests_total{loop=\"%d\"} %llu\n", i,
                   (unsigned long long)httpd_loop_requests(http, i));
}

/* One sample of /metrics/prometheus: a row of the table below. Rows of one
 * name (with different labels) follow each other; its HELP and TYPE lines
 * are written before the first. */
typedef struct metric {
    const char *name;
    const char *labels;   /* e.g. rule="retention", or NULL */
    const char *type;     /* "counter" or "gauge" */
    const char *help;     /* NULL: none */
    double      value;    /* read when the table is made, at the request */
} metric;

static void put_metrics(buf *out, const metric *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(m[i].name, m[i - 1].name) != 0) {
            if (m[i].help) buf_printf(out, "# HELP %s %s\n", m[i].name, m[i].help);
            buf_printf(out, "# TYPE %s %s\n", m[i].name, m[i].type);
        }
        buf_printf(out, m[i].labels ? "%s{%s} %.0f\n" : "%s%s %.0f\n", m[i].name, m[i].labels ? m[i].labels : "",
                   m[i].value);
    }
}

#define COUNTER "counter"
#define GAUGE   "gauge"

/* The streams API's samples: pushes, pops, acks, HTTP, the database, retention. */
static void put_stream_metrics(buf *out, server *srv)
{
    const server_stats *s = &srv->stats;
    const retention_totals *rt = retention_engine_totals(srv->retention);
    const maintenance_state *ms = maintenance_current(srv->maintenance);
    const metric m[] = {
        { "silt_messages_pushed_total", NULL, COUNTER, NULL, (double)s->pushed },
        { "silt_push_duplicates_total", NULL, COUNTER, NULL, (double)s->duplicates },
        { "silt_messages_buffered_total", NULL, COUNTER, "pushed messages held by maintenance mode", (double)s->buffered },
        { "silt_messages_drained_total", NULL, COUNTER, "buffered messages this server moved into the log",
          (double)maintenance_drained_total(srv->maintenance) },
        { "silt_sql_pushes_moved_total", NULL, COUNTER,
          "messages pushed from SQL (queen.push) this server moved from the outbox into the log",
          (double)outbox_moved(srv->outbox) },
        { "silt_maintenance_mode", NULL, GAUGE, NULL, ms->enabled ? 1 : 0 },
        { "silt_push_buffer_messages", NULL, GAUGE, NULL, (double)ms->buffered },
        { "silt_messages_popped_total", NULL, COUNTER, NULL, (double)s->popped },
        { "silt_acks_total", NULL, COUNTER, NULL, (double)s->acked },
        { "silt_ack_items_known_total", NULL, COUNTER, "ack items whose offset this server's lease book held (sql/033)",
          (double)s->acks_known },
        { "silt_lease_book_messages", NULL, GAUGE, "leased messages whose offsets this server keeps for their acks",
          (double)lease_book_messages(srv->leases) },
        { "silt_dead_letters_total", NULL, COUNTER, NULL, (double)s->dead_lettered },
        { "silt_http_requests_in_flight", NULL, GAUGE, NULL, httpd_inflight(srv->http) - 1 },   /* not this one */
        { "silt_http_requests_arriving", NULL, GAUGE, "connections holding part of a request not yet whole",
          httpd_arriving(srv->http) },
        { "silt_long_polls_parked", NULL, GAUGE, "long-poll pops waiting in this server for a message",
          (double)popper_parked(srv->pop) },
        { "silt_long_poll_wakeups_total", NULL, COUNTER, "long-poll pops a commit woke, parked or still looking",
          (double)popper_wakeups(srv->pop) },
        { "silt_http_requests_waiting", NULL, GAUGE, "requests waiting for the database (long-polls excepted)",
          httpd_held(srv->http) - 1 },
        { "silt_http_request_timeouts_total", NULL, COUNTER, "requests answered 503 by REQUEST_TIMEOUT_MS",
          (double)httpd_timeouts(srv->http) },
        { "silt_db_jobs_abandoned_total", NULL, COUNTER,
          "database work dropped unsent: its client left or its request timed out", (double)db_pool_abandoned(srv->pool) },
        { "silt_http_connections", NULL, GAUGE, NULL, httpd_connections(srv->http) },
        { "silt_http_connections_refused_total", NULL, COUNTER, "connections answered 503 at the connection limit",
          (double)httpd_refused_connections(srv->http) },
        { "silt_pop_queries_total", NULL, COUNTER,
          "pop looks sent: first tries, wake-ups and looks again when due (each pop of a gathered statement)",
          (double)popper_queries(srv->pop) },
        { "silt_pop_gathered_total", NULL, COUNTER, "pops sent in one statement with others of their kind",
          (double)popper_gathered(srv->pop) },
        { "silt_pops_gathering", NULL, GAUGE, "pops waiting for a statement of their kind in flight, to go together next",
          (double)popper_gathering(srv->pop) },
        { "silt_acks_gathered_total", NULL, COUNTER, "acks sent in one transaction with others",
          (double)acker_gathered(srv->acks) },
        { "silt_acks_gathering", NULL, GAUGE, "acks waiting for the transaction of acks in flight, to go together next",
          (double)acker_gathering(srv->acks) },
        { "silt_pop_reconciles_total", NULL, COUNTER,
          "pop statements sent behind a ready-set reconcile (all but those of queues found narrow)",
          (double)popper_reconciles(srv->pop) },
        { "silt_notify_listening", NULL, GAUGE, "the connection that hears other servers' commits is listening",
          task_hub_listening(srv->tasks) ? 1 : 0 },
        { "silt_notify_alone", NULL, GAUGE, "no other server has said hello lately: announcements are sent to nobody",
          task_hub_alone(srv->tasks) ? 1 : 0 },
        { "silt_database_up", NULL, GAUGE, NULL, db_pool_ready(srv->pool) ? 1 : 0 },
        { "process_resident_memory_bytes", NULL, GAUGE, NULL, (double)resident_bytes() },
        { "silt_retention_passes_total", NULL, COUNTER, NULL, (double)rt->passes },
        { "silt_retention_offsets_deleted_total", "rule=\"retention\"", COUNTER, NULL, (double)rt->dropped[0] },
        { "silt_retention_offsets_deleted_total", "rule=\"completed_retention\"", COUNTER, NULL, (double)rt->dropped[1] },
        { "silt_retention_offsets_deleted_total", "rule=\"max_wait_time_eviction\"", COUNTER, NULL, (double)rt->dropped[2] },
        { "silt_retention_leased_offsets_evicted_total", NULL, COUNTER, "leased offsets removed by maxWaitTimeSeconds",
          (double)rt->leased_evicted },
        { "silt_retention_sidecar_rows_purged_total", NULL, COUNTER, NULL, (double)rt->sidecar_rows },
        { "silt_partitions_removed_total", NULL, COUNTER, NULL, (double)rt->partitions_removed },
    };
    put_metrics(out, m, sizeof m / sizeof m[0]);
}

/* The task engine's samples: parked claims and waits, gathered batches,
 * sweeps, partition passes. */
static void put_task_metrics(buf *out, server *srv)
{
    const sweep_totals *sw = task_sweeper_totals(srv->sweeper);
    const partition_totals *pt = partition_pass_totals(srv->partitions);
    const metric m[] = {
        { "silt_task_claims_parked", NULL, GAUGE, "worker claims waiting in this server for a task",
          task_hub_parked_claims(srv->tasks) },
        { "silt_task_waits_parked", NULL, GAUGE, "task reads waiting in this server for the task to end",
          task_hub_parked_waits(srv->tasks) },
        { "silt_task_claims_abandoned_total", NULL, COUNTER,
          "long-polling claims whose client hung up (what they took goes back)", (double)srv->stats.claims_abandoned },
        { "silt_task_flushes_total", "kind=\"send\"", COUNTER, "gathered batches sent to the database, one transaction each",
          (double)gather_flushes(task_hub_sends(srv->tasks)) },
        { "silt_task_flushes_total", "kind=\"finish\"", COUNTER, NULL, (double)gather_flushes(task_hub_finishes(srv->tasks)) },
        { "silt_task_flushes_total", "kind=\"claim\"", COUNTER, NULL, (double)gather_flushes(task_hub_claims(srv->tasks)) },
        { "silt_history_rolls_total", NULL, COUNTER, "minutes of the dashboard's history this server rolled",
          (double)history_rolls(srv->history) },
        { "silt_task_sweeps_total", NULL, COUNTER, "rounds of the row-delete sweep this server ran", (double)sw->rounds },
        { "silt_task_sweep_rows_deleted_total", "kind=\"workflows\"", COUNTER, "rows the row-delete sweep deleted",
          (double)sw->workflows_deleted },
        { "silt_task_sweep_rows_deleted_total", "kind=\"worker_states\"", COUNTER, NULL, (double)sw->worker_states_deleted },
        { "silt_task_sweep_rows_deleted_total", "kind=\"unique_keys\"", COUNTER, NULL, (double)sw->unique_keys_deleted },
        { "silt_workflows_expired_total", NULL, COUNTER, "PAUSED workflows expired by paused_workflow_auto_cancel_after",
          (double)sw->workflows_expired },
        { "silt_task_partition_passes_total", NULL, COUNTER, "partition passes this server ran (not those it yielded)",
          (double)pt->passes },
        { "silt_task_partition_passes_failed_total", NULL, COUNTER, "partition passes that could not complete",
          (double)pt->failed_passes },
        { "silt_task_leaves_created_total", NULL, COUNTER, "history and heartbeat leaves this server's passes made",
          (double)pt->leaves_created },
        { "silt_task_leaves_dropped_total", NULL, COUNTER, "leaves this server's passes dropped", (double)pt->leaves_dropped },
        { "silt_task_leaf_drops_refused_total", NULL, COUNTER, "drops refused (pinned, a reader held the detach, an error)",
          (double)pt->drops_refused },
        { "silt_task_leaves_absent", NULL, GAUGE, "cataloged leaves whose relation was gone at this server's last pass",
          (double)pt->leaves_absent },
        { "silt_task_retention_classes_failed", NULL, GAUGE, "classes the last pass could not serve",
          (double)pt->classes_failed },
        { "silt_task_retention_coverage_healthy", NULL, GAUGE, "1 when this server's last partition pass was ok",
          pt->healthy ? 1 : 0 },
    };
    put_metrics(out, m, sizeof m / sizeof m[0]);
}

void api_metrics(httpd_req *req, server *srv)
{
    buf out;
    buf_init(&out);
    put_stream_metrics(&out, srv);
    put_loop_requests(&out, srv->http);
    put_task_metrics(&out, srv);
    httpd_header(req, "Content-Type", "text/plain; version=0.0.4");
    httpd_reply(req, 200, out.data, out.len);
    buf_fini(&out);
}

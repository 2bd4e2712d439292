/* health: the readiness gate (/health) and Prometheus metrics. */
#include <stdio.h>
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
    buf out;
    buf_init(&out);
    emit e;
    emit_init(&e, &out);
    emit_object(&e);
    emit_key(&e, "status"); emit_str(&e, !up ? "unhealthy" : degraded ? "degraded" : "healthy");
    if (degraded) { emit_key(&e, "reason"); emit_str(&e, degraded); }
    emit_key(&e, "requestsWaiting"); emit_int(&e, httpd_held(srv->http) - 1);   /* not this one */
    emit_key(&e, "database"); emit_str(&e, up ? "connected" : "disconnected");
    emit_key(&e, "version"); emit_str(&e, SILT_VERSION);
    emit_key(&e, "maintenanceMode"); emit_bool(&e, m->enabled);
    emit_key(&e, "bufferedMessages"); emit_int(&e, m->buffered);
    emit_end(&e);
    httpd_reply_buf(req, up && !degraded ? 200 : 503, &out);
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

void api_metrics(httpd_req *req, server *srv)
{
    const server_stats *s = &srv->stats;
    const retention_totals *rt = retention_engine_totals(srv->retention);
    const maintenance_state *m = maintenance_current(srv->maintenance);
    buf out;
    buf_init(&out);
    buf_printf(&out,
        "# TYPE silt_messages_pushed_total counter\nsilt_messages_pushed_total %llu\n"
        "# TYPE silt_push_duplicates_total counter\nsilt_push_duplicates_total %llu\n"
        "# HELP silt_messages_buffered_total pushed messages held by maintenance mode\n"
        "# TYPE silt_messages_buffered_total counter\nsilt_messages_buffered_total %llu\n"
        "# HELP silt_messages_drained_total buffered messages this server moved into the log\n"
        "# TYPE silt_messages_drained_total counter\nsilt_messages_drained_total %llu\n"
        "# TYPE silt_maintenance_mode gauge\nsilt_maintenance_mode %d\n"
        "# TYPE silt_push_buffer_messages gauge\nsilt_push_buffer_messages %lld\n"
        "# TYPE silt_messages_popped_total counter\nsilt_messages_popped_total %llu\n"
        "# TYPE silt_acks_total counter\nsilt_acks_total %llu\n"
        "# HELP silt_ack_items_known_total ack items whose offset this server's lease book held (sql/033)\n"
        "# TYPE silt_ack_items_known_total counter\nsilt_ack_items_known_total %llu\n"
        "# HELP silt_lease_book_messages leased messages whose offsets this server keeps for their acks\n"
        "# TYPE silt_lease_book_messages gauge\nsilt_lease_book_messages %zu\n"
        "# TYPE silt_dead_letters_total counter\nsilt_dead_letters_total %llu\n"
        "# TYPE silt_http_requests_in_flight gauge\nsilt_http_requests_in_flight %d\n"
        "# HELP silt_http_requests_arriving connections holding part of a request not yet whole\n"
        "# TYPE silt_http_requests_arriving gauge\nsilt_http_requests_arriving %d\n"
        "# HELP silt_long_polls_parked long-poll pops waiting in this server for a message\n"
        "# TYPE silt_long_polls_parked gauge\nsilt_long_polls_parked %zu\n"
        "# HELP silt_long_poll_wakeups_total parked long-poll pops a commit woke\n"
        "# TYPE silt_long_poll_wakeups_total counter\nsilt_long_poll_wakeups_total %llu\n"
        "# HELP silt_http_requests_waiting requests waiting for the database (long-polls excepted)\n"
        "# TYPE silt_http_requests_waiting gauge\nsilt_http_requests_waiting %d\n"
        "# HELP silt_http_request_timeouts_total requests answered 503 by REQUEST_TIMEOUT_MS\n"
        "# TYPE silt_http_request_timeouts_total counter\nsilt_http_request_timeouts_total %llu\n"
        "# HELP silt_db_jobs_abandoned_total database work dropped unsent: its client left or its request timed out\n"
        "# TYPE silt_db_jobs_abandoned_total counter\nsilt_db_jobs_abandoned_total %llu\n"
        "# TYPE silt_http_connections gauge\nsilt_http_connections %d\n"
        "# HELP silt_http_connections_refused_total connections answered 503 at the connection limit\n"
        "# TYPE silt_http_connections_refused_total counter\nsilt_http_connections_refused_total %llu\n"
        "# HELP silt_pop_queries_total pop statements sent: first tries, wake-ups and looks again when due\n"
        "# TYPE silt_pop_queries_total counter\nsilt_pop_queries_total %llu\n"
        "# HELP silt_pop_reconciles_total pop statements sent behind a ready-set reconcile (all but those of queues found narrow)\n"
        "# TYPE silt_pop_reconciles_total counter\nsilt_pop_reconciles_total %llu\n"
        "# HELP silt_notify_listening the connection that hears other servers' commits is listening\n"
        "# TYPE silt_notify_listening gauge\nsilt_notify_listening %d\n"
        "# TYPE silt_database_up gauge\nsilt_database_up %d\n"
        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %ld\n"
        "# TYPE silt_retention_passes_total counter\nsilt_retention_passes_total %llu\n"
        "# TYPE silt_retention_offsets_deleted_total counter\n"
        "silt_retention_offsets_deleted_total{rule=\"retention\"} %llu\n"
        "silt_retention_offsets_deleted_total{rule=\"completed_retention\"} %llu\n"
        "silt_retention_offsets_deleted_total{rule=\"max_wait_time_eviction\"} %llu\n"
        "# HELP silt_retention_leased_offsets_evicted_total leased offsets removed by maxWaitTimeSeconds\n"
        "# TYPE silt_retention_leased_offsets_evicted_total counter\nsilt_retention_leased_offsets_evicted_total %llu\n"
        "# TYPE silt_retention_sidecar_rows_purged_total counter\nsilt_retention_sidecar_rows_purged_total %llu\n"
        "# TYPE silt_partitions_removed_total counter\nsilt_partitions_removed_total %llu\n",
        (unsigned long long)s->pushed, (unsigned long long)s->duplicates, (unsigned long long)s->buffered,
        (unsigned long long)maintenance_drained_total(srv->maintenance), m->enabled ? 1 : 0, (long long)m->buffered,
        (unsigned long long)s->popped,
        (unsigned long long)s->acked, (unsigned long long)s->acks_known, lease_book_messages(srv->leases),
        (unsigned long long)s->dead_lettered,
        httpd_inflight(srv->http) - 1, httpd_arriving(srv->http), popper_parked(srv->pop), (unsigned long long)popper_wakeups(srv->pop),
        httpd_held(srv->http) - 1, (unsigned long long)httpd_timeouts(srv->http),
        (unsigned long long)db_pool_abandoned(srv->pool), httpd_connections(srv->http),
        (unsigned long long)httpd_refused_connections(srv->http),
        (unsigned long long)popper_queries(srv->pop), (unsigned long long)popper_reconciles(srv->pop),
        task_hub_listening(srv->tasks) ? 1 : 0,
        db_pool_ready(srv->pool) ? 1 : 0, resident_bytes(),
        (unsigned long long)rt->passes, (unsigned long long)rt->dropped[0], (unsigned long long)rt->dropped[1],
        (unsigned long long)rt->dropped[2], (unsigned long long)rt->leased_evicted,
        (unsigned long long)rt->sidecar_rows, (unsigned long long)rt->partitions_removed);
    put_loop_requests(&out, srv->http);
    buf_printf(&out,
        "# HELP silt_task_claims_parked worker claims waiting in this server for a task\n"
        "# TYPE silt_task_claims_parked gauge\nsilt_task_claims_parked %d\n"
        "# HELP silt_task_waits_parked task reads waiting in this server for the task to end\n"
        "# TYPE silt_task_waits_parked gauge\nsilt_task_waits_parked %d\n"
        "# HELP silt_task_claims_abandoned_total long-polling claims whose client hung up (what they took goes back)\n"
        "# TYPE silt_task_claims_abandoned_total counter\nsilt_task_claims_abandoned_total %llu\n"
        "# HELP silt_task_flushes_total gathered batches sent to the database, one transaction each\n"
        "# TYPE silt_task_flushes_total counter\n"
        "silt_task_flushes_total{kind=\"send\"} %llu\nsilt_task_flushes_total{kind=\"finish\"} %llu\n",
        task_hub_parked_claims(srv->tasks), task_hub_parked_waits(srv->tasks),
        (unsigned long long)srv->stats.claims_abandoned, (unsigned long long)gather_flushes(task_hub_sends(srv->tasks)),
        (unsigned long long)gather_flushes(task_hub_finishes(srv->tasks)));
    const sweep_totals *sw = task_sweeper_totals(srv->sweeper);
    buf_printf(&out,
        "# HELP silt_task_sweeps_total rounds of the row-delete sweep this server ran\n"
        "# TYPE silt_task_sweeps_total counter\nsilt_task_sweeps_total %llu\n"
        "# HELP silt_task_sweep_rows_deleted_total rows the row-delete sweep deleted\n"
        "# TYPE silt_task_sweep_rows_deleted_total counter\n"
        "silt_task_sweep_rows_deleted_total{kind=\"workflows\"} %llu\n"
        "silt_task_sweep_rows_deleted_total{kind=\"worker_states\"} %llu\n"
        "# HELP silt_workflows_expired_total PAUSED workflows expired by paused_workflow_auto_cancel_after\n"
        "# TYPE silt_workflows_expired_total counter\nsilt_workflows_expired_total %llu\n",
        (unsigned long long)sw->rounds, (unsigned long long)sw->workflows_deleted,
        (unsigned long long)sw->worker_states_deleted, (unsigned long long)sw->workflows_expired);
    const partition_totals *pt = partition_pass_totals(srv->partitions);
    buf_printf(&out,
        "# HELP silt_task_partition_passes_total partition passes this server ran (not those it yielded)\n"
        "# TYPE silt_task_partition_passes_total counter\nsilt_task_partition_passes_total %llu\n"
        "# HELP silt_task_partition_passes_failed_total partition passes that could not complete\n"
        "# TYPE silt_task_partition_passes_failed_total counter\nsilt_task_partition_passes_failed_total %llu\n"
        "# HELP silt_task_leaves_created_total history and heartbeat leaves this server's passes made\n"
        "# TYPE silt_task_leaves_created_total counter\nsilt_task_leaves_created_total %llu\n"
        "# HELP silt_task_leaves_dropped_total leaves this server's passes dropped\n"
        "# TYPE silt_task_leaves_dropped_total counter\nsilt_task_leaves_dropped_total %llu\n"
        "# HELP silt_task_leaf_drops_refused_total drops refused (pinned, a reader held the detach, an error)\n"
        "# TYPE silt_task_leaf_drops_refused_total counter\nsilt_task_leaf_drops_refused_total %llu\n"
        "# HELP silt_task_leaves_absent cataloged leaves whose relation was gone at this server's last pass\n"
        "# TYPE silt_task_leaves_absent gauge\nsilt_task_leaves_absent %lld\n"
        "# HELP silt_task_retention_classes_failed classes the last pass could not serve\n"
        "# TYPE silt_task_retention_classes_failed gauge\nsilt_task_retention_classes_failed %lld\n"
        "# HELP silt_task_retention_coverage_healthy 1 when this server's last partition pass was ok\n"
        "# TYPE silt_task_retention_coverage_healthy gauge\nsilt_task_retention_coverage_healthy %d\n",
        (unsigned long long)pt->passes, (unsigned long long)pt->failed_passes,
        (unsigned long long)pt->leaves_created, (unsigned long long)pt->leaves_dropped,
        (unsigned long long)pt->drops_refused, (long long)pt->leaves_absent, (long long)pt->classes_failed,
        pt->healthy ? 1 : 0);
    httpd_header(req, "Content-Type", "text/plain; version=0.0.4");
    httpd_reply(req, 200, out.data, out.len);
    buf_fini(&out);
}

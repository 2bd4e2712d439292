/* server: `silt server`, the broker process. It owns the event loop, the
 * database pool, the HTTP server and the stream engines, and shuts them down
 * in order on SIGTERM/SIGINT: stop accepting, answer parked pops, flush
 * gathered pushes, finish in-flight requests, exit. */
#ifndef SILT_SERVER_H
#define SILT_SERVER_H
#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include "api/auth.h"
#include "base/config.h"
#include "base/conffile.h"
#include "db/pool.h"
#include "net/httpd.h"
#include "streams/ack.h"
#include "streams/pop.h"
#include "streams/push.h"
#include "retention/engine.h"
#include "streams/history.h"
#include "streams/maintenance.h"
#include "streams/outbox.h"
#include "tasks/hub.h"
#include "tasks/schedule.h"
#include "tasks/sweep.h"
#include "tasks/partition_pass.h"

#define SILT_VERSION "0.1.0"
#define SERVER_CHORES 3   /* the sweeper, the partition pass, the history roller */

typedef struct server_stats {
    uint64_t pushed;          /* messages written */
    uint64_t duplicates;      /* pushed items refused as duplicates */
    uint64_t buffered;        /* pushed items held by maintenance mode */
    uint64_t popped;          /* messages handed out */
    uint64_t acked;           /* ack items answered with success */
    uint64_t acks_known;      /* ack items whose offset this server's lease book held */
    uint64_t dead_lettered;
    uint64_t claims_abandoned; /* long-polling claimers that hung up before their reply */
} server_stats;

typedef struct server {
    silt_config        cfg;
    silt_conf          conf;              /* silt.conf: task queues, recovery (defaults when no file) */
    struct event_base *base;
    db_pool           *pool;
    httpd             *http;
    auth              *auth;              /* who may call which route (JWT_*) */
    pusher            *push;
    outbox            *outbox;            /* pushes made from SQL, moved into the log */
    popper            *pop;
    lease_book        *leases;              /* what pops handed out, for their acks (sql/033) */
    acker             *acks;                /* where acks go from, gathered (streams/ack.c) */
    retention_engine  *retention;
    maintenance       *maintenance;
    task_hub          *tasks;
    scheduler         *schedules;
    task_sweeper      *sweeper;
    partition_pass    *partitions;
    history_roller    *history;           /* the dashboard's per-minute rollup */
    periodic          *chores[SERVER_CHORES];   /* the three above's timers: a drain stops them, then waits */
    bool               draining;
    int64_t            drain_deadline_us;
    int                first_signal;      /* the signal that started the drain */
    int64_t            first_signal_us;
    struct event      *sigterm, *sigint, *drain_timer;
    server_stats       stats;
    size_t             max_segment_bytes;   /* largest decompressed segment accepted */
} server;

/* What changed the log for parked pops, told to this server's (first-hand)
 * and to the other servers' (through the task hub's channel): messages
 * appended to these n partitions of queue (partitions NULL: not known), or
 * group's cursors or leases changed so that it may have more to take (an
 * ack or a pop gave a lease back, a seek moved its cursors). */
void server_log_appended(server *srv, const char *queue, const char *const *partitions, size_t n);
void server_group_released(server *srv, const char *group);

/* Builds srv's engines and its HTTP server on srv->cfg's host and port, on
 * a new event base, against conninfo (not touched here: the database is
 * prepared before, and tests/fuzz/fuzz_http.c builds the same server
 * against none). 0, or -1 (logged) when it cannot listen. */
int server_build(server *srv, const char *conninfo);

/* Runs the broker until it is drained. conf_path: silt.conf to read (from
 * --config or SILT_CONFIG), or NULL for every default. A bad environment
 * variable or a file with errors exits 2 before the database is touched. */
int server_main(const char *conf_path);

#endif

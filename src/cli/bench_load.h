/* bench_load: the load engine behind `silt bench`. One libevent loop drives a
 * set of workers, each owning one keep-alive HTTP connection with exactly one
 * request in flight, so concurrency is the number of workers. A scenario says
 * what each worker sends next and how many messages a reply completed; the
 * engine times every request, counts errors and keeps the statistics of the
 * measured window (after the warm-up, before the deadline). */
#ifndef SILT_BENCH_LOAD_H
#define SILT_BENCH_LOAD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "net/http_client.h"

typedef struct bench_load bench_load;

typedef enum bench_method { BENCH_GET, BENCH_POST } bench_method;

/* One worker: a connection and the request it sends next. */
typedef struct bench_worker {
    bench_load *load;
    struct evhttp_connection *conn;
    int          id;        /* 0..nworkers-1 */
    int          phase;     /* scenario-defined state */
    bench_method method;    /* of the next request */
    buf          path;      /* of the next request, NUL-terminated */
    buf          body;      /* of the next request (POST only) */
    double       sent_at;   /* seconds, monotonic: when the request in flight left */
    double       due_at;    /* when it was due: its slot when paced, else sent_at;
                               its latency counts from here */
    struct event *pace;     /* holds the next request back (bench_config.rate, hold_s) */
    double       hold_s;    /* next() may set it: seconds to hold the request back
                               (a producer waiting for room); cleared once used */
    bool         busy;      /* a request is in flight */
} bench_worker;

typedef struct bench_ops {
    /* Fills w->method/path/body with the next request; false when the worker
     * has nothing more to send. */
    bool (*next)(bench_worker *w, void *ctx);
    /* Handles a 2xx reply (status 204 has an empty body). Returns the messages
     * it completed; items the server refused inside it go to the stats'
     * item_errors (see bench_load_stats). */
    long (*done)(bench_worker *w, void *ctx, int status, const char *body, size_t len);
} bench_ops;

/* What one run measured. Counters other than errors cover the measured window. */
typedef struct bench_stats {
    uint64_t  msgs;          /* messages completed */
    uint64_t  requests;      /* replies received */
    uint64_t  errors;        /* failed requests: transport failure or non-2xx (whole run) */
    uint64_t  item_errors;   /* items refused inside 2xx replies (whole run) */
    double    seconds;       /* length of the measured window actually run */
    uint32_t *lat_us;        /* per-request latency samples, microseconds */
    size_t    nlat, caplat;
    char      first_error[512]; /* the first failure, described for the report */
} bench_stats;

typedef struct bench_config {
    const http_url *server;  /* connections go to its host and port; Host: its hostport */
    int         workers;
    double      warmup_s;    /* not counted */
    double      measure_s;   /* <= 0: run until every worker's next() says false */
    int         timeout_s;   /* per request */
    double      rate;        /* requests per second over all workers, on a fixed schedule
                                (open-loop, latency from each request's slot); 0: as fast
                                as replies come */
} bench_config;

/* Runs the load to completion; 0, or -1 when the loop could not start (the
 * reason is in stats->first_error). Fill stats with bench_stats_init first. */
int  bench_load_run(const bench_config *cfg, const bench_ops *ops, void *ctx,
                    bench_stats *stats) __attribute__((warn_unused_result));
/* Ends the measured window now (e.g. the queue ran dry); in-flight requests finish. */
void bench_load_stop(bench_load *l);
/* The statistics the running load fills in. */
bench_stats *bench_load_stats(bench_load *l);
/* Seconds since the measured window began (negative during the warm-up). */
double bench_load_elapsed(const bench_load *l);

void   bench_stats_init(bench_stats *s);
void   bench_stats_fini(bench_stats *s);
/* Latency percentile (0..100) in milliseconds; 0 without samples. Sorts. */
double bench_stats_pct_ms(bench_stats *s, double pct);
/* Records a failure description if none is recorded yet. */
void   bench_stats_note(bench_stats *s, const char *fmt, ...)
       __attribute__((format(printf, 2, 3)));

/* Monotonic clock, seconds. */
double bench_now(void);

#endif

/* bench_load: the libevent loop behind `silt bench` (see bench_load.h).
 * Single-threaded on purpose: one core of client is cheap next to what a
 * request costs the server, and one loop keeps the counters free of locks.
 * A reply counts toward the statistics when it arrives inside the measured
 * window, and with a rate when its request was also due inside it (one due
 * in the warm-up and sent late would count above the rate offered); a
 * failed request returns its worker to phase 0 so that a scenario
 * with several steps (pop, then ack) starts over instead of acking nothing.
 *
 * With a rate the load is open-loop on a fixed schedule: request k is due at
 * start + k / rate whatever the replies do, and its latency counts from that
 * moment, not from when a free connection sent it. A server that stalls makes
 * the due requests wait for connections, and that wait is in the figures
 * (the correction for coordinated omission, as wrk2 makes it); a slot is
 * never skipped, so a server that keeps up is offered exactly the rate. */
#include "cli/bench_load.h"
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/clock.h"
#include "base/xalloc.h"

#define BENCH_SNIPPET 200   /* bytes of a failed reply's body kept for the report */
#define BENCH_MAX_WRITE (1u << 20)   /* bytes one write may carry: more than any request */

struct bench_load {
    const bench_config *cfg;
    const bench_ops    *ops;
    void               *ctx;
    bench_stats        *stats;
    struct event_base  *base;
    struct event       *deadline;   /* ends the measured window */
    bench_worker       *workers;
    double              t_measure;  /* seconds, monotonic: the window opens */
    double              t_end;      /* seconds, monotonic: the window closes */
    int                 inflight;   /* requests sent and not yet answered */
    double              next_slot;  /* seconds, monotonic: when the next paced request is due */
    bool                stopping;   /* no new requests */
};

double bench_now(void)
{
    return (double)clock_mono_us() / 1e6;
}

void bench_stats_init(bench_stats *s)
{
    memset(s, 0, sizeof *s);
}

void bench_stats_fini(bench_stats *s)
{
    free(s->lat_us);
    s->lat_us = NULL;
    s->nlat = s->caplat = 0;
}

void bench_stats_note(bench_stats *s, const char *fmt, ...)
{
    if (s->first_error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->first_error, sizeof s->first_error, fmt, ap);
    va_end(ap);
}

static void stats_add_latency(bench_stats *s, double seconds)
{
    if (s->nlat == s->caplat) {
        s->caplat = s->caplat ? s->caplat * 2 : 65536;
        s->lat_us = xrealloc(s->lat_us, s->caplat * sizeof *s->lat_us);
    }
    double us = seconds * 1e6;
    s->lat_us[s->nlat++] = us > 4e9 ? UINT32_MAX : (uint32_t)us;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

double bench_stats_pct_ms(bench_stats *s, double pct)
{
    if (s->nlat == 0) return 0;
    qsort(s->lat_us, s->nlat, sizeof *s->lat_us, cmp_u32);
    size_t i = (size_t)ceil(pct / 100.0 * (double)s->nlat);
    i = i == 0 ? 0 : i - 1;
    return s->lat_us[i < s->nlat ? i : s->nlat - 1] / 1000.0;
}

double bench_load_elapsed(const bench_load *l)
{
    return bench_now() - l->t_measure;
}

bench_stats *bench_load_stats(bench_load *l)
{
    return l->stats;
}

static void load_maybe_finish(bench_load *l)
{
    if (l->inflight == 0) event_base_loopbreak(l->base);
}

void bench_load_stop(bench_load *l)
{
    double now = bench_now();
    if (!l->stopping && now < l->t_end) l->t_end = now;
    l->stopping = true;
    load_maybe_finish(l);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    bench_load_stop(arg);
}

static const char *method_name(bench_method m)
{
    return m == BENCH_POST ? "POST" : "GET";
}

static void worker_kick(bench_worker *w);

/* A transport failure or a non-2xx status: counted, described once. */
static void note_failure(bench_load *l, bench_worker *w, struct evhttp_request *req, int status)
{
    bench_stats *s = l->stats;
    s->errors++;
    w->phase = 0;
    if (status == 0) {
        bench_stats_note(s, "%s %s: no reply (connection failed or timed out)",
                         method_name(w->method), w->path.data);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *body = (const char *)evbuffer_pullup(in, -1);
    bench_stats_note(s, "%s %s -> HTTP %d: %.*s%s", method_name(w->method), w->path.data,
                     status, (int)(len < BENCH_SNIPPET ? len : BENCH_SNIPPET),
                     body ? body : "", len > BENCH_SNIPPET ? "..." : "");
}

static void handle_success(bench_load *l, bench_worker *w, struct evhttp_request *req,
                           int status, double now)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *body = len ? (const char *)evbuffer_pullup(in, -1) : "";
    long msgs = l->ops->done(w, l->ctx, status, body, len);
    double at = l->cfg->rate > 0 ? w->due_at : now;   /* paced: the window's own requests */
    if (at < l->t_measure || at >= l->t_end) return;   /* a paced reply comes after its due time */
    l->stats->msgs += msgs > 0 ? (uint64_t)msgs : 0;
    l->stats->requests++;
    stats_add_latency(l->stats, now - w->due_at);
}

static void on_reply(struct evhttp_request *req, void *arg)
{
    bench_worker *w = arg;
    bench_load *l = w->load;
    double now = bench_now();
    int status = req ? evhttp_request_get_response_code(req) : 0;
    w->busy = false;
    l->inflight--;
    if (status >= 200 && status < 300) handle_success(l, w, req, status, now);
    else note_failure(l, w, req, status);
    if (status == 0) { load_maybe_finish(l); return; }  /* this worker's server is gone */
    worker_kick(w);
}

static int worker_send(bench_worker *w)
{
    bench_load *l = w->load;
    struct evhttp_request *req = evhttp_request_new(on_reply, w);
    if (!req) return -1;
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", l->cfg->server->hostport);
    const char *token = getenv("SILT_TOKEN");   /* as every command sends it (cli_http_client) */
    if (token && *token) {
        buf auth;
        buf_init(&auth);
        buf_printf(&auth, "Bearer %s", token);
        evhttp_add_header(h, "Authorization", auth.data);
        buf_fini(&auth);
    }
    if (w->method == BENCH_POST) {
        evhttp_add_header(h, "Content-Type", "application/json");
        evbuffer_add(evhttp_request_get_output_buffer(req), w->body.data, w->body.len);
    }
    w->sent_at = bench_now();
    if (l->cfg->rate <= 0) w->due_at = w->sent_at;
    enum evhttp_cmd_type type = w->method == BENCH_POST ? EVHTTP_REQ_POST : EVHTTP_REQ_GET;
    if (evhttp_make_request(w->conn, req, type, w->path.data) != 0) return -1;
    w->busy = true;
    l->inflight++;
    return 0;
}

static void send_or_fail(bench_worker *w)
{
    bench_load *l = w->load;
    if (worker_send(w) == 0) return;
    l->stats->errors++;
    bench_stats_note(l->stats, "%s %s: could not send the request", method_name(w->method), w->path.data);
    load_maybe_finish(l);
}

static void on_pace(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    bench_worker *w = arg;
    if (w->load->stopping) { load_maybe_finish(w->load); return; }
    send_or_fail(w);
}

/* With a rate, the worker takes the next slot of the shared schedule (evenly
 * spaced, fixed at the start) and is due then; a slot already past leaves at
 * once, still due when it was. Returns the seconds to wait. */
static double pace_delay(bench_load *l, bench_worker *w)
{
    if (l->cfg->rate <= 0) return 0;
    w->due_at = l->next_slot;
    l->next_slot += 1.0 / l->cfg->rate;
    double now = bench_now();
    return w->due_at > now ? w->due_at - now : 0;
}

static void worker_kick(bench_worker *w)
{
    bench_load *l = w->load;
    if (!l->stopping && l->ops->next(w, l->ctx)) {
        double delay = pace_delay(l, w);
        if (w->hold_s > delay) delay = w->hold_s;
        w->hold_s = 0;
        if (delay > 0) {
            struct timeval tv = { (long)delay, (long)((delay - (long)delay) * 1e6) };
            if (!w->pace) w->pace = evtimer_new(l->base, on_pace, w);
            evtimer_add(w->pace, &tv);
            return;
        }
        send_or_fail(w);
        return;
    }
    load_maybe_finish(l);
}

static int workers_init(bench_load *l)
{
    const bench_config *c = l->cfg;
    l->workers = xcalloc((size_t)c->workers, sizeof *l->workers);
    for (int i = 0; i < c->workers; i++) {
        bench_worker *w = &l->workers[i];
        *w = (bench_worker){ .load = l, .id = i };
        buf_init(&w->path);
        buf_init(&w->body);
        w->conn = evhttp_connection_base_new(l->base, NULL, c->server->host,
                                             (unsigned short)c->server->port);
        if (!w->conn) return -1;
        evhttp_connection_set_timeout(w->conn, c->timeout_s);
        /* One write per request. By default a bufferevent writes at most
         * 16 KiB at a time, so a pop+ack's ack (about 16 KiB for 100
         * items) left in two writes, and Nagle held the second until the
         * server's delayed ACK of the first: ~40 ms per ack, measured
         * against wrk (docs/performance.md, issue 15 point 6). */
        bufferevent_set_max_single_write(evhttp_connection_get_bufferevent(w->conn), BENCH_MAX_WRITE);
    }
    return 0;
}

static void load_fini(bench_load *l)
{
    for (int i = 0; l->workers && i < l->cfg->workers; i++) {
        if (l->workers[i].conn) evhttp_connection_free(l->workers[i].conn);
        if (l->workers[i].pace) event_free(l->workers[i].pace);
        buf_fini(&l->workers[i].path);
        buf_fini(&l->workers[i].body);
    }
    free(l->workers);
    if (l->deadline) event_free(l->deadline);
    if (l->base) event_base_free(l->base);
}

/* The changelist folds the epoll_ctl calls evhttp makes as each connection
 * flips between reading and writing into one per loop turn. A paced load
 * asks for precise timers (timerfd): epoll_wait's millisecond timeout would
 * send requests up to a millisecond late, and that lateness would count as
 * the server's latency. */
static struct event_base *base_new(bool paced)
{
    struct event_config *ec = event_config_new();
    if (!ec) return NULL;
    event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    if (paced) event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    struct event_base *base = event_base_new_with_config(ec);
    event_config_free(ec);
    return base;
}

static int load_start(bench_load *l)
{
    const bench_config *c = l->cfg;
    l->base = base_new(c->rate > 0);
    if (!l->base || workers_init(l) < 0) return -1;
    double start = bench_now();
    l->next_slot = start;
    l->t_measure = start + c->warmup_s;
    l->t_end = c->measure_s > 0 ? l->t_measure + c->measure_s : INFINITY;
    if (c->measure_s > 0) {
        l->deadline = evtimer_new(l->base, on_deadline, l);
        double s = c->warmup_s + c->measure_s;
        struct timeval tv = { (time_t)s, (suseconds_t)((s - floor(s)) * 1e6) };
        if (!l->deadline || evtimer_add(l->deadline, &tv) < 0) return -1;
    }
    for (int i = 0; i < c->workers; i++) worker_kick(&l->workers[i]);
    return 0;
}

int bench_load_run(const bench_config *cfg, const bench_ops *ops, void *ctx, bench_stats *stats)
{
    bench_load l = { .cfg = cfg, .ops = ops, .ctx = ctx, .stats = stats };
    signal(SIGPIPE, SIG_IGN);   /* a server that goes away is an error to count, not a crash */
    int rc = load_start(&l);
    if (rc < 0) bench_stats_note(stats, "could not set up the event loop or connections");
    else if (l.inflight > 0) event_base_dispatch(l.base);
    double end = isinf(l.t_end) ? bench_now() : l.t_end;
    stats->seconds = end > l.t_measure ? end - l.t_measure : 0;
    load_fini(&l);
    return rc;
}

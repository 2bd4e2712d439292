/* httpd: evhttp glue (see httpd.h). */
#include "net/httpd.h"
#include "net/httpd_internal.h"
#include "net/httpd_pages.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include "base/clock.h"
#include "base/emit.h"
#include "base/json.h"
#include "base/log.h"
#include "base/xalloc.h"

/* evhttp's own timeout, a backstop behind silt's per-phase timers (see
 * conn_arm): it also bounds a request's life, so it exceeds the longest
 * long-poll timeout (one hour). */
#define HTTPD_BACKSTOP_TIMEOUT_S 3700
static void stop_watch(httpd_req *req);

/* HEAD is served as GET (reply() then sends the headers alone). */
static httpd_method method_of(struct evhttp_request *ev)
{
    switch (evhttp_request_get_command(ev)) {
    case EVHTTP_REQ_GET: case EVHTTP_REQ_HEAD: return HTTPD_GET;
    case EVHTTP_REQ_POST: return HTTPD_POST;
    case EVHTTP_REQ_DELETE: return HTTPD_DELETE;
    case EVHTTP_REQ_PATCH: return HTTPD_PATCH;
    default: return HTTPD_OTHER;
    }
}

static const char *method_name(httpd_method m)
{
    static const char *const names[] = { "GET", "POST", "DELETE", "PATCH", "OTHER" };
    return names[m];
}

/* The one place a request learns that nobody waits for its reply any more
 * (its client left, or the request timed out): the server's on_leave first
 * (work not yet started is dropped), then the request's own on_gone. */
void httpd_home_left(httpd_req *req)
{
    httpd *h = req->server->home;
    bool first = !req->left;   /* a client seen leaving may close its connection later */
    req->left = true;
    if (first && h->on_leave) h->on_leave(req, h->leave_arg);
    if (req->on_gone) req->on_gone(req, req->gone_arg);   /* may free req */
}

/* Seen by the request's own loop; another loop tells the home loop. */
static void req_left(httpd_req *req)
{
    stop_watch(req);
    if (req->server->relay) httpd_relay_left(req);
    else httpd_home_left(req);
}

/* The peer closed while its request was being worked on: evhttp frees the
 * request with the connection, so forget it. */
static void client_gone(httpd_req *req)
{
    req->ev = NULL;
    req_left(req);
}

/* Readable while waiting for our reply: end of stream means the client left
 * (bytes of a pipelined next request are left for evhttp). */
static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    httpd_req *req = arg;
    char byte;
    ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    stop_watch(req);
    if (n > 0) return;
    req_left(req);
}

static void held_remove(httpd_req *req);

static void watch_close(httpd_req *req)
{
    if (!req->ev || req->close_watch) return;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req->ev));
    struct event_base *base = evhttp_connection_get_base(evhttp_request_get_connection(req->ev));
    req->close_watch = event_new(base, bufferevent_getfd(bev), EV_READ, on_readable, req);
    event_add(req->close_watch, NULL);
}

void httpd_watch_close(httpd_req *req)
{
    held_remove(req);
    req->parked = true;
    if (!req->server->relay) watch_close(req);   /* another loop watches its requests from their arrival */
}

static void stop_watch(httpd_req *req)
{
    if (req->close_watch) event_free(req->close_watch);
    req->close_watch = NULL;
}

/* ---- connections -------------------------------------------------------- */

static void set_arriving(httpd_conn *c, bool on)
{
    if (c->arriving == on) return;
    c->arriving = on;
    atomic_fetch_add(&c->server->home->arriving, on ? 1 : -1);
}

/* When the body now being read is due: a pause between its bytes is at
 * most the body timeout, and the whole of it must come at least at the
 * minimum rate, counted from the header's end with one body timeout of
 * grace. A body trickled a byte at a time (each within the pause) is cut
 * off all the same, a slow but steady upload is not. */
static int64_t body_due_ms(const httpd_conn *c, const httpd_limits *l)
{
    int64_t pause = clock_mono_ms() + l->body_timeout_ms;
    int64_t whole = c->body_since_ms + l->body_timeout_ms + (int64_t)(c->body_bytes * 1000 / (uint64_t)l->body_min_rate);
    return whole < pause ? whole : pause;
}

/* The phase's timer: the header timeout runs from the request's first byte
 * (a client trickling a header a byte at a time is not kept), the body's
 * is moved with every read (body_due_ms). */
static void conn_arm(httpd_conn *c, conn_phase phase)
{
    const httpd_limits *l = &c->server->limits;
    bool restart = phase != c->phase || phase == PHASE_BODY;
    c->phase = phase;
    if (phase == PHASE_BUSY) { event_del(c->timer); return; }
    if (!restart || (c->over_cap && phase != PHASE_BODY)) return;   /* its window runs (httpd_accept_over_cap) */
    int64_t ms = phase == PHASE_IDLE ? l->idle_timeout_ms : phase == PHASE_HEADER ? l->header_timeout_ms
                                                                                  : body_due_ms(c, l) - clock_mono_ms();
    if (ms < 0) ms = 0;
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000) };
    event_add(c->timer, &tv);
}

static void on_conn_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    httpd_conn *c = arg;
    static const char *const names[] = { "idle", "header", "body", "busy" };
    if (c->phase == PHASE_BUSY || !c->evcon) return;
    if (c->over_cap && c->phase != PHASE_BODY) { httpd_accept_refuse(c); return; }
    log_debug("httpd: connection closed by the %s timeout", names[c->phase]);
    if (c->phase == PHASE_BODY) {   /* the client is still sending: it is told why it is cut off */
        char why[160];
        snprintf(why, sizeof why, "request body not received in time (a pause over %lld ms, or under %lld bytes/s)",
                 (long long)c->server->limits.body_timeout_ms, (long long)c->server->limits.body_min_rate);
        httpd_conn_refuse(c, 408, "Request Timeout", why);
        return;
    }
    evhttp_connection_free(c->evcon);   /* its close callback frees c */
}

/* Whether the bytes just read end the header: a line end follows a line end
 * (CR ignored). Only the new bytes are looked at, while still in the header. */
static bool header_ends(httpd_conn *c, struct evbuffer *in, size_t added)
{
    struct evbuffer_ptr at;
    if (evbuffer_ptr_set(in, &at, evbuffer_get_length(in) - added, EVBUFFER_PTR_SET) < 0) return false;
    char chunk[256];
    while (added > 0) {
        ev_ssize_t n = evbuffer_copyout_from(in, &at, chunk, added < sizeof chunk ? added : sizeof chunk);
        if (n <= 0) return false;
        for (ev_ssize_t i = 0; i < n; i++) {
            if (chunk[i] == '\n' && ++c->newlines == 2) return true;
            if (chunk[i] != '\n' && chunk[i] != '\r') c->newlines = 0;
        }
        added -= (size_t)n;
        evbuffer_ptr_set(in, &at, (size_t)n, EVBUFFER_PTR_ADD);
    }
    return false;
}

/* Every read lands here (and every drain, which is evhttp parsing): bytes in
 * start a request, and only its dispatch ends it (conn_dispatched). In the
 * header the new bytes are scanned for its end; in the body, one comparison
 * per read, whatever the body's size. */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
    httpd_conn *c = arg;
    if (info->n_added == 0) return;
    set_arriving(c, true);
    if (c->phase == PHASE_BUSY) return;   /* a pipelined request waits for the reply before ours */
    if (c->phase == PHASE_IDLE) { c->newlines = 0; conn_arm(c, PHASE_HEADER); }
    if (c->phase == PHASE_HEADER && !header_ends(c, in, info->n_added)) return;
    if (c->phase != PHASE_BODY) { c->body_since_ms = clock_mono_ms(); c->body_bytes = 0; }
    c->body_bytes += info->n_added;   /* the read that ended the header counts whole: a few bytes of leeway */
    conn_arm(c, PHASE_BODY);
}

static void index_conn(httpd *h, httpd_conn *c)
{
    size_t fd = (size_t)c->fd;
    if (fd >= h->nfds) {
        size_t n = h->nfds ? h->nfds : 64;
        while (n <= fd) n *= 2;
        h->by_fd = xrealloc(h->by_fd, n * sizeof *h->by_fd);
        memset(h->by_fd + h->nfds, 0, (n - h->nfds) * sizeof *h->by_fd);
        h->nfds = n;
    }
    h->by_fd[fd] = c;
}

static void conn_free(httpd_conn *c)
{
    httpd *h = c->server;
    set_arriving(c, false);
    atomic_fetch_sub(&h->home->nconns, 1);
    if (c->over_cap) atomic_fetch_sub(&h->home->over_cap, 1);
    if (c->peer_counted) httpd_peers_give(h->home->peers, &c->peer);
    event_free(c->timer);
    if (c->watch) evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->watch);
    if (c->out_watch) evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_watch);
    if (c->fd >= 0 && (size_t)c->fd < h->nfds && h->by_fd[c->fd] == c) h->by_fd[c->fd] = NULL;
    free(c);
}

/* evhttp closes the connection (the peer left, a timeout, a reply with
 * Connection: close, or evhttp_free): a request still being answered on it
 * learns that its client is gone. */
static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    httpd_conn *c = arg;
    httpd_req *req = c->req;
    conn_free(c);
    if (!req) return;
    req->conn = NULL;
    client_gone(req);
}

/* Past the limit a connection is answered and closed at once: it costs a
 * descriptor only for that moment, which the limit leaves room for (it is
 * at most RLIMIT_NOFILE less the reserve). */
static void conn_adopt(httpd_conn *c, struct evhttp_connection *evcon)
{
    httpd *h = c->server;
    c->evcon = evcon;
    c->fd = bufferevent_getfd(c->bev);
    evhttp_connection_set_closecb(evcon, on_conn_close, c);
    if (c->fd >= 0) index_conn(h, c);
    conn_arm(c, c->arriving ? PHASE_HEADER : PHASE_IDLE);
}

static httpd_conn *conn_new(httpd *h, struct bufferevent *bev)
{
    httpd_conn *c = xcalloc(1, sizeof *c);
    c->server = h;
    c->bev = bev;
    c->fd = -1;
    c->phase = PHASE_BUSY;   /* so that the first conn_arm starts a timer */
    c->timer = evtimer_new(bufferevent_get_base(bev), on_conn_timeout, c);
    c->out_watch = httpd_pages_watch(bufferevent_get_output(bev), &h->replying);
    if (!c->timer || !c->out_watch) abort();   /* libevent's allocation failed */
    atomic_fetch_add(&h->home->nconns, 1);
    return c;
}

/* evhttp_set_bevcb: the connection's bufferevent, as evhttp would make it,
 * watched from its first byte. Its evhttp connection does not exist yet: it
 * is adopted by an event that runs once the accept's callback returns,
 * before the loop polls again, so before any byte can be read. */
static struct bufferevent *conn_make(struct event_base *base, void *arg)
{
    httpd *h = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) abort();   /* libevent's allocation failed */
    httpd_conn *c = conn_new(h, bev);
    c->watch = evbuffer_add_cb(bufferevent_get_input(bev), on_input, c);
    if (!c->watch) abort();
    c->next_fresh = h->fresh;
    h->fresh = c;
    event_active(h->adopt, EV_TIMEOUT, 1);
    return bev;
}

/* evhttp passes its connection as the bufferevent's callback argument (true
 * of libevent 2.1; no public call maps one to the other before a request is
 * whole). Checked by asking that connection for its bufferevent back; if a
 * libevent ever differs, connections are adopted at their first request
 * instead, and only requests still arriving at shutdown lose their wait. */
static struct evhttp_connection *evcon_of(struct bufferevent *bev)
{
    void *arg = NULL;
    bufferevent_getcb(bev, NULL, NULL, NULL, &arg);
    if (arg && evhttp_connection_get_bufferevent(arg) == bev) return arg;
    static atomic_bool said;   /* any loop may be the first to find out */
    if (!said) log_warn("httpd: cannot map a bufferevent to its evhttp connection; "
                        "requests still arriving at shutdown will not be waited for");
    said = true;
    return NULL;
}

static void adopt_fresh(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    httpd *h = arg;
    while (h->fresh) {
        httpd_conn *c = h->fresh;
        h->fresh = c->next_fresh;
        struct evhttp_connection *evcon = evcon_of(c->bev);
        if (!evcon) { conn_free(c); continue; }
        conn_adopt(c, evcon);
        if (c->fd < 0) continue;
        /* those past the limit awaiting their request do not hold a place */
        if (atomic_load(&h->home->nconns) - atomic_load(&h->home->over_cap) > h->max_conns) httpd_accept_over_cap(c);
        else httpd_accept_peer(c);
    }
}

/* The connection a request came on; one not adopted early (see evcon_of)
 * is adopted now, unwatched, so that its close still reaches the request. */
static httpd_conn *conn_of(httpd *h, struct evhttp_request *ev)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    evutil_socket_t fd = bufferevent_getfd(bev);
    httpd_conn *c = fd >= 0 && (size_t)fd < h->nfds ? h->by_fd[fd] : NULL;
    if (c && c->evcon == evcon) return c;
    c = conn_new(h, bev);
    conn_adopt(c, evcon);
    return c;
}

/* The request is whole and goes to its handler. What the input still holds
 * is the start of the next one (pipelined): evhttp reads no more until the
 * reply is sent. */
static void conn_dispatched(httpd_conn *c, httpd_req *req)
{
    c->req = req;
    req->conn = c;
    conn_arm(c, PHASE_BUSY);
    set_arriving(c, evbuffer_get_length(bufferevent_get_input(c->bev)) > 0);
}

/* Bytes already in are the next request (pipelined): its header timeout
 * starts now. */
static void conn_answered(httpd_req *req)
{
    httpd_conn *c = req->conn;
    req->conn = NULL;
    if (!c) return;
    c->req = NULL;
    c->newlines = 0;
    conn_arm(c, c->arriving ? PHASE_HEADER : PHASE_IDLE);
}

/* ---- held requests and their timeout ------------------------------------ */

static void held_add(httpd_req *req)
{
    httpd *h = req->server->home;
    TAILQ_INSERT_TAIL(&h->held, req, held_link);
    req->held = true;
    h->nheld++;
    h->held_bytes += req->body_len;
    if (!evtimer_pending(h->expire, NULL)) {
        int64_t ms = h->limits.request_timeout_ms;
        struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000) };
        evtimer_add(h->expire, &tv);
    }
}

/* Held requests are linked until their timeout or their reply, and counted
 * until their reply (a timed-out request still holds its body). */
static void held_unlink(httpd_req *req)
{
    if (!req->held_link.tqe_prev) return;
    TAILQ_REMOVE(&req->server->home->held, req, held_link);
    req->held_link.tqe_prev = NULL;
}

static void held_remove(httpd_req *req)
{
    httpd *h = req->server->home;
    if (!req->held) return;   /* never held, parked, or already answered */
    held_unlink(req);
    h->nheld--;
    h->held_bytes -= req->body_len;
    req->held = false;
}

static void send_timeout(httpd_req *req);

/* The request timeout: every held request older than it is answered 503
 * now (send_timeout); the handler still owns the request and its reply is
 * dropped. One timer serves all: the list is in arrival order. */
static void on_expire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    httpd *h = arg;
    int64_t limit_us = h->limits.request_timeout_ms * 1000, now = clock_mono_us();
    httpd_req *req;
    while ((req = TAILQ_FIRST(&h->held)) && now - req->started_us >= limit_us) {
        held_unlink(req);
        req->timed_out = true;
        send_timeout(req);   /* may free req */
    }
    if (!req) return;
    int64_t us = req->started_us + limit_us - now;
    struct timeval tv = { (time_t)(us / 1000000), (suseconds_t)(us % 1000000) };
    evtimer_add(h->expire, &tv);
}

void httpd_req_free(httpd_req *req)
{
    evhttp_clear_headers(&req->query);
    evhttp_clear_headers(&req->reply_headers);
    if (req->in_headers) {
        evhttp_clear_headers(req->in_headers);
        free(req->in_headers);
    }
    for (int i = 0; i < req->nparams; i++) free(req->params[i]);
    free(req->path);
    free(req->auth_sub);
    free(req->timeout_body);
    if (req->storage) evbuffer_free(req->storage);
    free(req);
}

/* The body is held once: evhttp's chains move into storage without a copy
 * (evhttp frees its own buffer with a connection that closes early), and the
 * pull-up that makes them contiguous frees each chain as it is copied. */
static void take_body(httpd_req *req, struct evbuffer *in)
{
    req->body_len = evbuffer_get_length(in);
    req->storage = evbuffer_new();
    if (!req->storage) abort();
    evbuffer_add_buffer(req->storage, in);
    evbuffer_add(req->storage, "", 1);   /* the terminator */
    req->body = (const char *)evbuffer_pullup(req->storage, -1);
    if (!req->body) abort();   /* libevent's allocation failed */
}

static httpd_req *req_new(httpd *h, struct evhttp_request *ev)
{
    httpd_req *req = xcalloc(1, sizeof *req);
    req->server = h;
    req->ev = ev;
    req->method = method_of(ev);
    req->head = evhttp_request_get_command(ev) == EVHTTP_REQ_HEAD;
    req->started_us = clock_mono_us();
    TAILQ_INIT(&req->query);
    TAILQ_INIT(&req->reply_headers);
    atomic_init(&req->refs, 1);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(ev);
    const char *path = evhttp_uri_get_path(uri);
    req->path = xstrdup(path && *path ? path : "/");
    const char *q = evhttp_uri_get_query(uri);
    if (q) evhttp_parse_query_str(q, &req->query);
    take_body(req, evhttp_request_get_input_buffer(ev));
    return req;
}

/* While draining, a request that completes is answered but not served, and
 * its connection closed: the client knows it was not done and may retry
 * elsewhere. Its body is not needed. */
static void refuse(httpd_req *req)
{
    httpd_header(req, "Connection", "close");
    httpd_error(req, 503, "server is shutting down");
}

static void skip_body(struct evhttp_request *ev)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(ev);
    evbuffer_drain(in, evbuffer_get_length(in));
}

/* Two Content-Length headers that disagree leave the body's end ambiguous
 * (a proxy may have read the other one: request smuggling). */
static bool lengths_conflict(struct evhttp_request *ev)
{
    const char *first = NULL;
    for (struct evkeyval *kv = evhttp_request_get_input_headers(ev)->tqh_first; kv; kv = kv->next.tqe_next) {
        if (evutil_ascii_strcasecmp(kv->key, "Content-Length") != 0) continue;
        if (first && strcmp(first, kv->value) != 0) return true;
        first = kv->value;
    }
    return false;
}

/* %00 decodes to a NUL, which would end the name it is in early (a queue
 * "victim%00zzz" would be "victim"): refused wherever it is. */
static bool has_nul(struct evhttp_request *ev)
{
    const char *uri = evhttp_request_get_uri(ev);
    for (const char *p = uri ? strchr(uri, '%') : NULL; p; p = strchr(p + 1, '%'))
        if (p[1] == '0' && p[2] == '0') return true;
    return false;
}

static bool is_health(struct evhttp_request *ev)
{
    const char *uri = evhttp_request_get_uri(ev);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(ev);
    return uri && (cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD) && strncmp(uri, "/health", 7) == 0 &&
           (uri[7] == '\0' || uri[7] == '?');
}

/* A connection past the limit is served /health alone, and closed after. */
static bool within_cap(httpd_req *req)
{
    if (!req->conn || !req->conn->over_cap) return true;
    httpd_header(req, "Connection", "close");
    if (is_health(req->ev)) return true;
    httpd *h = req->server;
    atomic_fetch_add(&h->home->refused, 1);
    httpd_header(req, "Retry-After", "1");
    httpd_error(req, 503, "too many connections (the limit is %d)", h->max_conns);
    return false;
}

/* Refused before the handler: false when answered (req is freed). */
static bool req_acceptable(httpd_req *req)
{
    if (!within_cap(req)) return false;
    if (lengths_conflict(req->ev)) {
        httpd_header(req, "Connection", "close");
        httpd_error(req, 400, "conflicting Content-Length headers");
        return false;
    }
    if (has_nul(req->ev)) { httpd_error(req, 400, "the path and query must not contain %%00"); return false; }
    return true;
}

void httpd_home_dispatch(httpd_req *req)
{
    httpd *home = req->server->home;
    held_add(req);
    home->handler(req, home->arg);
}

/* Refusals are answered by the loop the request came on; the rest goes to
 * the handler, on the home loop. */
static void on_request(struct evhttp_request *ev, void *arg)
{
    httpd *h = arg;
    bool draining = atomic_load(&h->home->draining);
    if (draining) skip_body(ev);   /* not made contiguous for nothing */
    httpd_req *req = req_new(h, ev);
    atomic_fetch_add_explicit(&h->requests, 1, memory_order_relaxed);
    /* In flight before it stops arriving: shutdown reads arriving, then
     * in flight, and never finds the request in neither. */
    atomic_fetch_add(&h->home->inflight, 1);
    conn_dispatched(conn_of(h, ev), req);
    watch_close(req);
    if (draining) { refuse(req); return; }
    if (!req_acceptable(req)) return;
    req->dispatched = true;
    if (h->relay) httpd_relay_dispatch(req);
    else httpd_home_dispatch(req);
}

static void free_owned(const void *data, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    free((void *)(uintptr_t)data);
}

static void put_body(struct evbuffer *out, reply_body *b)
{
    if (b->chain) evbuffer_add_buffer(out, b->chain);
    else if (!b->owned) evbuffer_add(out, b->data, b->len);
    else if (evbuffer_add_reference(out, b->data, b->len, free_owned, NULL) == 0) b->owned = false;
}

static void drop_body(reply_body *b)
{
    if (b->chain) evbuffer_free(b->chain);   /* runs the cleanups of what was not sent */
    if (b->owned) free((void *)(uintptr_t)b->data);
}

/* A HEAD gets the GET's headers, its Content-Length included, and no body. */
static void put_head(struct evkeyvalq *headers, reply_body *b)
{
    char len[24];
    snprintf(len, sizeof len, "%zu", b->chain ? evbuffer_get_length(b->chain) : b->len);
    evhttp_remove_header(headers, "Content-Length");
    evhttp_add_header(headers, "Content-Length", len);
}

/* Control characters a client sent (a path may hold raw ones) are
 * escaped by log_msg, so a request cannot forge log lines. */
static void send_now(httpd_req *req, int status, reply_body *body, const char *note)
{
    httpd *h = req->server;
    double ms = (double)(clock_mono_us() - req->started_us) / 1000.0;
    const char *method = req->head ? "HEAD" : method_name(req->method);
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req->ev);
    for (struct evkeyval *kv = req->reply_headers.tqh_first; kv; kv = kv->next.tqe_next) {
        if (evutil_ascii_strcasecmp(kv->key, "Content-Type") == 0) evhttp_remove_header(headers, kv->key);
        evhttp_add_header(headers, kv->key, kv->value);
    }
    if (body->data || body->chain) {
        if (!evhttp_find_header(headers, "Content-Type")) evhttp_add_header(headers, "Content-Type", "application/json");
        if (req->head) put_head(headers, body);
        else put_body(evhttp_request_get_output_buffer(req->ev), body);
    }
    h->replying = true;
    evhttp_send_reply(req->ev, status, NULL, NULL);
    h->replying = false;
    log_info("%s %s %d %.1fms%s", method, req->path, status, ms, note);
}

void httpd_send(httpd_req *req, int status, reply_body *body)
{
    stop_watch(req);
    conn_answered(req);   /* before the send: evhttp may close the connection inside it */
    bool gone = req->server->relay ? req->io_left : req->left;
    if (req->ev) {
        /* A client seen leaving may only have half-closed (a worker giving
         * up a long poll reads on): a reply the handler made before it
         * heard of the leaving reaches it whole, so what a claim handed out
         * is never dropped here. To a closed socket the bytes cost nothing. */
        send_now(req, status, body, gone ? " (client gone)" : "");
    } else {
        double ms = (double)(clock_mono_us() - req->started_us) / 1000.0;
        log_info("%s %s %d %.1fms (%s)", method_name(req->method), req->path, status, ms,
                 req->timed_out ? "answered earlier by the request timeout" : "client gone");
    }
    drop_body(body);
}

/* The home loop is done with a dispatched request; a request from another
 * loop is written there (and freed there). A refusal is written at once by
 * the loop it came on, which is the loop running this. */
static void reply(httpd_req *req, int status, reply_body *body)
{
    held_remove(req);
    atomic_fetch_sub(&req->server->home->inflight, 1);
    if (req->dispatched && req->server->relay) { httpd_relay_reply(req, status, body); return; }
    httpd_send(req, status, body);
    httpd_req_free(req);
}

/* The request timeout's answer, which must be true whatever comes after
 * it. Once the request is marked gone, work of it still waiting is never
 * sent (api/abandon.c), so a request none of whose work reached PostgreSQL
 * is answered 503: nothing was or will be written, send it again. Work
 * already sent cannot be recalled (pool.h) and may still commit: a request
 * that may write (anything but GET and HEAD) is then answered 504, the
 * outcome unknown, naming the keys that make a resend safe (resend_keys).
 * A read changes nothing, and a pop gives back what it leased for nobody
 * (streams/pop.c), so a read's answer is 503 either way. Made on the home
 * loop, where the handler's data lives, and sent by the request's loop. */
static void make_timeout_answer(httpd_req *req)
{
    bool unknown = req->sent && req->method != HTTPD_GET;
    const char *text = unknown ? "request timed out after it reached the database: the outcome is unknown"
                               : "request timed out waiting for the database";
    buf out;
    emit e;
    httpd_error_body(&e, &out, text, strlen(text));
    if (unknown && req->resend_keys) req->resend_keys(req, req->resend_arg, &e);
    emit_end(&e);
    req->timeout_status = unknown ? 504 : 503;
    req->timeout_len = out.len;
    req->timeout_body = buf_steal(&out);
}

/* The client is answered now and the request is as if its client left:
 * work not yet started is not started (handlers look at req->left), and
 * on_gone runs. */
void httpd_answer_timeout(httpd_req *req)
{
    stop_watch(req);
    if (req->ev) {
        reply_body b = { req->timeout_body, req->timeout_len, false, NULL };
        conn_answered(req);
        if (req->timeout_status == 503)   /* nothing written: sending again is safe, soon */
            evhttp_add_header(evhttp_request_get_output_headers(req->ev), "Retry-After", "1");
        send_now(req, req->timeout_status, &b, req->timeout_status == 503 ? " (request timeout)"
                                                                          : " (request timeout, outcome unknown)");
    }
    req->ev = NULL;
}

static void send_timeout(httpd_req *req)
{
    httpd *h = req->server->home;
    if (req->left) return;   /* already gone: nobody to answer, and on_gone has run */
    h->timeouts++;
    h->last_timeout_us = clock_mono_us();
    make_timeout_answer(req);
    if (req->server->relay) httpd_relay_timeout(req);
    else httpd_answer_timeout(req);
    httpd_home_left(req);
}

void httpd_reply(httpd_req *req, int status, const char *body, size_t len)
{
    reply_body b = { body, len, false, NULL };
    reply(req, status, &b);
}

void httpd_reply_buf(httpd_req *req, int status, buf *body)
{
    reply_body b = { NULL, body->len, true, NULL };
    b.data = buf_steal(body);
    reply(req, status, &b);
}

void httpd_reply_chain(httpd_req *req, int status, struct evbuffer *body)
{
    reply_body b = { NULL, 0, false, body };
    reply(req, status, &b);
}

static void send_error(httpd_req *req, int status, const char *field, const char *value,
                       const char *fmt, va_list ap)
{
    buf msg, out;
    buf_init(&msg);
    buf_vprintf(&msg, fmt, ap);
    emit e;
    httpd_error_body(&e, &out, msg.data, msg.len);
    if (field) {
        emit_key(&e, field);
        emit_str(&e, value);
    }
    emit_end(&e);
    buf_fini(&msg);
    httpd_reply_buf(req, status, &out);
}

void httpd_error(httpd_req *req, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    send_error(req, status, NULL, NULL, fmt, ap);
    va_end(ap);
}

void httpd_error_field(httpd_req *req, int status, const char *field, const char *value, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    send_error(req, status, field, value, fmt, ap);
    va_end(ap);
}

const char *httpd_query(const httpd_req *req, const char *key)
{
    return evhttp_find_header(&req->query, key);
}

void httpd_header(httpd_req *req, const char *name, const char *value)
{
    if (!req->left) evhttp_add_header(&req->reply_headers, name, value);
}

const char *httpd_req_header(const httpd_req *req, const char *name)
{
    if (req->in_headers) return evhttp_find_header(req->in_headers, name);
    if (!req->ev) return NULL;
    return evhttp_find_header(evhttp_request_get_input_headers(req->ev), name);
}

/* libevent warns that the changelist misbehaves with descriptors cloned by
 * dup(): closing one leaves the file registered under the other in the
 * same epoll set. The loops' listening sockets are dups, but each lives in
 * its own loop's epoll set, and client and database sockets are never
 * duplicated. */
struct event_base *httpd_base_new(void)
{
    struct event_config *cfg = event_config_new();
    if (!cfg) abort();   /* libevent's allocation failed */
    event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

void httpd_configure(httpd *h, struct event_base *base)
{
    h->base = base;
    h->http = evhttp_new(base);
    if (!h->http) abort();   /* libevent's allocation failed */
    /* Bodies up to twice the limit are read so the handler can refuse them
     * with a JSON error; beyond that evhttp refuses them itself. */
    evhttp_set_max_body_size(h->http, (ev_ssize_t)(h->max_body * 2));
    evhttp_set_max_headers_size(h->http, 64 * 1024);
    evhttp_set_timeout(h->http, HTTPD_BACKSTOP_TIMEOUT_S);
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
                                        EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_HEAD);
    evhttp_set_gencb(h->http, on_request, h);
    evhttp_set_bevcb(h->http, conn_make, h);
    h->adopt = event_new(base, -1, 0, adopt_fresh, h);
    if (!h->adopt) abort();   /* libevent's allocation failed */
}

httpd *httpd_new(struct event_base *base, const char *host, int port, const httpd_limits *limits,
                 httpd_handler handler, void *arg)
{
    httpd *h = xcalloc(1, sizeof *h);
    h->home = h;
    h->handler = handler;
    h->arg = arg;
    h->limits = *limits;
    h->max_body = limits->max_body;
    h->max_conns = httpd_accept_limit(limits);
    h->peers = httpd_peers_new();
    int64_t share = (int64_t)h->max_conns * limits->client_share_percent / 100;
    h->max_per_peer = limits->client_share_percent >= 100 ? 0 : share > 1 ? (int)share : 1;   /* 0: no share kept */
    TAILQ_INIT(&h->held);
    httpd_configure(h, base);
    h->expire = evtimer_new(base, on_expire, h);
    if (!h->expire) abort();   /* libevent's allocation failed */
    if (httpd_accept_listen(h, base, host, port) < 0) {
        int why = errno;   /* the bind's: the caller says why it cannot listen */
        httpd_free(h);
        errno = why;
        return NULL;
    }
    return h;
}

void httpd_on_leave(httpd *h, void (*fn)(httpd_req *req, void *arg), void *arg)
{
    h->on_leave = fn;
    h->leave_arg = arg;
}

int httpd_add_loops(httpd *h, int n)
{
    return n > 0 ? httpd_relay_start(h, n) : 0;
}

int httpd_loops(const httpd *h) { return 1 + h->nrelays; }

uint64_t httpd_loop_requests(const httpd *h, int i)
{
    const httpd *loop = i == 0 ? h : httpd_relay_loop(h, i - 1);
    return atomic_load_explicit(&loop->requests, memory_order_relaxed);
}

void httpd_drain(httpd *h)
{
    if (h->socket) evhttp_del_accept_socket(h->http, h->socket);
    h->socket = NULL;
    h->listener = NULL;   /* freed with its socket */
    atomic_store(&h->draining, true);
    httpd_relay_drain(h);
}

int httpd_inflight(const httpd *h) { return atomic_load(&h->inflight); }
int httpd_arriving(const httpd *h) { return atomic_load(&h->arriving); }
int httpd_held(const httpd *h) { return h->nheld; }
size_t httpd_held_bytes(const httpd *h) { return h->held_bytes; }
int64_t httpd_last_timeout_us(const httpd *h) { return h->last_timeout_us; }
uint64_t httpd_timeouts(const httpd *h) { return h->timeouts; }
uint64_t httpd_refused_connections(const httpd *h) { return atomic_load(&h->refused); }
int httpd_connections(const httpd *h) { return atomic_load(&h->nconns); }
int httpd_max_connections(const httpd *h) { return h->max_conns; }

int64_t httpd_oldest_held_ms(const httpd *h)
{
    const httpd_req *req = TAILQ_FIRST(&h->held);
    return req ? (clock_mono_us() - req->started_us) / 1000 : 0;
}
size_t httpd_max_body(const httpd *h) { return h->max_body; }

void httpd_close_loop(httpd *h)
{
    adopt_fresh(-1, 0, h);   /* so that every connection's close frees its record */
    httpd_accept_unlisten(h);
    h->socket = NULL;     /* freed with evhttp */
    h->listener = NULL;
    evhttp_free(h->http);
    if (h->adopt) event_free(h->adopt);
    free(h->by_fd);
}

void httpd_free(httpd *h)
{
    if (!h) return;
    httpd_relay_stop(h);
    httpd_close_loop(h);
    if (h->expire) event_free(h->expire);
    httpd_peers_free(h->peers);
    free(h);
}

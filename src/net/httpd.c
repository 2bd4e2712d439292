/* httpd: evhttp glue (see httpd.h). */
#include "net/httpd.h"
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
#include <event2/http.h>
#include "base/clock.h"
#include "base/emit.h"
#include "base/json.h"
#include "base/log.h"
#include "base/xalloc.h"

/* Idle keep-alive connections close after this; it also bounds a request's
 * life, so it exceeds the longest long-poll timeout (one hour). */
#define HTTPD_IDLE_TIMEOUT_S 3700

/* A connection, followed from its accept to its close so that shutdown can
 * wait for a request still arriving: libevent 2.1 says nothing between a
 * connection's accept and a whole request (2.2's evhttp_set_newreqcb is not
 * here). evhttp owns the connection; silt makes its bufferevent
 * (evhttp_set_bevcb) to watch the bytes coming in, and holds the
 * connection's close callback for the request being answered on it. */
struct httpd_conn {
    httpd                    *server;
    struct bufferevent       *bev;
    struct evhttp_connection *evcon;     /* NULL until adopted, the loop turn after its accept */
    evutil_socket_t           fd;
    struct evbuffer_cb_entry *watch;     /* on the bufferevent's input; NULL when not watched */
    httpd_req                *req;       /* dispatched and not yet answered */
    httpd_conn               *next_fresh;
    bool                      arriving;  /* holds bytes that are not yet a dispatched request */
};

struct httpd {
    struct evhttp                  *http;
    struct evhttp_bound_socket     *socket;
    httpd_handler                   handler;
    void                           *arg;
    size_t                          max_body;
    int                             inflight;
    int                             arriving;   /* connections with a request partly received */
    bool                            draining;
    httpd_conn                     *fresh;      /* accepted, not yet adopted */
    struct event                   *adopt;
    httpd_conn                    **by_fd;      /* adopted connections, by socket: a request finds its own */
    size_t                          nfds;
};

static void stop_watch(httpd_req *req);

static httpd_method method_of(struct evhttp_request *ev)
{
    switch (evhttp_request_get_command(ev)) {
    case EVHTTP_REQ_GET: return HTTPD_GET;
    case EVHTTP_REQ_POST: return HTTPD_POST;
    case EVHTTP_REQ_DELETE: return HTTPD_DELETE;
    default: return HTTPD_OTHER;
    }
}

static const char *method_name(httpd_method m)
{
    static const char *const names[] = { "GET", "POST", "DELETE", "OTHER" };
    return names[m];
}

/* The peer closed while its request was being worked on: evhttp frees the
 * request with the connection, so forget it. */
static void client_gone(httpd_req *req)
{
    req->ev = NULL;
    req->left = true;
    stop_watch(req);
    if (req->on_gone) req->on_gone(req, req->gone_arg);   /* may free req */
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
    req->left = true;
    if (req->on_gone) req->on_gone(req, req->gone_arg);   /* may free req */
}

void httpd_watch_close(httpd_req *req)
{
    if (!req->ev || req->close_watch) return;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evhttp_request_get_connection(req->ev));
    struct event_base *base = evhttp_connection_get_base(evhttp_request_get_connection(req->ev));
    req->close_watch = event_new(base, bufferevent_getfd(bev), EV_READ, on_readable, req);
    event_add(req->close_watch, NULL);
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
    c->server->arriving += on ? 1 : -1;
}

/* Every read lands here (and every drain, which is evhttp parsing): bytes in
 * start a request, and only its dispatch ends it (conn_dispatched). One
 * comparison per read, whatever the body's size. */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
    (void)in;
    if (info->n_added > 0) set_arriving(arg, true);
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
    if (c->watch) evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->watch);
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

static void conn_adopt(httpd_conn *c, struct evhttp_connection *evcon)
{
    c->evcon = evcon;
    c->fd = bufferevent_getfd(c->bev);
    evhttp_connection_set_closecb(evcon, on_conn_close, c);
    if (c->fd >= 0) index_conn(c->server, c);
}

static httpd_conn *conn_new(httpd *h, struct bufferevent *bev)
{
    httpd_conn *c = xcalloc(1, sizeof *c);
    c->server = h;
    c->bev = bev;
    c->fd = -1;
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
    static bool said;
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
        if (evcon) conn_adopt(c, evcon);
        else conn_free(c);
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
    set_arriving(c, evbuffer_get_length(bufferevent_get_input(c->bev)) > 0);
}

static void conn_answered(httpd_req *req)
{
    if (req->conn) req->conn->req = NULL;
    req->conn = NULL;
}

static void req_free(httpd_req *req)
{
    stop_watch(req);
    evhttp_clear_headers(&req->query);
    for (int i = 0; i < req->nparams; i++) free(req->params[i]);
    free(req->path);
    free(req->auth_sub);
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
    req->started_us = clock_mono_us();
    TAILQ_INIT(&req->query);
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
    evhttp_add_header(evhttp_request_get_output_headers(req->ev), "Connection", "close");
    httpd_error(req, 503, "server is shutting down");
}

static void skip_body(struct evhttp_request *ev)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(ev);
    evbuffer_drain(in, evbuffer_get_length(in));
}

static void on_request(struct evhttp_request *ev, void *arg)
{
    httpd *h = arg;
    if (h->draining) skip_body(ev);   /* not made contiguous for nothing */
    httpd_req *req = req_new(h, ev);
    h->inflight++;
    conn_dispatched(conn_of(h, ev), req);
    if (h->draining) refuse(req);
    else h->handler(req, h->arg);
}

/* A reply body: borrowed bytes (copied), owned bytes (malloc'd; handed to
 * the output buffer, not copied) or a chain of pieces (moved). */
typedef struct reply_body {
    const char      *data;
    size_t           len;
    bool             owned;
    struct evbuffer *chain;
} reply_body;

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

static void reply(httpd_req *req, int status, reply_body *body)
{
    httpd *h = req->server;
    double ms = (double)(clock_mono_us() - req->started_us) / 1000.0;
    stop_watch(req);
    conn_answered(req);   /* before the send: evhttp may close the connection inside it */
    if (req->ev && !req->left) {
        struct evkeyvalq *headers = evhttp_request_get_output_headers(req->ev);
        if (body->data || body->chain) {
            if (!evhttp_find_header(headers, "Content-Type"))
                evhttp_add_header(headers, "Content-Type", "application/json");
            put_body(evhttp_request_get_output_buffer(req->ev), body);
        }
        evhttp_send_reply(req->ev, status, NULL, NULL);
        log_info("%s %s %d %.1fms", method_name(req->method), req->path, status, ms);
    } else {
        if (req->ev) evhttp_send_reply(req->ev, status, NULL, NULL);   /* lets evhttp find the hang-up and clean up */
        log_info("%s %s %d %.1fms (client gone)", method_name(req->method), req->path, status, ms);
    }
    drop_body(body);
    h->inflight--;
    req_free(req);
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
    buf_init(&out);
    buf_vprintf(&msg, fmt, ap);
    emit e;
    emit_init(&e, &out);
    emit_object(&e);
    emit_key(&e, "error");
    emit_strn(&e, msg.data, msg.len);
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

httpd *httpd_new(struct event_base *base, const char *host, int port, size_t max_body,
                 httpd_handler handler, void *arg)
{
    httpd *h = xcalloc(1, sizeof *h);
    h->http = evhttp_new(base);
    h->handler = handler;
    h->arg = arg;
    h->max_body = max_body;
    /* Bodies up to twice the limit are read so the handler can refuse them
     * with a JSON error; beyond that evhttp refuses them itself. */
    evhttp_set_max_body_size(h->http, (ev_ssize_t)(max_body * 2));
    evhttp_set_max_headers_size(h->http, 64 * 1024);
    evhttp_set_timeout(h->http, HTTPD_IDLE_TIMEOUT_S);
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
                                        EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_HEAD);
    evhttp_set_gencb(h->http, on_request, h);
    evhttp_set_bevcb(h->http, conn_make, h);
    h->adopt = event_new(base, -1, 0, adopt_fresh, h);
    if (!h->adopt) abort();   /* libevent's allocation failed */
    h->socket = evhttp_bind_socket_with_handle(h->http, host, (ev_uint16_t)port);
    if (!h->socket) {
        int why = errno;   /* the bind's: the caller says why it cannot listen */
        httpd_free(h);
        errno = why;
        return NULL;
    }
    /* Replies go out whole at once; Nagle would hold a reply's tail for the
     * peer's delayed ACK. Accepted sockets inherit this from the listener. */
    int one = 1;
    setsockopt(evhttp_bound_socket_get_fd(h->socket), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return h;
}

void httpd_drain(httpd *h)
{
    if (h->socket) evhttp_del_accept_socket(h->http, h->socket);
    h->socket = NULL;
    h->draining = true;
}

int httpd_inflight(const httpd *h) { return h->inflight; }
int httpd_arriving(const httpd *h) { return h->arriving; }
size_t httpd_max_body(const httpd *h) { return h->max_body; }

void httpd_free(httpd *h)
{
    if (!h) return;
    adopt_fresh(-1, 0, h);   /* so that every connection's close frees its record */
    evhttp_free(h->http);
    if (h->adopt) event_free(h->adopt);
    free(h->by_fd);
    free(h);
}

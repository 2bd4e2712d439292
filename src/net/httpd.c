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

struct httpd {
    struct evhttp                  *http;
    struct evhttp_bound_socket     *socket;
    httpd_handler                   handler;
    void                           *arg;
    size_t                          max_body;
    int                             inflight;
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
static void on_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    httpd_req *req = arg;
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

static void req_free(httpd_req *req)
{
    stop_watch(req);
    evhttp_clear_headers(&req->query);
    for (int i = 0; i < req->nparams; i++) free(req->params[i]);
    free(req->path);
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

static void on_request(struct evhttp_request *ev, void *arg)
{
    httpd *h = arg;
    httpd_req *req = req_new(h, ev);
    h->inflight++;
    evhttp_connection_set_closecb(evhttp_request_get_connection(ev), on_close, req);
    h->handler(req, h->arg);
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
    if (req->ev) evhttp_connection_set_closecb(evhttp_request_get_connection(req->ev), NULL, NULL);
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
    h->socket = evhttp_bind_socket_with_handle(h->http, host, (ev_uint16_t)port);
    if (!h->socket) {
        int why = errno;   /* the bind's: the caller says why it cannot listen */
        evhttp_free(h->http);
        free(h);
        errno = why;
        return NULL;
    }
    /* Replies go out whole at once; Nagle would hold a reply's tail for the
     * peer's delayed ACK. Accepted sockets inherit this from the listener. */
    int one = 1;
    setsockopt(evhttp_bound_socket_get_fd(h->socket), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return h;
}

void httpd_stop_accepting(httpd *h)
{
    if (h->socket) evhttp_del_accept_socket(h->http, h->socket);
    h->socket = NULL;
}

int httpd_inflight(const httpd *h) { return h->inflight; }
size_t httpd_max_body(const httpd *h) { return h->max_body; }

void httpd_free(httpd *h)
{
    if (!h) return;
    evhttp_free(h->http);
    free(h);
}

/* httpd_relay: the loops beside the home loop (WORKERS). Each runs on its own
 * thread with its own event base and evhttp, accepts from a duplicate of the
 * home loop's socket, and does its connections' I/O: reading and parsing a
 * request, the refusals that need nothing else, writing the reply, noticing
 * a client leave. A whole request is posted to the home loop, where the
 * handlers, the database pool and the fused pushes live; its reply is posted
 * back. Nothing of one loop's libevent state is touched by another thread:
 * only httpd_req records cross, through mailboxes, and each side keeps to
 * its own fields of them (httpd.h).
 *
 * A request's lifetime across the two: the loop holds one reference from
 * its arrival to the reply's send; each departure posted to the home loop
 * holds another, so a departure the home loop reads after its reply (the two
 * cross in the mailboxes) still finds the record. The home loop's replies
 * for a request (the request timeout's 503, then the handler's) arrive in
 * the order it sent them. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include "base/log.h"
#include "base/xalloc.h"
#include "net/httpd_internal.h"

/* After the order to stop, a loop runs this much longer so that the replies
 * it has just written leave their buffers. */
#define RELAY_STOP_GRACE_MS 100

/* Letters to the home loop: HOME_LEFT as the loop posts it, HOME_DEPART as
 * the home loop posts it to itself to run at its next poll (home_receive). */
enum { HOME_DISPATCH, HOME_LEFT, HOME_DEPART };
/* Letters to a loop. */
enum { LOOP_REPLY, LOOP_TIMEOUT, LOOP_DRAIN, LOOP_STOP };

struct httpd_relay {
    httpd             *loop;     /* this loop's record */
    struct event_base *base;
    mailbox           *box;      /* from the home loop */
    pthread_t          thread;
    bool               running;
};

static void unref(httpd_req *req)
{
    if (atomic_fetch_sub(&req->refs, 1) == 1) httpd_req_free(req);
}

/* ---- on the loop's thread ------------------------------------------------ */

static struct evkeyvalq *copy_headers(struct evhttp_request *ev)
{
    struct evkeyvalq *copy = xmalloc(sizeof *copy);
    TAILQ_INIT(copy);
    for (struct evkeyval *kv = evhttp_request_get_input_headers(ev)->tqh_first; kv; kv = kv->next.tqe_next)
        evhttp_add_header(copy, kv->key, kv->value);
    return copy;
}

void httpd_relay_dispatch(httpd_req *req)
{
    req->in_headers = copy_headers(req->ev);
    mailbox_post(req->server->home->inbox, HOME_DISPATCH, req);
}

void httpd_relay_left(httpd_req *req)
{
    req->io_left = true;
    atomic_fetch_add(&req->refs, 1);
    mailbox_post(req->server->home->inbox, HOME_LEFT, req);
}

static void send_reply(httpd_req *req)
{
    reply_body *body = req->out_body;
    httpd_send(req, req->out_status, body);
    free(body);
    unref(req);
}

static void stop_accepting(httpd *loop)
{
    if (loop->socket) evhttp_del_accept_socket(loop->http, loop->socket);
    loop->socket = NULL;
    loop->listener = NULL;   /* freed with its socket */
}

static void loop_receive(int kind, void *item, void *arg)
{
    httpd_relay *r = arg;
    httpd_req *req = item;
    switch (kind) {
    case LOOP_REPLY: send_reply(req); break;
    case LOOP_TIMEOUT: if (!req->io_left) httpd_answer_timeout(req); break;   /* the reply follows */
    case LOOP_DRAIN: stop_accepting(r->loop); break;
    case LOOP_STOP: {
        struct timeval grace = { 0, RELAY_STOP_GRACE_MS * 1000 };
        event_base_loopexit(r->base, &grace);
        break;
    }
    default: abort();
    }
}

static void *run_loop(void *arg)
{
    httpd_relay *r = arg;
    httpd_accept_adopt(r->loop);
    event_base_dispatch(r->base);
    return NULL;
}

/* ---- on the home loop ---------------------------------------------------- */

/* A borrowed body is copied: the handler's bytes do not outlive this call. */
void httpd_relay_reply(httpd_req *req, int status, reply_body *body)
{
    reply_body *b = xmalloc(sizeof *b);
    *b = *body;
    if (b->data && !b->owned) {
        char *copy = xmalloc(b->len ? b->len : 1);
        memcpy(copy, b->data, b->len);
        b->data = copy;
        b->owned = true;
    }
    req->out_status = status;
    req->out_body = b;
    mailbox_post(req->server->relay->box, LOOP_REPLY, req);
}

void httpd_relay_timeout(httpd_req *req)
{
    mailbox_post(req->server->relay->box, LOOP_TIMEOUT, req);
}

/* A departure read after the reply concerns nobody: the handler is done. */
static void depart(httpd_req *req)
{
    if (!req->out_body) httpd_home_left(req);
    unref(req);
}

/* A departure runs at the home loop's next poll, after the work this turn
 * started (it is posted back to the inbox, whose letters posted during a
 * delivery wait for the next swap), as the home loop's own connections see
 * a client leave at the next poll at the earliest: a request whose client
 * closed right after sending it whole has its work started (a push's
 * flush, a query sent) as it would on the home loop, and not dropped only
 * because the two letters arrived together. */
static void home_receive(int kind, void *item, void *arg)
{
    httpd *h = arg;
    httpd_req *req = item;
    switch (kind) {
    case HOME_DISPATCH:
        if (h->stopping) httpd_error(req, 503, "server is shutting down");
        else httpd_home_dispatch(req);
        break;
    case HOME_LEFT: mailbox_post(h->inbox, HOME_DEPART, req); break;
    case HOME_DEPART: depart(req); break;
    default: abort();
    }
}

static httpd_relay *relay_new(httpd *home, evutil_socket_t fd)
{
    httpd_relay *r = xcalloc(1, sizeof *r);
    r->base = httpd_base_new();
    if (!r->base) abort();   /* libevent's allocation failed */
    httpd *loop = xcalloc(1, sizeof *loop);
    loop->home = home;
    loop->relay = r;
    loop->limits = home->limits;
    loop->max_body = home->max_body;
    loop->max_conns = home->max_conns;
    TAILQ_INIT(&loop->held);
    httpd_configure(loop, r->base);
    r->loop = loop;
    r->box = mailbox_new(r->base, loop_receive, r);
    if (!r->box || httpd_accept_share(loop, r->base, fd) < 0) abort();   /* out of descriptors at start */
    return r;
}

/* Signals are the home loop's (its evsignal handlers): the loops' threads
 * start with every signal blocked and keep it so. */
int httpd_relay_start(httpd *h, int n)
{
    h->inbox = mailbox_new(h->base, home_receive, h);
    if (!h->inbox) return -1;
    evutil_socket_t socket_fd = evhttp_bound_socket_get_fd(h->socket);
    h->relays = xcalloc((size_t)n, sizeof *h->relays);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int fd = fcntl(socket_fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) { rc = -1; break; }
        httpd_relay *r = relay_new(h, fd);
        h->relays[h->nrelays++] = r;
        if (pthread_create(&r->thread, NULL, run_loop, r) != 0) { rc = -1; break; }
        r->running = true;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

const httpd *httpd_relay_loop(const httpd *h, int i)
{
    return h->relays[i]->loop;
}

void httpd_relay_drain(httpd *h)
{
    for (int i = 0; i < h->nrelays; i++) mailbox_post(h->relays[i]->box, LOOP_DRAIN, NULL);
}

/* Every letter still posted either way, delivered on this thread now that
 * the loops' threads have ended; a delivery can post more (a departure's
 * on_gone replies), so until none is left. */
static void deliver_rest(httpd *h)
{
    size_t delivered;
    do {
        delivered = mailbox_flush(h->inbox);
        for (int i = 0; i < h->nrelays; i++) delivered += mailbox_flush(h->relays[i]->box);
    } while (delivered > 0);
}

/* The loops stop (after their grace), then, on this thread, their
 * connections close (a request still with a handler learns its client is
 * gone), the last letters are delivered, and all is freed. */
void httpd_relay_stop(httpd *h)
{
    if (!h->inbox) return;
    h->stopping = true;   /* a request still on its way is not served now */
    for (int i = 0; i < h->nrelays; i++)
        if (h->relays[i]->running) mailbox_post(h->relays[i]->box, LOOP_STOP, NULL);
    for (int i = 0; i < h->nrelays; i++)
        if (h->relays[i]->running) pthread_join(h->relays[i]->thread, NULL);
    for (int i = 0; i < h->nrelays; i++) httpd_close_loop(h->relays[i]->loop);
    deliver_rest(h);
    for (int i = 0; i < h->nrelays; i++) {
        httpd_relay *r = h->relays[i];
        mailbox_free(r->box);
        free(r->loop);
        event_base_free(r->base);
        free(r);
    }
    free(h->relays);
    mailbox_free(h->inbox);
    h->relays = NULL;
    h->nrelays = 0;
    h->inbox = NULL;
}

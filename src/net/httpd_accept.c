/* httpd_accept: accepting connections within limits (see httpd.h and
 * docs/operations.md, "Limits and overload").
 *
 * Descriptors: client connections are capped at HTTP_MAX_CONNECTIONS and
 * never more than RLIMIT_NOFILE less HTTP_FD_RESERVE, so the database pool
 * can always reconnect. The connection over the cap is the one accept
 * already made: it is answered 503 and closed at once. Chosen over a spare
 * descriptor kept open to be closed when out (accept-and-close): the cap
 * keeps the pool's descriptors free in the first place, and the answer tells
 * the client why. If accept fails anyway (other files, ENFILE), accepting
 * pauses for HTTP_ACCEPT_BACKOFF_MS instead of spinning. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include "base/buf.h"
#include "base/clock.h"
#include "base/emit.h"
#include "base/log.h"
#include <event2/util.h>
#include "net/httpd_internal.h"
#include "net/httpd_pages.h"

/* evconnlistener hands its error callback evhttp's argument, not ours:
 * the loop of this thread is found here (one loop per thread). */
static _Thread_local httpd *listening;

/* A connection answered and closed at once, the reply written straight to
 * its socket (a few hundred bytes fit any socket buffer): the client learns
 * why rather than finding the connection gone. */
void httpd_conn_refuse(httpd_conn *c, int status, const char *reason, const char *error)
{
    buf json, out;
    emit e;
    httpd_error_body(&e, &json, error, strlen(error));
    emit_end(&e);
    buf_init(&out);
    buf_printf(&out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s"
                     "Connection: close\r\n\r\n%s",
               status, reason, json.len, status == 503 ? "Retry-After: 1\r\n" : "", json.data);
    ssize_t sent = send(c->fd, out.data, out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;   /* a client that cannot take it is closed all the same */
    shutdown(c->fd, SHUT_WR);
    buf_fini(&json); buf_fini(&out);
    evhttp_connection_free(c->evcon);   /* its close callback frees c */
}

/* One connection past the limit is answered 503 and closed. */
void httpd_accept_refuse(httpd_conn *c)
{
    httpd *h = c->server;
    char why[96];
    snprintf(why, sizeof why, "too many connections (the limit is %d)", h->max_conns);
    atomic_fetch_add(&h->home->refused, 1);
    httpd_conn_refuse(c, 503, "Service Unavailable", why);
}

bool httpd_accept_peer(httpd_conn *c)
{
    httpd *home = c->server->home;
    if (!home->max_per_peer || !httpd_peer_of(c->fd, &c->peer)) return true;
    c->peer_counted = httpd_peers_take(home->peers, &c->peer, home->max_per_peer);
    if (c->peer_counted) return true;
    char addr[64], why[160];
    httpd_peer_text(&c->peer, addr, sizeof addr);
    snprintf(why, sizeof why, "too many connections from %s (at most %d from one address)", addr, home->max_per_peer);
    atomic_fetch_add(&home->refused, 1);
    httpd_conn_refuse(c, 503, "Service Unavailable", why);
    return false;
}

void httpd_accept_over_cap(httpd_conn *c)
{
    httpd *home = c->server->home;
    /* each holds a descriptor for its window: three quarters of the reserve
     * stay the database pool's */
    int allowed = c->server->limits.fd_reserve / 4 < HTTPD_OVER_CAP_MAX ? c->server->limits.fd_reserve / 4
                                                                        : HTTPD_OVER_CAP_MAX;
    if (atomic_fetch_add(&home->over_cap, 1) >= allowed) {
        atomic_fetch_sub(&home->over_cap, 1);
        httpd_accept_refuse(c);
        return;
    }
    c->over_cap = true;
    struct timeval window = { 0, HTTPD_OVER_CAP_WINDOW_MS * 1000 };
    event_add(c->timer, &window);   /* the header and idle timeouts do not apply: this one does */
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    httpd *h = arg;
    if (h->listener && !atomic_load(&h->home->draining)) evconnlistener_enable(h->listener);
}

/* accept() failed for want of descriptors (or memory): left on, the
 * listener would be called again at once and spin while the backlog is
 * full. Accepting pauses for the back-off instead; connections closing in
 * the meantime give descriptors back, and the database pool's are never
 * taken (the connection limit leaves them). One warning per interval. */
static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    (void)arg;
    httpd *h = listening;
    int err = EVUTIL_SOCKET_ERROR();
    if (!h || h->listener != lev) return;
    evconnlistener_disable(lev);
    int64_t ms = h->limits.accept_backoff_ms;
    struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000) };
    evtimer_add(h->resume, &tv);
    /* One warning per interval for the whole server, whichever loop failed:
     * the loop that swaps the time in logs. */
    httpd *home = h->home;
    int64_t now = clock_mono_us(), last = atomic_load(&home->emfile_logged_us);
    if ((last && now - last < HTTPD_EMFILE_LOG_US) ||
        !atomic_compare_exchange_strong(&home->emfile_logged_us, &last, now)) {
        atomic_fetch_add(&home->emfile_quiet, 1);
        return;
    }
    log_warn("cannot accept connections: %s (%d open); pausing %lld ms between tries, %llu failures not logged",
             evutil_socket_error_to_string(err), atomic_load(&home->nconns), (long long)ms,
             (unsigned long long)atomic_exchange(&home->emfile_quiet, 0));
}

/* The connection limit in force: never more than RLIMIT_NOFILE leaves
 * after the reserve, which keeps the database pool, its reconnects and the
 * server's own files clear of client connections. */
int httpd_accept_limit(const httpd_limits *l)
{
    struct rlimit rl;
    int64_t max = l->max_connections;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        int64_t room = (int64_t)rl.rlim_cur - l->fd_reserve;
        if (room < max) {
            log_info("HTTP_MAX_CONNECTIONS %d lowered to %lld: the descriptor limit is %llu and %d are reserved "
                     "(HTTP_FD_RESERVE)", l->max_connections, (long long)(room > 1 ? room : 1),
                     (unsigned long long)rl.rlim_cur, l->fd_reserve);
            max = room > 1 ? room : 1;
        }
    }
    return (int)max;
}

/* The listener's failures pause accepting (on_accept_error), and the
 * back-off's timer resumes it. */
static void watch_listener(httpd *h, struct event_base *base)
{
    h->resume = evtimer_new(base, on_resume, h);
    if (!h->resume) abort();   /* libevent's allocation failed */
    h->listener = evhttp_bound_socket_get_listener(h->socket);
    evconnlistener_set_error_cb(h->listener, on_accept_error);
}

int httpd_accept_listen(httpd *h, struct event_base *base, const char *host, int port)
{
    h->socket = evhttp_bind_socket_with_handle(h->http, host, (ev_uint16_t)port);
    if (!h->socket) return -1;
    /* Replies go out whole at once; Nagle would hold a reply's tail for the
     * peer's delayed ACK. Accepted sockets inherit this from the listener. */
    int one = 1;
    setsockopt(evhttp_bound_socket_get_fd(h->socket), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    watch_listener(h, base);
    listening = h;
    return 0;
}

/* Runs on the home thread before the loop's thread starts; listening is
 * set by that thread (httpd_accept_adopt). */
int httpd_accept_share(httpd *h, struct event_base *base, evutil_socket_t fd)
{
    h->socket = evhttp_accept_socket_with_handle(h->http, fd);
    if (!h->socket) return -1;
    watch_listener(h, base);
    return 0;
}

void httpd_accept_adopt(httpd *h)
{
    listening = h;
}


void httpd_accept_unlisten(httpd *h)
{
    if (listening == h) listening = NULL;
    if (h->resume) event_free(h->resume);
    h->resume = NULL;
}

/* httpd_internal: the records httpd.c and httpd_accept.c share. Not a
 * contract for anyone else: the module's contract is httpd.h. */
#ifndef SILT_HTTPD_INTERNAL_H
#define SILT_HTTPD_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include "net/httpd.h"

/* Out of descriptors, the warning is logged at most once per this. */
#define HTTPD_EMFILE_LOG_US (10 * 1000000)

/* A connection's phase picks its timer: idle between requests, the header
 * timeout from a request's first byte, the body timeout between body
 * bytes, none while the handler has the request. */
typedef enum conn_phase { PHASE_IDLE, PHASE_HEADER, PHASE_BODY, PHASE_BUSY } conn_phase;

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
    struct event             *timer;     /* the phase's timeout */
    struct evbuffer_cb_entry *out_watch; /* on the output: evhttp's own error pages become JSON (httpd_pages) */
    conn_phase                phase;
    int                       newlines;  /* consecutive line ends seen in the header (two end it) */
    bool                      arriving;  /* holds bytes that are not yet a dispatched request */
};

TAILQ_HEAD(held_list, httpd_req);

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
    httpd_limits                    limits;
    int                             nconns;     /* client connections open */
    int                             max_conns;  /* limits.max_connections, or less under RLIMIT_NOFILE */
    uint64_t                        refused;    /* connections answered 503 at the limit */
    struct evconnlistener          *listener;   /* evhttp's, borrowed to pause accepting */
    struct event                   *resume;     /* re-enables accepting after a back-off */
    int64_t                         emfile_logged_us;
    uint64_t                        emfile_quiet; /* accept failures not logged since the last warning */
    struct held_list                held;       /* held requests, oldest first */
    int                             nheld;
    size_t                          held_bytes;
    struct event                   *expire;     /* the request timeout of the oldest held request */
    int64_t                         last_timeout_us;
    uint64_t                        timeouts;
    bool                            replying;   /* silt's own reply is being written (httpd_pages leaves it) */
    void                          (*on_leave)(httpd_req *req, void *arg);   /* httpd_on_leave */
    void                           *leave_arg;
};

/* Accepting (httpd_accept.c). */
/* The connection limit in force for these limits (RLIMIT_NOFILE less the reserve at most). */
int  httpd_accept_limit(const httpd_limits *limits);
/* Binds host:port for h, with the back-off when out of descriptors; -1 with errno. */
int  httpd_accept_listen(httpd *h, struct event_base *base, const char *host, int port);
/* Forgets the listener and frees the back-off timer (httpd_free). */
void httpd_accept_unlisten(httpd *h);
/* Answers a connection past the limit 503 and closes it (c is freed). */
void httpd_accept_refuse(httpd_conn *c);

#endif

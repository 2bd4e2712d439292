/* httpd_internal: the records httpd.c and httpd_accept.c share. Not a
 * contract for anyone else: the module's contract is httpd.h. */
#ifndef SILT_HTTPD_INTERNAL_H
#define SILT_HTTPD_INTERNAL_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include "net/httpd.h"
#include "net/httpd_peers.h"
#include "net/mailbox.h"

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
    int64_t                   body_since_ms; /* the header's end (monotonic) */
    uint64_t                  body_bytes;    /* read since then */
    bool                      arriving;  /* holds bytes that are not yet a dispatched request */
    bool                      over_cap;  /* past the connection limit: only /health is served, then closed */
    bool                      peer_counted; /* counted in the home's peers until it closes */
    httpd_peer                peer;
};

TAILQ_HEAD(held_list, httpd_req);

typedef struct httpd_relay httpd_relay;

/* A server is one home loop (the one the handlers run on) and, with
 * WORKERS > 1, loops of its own on other threads that accept from the same
 * socket and do a request's I/O (httpd_relay.c). Each loop has one of these;
 * a field marked "home" is used only in the home loop's record (every
 * record's home points there) and read and written on the home thread, one
 * marked "shared" is the home's too and atomic, the rest are each loop's. */
struct httpd {
    httpd                          *home;       /* the home loop's record: this one, or the one relayed to */
    httpd_relay                    *relay;      /* NULL: the home loop; else this loop's thread and mailbox */
    struct event_base              *base;
    struct evhttp                  *http;
    struct evhttp_bound_socket     *socket;
    httpd_handler                   handler;    /* home */
    void                           *arg;        /* home */
    size_t                          max_body;
    atomic_uint_fast64_t            requests;   /* this loop's: read whole (the home thread reads it for /metrics) */
    atomic_int                      inflight;   /* shared: handed to the home loop (or on the way) and not answered */
    atomic_int                      arriving;   /* shared: connections with a request partly received */
    atomic_bool                     draining;   /* shared */
    httpd_conn                     *fresh;      /* accepted, not yet adopted */
    struct event                   *adopt;
    httpd_conn                    **by_fd;      /* adopted connections, by socket: a request finds its own */
    size_t                          nfds;
    httpd_limits                    limits;
    atomic_int                      nconns;     /* shared: client connections open */
    int                             max_conns;  /* limits.max_connections, or less under RLIMIT_NOFILE */
    atomic_uint_fast64_t            refused;    /* shared: connections answered 503 at the limit */
    atomic_int                      over_cap;   /* shared: connections past the limit awaiting their request */
    httpd_peers                    *peers;      /* home: connections per client address */
    int                             max_per_peer; /* home: HTTP_CLIENT_SHARE_PERCENT of max_conns; 0: none */
    struct evconnlistener          *listener;   /* evhttp's, borrowed to pause accepting */
    struct event                   *resume;     /* re-enables accepting after a back-off */
    atomic_int_fast64_t             emfile_logged_us; /* shared */
    atomic_uint_fast64_t            emfile_quiet; /* shared: accept failures not logged since the last warning */
    struct held_list                held;       /* home: held requests, oldest first */
    int                             nheld;      /* home */
    size_t                          held_bytes; /* home */
    struct event                   *expire;     /* home: the request timeout of the oldest held request */
    int64_t                         last_timeout_us; /* home */
    uint64_t                        timeouts;   /* home */
    bool                            replying;   /* silt's own reply is being written (httpd_pages leaves it) */
    void                          (*on_leave)(httpd_req *req, void *arg);   /* home: httpd_on_leave */
    void                           *leave_arg;  /* home */
    httpd_relay                   **relays;     /* home: the other loops */
    int                             nrelays;    /* home */
    mailbox                        *inbox;      /* home: requests and departures the other loops relay */
    bool                            stopping;   /* home: the loops are stopping (httpd_free) */
};

/* A reply body: borrowed bytes (copied), owned bytes (malloc'd; handed to
 * the output buffer, not copied) or a chain of pieces (moved). */
typedef struct reply_body {
    const char      *data;
    size_t           len;
    bool             owned;
    struct evbuffer *chain;
} reply_body;

/* Requests (httpd.c), for httpd_relay.c. The home loop's halves: */
/* Counts and holds a request and runs the handler. */
void httpd_home_dispatch(httpd_req *req);
/* The client left or the request timed out: on_leave, then on_gone. */
void httpd_home_left(httpd_req *req);
/* The loop's own halves: */
/* Evhttp's loop and its settings, for a loop's record. */
void httpd_configure(httpd *h, struct event_base *base);
/* Writes the reply (or drops it for a client gone) and frees the body. */
void httpd_send(httpd_req *req, int status, reply_body *body);
/* Sends the request timeout's answer (made on the home loop) now. */
void httpd_answer_timeout(httpd_req *req);
/* Frees req's memory (no event of any loop is touched). */
void httpd_req_free(httpd_req *req);
/* Every connection's close frees its record, then evhttp and the loop's events. */
void httpd_close_loop(httpd *h);

/* Other loops (httpd_relay.c). */
/* Posts a whole request to the home loop. */
void httpd_relay_dispatch(httpd_req *req);
/* Posts a departure (client gone) to the home loop. */
void httpd_relay_left(httpd_req *req);
/* From the home loop: the reply, or the request timeout's 503, to the request's loop. */
void httpd_relay_reply(httpd_req *req, int status, reply_body *body);
void httpd_relay_timeout(httpd_req *req);
/* Home: starts n loops sharing h's socket; -1 with errno. */
int  httpd_relay_start(httpd *h, int n);
/* Home: the record of loop i of the others. */
const httpd *httpd_relay_loop(const httpd *h, int i);
/* Home: the other loops stop accepting (shutdown's drain). */
void httpd_relay_drain(httpd *h);
/* Home: the other loops stop, their last messages are delivered here, and they are freed. */
void httpd_relay_stop(httpd *h);

/* Accepting (httpd_accept.c). */
/* The connection limit in force for these limits (RLIMIT_NOFILE less the reserve at most). */
int  httpd_accept_limit(const httpd_limits *limits);
/* Binds host:port for h, with the back-off when out of descriptors; -1 with errno. */
int  httpd_accept_listen(httpd *h, struct event_base *base, const char *host, int port);
/* Accepts from fd (a duplicate of the home loop's socket) in another loop; -1. */
int  httpd_accept_share(httpd *h, struct event_base *base, evutil_socket_t fd);
/* The calling thread's loop is h (for the accept error's back-off). */
void httpd_accept_adopt(httpd *h);
/* Forgets the listener and frees the back-off timer (httpd_free). */
void httpd_accept_unlisten(httpd *h);
/* Answers status with {"error": error} on c's socket and closes it (c is
 * freed). */
void httpd_conn_refuse(httpd_conn *c, int status, const char *reason, const char *error);
/* Past the connection limit, a few connections (HTTPD_OVER_CAP_MAX at once,
 * and at most a quarter of HTTP_FD_RESERVE)
 * may still send a request within HTTPD_OVER_CAP_WINDOW_MS: /health is
 * answered (monitoring sees a full server, not a dead one), anything else
 * or nothing in time is answered 503. */
#define HTTPD_OVER_CAP_MAX       16
#define HTTPD_OVER_CAP_WINDOW_MS 200
/* Counts c against its client address's share: false when that address
 * holds its share already (c is then answered 503 and freed). */
bool httpd_accept_peer(httpd_conn *c);
/* A connection past the limit: admitted for /health alone, or refused. */
void httpd_accept_over_cap(httpd_conn *c);
/* Answers a connection past the limit 503 and closes it (c is freed). */
void httpd_accept_refuse(httpd_conn *c);

#endif

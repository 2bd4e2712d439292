/* httpd: the HTTP server glue over libevent's evhttp. It turns each request
 * into an httpd_req (decoded path, query, body), hands it to one handler, and
 * owns the reply: JSON body, status, one log line, and the in-flight count
 * that graceful shutdown waits on, with the connections still receiving a
 * request (httpd_arriving). A client that disconnects before its reply
 * marks the request gone (left), and so does the request timeout; the server
 * hears of it (httpd_on_leave) and drops work not yet started, work already
 * started completes, and its reply is dropped.
 *
 * Threads: handlers run on one loop, the home loop httpd_new is given. With
 * httpd_add_loops, more loops on threads of their own accept from the same
 * socket and do their connections' I/O; a request whole on one of them is
 * handed to the home loop, and its reply handed back (httpd_relay.c). To a
 * handler every request looks the same: everything below is called on the
 * home loop, and only through these calls, never through req->ev. */
#ifndef SILT_HTTPD_H
#define SILT_HTTPD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdatomic.h>
#include <sys/queue.h>
#include "base/buf.h"
#include "base/emit.h"

#define HTTPD_MAX_PARAMS 4

typedef struct httpd httpd;
typedef struct httpd_req httpd_req;
typedef struct httpd_conn httpd_conn;

typedef enum httpd_method { HTTPD_GET, HTTPD_POST, HTTPD_DELETE, HTTPD_PATCH, HTTPD_OTHER } httpd_method;

struct httpd_req {
    httpd                 *server;
    struct evhttp_request *ev;       /* NULL once the client is gone */
    httpd_method           method;
    char                  *path;     /* as sent (still percent-encoded), without the query */
    struct evkeyvalq       query;
    const char            *body;     /* NUL-terminated; lives in storage */
    size_t                 body_len;
    char                  *params[HTTPD_MAX_PARAMS]; /* route parameters, decoded */
    int                    nparams;
    int64_t                started_us;
    struct evbuffer       *storage;  /* owns body: the chains evhttp read, made contiguous */
    /* Called once if the client disconnects before its reply; the handler
     * may answer (the reply is dropped) from inside it. */
    void                 (*on_gone)(httpd_req *req, void *arg);
    void                  *gone_arg;
    struct event          *close_watch; /* see httpd_watch_close */
    bool                   left;        /* the client closed before the reply */
    httpd_conn            *conn;        /* NULL once the connection is gone */
    char                  *auth_sub;    /* owned: the verified token's sub (api/auth.c), NULL: none */
    const char            *auth_role;   /* static: the verified token's role, as docs name it (api/auth.c), NULL: none */
    bool                   head;        /* a HEAD, served as its GET without the body */
    bool                   parked;      /* waits on purpose (long-poll): no timeout, not counted as held */
    bool                   timed_out;   /* answered by the request timeout; the handler's reply is dropped */
    /* Some of its database work was sent to PostgreSQL (db_job_note_sent,
     * or an engine that sends it with other clients'): from then on the
     * request timeout cannot say it was not done. See httpd_answer_timeout. */
    bool                   sent;
    /* Called on the home loop when the request timeout answers 504: adds to
     * the error object the members a client resends with to learn the
     * outcome without a duplicate (a push's transactionIds, a task send's
     * ids and idempotencyKeys). NULL: none to name. */
    void                 (*resend_keys)(httpd_req *req, void *arg, emit *e);
    void                  *resend_arg;
    int                    timeout_status; /* the request timeout's answer, made on the home loop */
    char                  *timeout_body;   /* owned; its JSON */
    size_t                 timeout_len;
    bool                   held;        /* counted in httpd_held (until its reply, a timeout included, or parked) */
    TAILQ_ENTRY(httpd_req) held_link;   /* in the server's list of held requests, oldest first */
    struct evkeyvalq       reply_headers; /* httpd_header's, put on the reply when it is sent */
    bool                   dispatched;  /* accepted and handed to the handler (on the home loop) */
    /* A request from another loop (req->server->relay): the loop's I/O state
     * stays there, the handler sees copies. */
    struct evkeyvalq      *in_headers;  /* the request's headers, copied for the home loop */
    bool                   io_left;     /* the loop saw the client leave (req->left is the home's) */
    atomic_int             refs;        /* the loop's until the reply, and one per departure in flight */
    int                    out_status;  /* the reply, handed to the loop */
    void                  *out_body;    /* reply_body */
};

/* The limits a server keeps (docs/operations.md names each setting). */
typedef struct httpd_limits {
    size_t  max_body;             /* MAX_BODY_BYTES */
    int     max_connections;      /* HTTP_MAX_CONNECTIONS; lowered to RLIMIT_NOFILE - fd_reserve */
    int     fd_reserve;           /* HTTP_FD_RESERVE: descriptors client connections never take */
    int     client_share_percent; /* HTTP_CLIENT_SHARE_PERCENT: of max_connections, for one client address */
    int64_t header_timeout_ms;    /* HTTP_HEADER_TIMEOUT_MS: first byte to the end of the headers */
    int64_t body_timeout_ms;      /* HTTP_BODY_TIMEOUT_MS: longest pause between body bytes */
    int64_t body_min_rate;        /* HTTP_BODY_MIN_RATE: bytes/s; the whole body is due by the header's
                                   * end + body_timeout_ms + its bytes so far at this rate */
    int64_t idle_timeout_ms;      /* HTTP_IDLE_TIMEOUT_MS: a kept-alive connection without a request */
    int64_t request_timeout_ms;   /* REQUEST_TIMEOUT_MS: dispatch to reply, long-polls excepted */
    int64_t accept_backoff_ms;    /* HTTP_ACCEPT_BACKOFF_MS: accepting pauses this long when out of descriptors */
} httpd_limits;

typedef void (*httpd_handler)(httpd_req *req, void *arg);

/* An event base for a loop that serves HTTP: epoll's interest changes are
 * gathered per turn of the loop and made once (a request adds and removes
 * read and write interest on its socket several times a turn; see the
 * definition for why the duplicate listening sockets do not matter). */
struct event_base *httpd_base_new(void);

httpd *httpd_new(struct event_base *base, const char *host, int port, const httpd_limits *limits,
                 httpd_handler handler, void *arg);
void   httpd_free(httpd *h);
/* Starts n more loops, each on its own thread, accepting from h's socket
 * (the kernel hands each connection to whichever loop accepts first); 0, or
 * -1 with errno. Connections, limits and counts stay the server's whole. */
int    httpd_add_loops(httpd *h, int n);
int    httpd_loops(const httpd *h);        /* 1 + the loops added */
/* Requests read by loop i (0: the home loop, 1..: the loops added). */
uint64_t httpd_loop_requests(const httpd *h, int i);
/* Shutdown: stops accepting connections; from now on a request that
 * completes (one still arriving, or a new one on a kept-alive connection) is
 * answered 503 "server is shutting down" with Connection: close. */
void   httpd_drain(httpd *h);
int    httpd_inflight(const httpd *h);     /* requests received and not yet answered */
/* Connections holding part of a request (bytes in, not yet a whole request
 * handed to the handler): shutdown waits for them too. Idle kept-alive
 * connections are not counted. */
int    httpd_arriving(const httpd *h);
size_t httpd_max_body(const httpd *h);
/* Requests dispatched and not yet answered by their handler, long-polls
 * excepted (they wait on purpose, holding no body), and the bytes of their
 * bodies: what waits on PostgreSQL. A request answered by the timeout stays
 * held until its handler is done with it. */
int     httpd_held(const httpd *h);
size_t  httpd_held_bytes(const httpd *h);
int64_t httpd_oldest_held_ms(const httpd *h);   /* age of the oldest held request not yet timed out; 0 if none */
int64_t httpd_last_timeout_us(const httpd *h);  /* clock_mono_us of the last request timeout; 0 if none */
uint64_t httpd_timeouts(const httpd *h);        /* requests answered by the request timeout */
uint64_t httpd_refused_connections(const httpd *h); /* connections refused at the connection limit */
int     httpd_connections(const httpd *h);      /* open client connections */
int     httpd_max_connections(const httpd *h);  /* the limit in force (after RLIMIT_NOFILE) */
/* fn runs whenever a request's client leaves or its request times out,
 * once per request, right after req->left is set and before req->on_gone;
 * req is still valid and fn must not answer it. The server drops work the
 * request queued and has not started (api/abandon.c). */
void    httpd_on_leave(httpd *h, void (*fn)(httpd_req *req, void *arg), void *arg);
/* Adds a reply header (before httpd_reply*; a no-op for a gone client).
 * A Content-Type given here replaces application/json. */
void    httpd_header(httpd_req *req, const char *name, const char *value);

/* Sends the reply and frees req. body may be NULL (no content). */
void httpd_reply(httpd_req *req, int status, const char *body, size_t len);
void httpd_reply_buf(httpd_req *req, int status, buf *body);   /* takes body's memory: no copy */
/* Takes a body built of pieces (evbuffer_add_reference lets a large one stay
 * where it is until sent) and frees the evbuffer. */
void httpd_reply_chain(httpd_req *req, int status, struct evbuffer *body);
/* {"error": "<message>"} with status. */
void httpd_error(httpd_req *req, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* {"error": "<message>", "<field>": "<value>"}. */
void httpd_error_field(httpd_req *req, int status, const char *field, const char *value,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* For requests answered late on purpose (long-polls): parks the request
 * (no request timeout, not counted as held) and watches the socket so a
 * client that hangs up is noticed at once and on_gone runs. Every other
 * request is watched the same way from its dispatch. */
void httpd_watch_close(httpd_req *req);
const char *httpd_query(const httpd_req *req, const char *key);
/* A request header (the first of that name), or NULL. */
const char *httpd_req_header(const httpd_req *req, const char *name);

#endif

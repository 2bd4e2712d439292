/* http_client: silt's one HTTP/1.1 client and its one URL parser.
 *
 * A small blocking client with keep-alive, used by the command-line client,
 * `silt bench`'s setup and clean-up calls, and the integration tests. One
 * connection per client; it reconnects transparently when the server closed
 * an idle connection.
 *
 * `silt bench`'s load (cli/bench_load.c) drives hundreds of connections from
 * one libevent loop and so keeps evhttp's client for the requests it times:
 * making this client non-blocking would mean a second event loop here for
 * one caller, while evhttp already runs in the binary for the server. What
 * both share is the reading of a server URL: http_url_parse below, so
 * `silt bench --url` accepts and refuses exactly what every other command
 * does, and both send the same Host header. */
#ifndef SILT_HTTP_CLIENT_H
#define SILT_HTTP_CLIENT_H
#include <stdbool.h>
#include <stddef.h>
#include "base/buf.h"

typedef struct http_client http_client;

typedef struct http_response {
    int  status;        /* HTTP status code, e.g. 200 */
    buf  body;          /* response body, NUL-terminated */
    buf  content_type;  /* Content-Type header value, may be empty */
} http_response;

/* A server address read from "http://host[:port]" (scheme case-insensitive;
 * a trailing path, query or fragment is ignored; no user info). */
typedef struct http_url {
    char host[256];      /* name or address, IPv6 without brackets */
    int  port;           /* 1..65535; 80 when the URL names none */
    char hostport[272];  /* the Host header: brackets around IPv6, no ":80" */
} http_url;

/* 0, or -1 when url (which may be NULL) is not such a URL. */
int http_url_parse(const char *url, http_url *out) __attribute__((warn_unused_result));

/* url as http_url_parse reads it. NULL on a bad url. */
http_client *http_client_new(const char *url);
void         http_client_free(http_client *c);
const char  *http_client_error(const http_client *c);    /* last failure */
void         http_client_set_timeout(http_client *c, int timeout_ms); /* default 60000 */
/* Sends "Authorization: Bearer <token>" with every request from now on
 * (NULL or "": none). The token is copied. */
void         http_client_set_token(http_client *c, const char *token);

/* While a request waits for its reply, poll also watches fds (borrowed,
 * until the next call, and read at every poll: the caller may set an entry's
 * fd to -1 to stop watching it; n 0 or fn NULL: none). When one is ready,
 * fn(arg) runs and says what to do: HTTP_WATCH_WAIT goes on waiting,
 * HTTP_WATCH_ABANDON gives the request up, and a positive number of
 * milliseconds gives it up that much later unless the reply comes first
 * (the earliest such moment holds). A request given up is half-closed, so
 * the server sees that nobody waits, and a reply it had already sent is
 * still read (for at most 5 s): http_request returns it, or fails with
 * http_client_abandoned() true. fn must drain what made its descriptors
 * ready. */
#define HTTP_WATCH_WAIT    (-1)
#define HTTP_WATCH_ABANDON 0
struct pollfd;
typedef int (*http_watch_fn)(void *arg);
void http_client_watch(http_client *c, const struct pollfd *fds, int n, http_watch_fn fn, void *arg);
/* The last request was given up by the watcher. */
bool http_client_abandoned(const http_client *c);

void http_response_init(http_response *r);
void http_response_fini(http_response *r);

/* Sends one request (body may be NULL) and reads the whole response.
 * 0 on success (any HTTP status), negative on a transport failure. */
int http_request(http_client *c, const char *method, const char *path,
                 const char *body, size_t body_len, http_response *out)
    __attribute__((warn_unused_result));
/* The two halves of http_request, for a caller that does something else
 * (on another client) while the server works: begin sends the request,
 * finish reads its response (one request in flight per client). finish
 * reports a failure of begin too, so its result is the one to check. */
int http_request_begin(http_client *c, const char *method, const char *path,
                       const char *body, size_t body_len);
int http_request_finish(http_client *c, http_response *out) __attribute__((warn_unused_result));

#endif

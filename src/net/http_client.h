/* http_client: a small blocking HTTP/1.1 client with keep-alive, used by the
 * command-line client and the integration tests. One connection per client;
 * it reconnects transparently when the server closed an idle connection. */
#ifndef SILT_HTTP_CLIENT_H
#define SILT_HTTP_CLIENT_H
#include <stddef.h>
#include "base/buf.h"

typedef struct http_client http_client;

typedef struct http_response {
    int  status;        /* HTTP status code, e.g. 200 */
    buf  body;          /* response body, NUL-terminated */
    buf  content_type;  /* Content-Type header value, may be empty */
} http_response;

/* url: "http://host[:port]" (a trailing path is ignored). NULL on bad url. */
http_client *http_client_new(const char *url);
void         http_client_free(http_client *c);
const char  *http_client_error(const http_client *c);    /* last failure */
void         http_client_set_timeout(http_client *c, int timeout_ms); /* default 60000 */

void http_response_init(http_response *r);
void http_response_fini(http_response *r);

/* Sends one request (body may be NULL) and reads the whole response.
 * 0 on success (any HTTP status), negative on a transport failure. */
int http_request(http_client *c, const char *method, const char *path,
                 const char *body, size_t body_len, http_response *out)
    __attribute__((warn_unused_result));

#endif

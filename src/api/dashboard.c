/* dashboard: serves the browser dashboard's static files (the web directory and
 * Debian's Chart.js), compiled into the binary by scripts/embed.sh. The pages hold no
 * data: app.js reads every number from the public HTTP API, like any other
 * client. GET / is the page; GET /dashboard/<file> its assets.
 *
 * Caching: every reply carries an ETag (xxh3-64 of the bytes) and
 * "Cache-Control: no-cache", so a browser revalidates each load and gets a
 * 304 with no body until the binary changes; a new build is never hidden
 * behind a stale cached script.
 *
 * Compression: each file is embedded twice, as it is and gzip-compressed at
 * build time (scripts/embed.sh), so nothing is compressed per request. A
 * client whose Accept-Encoding takes gzip gets the compressed bytes with
 * "Content-Encoding: gzip" (app.js and Chart.js: 257 KB become about 84);
 * every reply says "Vary: Accept-Encoding", and the two forms have
 * different ETags, so no cache hands one to a client that asked for the
 * other. */
#include <ctype.h>
#include <stdlib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>
#include <xxhash.h>
#include "api/api.h"
#include "base/embed.h"

typedef struct asset_type {
    const char *suffix;
    const char *content_type;
} asset_type;

static const asset_type asset_types[] = {
    { ".html", "text/html; charset=utf-8" },
    { ".js",   "application/javascript; charset=utf-8" },
    { ".css",  "text/css; charset=utf-8" },
    { ".svg",  "image/svg+xml" },
};

static const char *content_type(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof asset_types / sizeof asset_types[0]; i++) {
        size_t k = strlen(asset_types[i].suffix);
        if (n > k && strcmp(name + n - k, asset_types[i].suffix) == 0) return asset_types[i].content_type;
    }
    return "application/octet-stream";
}

static const embed_asset *find_asset(const char *name)
{
    for (const embed_asset *a = embed_web; a->name; a++)
        if (strcmp(a->name, name) == 0) return a;
    return NULL;
}

/* Whether an Accept-Encoding value takes gzip: the token "gzip" (or "*")
 * without "q=0". Tokens are compared whole, case-insensitively. */
static bool accepts_gzip(const char *v)
{
    while (v && *v) {
        while (*v == ' ' || *v == '\t' || *v == ',') v++;
        size_t n = strcspn(v, ",;");
        while (n > 0 && isspace((unsigned char)v[n - 1])) n--;
        bool named = (n == 4 && strncasecmp(v, "gzip", 4) == 0) || (n == 1 && *v == '*');
        const char *end = v + strcspn(v, ",");
        const char *q = strstr(v, "q=");
        bool refused = q && q < end && strtod(q + 2, NULL) == 0;
        if (named && !refused) return true;
        v = end;
    }
    return false;
}

static void serve(httpd_req *req, const embed_asset *a)
{
    bool gz = a->gz && accepts_gzip(httpd_req_header(req, "Accept-Encoding"));
    char etag[32];
    snprintf(etag, sizeof etag, gz ? "\"%016" PRIx64 "-gz\"" : "\"%016" PRIx64 "\"",
             (uint64_t)XXH3_64bits(a->data, a->len));
    httpd_header(req, "ETag", etag);
    httpd_header(req, "Cache-Control", "no-cache");
    httpd_header(req, "Vary", "Accept-Encoding");
    const char *seen = httpd_req_header(req, "If-None-Match");
    if (seen && strcmp(seen, etag) == 0) {
        httpd_reply(req, 304, NULL, 0);
        return;
    }
    httpd_header(req, "Content-Type", content_type(a->name));
    if (gz) httpd_header(req, "Content-Encoding", "gzip");
    struct evbuffer *body = evbuffer_new();
    evbuffer_add_reference(body, gz ? a->gz : a->data, gz ? a->gz_len : a->len, NULL, NULL);   /* static bytes: no copy */
    httpd_reply_chain(req, 200, body);
}

void api_dashboard_index(httpd_req *req, server *srv)
{
    (void)srv;
    const embed_asset *a = find_asset("index.html");
    if (a) serve(req, a);
    else httpd_error(req, 404, "not found");
}

void api_dashboard_asset(httpd_req *req, server *srv)
{
    (void)srv;
    const embed_asset *a = find_asset(req->params[0]);
    if (a) serve(req, a);
    else httpd_error_field(req, 404, "asset", req->params[0], "no such dashboard file");
}

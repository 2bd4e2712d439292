/* http_client: a small blocking HTTP/1.1 client (see http_client.h).
 *
 * One TCP connection per client, kept alive between requests. The socket is
 * non-blocking and every wait goes through poll() against one deadline per
 * request (connect, send and the whole response), so a silent server costs at
 * most the configured timeout. Received bytes go into one input buffer from
 * which lines and bodies are consumed; framing follows RFC 9112: chunked, else
 * Content-Length, else until the server closes.
 *
 * A keep-alive connection may have been closed by the server while idle; that
 * shows up as a failed send or an EOF before any response byte, and the
 * request is then sent once more on a fresh connection.
 *
 * A caller that must not be deaf while a long poll waits (silt worker: its
 * commands end, a signal comes) has it watch descriptors of its own beside
 * the socket; it may then give the request up. Giving up half-closes the
 * connection rather than closing it: the server hears that nobody waits
 * (a parked claim then takes nothing), and a reply it had already sent is
 * still read, so whatever it handed out is not lost in our socket buffer. */
#include "net/http_client.h"
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/xalloc.h"

#define HTTP_MAX_LINE    (16 * 1024)          /* status, header or chunk-size line, bytes */
#define HTTP_MAX_HEADERS 200                  /* header lines per response */
#define HTTP_MAX_BODY    ((size_t)1 << 30)    /* response body, bytes */
#define HTTP_READ_CHUNK  (64 * 1024)          /* bytes asked of one recv() */
#define HTTP_RETRY       (-2)                 /* exchange failed on a stale connection */
#define HTTP_ABANDON_MS  5000                 /* the wait for a reply after giving a request up */

struct http_client {
    http_url url;           /* the server */
    char    port[6];        /* url.port as the decimal service getaddrinfo takes */
    int     fd;             /* -1 when not connected */
    int     timeout_ms;     /* per-request deadline, milliseconds */
    bool    reused;         /* fd has already carried a complete response */
    bool    got_bytes;      /* current exchange received a response byte */
    bool    timed_out;      /* current exchange hit the deadline */
    int64_t deadline;       /* CLOCK_MONOTONIC milliseconds, current request */
    buf     in;             /* received bytes; [in_pos, in.len) not yet consumed */
    size_t  in_pos;
    char   *token;          /* bearer token sent with every request; NULL: none */
    const struct pollfd *watch;   /* the caller's descriptors (borrowed), watch_n of them */
    int     watch_n;
    http_watch_fn watch_fn;
    void   *watch_arg;
    bool    abandoned;      /* current exchange was given up (half-closed) */
    int64_t abandon_at;     /* the watcher gives it up at this moment (0: not asked) */
    buf     pending;        /* the request sent last, kept to send again on a stale connection */
    bool    pending_head;   /* it is a HEAD: no body follows the reply's head */
    bool    reused_now;     /* it went out on a connection that had carried a reply */
    int     sent;           /* 0 once it is sent and its reply not yet read, else -1 */
    char    error[256];
};

/* What the status line and headers say about the body that follows. */
typedef struct http_head {
    int    status;
    bool   chunked;
    bool   close;       /* the server will close after this response */
    bool   has_length;
    size_t length;      /* Content-Length, bytes */
} http_head;

static void set_error(http_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_error(http_client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
}

/* ---- url -------------------------------------------------------------- */

static int url_port(const char *p, int *port, const char **rest)
{
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n > 5) return -1;
    long v = strtol(p, NULL, 10);
    if (v < 1 || v > 65535) return -1;
    *port = (int)v;
    *rest = p + n;
    return 0;
}

static void url_hostport(http_url *u)
{
    bool v6 = strchr(u->host, ':') != NULL;
    if (u->port == 80)
        snprintf(u->hostport, sizeof u->hostport, "%s%s%s", v6 ? "[" : "", u->host,
                 v6 ? "]" : "");
    else
        snprintf(u->hostport, sizeof u->hostport, "%s%s%s:%d", v6 ? "[" : "", u->host,
                 v6 ? "]" : "", u->port);
}

/* No user info, no blanks or control characters. */
static bool url_host_ok(const char *host, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)host[i] <= ' ' || host[i] == 0x7f || host[i] == '@') return false;
    return true;
}

int http_url_parse(const char *url, http_url *out)
{
    if (!url || strncasecmp(url, "http://", 7) != 0) return -1;
    const char *p = url + 7, *host = p, *end;
    if (*p == '[') {
        host = p + 1;
        end = strchr(host, ']');
        if (!end) return -1;
        p = end + 1;
    } else {
        end = p + strcspn(p, ":/?#");
        p = end;
    }
    size_t n = (size_t)(end - host);
    if (n >= sizeof out->host || !url_host_ok(host, n)) return -1;
    memcpy(out->host, host, n);
    out->host[n] = '\0';
    out->port = 80;
    if (*p == ':' && url_port(p + 1, &out->port, &p) < 0) return -1;
    if (*p && *p != '/' && *p != '?' && *p != '#') return -1;
    url_hostport(out);
    return 0;
}

/* ---- lifecycle -------------------------------------------------------- */

http_client *http_client_new(const char *url)
{
    http_url u;
    if (http_url_parse(url, &u) < 0) return NULL;
    http_client *c = xcalloc(1, sizeof *c);
    c->url = u;
    snprintf(c->port, sizeof c->port, "%d", u.port);
    c->fd = -1;
    c->timeout_ms = 60000;
    c->sent = -1;
    buf_init(&c->in);
    buf_init(&c->pending);
    return c;
}

static void conn_close(http_client *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->reused = false;
    buf_reset(&c->in);
    c->in_pos = 0;
}

void http_client_free(http_client *c)
{
    if (!c) return;
    conn_close(c);
    buf_fini(&c->in);
    buf_fini(&c->pending);
    free(c->token);
    free(c);
}

const char *http_client_error(const http_client *c) { return c->error; }

void http_client_set_token(http_client *c, const char *token)
{
    free(c->token);
    c->token = token && *token ? xstrdup(token) : NULL;
}

void http_client_watch(http_client *c, const struct pollfd *fds, int n, http_watch_fn fn, void *arg)
{
    c->watch = fds;
    c->watch_n = fn && fds ? n : 0;
    c->watch_fn = fn;
    c->watch_arg = arg;
}

bool http_client_abandoned(const http_client *c) { return c->abandoned; }

void http_client_set_timeout(http_client *c, int timeout_ms)
{
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 60000;
}

void http_response_init(http_response *r)
{
    r->status = 0;
    buf_init(&r->body);
    buf_init(&r->content_type);
}

void http_response_fini(http_response *r)
{
    buf_fini(&r->body);
    buf_fini(&r->content_type);
    r->status = 0;
}

static void response_reset(http_response *r)
{
    r->status = 0;
    buf_reset(&r->body);
    buf_reserve(&r->body, 0);   /* body.data is never NULL after a request */
    buf_reset(&r->content_type);
    buf_reserve(&r->content_type, 0);
}

/* ---- socket i/o ------------------------------------------------------- */

/* The request is given up: the server reads end of file, we read on. */
static void abandon(http_client *c)
{
    c->abandoned = true;
    shutdown(c->fd, SHUT_WR);
    int64_t until = clock_mono_ms() + HTTP_ABANDON_MS;
    if (until < c->deadline) c->deadline = until;
}

/* What the watcher said: now, later (the earliest moment asked), or wait. */
static void heed_watcher(http_client *c, int said)
{
    if (said == HTTP_WATCH_ABANDON) { abandon(c); return; }
    if (said < 0) return;
    int64_t at = clock_mono_ms() + said;
    if (!c->abandon_at || at < c->abandon_at) c->abandon_at = at;
}

/* One poll of fd, and of the caller's descriptors while a reply is awaited:
 * > 0 fd is ready, 0 not yet (the watcher ran, or nothing happened). */
static int poll_once(http_client *c, int fd, short events, int64_t left)
{
    bool watching = c->watch_n > 0 && events == POLLIN && !c->abandoned;
    if (watching && c->abandon_at) {
        int64_t until = c->abandon_at - clock_mono_ms();
        if (until <= 0) { abandon(c); return 0; }
        if (until < left) left = until;
    }
    struct pollfd one[8], *pfd = one;
    int n = 1 + (watching ? c->watch_n : 0);
    if (n > (int)(sizeof one / sizeof one[0])) pfd = xcalloc((size_t)n, sizeof *pfd);
    pfd[0] = (struct pollfd){ .fd = fd, .events = events };
    if (watching) memcpy(pfd + 1, c->watch, (size_t)c->watch_n * sizeof *pfd);
    int rc = poll(pfd, (nfds_t)n, left > INT32_MAX ? INT32_MAX : (int)left);
    bool ready = rc > 0 && pfd[0].revents;
    if (pfd != one) free(pfd);
    if (rc < 0) return errno == EINTR ? 0 : -1;
    if (rc > 0 && watching) heed_watcher(c, c->watch_fn(c->watch_arg));
    return ready ? 1 : 0;
}

/* Waits until fd is ready for events or the request deadline passes. */
static int wait_io(http_client *c, int fd, short events)
{
    for (;;) {
        int64_t left = c->deadline - clock_mono_ms();
        if (left <= 0) break;
        int rc = poll_once(c, fd, events, left);
        if (rc > 0) return 0;
        if (rc < 0) {
            set_error(c, "poll failed: %s", strerror(errno));
            return -1;
        }
    }
    c->timed_out = true;
    set_error(c, "timeout after %d ms talking to %s", c->timeout_ms, c->url.hostport);
    return -1;
}

/* One non-blocking connect attempt; fd or -1 with c->error set. */
static int connect_one(http_client *c, const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
    if (fd < 0) {
        set_error(c, "could not create socket: %s", strerror(errno));
        return -1;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) err = errno;
        else if (wait_io(c, fd, POLLOUT) < 0) { close(fd); return -1; }
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
    }
    if (err) {
        set_error(c, "could not connect to %s: %s", c->url.hostport, strerror(err));
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int conn_open(http_client *c)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(c->url.host, c->port, &hints, &res);
    if (rc != 0) {
        set_error(c, "could not resolve host \"%s\": %s", c->url.host, gai_strerror(rc));
        return -1;
    }
    for (struct addrinfo *ai = res; ai && c->fd < 0 && !c->timed_out; ai = ai->ai_next)
        c->fd = connect_one(c, ai);
    freeaddrinfo(res);
    c->reused = false;
    return c->fd >= 0 ? 0 : -1;
}

static int send_all(http_client *c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) { p += w; n -= (size_t)w; continue; }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_io(c, c->fd, POLLOUT) < 0) return -1;
            continue;
        }
        set_error(c, "could not send to %s: %s", c->url.hostport, strerror(errno));
        return -1;
    }
    return 0;
}

/* Reads more bytes into c->in: 1 got some, 0 the server closed, -1 error. */
static int fill(http_client *c)
{
    if (c->in_pos == c->in.len) {
        buf_reset(&c->in);
        c->in_pos = 0;
    }
    buf_reserve(&c->in, HTTP_READ_CHUNK);
    for (;;) {
        ssize_t r = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1, 0);
        if (r > 0) {
            c->in.len += (size_t)r;
            c->in.data[c->in.len] = '\0';
            c->got_bytes = true;
            return 1;
        }
        if (r == 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            set_error(c, "could not receive from %s: %s", c->url.hostport, strerror(errno));
            return -1;
        }
        if (wait_io(c, c->fd, POLLIN) < 0) return -1;
    }
}

/* fill() for when the response is not complete yet: EOF is an error. */
static int fill_more(http_client *c)
{
    int rc = fill(c);
    if (rc == 0)
        set_error(c, "%s closed the connection %s", c->url.hostport,
                  c->got_bytes ? "mid-response" : "before responding");
    return rc > 0 ? 0 : -1;
}

/* ---- response parsing ------------------------------------------------- */

/* Next line without its CRLF (a bare LF is accepted) into line. */
static int read_line(http_client *c, buf *line)
{
    for (;;) {
        char *start = c->in.data + c->in_pos;
        size_t avail = c->in.len - c->in_pos;
        char *nl = avail ? memchr(start, '\n', avail) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - start);
            buf_reset(line);
            buf_append(line, start, n > 0 && start[n - 1] == '\r' ? n - 1 : n);
            c->in_pos += n + 1;
            return 0;
        }
        if (avail > HTTP_MAX_LINE) {
            set_error(c, "response line longer than %d bytes", HTTP_MAX_LINE);
            return -1;
        }
        if (fill_more(c) < 0) return -1;
    }
}

/* Moves n bytes of body into out. */
static int read_exact(http_client *c, size_t n, buf *out)
{
    while (n > 0) {
        size_t avail = c->in.len - c->in_pos;
        if (avail == 0) {
            if (fill_more(c) < 0) return -1;
            continue;
        }
        size_t take = avail < n ? avail : n;
        buf_append(out, c->in.data + c->in_pos, take);
        c->in_pos += take;
        n -= take;
    }
    return 0;
}

static int read_until_close(http_client *c, buf *out)
{
    for (;;) {
        size_t avail = c->in.len - c->in_pos;
        if (out->len + avail > HTTP_MAX_BODY) {
            set_error(c, "response body larger than %zu bytes", HTTP_MAX_BODY);
            return -1;
        }
        buf_append(out, c->in.data + c->in_pos, avail);
        c->in_pos += avail;
        int rc = fill(c);
        if (rc <= 0) return rc;
    }
}

static int parse_size(const char *s, int base, size_t *out)
{
    if (!(base == 16 ? isxdigit((unsigned char)*s) : (*s >= '0' && *s <= '9'))) return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, base);
    if (errno || v > HTTP_MAX_BODY) return -1;
    while (*end == ' ' || *end == '\t') end++;
    if (*end && !(base == 16 && *end == ';')) return -1;   /* chunk extensions */
    *out = (size_t)v;
    return 0;
}

static int read_chunked(http_client *c, buf *line, buf *out)
{
    for (;;) {
        size_t n;
        if (read_line(c, line) < 0) return -1;
        if (parse_size(line->data, 16, &n) < 0 || out->len + n > HTTP_MAX_BODY) {
            set_error(c, "malformed chunk size \"%.40s\"", line->data);
            return -1;
        }
        if (n == 0) break;
        if (read_exact(c, n, out) < 0 || read_line(c, line) < 0) return -1;
        if (line->len != 0) {
            set_error(c, "malformed chunk terminator");
            return -1;
        }
    }
    do {   /* trailer section up to the empty line */
        if (read_line(c, line) < 0) return -1;
    } while (line->len != 0);
    return 0;
}

static int parse_status(http_client *c, const char *s, http_head *h)
{
    if (strncmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' '
        || !isdigit((unsigned char)s[9]) || !isdigit((unsigned char)s[10])
        || !isdigit((unsigned char)s[11]) || (s[12] != ' ' && s[12] != '\0')) {
        set_error(c, "malformed status line \"%.60s\"", s);
        return -1;
    }
    memset(h, 0, sizeof *h);
    h->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    h->close = s[7] == '0';   /* HTTP/1.0 closes unless it says keep-alive */
    return 0;
}

static bool has_token(const char *value, const char *token)
{
    return strcasestr(value, token) != NULL;
}

static int parse_header(http_client *c, char *line, http_head *h, http_response *out)
{
    char *colon = strchr(line, ':');
    if (!colon || colon == line) {
        set_error(c, "malformed header line \"%.60s\"", line);
        return -1;
    }
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    for (char *e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); ) *--e = '\0';
    if (strcasecmp(line, "content-length") == 0) {
        if (parse_size(v, 10, &h->length) < 0) {
            set_error(c, "bad content-length \"%.40s\"", v);
            return -1;
        }
        h->has_length = true;
    } else if (strcasecmp(line, "transfer-encoding") == 0) {
        h->chunked = has_token(v, "chunked");
    } else if (strcasecmp(line, "connection") == 0) {
        if (has_token(v, "close")) h->close = true;
        else if (has_token(v, "keep-alive")) h->close = false;
    } else if (strcasecmp(line, "content-type") == 0) {
        buf_reset(&out->content_type);
        buf_puts(&out->content_type, v);
    }
    return 0;
}

static int read_head(http_client *c, buf *line, http_head *h, http_response *out)
{
    if (read_line(c, line) < 0 || parse_status(c, line->data, h) < 0) return -1;
    for (int n = 0;; n++) {
        if (read_line(c, line) < 0) return -1;
        if (line->len == 0) return 0;
        if (n == HTTP_MAX_HEADERS) {
            set_error(c, "more than %d response headers", HTTP_MAX_HEADERS);
            return -1;
        }
        if (parse_header(c, line->data, h, out) < 0) return -1;
    }
}

static int read_body(http_client *c, buf *line, http_head *h, bool head_req, buf *out)
{
    if (head_req || h->status == 204 || h->status == 304) return 0;
    if (h->chunked) return read_chunked(c, line, out);
    if (h->has_length) return read_exact(c, h->length, out);
    h->close = true;
    return read_until_close(c, out);
}

static int read_response(http_client *c, bool head_req, http_response *out)
{
    buf line;
    buf_init(&line);
    http_head h;
    int rc;
    do {   /* interim 1xx responses carry no body and are skipped */
        rc = read_head(c, &line, &h, out);
    } while (rc == 0 && h.status < 200);
    if (rc == 0) rc = read_body(c, &line, &h, head_req, &out->body);
    buf_fini(&line);
    if (rc < 0) return -1;
    out->status = h.status;
    /* Bytes past the response were not asked for: the stream is out of step. */
    if (h.close || c->in_pos != c->in.len) conn_close(c);
    else c->reused = true;
    return 0;
}

/* ---- request ---------------------------------------------------------- */

static bool method_has_body(const char *method)
{
    return strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0
        || strcmp(method, "PATCH") == 0;
}

static bool token_ok(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f) return false;
    return true;
}

static void build_request(const http_client *c, buf *req, const char *method,
                          const char *path, const char *body, size_t body_len)
{
    buf_printf(req, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: silt\r\n"
               "Accept: application/json\r\nConnection: keep-alive\r\n",
               method, path, c->url.hostport);
    if (c->token) buf_printf(req, "Authorization: Bearer %s\r\n", c->token);
    if (body)
        buf_printf(req, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                   body_len);
    else if (method_has_body(method))
        buf_puts(req, "Content-Length: 0\r\n");
    buf_puts(req, "\r\n");
    if (body) buf_append(req, body, body_len);
}

/* The sending half of one attempt: 0 sent, HTTP_RETRY when a reused
 * connection proved stale (the server never saw the request), -1. */
static int send_request(http_client *c)
{
    c->reused_now = c->fd >= 0;
    c->got_bytes = false;
    if (!c->reused_now && conn_open(c) < 0) return -1;
    if (send_all(c, c->pending.data, c->pending.len) == 0) return 0;
    conn_close(c);
    return c->reused_now && !c->timed_out ? HTTP_RETRY : -1;
}

/* The reading half: 0, HTTP_RETRY (as above, no response byte came), -1. */
static int read_reply(http_client *c, http_response *out)
{
    int rc = read_response(c, c->pending_head, out);
    if (c->abandoned) conn_close(c);   /* half-closed: not for another request */
    if (rc == 0) return 0;
    if (c->abandoned) set_error(c, "request given up before %s replied", c->url.hostport);
    conn_close(c);
    response_reset(out);
    return c->reused_now && !c->got_bytes && !c->timed_out && !c->abandoned ? HTTP_RETRY : -1;
}

int http_request_begin(http_client *c, const char *method, const char *path, const char *body, size_t body_len)
{
    c->error[0] = '\0';
    buf_reset(&c->pending);
    if (!token_ok(method) || !token_ok(path) || path[0] != '/') {
        set_error(c, "invalid request line");
        return c->sent = -1;
    }
    build_request(c, &c->pending, method, path, body, body_len);
    c->timed_out = false;
    c->abandoned = false;
    c->abandon_at = 0;
    c->deadline = clock_mono_ms() + c->timeout_ms;
    c->pending_head = strcmp(method, "HEAD") == 0;
    c->sent = send_request(c);
    if (c->sent == HTTP_RETRY) c->sent = send_request(c);
    return c->sent == 0 ? 0 : -1;
}

int http_request_finish(http_client *c, http_response *out)
{
    response_reset(out);
    if (c->sent < 0) return -1;
    int rc = read_reply(c, out);
    if (rc == HTTP_RETRY && send_request(c) == 0) rc = read_reply(c, out);
    c->sent = -1;
    return rc == 0 ? 0 : -1;
}

int http_request(http_client *c, const char *method, const char *path,
                 const char *body, size_t body_len, http_response *out)
{
    if (http_request_begin(c, method, path, body, body_len) < 0) {
        response_reset(out);
        return -1;
    }
    return http_request_finish(c, out);
}

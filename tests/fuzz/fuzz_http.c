/* fuzz_http: libFuzzer target for silt's HTTP request path, bytes on a socket
 * to a reply. Each input is written, as a client would, to a real silt HTTP
 * server running in this process on 127.0.0.1 (evhttp reads the request line
 * and headers, httpd.c turns them into an httpd_req, routes.c matches and
 * decodes the path, and the handler reads the query and the JSON body), then
 * the client half-closes and reads until the server closes.
 *
 * Why a real listener rather than calling the parsers: the bytes an attacker
 * controls reach silt through evhttp first, and the interesting failures sit
 * in the seams (a header evhttp accepts and httpd.c mishandles, a path that
 * decodes to something the route table does not expect, a body the reader
 * takes and a handler misreads). The server has every engine a real one has,
 * but its database is unreachable (a Unix socket directory that does not
 * exist): a handler validates its whole input, and a request that gets as
 * far as the database is answered 503 at once by the pool. So everything up
 * to the SQL is covered, and nothing waits on a network.
 *
 * Invariants: no memory error or undefined behaviour (ASan, UBSan), no leak
 * (LeakSanitizer: every request is finished before the next input), every
 * request answered or dropped within a bound (a request still in flight
 * after it is a hang), and whatever the server sends starts with a status
 * line. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "api/api.h"
#include "api/server.h"
#include "base/clock.h"

#define FUZZ_HANG_MS 10000   /* a request unanswered this long after its client left is a hang */

#define REQUIRE(c) \
    do { if (!(c)) { fprintf(stderr, "invariant failed: %s (line %d)\n", #c, __LINE__); abort(); } } while (0)

static server srv;
static struct sockaddr_in addr;

/* A port nothing listens on: bind to 0, read it back, release it. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    REQUIRE(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    REQUIRE(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* The server server.c builds (server_build: its engines, its limits and its
 * admission: api_admit, then the route table; its auth here), against a
 * database that is not there, on a loopback port. */
static void start_server(void)
{
    setenv("LOG_LEVEL", "error", 1);
    setenv("RETENTION_INTERVAL_MS", "0", 1);
    setenv("WORKERS", "1", 1);   /* one loop, driven turn by turn below; the others run the same parser */
    setenv("DATABASE_URL", "host=/nonexistent/silt-fuzz dbname=silt connect_timeout=1", 1);
    int port = free_port();
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    setenv("HOST", "127.0.0.1", 1);
    setenv("PORT", port_text, 1);
    char err[512];
    REQUIRE(config_load(&srv.cfg, err, sizeof err) == 0);
    conffile_defaults(&srv.conf);
    REQUIRE((srv.auth = auth_new(&srv.cfg, err, sizeof err)) != NULL);   /* JWT off: every route open */
    signal(SIGPIPE, SIG_IGN);
    char *conninfo = config_conninfo(&srv.cfg);
    REQUIRE(server_build(&srv, conninfo) == 0);
    free(conninfo);
    addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
}

static void on_client(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what; (void)arg;   /* only wakes the loop: converse() reads */
}

/* One turn of the server's loop: runs what is ready, or waits for the
 * server's sockets, its timers, the client's socket or 50 ms. */
static void turn(struct event *client)
{
    struct timeval tv = { 0, 50000 };
    event_add(client, &tv);
    event_base_loop(srv.base, EVLOOP_ONCE);
}

typedef struct exchange {
    size_t sent;
    bool   shut;       /* the client's write side is closed */
    char   head[16];   /* the reply's first bytes */
    size_t got;
} exchange;

/* Sends what is left, half-closes when done. -1: the server refused more. */
static int client_write(int fd, exchange *x, const uint8_t *data, size_t size)
{
    if (x->sent < size) {
        ssize_t n = send(fd, data + x->sent, size - x->sent, MSG_NOSIGNAL);
        if (n > 0) x->sent += (size_t)n;
        else if (n < 0 && errno != EAGAIN && errno != EINTR) return -1;
    } else if (!x->shut) {
        shutdown(fd, SHUT_WR);
        x->shut = true;
    }
    return 0;
}

/* 1: the server closed (EOF or reset); 0: carry on. */
static int client_read(int fd, exchange *x)
{
    char chunk[4096];
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return 1;
    if (n > 0 && x->got < sizeof x->head) {
        size_t k = (size_t)n < sizeof x->head - x->got ? (size_t)n : sizeof x->head - x->got;
        memcpy(x->head + x->got, chunk, k);
        x->got += k;
    }
    return 0;
}

static void converse(const uint8_t *data, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    REQUIRE(fd >= 0);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) REQUIRE(errno == EINPROGRESS);
    struct event *client = event_new(srv.base, fd, EV_READ, on_client, NULL);
    exchange x = { 0 };
    int64_t deadline = clock_mono_ms() + FUZZ_HANG_MS;
    bool closed = false;
    while (!closed && clock_mono_ms() < deadline) {
        if (client_write(fd, &x, data, size) < 0) x.sent = size;   /* refused: just read */
        turn(client);
        closed = client_read(fd, &x) == 1;
    }
    event_free(client);
    close(fd);
    REQUIRE(closed);
    /* evhttp echoes the request's version ("HTTP/0.1 400"): any is fine. */
    if (x.got >= 5) REQUIRE(memcmp(x.head, "HTTP/", 5) == 0);
}

/* Work a request started (a push flush, a parked pop) finishes before the
 * next input, so that LeakSanitizer sees only real leaks. */
static void settle(void)
{
    int64_t deadline = clock_mono_ms() + FUZZ_HANG_MS;
    while ((httpd_inflight(srv.http) > 0 || httpd_arriving(srv.http) > 0 || db_pool_busy(srv.pool) > 0) &&
           clock_mono_ms() < deadline) {
        struct timeval tv = { 0, 10000 };
        event_base_loopexit(srv.base, &tv);   /* bounds the turn when nothing is ready */
        event_base_loop(srv.base, EVLOOP_ONCE);
    }
    REQUIRE(httpd_inflight(srv.http) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!srv.base) start_server();
    converse(data, size);
    settle();
    return 0;
}

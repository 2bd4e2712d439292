/* test_http_client: the HTTP client against a fake server in a child process.
 * The parent binds an ephemeral 127.0.0.1 port, forks a child that accepts
 * connections and hands each one to a handler that writes canned responses,
 * then drives http_client at it and checks what was parsed. */
#include "harness.h"
#include "net/http_client.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Serves one accepted connection; conn counts accepts from 0. */
typedef void (*fake_handler)(int conn, int fd);

typedef struct fake_server {
    pid_t pid;
    int   port;
} fake_server;

static void fake_start(fake_server *s, fake_handler handle)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(lfd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(lfd, 16) == 0);
    CHECK(getsockname(lfd, (struct sockaddr *)&a, &len) == 0);
    s->port = ntohs(a.sin_port);
    s->pid = fork();
    CHECK(s->pid >= 0);
    if (s->pid == 0) {
        alarm(20);   /* never outlive a test that failed before fake_stop */
        for (int n = 0;; n++) {
            int fd = accept(lfd, NULL, NULL);
            if (fd < 0) _exit(1);
            handle(n, fd);
            close(fd);
        }
    }
    close(lfd);
}

static void fake_stop(fake_server *s)
{
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
}

static http_client *fake_client(const fake_server *s)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    http_client *c = http_client_new(url);
    CHECK(c != NULL);
    http_client_set_timeout(c, 5000);
    return c;
}

static void fake_write(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) _exit(1);
        p += w;
        n -= (size_t)w;
    }
}

static void fake_puts(int fd, const char *s) { fake_write(fd, s, strlen(s)); }

/* Reads one request (head and Content-Length body) into req; -1 on EOF.
 * Byte by byte, so nothing of a following request is consumed. */
static int fake_read_request(int fd, buf *req)
{
    buf_reset(req);
    char ch;
    while (req->len < 4 || memcmp(req->data + req->len - 4, "\r\n\r\n", 4) != 0) {
        if (read(fd, &ch, 1) != 1) return -1;
        buf_putc(req, ch);
    }
    const char *cl = strcasestr(req->data, "\r\ncontent-length:");
    long n = cl ? strtol(cl + 17, NULL, 10) : 0;
    for (; n > 0; n--) {
        if (read(fd, &ch, 1) != 1) return -1;
        buf_putc(req, ch);
    }
    return 0;
}

/* Answers every request on the connection with "conn=C req=R". */
static void counting_response(int fd, int conn, int req, const char *extra)
{
    char body[64], head[256];
    int n = snprintf(body, sizeof body, "conn=%d req=%d", conn, req);
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n", extra, n);
    fake_puts(fd, head);
    fake_puts(fd, body);
}

static void handle_counting(int conn, int fd)
{
    buf req;
    buf_init(&req);
    for (int r = 0; fake_read_request(fd, &req) == 0; r++)
        counting_response(fd, conn, r, "");
    buf_fini(&req);
}

static void get_ok(http_client *c, const char *path, http_response *r)
{
    int rc = http_request(c, "GET", path, NULL, 0, r);
    if (rc != 0) harness_failf(__FILE__, __LINE__, "request failed: %s", http_client_error(c));
}

TEST(http_client_content_length_body)
{
    fake_server s;
    fake_start(&s, handle_counting);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    get_ok(c, "/health", &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body.data, "conn=0 req=0");
    CHECK_INT(r.body.len, 12);
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

TEST(http_client_keep_alive_reuses_connection)
{
    fake_server s;
    fake_start(&s, handle_counting);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    for (int i = 0; i < 3; i++) get_ok(c, "/x", &r);
    CHECK_STR(r.body.data, "conn=0 req=2");
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

/* Echoes the raw request back as the body, so the test can read it. */
static void handle_echo(int conn, int fd)
{
    (void)conn;
    buf req;
    buf_init(&req);
    while (fake_read_request(fd, &req) == 0) {
        char head[128];
        snprintf(head, sizeof head,
                 "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n", req.len);
        fake_puts(fd, head);
        fake_write(fd, req.data, req.len);
    }
    buf_fini(&req);
}

TEST(http_client_request_format)
{
    fake_server s;
    fake_start(&s, handle_echo);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    CHECK_INT(http_request(c, "POST", "/api/v1/push", "{\"a\":1}", 7, &r), 0);
    CHECK_INT(r.status, 201);
    CHECK_STR(r.content_type.data, "application/json");
    const char *b = r.body.data;
    CHECK(strncmp(b, "POST /api/v1/push HTTP/1.1\r\n", 28) == 0);
    CHECK(strstr(b, "\r\nContent-Type: application/json\r\n") != NULL);
    CHECK(strstr(b, "\r\nContent-Length: 7\r\n") != NULL);
    CHECK(strstr(b, "\r\nConnection: keep-alive\r\n") != NULL);
    char host[64];
    snprintf(host, sizeof host, "\r\nHost: 127.0.0.1:%d\r\n", s.port);
    CHECK(strstr(b, host) != NULL);
    CHECK(strcmp(b + r.body.len - 11, "\r\n\r\n{\"a\":1}") == 0);
    /* A bodiless POST still says how long its body is. */
    CHECK_INT(http_request(c, "POST", "/x", NULL, 0, &r), 0);
    CHECK(strstr(r.body.data, "\r\nContent-Length: 0\r\n") != NULL);
    CHECK(strstr(r.body.data, "Content-Type") == NULL);
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

/* A token set on the client goes with every request until it is cleared. */
TEST(http_client_sends_its_bearer_token)
{
    fake_server s;
    fake_start(&s, handle_echo);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    CHECK_INT(http_request(c, "GET", "/a", NULL, 0, &r), 0);
    CHECK(strstr(r.body.data, "Authorization") == NULL);
    http_client_set_token(c, "eyJ.x.y");
    CHECK_INT(http_request(c, "GET", "/a", NULL, 0, &r), 0);
    CHECK(strstr(r.body.data, "\r\nAuthorization: Bearer eyJ.x.y\r\n") != NULL);
    http_client_set_token(c, "");
    CHECK_INT(http_request(c, "GET", "/a", NULL, 0, &r), 0);
    CHECK(strstr(r.body.data, "Authorization") == NULL);
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

/* Chunked, written in pieces so the client sees partial reads. */
static void handle_chunked(int conn, int fd)
{
    (void)conn;
    static const char *const parts[] = {
        "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\ncontent-type: text/plain\r\n\r\n",
        "4\r\nWi", "ki\r\n", "5;name=value\r\npedia\r\n", "d\r\n in\r\n\r\nchunks\r\n",
        "0\r\nX-Trailer: yes\r\n", "\r\n",
    };
    buf req;
    buf_init(&req);
    while (fake_read_request(fd, &req) == 0) {
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            fake_puts(fd, parts[i]);
            usleep(5000);
        }
    }
    buf_fini(&req);
}

TEST(http_client_chunked_body)
{
    fake_server s;
    fake_start(&s, handle_chunked);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    for (int i = 0; i < 2; i++) {   /* the connection stays usable after it */
        get_ok(c, "/chunked", &r);
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body.data, "Wikipedia in\r\n\r\nchunks");
        CHECK_STR(r.content_type.data, "text/plain");
    }
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

/* One response per connection, announced with Connection: close. */
static void handle_close(int conn, int fd)
{
    buf req;
    buf_init(&req);
    if (fake_read_request(fd, &req) == 0) counting_response(fd, conn, 0, "Connection: close\r\n");
    buf_fini(&req);
}

TEST(http_client_connection_close_reconnects)
{
    fake_server s;
    fake_start(&s, handle_close);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    get_ok(c, "/a", &r);
    CHECK_STR(r.body.data, "conn=0 req=0");
    get_ok(c, "/b", &r);
    CHECK_STR(r.body.data, "conn=1 req=0");
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

/* Promises keep-alive, then closes the idle connection anyway. */
static void handle_idle_close(int conn, int fd)
{
    buf req;
    buf_init(&req);
    if (fake_read_request(fd, &req) == 0) counting_response(fd, conn, 0, "");
    buf_fini(&req);
}

TEST(http_client_stale_keep_alive_retries_once)
{
    fake_server s;
    fake_start(&s, handle_idle_close);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    get_ok(c, "/a", &r);
    CHECK_STR(r.body.data, "conn=0 req=0");
    usleep(50000);   /* let the server's FIN arrive */
    get_ok(c, "/b", &r);
    CHECK_STR(r.body.data, "conn=1 req=0");
    get_ok(c, "/c", &r);   /* immediately: may or may not see the FIN yet */
    CHECK_STR(r.body.data, "conn=2 req=0");
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

/* Reads the request and hangs up without a word. */
static void handle_hangup(int conn, int fd)
{
    (void)conn;
    buf req;
    buf_init(&req);
    (void)fake_read_request(fd, &req);
    buf_fini(&req);
}

TEST(http_client_fresh_connection_closed_is_error)
{
    fake_server s;
    fake_start(&s, handle_hangup);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    CHECK(http_request(c, "GET", "/", NULL, 0, &r) < 0);
    CHECK(strstr(http_client_error(c), "closed the connection before responding") != NULL);
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

static void handle_until_close(int conn, int fd)
{
    (void)conn;
    buf req;
    buf_init(&req);
    if (fake_read_request(fd, &req) == 0) fake_puts(fd, "HTTP/1.0 200 OK\r\n\r\nhello, world");
    buf_fini(&req);
}

TEST(http_client_body_until_close)
{
    fake_server s;
    fake_start(&s, handle_until_close);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    for (int i = 0; i < 2; i++) {
        get_ok(c, "/", &r);
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body.data, "hello, world");
        CHECK_INT(r.content_type.len, 0);
    }
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

static void handle_odd_headers(int conn, int fd)
{
    (void)conn;
    buf req;
    buf_init(&req);
    while (fake_read_request(fd, &req) == 0) {
        fake_puts(fd, "HTTP/1.1 100 Continue\r\n\r\n");
        fake_puts(fd, "HTTP/1.1 404 Not Found\r\nCONTENT-type:   application/json  \r\n"
                      "content-LENGTH: 19\r\nX-Empty:\r\n\r\n{\"error\":\"absent\"}\n");
    }
    buf_fini(&req);
}

TEST(http_client_header_case_and_interim)
{
    fake_server s;
    fake_start(&s, handle_odd_headers);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    get_ok(c, "/", &r);
    CHECK_INT(r.status, 404);
    CHECK_STR(r.content_type.data, "application/json");
    CHECK_STR(r.body.data, "{\"error\":\"absent\"}\n");
    get_ok(c, "/", &r);   /* same connection, interim response skipped again */
    CHECK_INT(r.status, 404);
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

static void handle_204(int conn, int fd)
{
    buf req;
    buf_init(&req);
    for (int r = 0; fake_read_request(fd, &req) == 0; r++) {
        if (r == 0) fake_puts(fd, "HTTP/1.1 204 No Content\r\n\r\n");
        else counting_response(fd, conn, r, "");
    }
    buf_fini(&req);
}

TEST(http_client_no_content_keeps_connection)
{
    fake_server s;
    fake_start(&s, handle_204);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    get_ok(c, "/pop", &r);
    CHECK_INT(r.status, 204);
    CHECK(r.body.data != NULL);
    CHECK_INT(r.body.len, 0);
    get_ok(c, "/pop", &r);
    CHECK_STR(r.body.data, "conn=0 req=1");
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

#define BIG_BODY (3 * 1024 * 1024 + 17)

static void handle_big(int conn, int fd)
{
    (void)conn;
    buf req;
    buf_init(&req);
    if (fake_read_request(fd, &req) == 0) {
        char head[96];
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", BIG_BODY);
        fake_puts(fd, head);
        char *body = malloc(BIG_BODY);
        for (int i = 0; i < BIG_BODY; i++) body[i] = (char)('a' + i % 26);
        fake_write(fd, body, BIG_BODY);
        free(body);
        usleep(200000);
    }
    buf_fini(&req);
}

TEST(http_client_large_body)
{
    fake_server s;
    fake_start(&s, handle_big);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    get_ok(c, "/big", &r);
    CHECK_INT(r.body.len, BIG_BODY);
    for (int i = 0; i < BIG_BODY; i++)
        if (r.body.data[i] != (char)('a' + i % 26)) CHECK(!"body byte mismatch");
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

static void handle_silent(int conn, int fd)
{
    (void)conn;
    buf req;
    buf_init(&req);
    (void)fake_read_request(fd, &req);
    sleep(10);
    buf_fini(&req);
}

TEST(http_client_timeout)
{
    fake_server s;
    fake_start(&s, handle_silent);
    http_client *c = fake_client(&s);
    http_client_set_timeout(c, 200);
    http_response r;
    http_response_init(&r);
    time_t t0 = time(NULL);
    CHECK(http_request(c, "GET", "/", NULL, 0, &r) < 0);
    CHECK(time(NULL) - t0 < 3);
    CHECK(strstr(http_client_error(c), "timeout after 200 ms") != NULL);
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

static void handle_garbage(int conn, int fd)
{
    (void)conn;
    buf req;
    buf_init(&req);
    if (fake_read_request(fd, &req) == 0) fake_puts(fd, "SPDY/3 ok\r\n\r\n");
    buf_fini(&req);
}

TEST(http_client_malformed_status_line)
{
    fake_server s;
    fake_start(&s, handle_garbage);
    http_client *c = fake_client(&s);
    http_response r;
    http_response_init(&r);
    CHECK(http_request(c, "GET", "/", NULL, 0, &r) < 0);
    CHECK(strstr(http_client_error(c), "malformed status line") != NULL);
    http_response_fini(&r);
    http_client_free(c);
    fake_stop(&s);
}

TEST(http_client_connection_refused)
{
    /* Bind a port, then release it: nothing listens there. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    http_client *c = http_client_new(url);
    CHECK(c != NULL);
    http_response r;
    http_response_init(&r);
    CHECK(http_request(c, "GET", "/", NULL, 0, &r) < 0);
    CHECK(strstr(http_client_error(c), "could not connect") != NULL);
    CHECK(http_request(c, "GET", "no-slash", NULL, 0, &r) < 0);
    CHECK_STR(http_client_error(c), "invalid request line");
    http_response_fini(&r);
    http_client_free(c);
}

TEST(http_url_parse_refuses_what_is_not_http_host_port)
{
    static const char *const bad[] = {
        "ftp://x", "https://localhost", "http://", "http://:80", "localhost:6632",
        "http://h:0", "http://h:65536", "http://h:", "http://h:8x", "http://[::1",
        "http://user@h", "", "http://h:123456", "http://[]:80", "http://h:-1",
        "http://h x", "http:/h",
    };
    http_url u;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (http_url_parse(bad[i], &u) == 0) CHECK_STR(bad[i], "(rejected)");
        if (http_client_new(bad[i]) != NULL) CHECK_STR(bad[i], "(rejected by the client)");
    }
    char long_host[300];
    memset(long_host, 'h', sizeof long_host);
    memcpy(long_host, "http://", 7);
    long_host[sizeof long_host - 1] = '\0';
    CHECK(http_url_parse(long_host, &u) < 0);
    CHECK(http_url_parse(NULL, &u) < 0);
    CHECK(http_client_new(NULL) == NULL);
}

TEST(http_url_parse_reads_host_port_and_host_header)
{
    static const struct { const char *url, *host; int port; const char *hostport; } good[] = {
        { "http://localhost", "localhost", 80, "localhost" },
        { "http://localhost:6632", "localhost", 6632, "localhost:6632" },
        { "http://127.0.0.1:6632/ignored/path", "127.0.0.1", 6632, "127.0.0.1:6632" },
        { "HTTP://Example.com", "Example.com", 80, "Example.com" },
        { "http://[::1]:6632", "::1", 6632, "[::1]:6632" },
        { "http://[::1]", "::1", 80, "[::1]" },
        { "http://h:65535?q", "h", 65535, "h:65535" },
        { "http://h:80#f", "h", 80, "h" },
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        http_url u;
        if (http_url_parse(good[i].url, &u) < 0) { CHECK_STR(good[i].url, "(accepted)"); continue; }
        CHECK_STR(u.host, good[i].host);
        CHECK(u.port == good[i].port);
        CHECK_STR(u.hostport, good[i].hostport);
        http_client *c = http_client_new(good[i].url);
        if (!c) CHECK_STR(good[i].url, "(accepted by the client)");
        http_client_free(c);
    }
    http_client_free(NULL);
}

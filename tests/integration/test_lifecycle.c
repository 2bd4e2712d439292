/* Integration: the server's life — graceful shutdown, clients that go away,
 * PostgreSQL restarts, concurrent migrations — and the command-line client. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <libpq-fe.h>
#include "harness.h"
#include "support.h"
#include "base/embed.h"
#include "db/migrate.h"

/* ---- helpers ---------------------------------------------------------- */

/* Status of GET path on a fresh connection, -1 on a transport failure. */
static int status_of(const silt_server *s, const char *method, const char *path, const char *body)
{
    http_client *c = http_client_new(s->url);
    http_client_set_timeout(c, 5000);
    http_response r;
    http_response_init(&r);
    int st = http_request(c, method, path, body, body ? strlen(body) : 0, &r) < 0 ? -1 : r.status;
    http_response_fini(&r);
    http_client_free(c);
    return st;
}

/* One message pushed then popped back (autoAck) through queue q. */
static void check_push_pop(silt_server *s, const char *q)
{
    reply r;
    rq(s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":{\"alive\":true}}]}", q), &r);
    CHECK_INT(r.status, 201);
    CHECK_STR(jstr(&r, "0.status"), "queued");
    reply_fini(&r);
    rq(s, "GET", sfmt("/api/v1/pop/queue/%s?autoAck=true", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"alive\":true}");
    reply_fini(&r);
}

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { close(fd); return -1; }
    return fd;
}

static void raw_send(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        CHECK(n > 0);
        data += n;
        len -= (size_t)n;
    }
}

/* The local port of a connected socket. */
static int local_port(int fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    return ntohs(a.sin_port);
}

/* Whether the server's end of the connection from client_port is still
 * open: established, or closed by the client only (CLOSE_WAIT). The kernel's
 * socket table shows it; the server has no counter of connections. */
static bool server_end_open(int server_port, int client_port)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    CHECK(f != NULL);
    char line[512];
    bool open = false;
    while (!open && fgets(line, sizeof line, f)) {
        unsigned local, remote, state;
        if (sscanf(line, " %*d: %*x:%x %*x:%x %x", &local, &remote, &state) == 3)
            open = (int)local == server_port && (int)remote == client_port && (state == 0x01 || state == 0x08);
    }
    fclose(f);
    return open;
}

/* Waits until the server has closed its end of a connection the client has
 * closed: it has seen the hang-up and dropped whatever was half read. */
static void await_server_closed(int server_port, int client_port, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    while (server_end_open(server_port, client_port)) {
        if (now_ms() >= end)
            harness_failf(__FILE__, __LINE__, "the server kept the connection from port %d open for %d ms",
                          client_port, timeout_ms);
        pause_ms(10);
    }
}

/* Waits until connecting to port is refused: the server stopped accepting. */
static void await_refusing(int port, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    for (int fd; (fd = raw_connect(port)) >= 0; pause_ms(10)) {
        close(fd);
        if (now_ms() >= end) harness_failf(__FILE__, __LINE__, "port %d still accepts after %d ms", port, timeout_ms);
    }
}

/* waitpid with a deadline; the exit code (128+signal if killed), or -1. */
static int wait_exit(pid_t pid, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    int status;
    while (now_ms() < end) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        pause_ms(20);
    }
    return -1;
}

/* Starts a server (env as srv_start's) whose log goes to a file of its
 * own; returns the path. */
static const char *start_logged_env(silt_server *s, const char *const *env)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/server-XXXXXX.log", harness_scratch_dir());
    int fd = mkstemps(path, 4);
    CHECK(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);   /* the server inherits it */
    srv_start(s, env);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);
    return sfmt("%s", path);
}

static const char *start_logged(silt_server *s, const char *level)
{
    const char *env[] = { sfmt("LOG_LEVEL=%s", level), NULL };
    return start_logged_env(s, env);
}

static const char *read_log(const char *path)
{
    static char text[65536];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
    unlink(path);
    return text;
}

/* ---- graceful shutdown ------------------------------------------------ */

TEST(sigterm_answers_a_parked_long_poll_with_204_and_exits_0)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("shutlp"));
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\"}", q), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=20000", q), NULL);
    srv_await_metric(&s, "silt_long_polls_parked", 1, 5000);
    int64_t t0 = now_ms();
    int rc = srv_stop(&s);
    int64_t stop_ms = now_ms() - t0;
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 204);
    CHECK(elapsed < 3000);
    CHECK_INT(rc, 0);
    CHECK(stop_ms < 3000);
}

TEST(sigterm_answers_pushes_in_flight_with_201_and_commits_them)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("shutpush"));
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    /* Hold the partition row so the pushes stay in flight in PostgreSQL. */
    sql("begin");
    sql("select 1 from queen.log_partitions where queue = '%s' for update", q);
    bg_req b[3];
    for (int i = 0; i < 3; i++) {
        char body[2048];
        size_t len = (size_t)snprintf(body, sizeof body, "{\"items\":[");
        for (int k = 0; k < 10; k++)
            len += (size_t)snprintf(body + len, sizeof body - len, "%s{\"queue\":\"%s\",\"payload\":{\"r\":%d,\"k\":%d}}",
                                    k ? "," : "", q, i, k);
        snprintf(body + len, sizeof body - len, "]}");
        bg_start(&b[i], &s, "POST", "/api/v1/push", body);
    }
    /* a flush waits for the row, and all three requests are in the server */
    sql_await("true", 10000, "select (count(*) > 0)::text from pg_stat_activity where datname = current_database() "
                             "and wait_event_type = 'Lock'");
    srv_await_metric(&s, "silt_http_requests_in_flight", 3, 5000);
    kill(s.pid, SIGTERM);
    await_refusing(s.port, 5000);                  /* no longer accepting */
    CHECK_INT(waitpid(s.pid, NULL, WNOHANG), 0);   /* but still draining */
    sql("commit");
    for (int i = 0; i < 3; i++) {
        int status;
        int64_t elapsed;
        bg_wait(&b[i], &status, &elapsed);
        CHECK_INT(status, 201);
    }
    CHECK_INT(wait_exit(s.pid, 10000), 0);
    http_client_free(s.http);
    CHECK_STR(sql("select coalesce(sum(s.end_offset - s.base_offset + 1), 0) from queen.log_segments s "
                  "join queen.log_partitions p on p.id = s.partition_id where p.queue = '%s'", q), "31");
    CHECK_STR(sql("select last_offset from queen.log_partitions where queue = '%s'", q), "30");
}

/* ---- requests still arriving at shutdown ------------------------------ */

/* Reads one reply (headers, then the Content-Length of body evhttp always
 * sends) into out, NUL-terminated; fails the test after timeout_ms. */
static void raw_read_reply(int fd, char *out, size_t cap, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    size_t len = 0;
    for (;;) {
        out[len] = '\0';
        const char *eoh = strstr(out, "\r\n\r\n");
        const char *cl = strcasestr(out, "Content-Length:");
        if (eoh && cl && cl < eoh && len >= (size_t)(eoh + 4 - out) + strtoul(cl + 15, NULL, 10)) return;
        int left = (int)(end - now_ms());
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (left <= 0 || poll(&p, 1, left) <= 0)
            harness_failf(__FILE__, __LINE__, "no whole reply after %d ms: \"%s\"", timeout_ms, out);
        ssize_t n = recv(fd, out + len, cap - 1 - len, 0);
        if (n <= 0) harness_failf(__FILE__, __LINE__, "connection ended inside a reply: \"%s\"", out);
        len += (size_t)n;
    }
}

/* The server closed the connection (end of stream, nothing more sent). */
static void raw_await_eof(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    CHECK(poll(&p, 1, timeout_ms) == 1);
    char byte;
    CHECK_INT(recv(fd, &byte, 1, 0), 0);
}

/* A refusal in the API's one error shape, closing the connection. */
static void check_shutting_down_reply(const char *text)
{
    CHECK(strncmp(text, "HTTP/1.1 503 ", 13) == 0);
    CHECK(strcasestr(text, "\r\nConnection: close\r\n") != NULL);
    CHECK(strcasestr(text, "\r\nContent-Type: application/json\r\n") != NULL);
    CHECK_STR(strstr(text, "\r\n\r\n") + 4, "{\"error\":\"server is shutting down\"}");
}

/* A push on a connection of its own whose body is sent in two halves. */
typedef struct half_push { int fd; const char *rest; } half_push;

static half_push start_half_push(const silt_server *s, const char *q)
{
    const char *body = sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":{\"half\":\"%0200d\"}}]}", q, 7);
    const char *head = sfmt("POST /api/v1/push HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\n\r\n", s->port, strlen(body));
    half_push h = { raw_connect(s->port), NULL };
    CHECK(h.fd >= 0);
    size_t half = strlen(body) / 2;
    raw_send(h.fd, head, strlen(head));
    raw_send(h.fd, body, half);
    h.rest = strdup(body + half);
    return h;
}

/* What the tests of this part share: a server given a long deadline, so an
 * exit well within it shows that nothing was left to wait for, and logging
 * each request, so its log shows whether the drain ended ("shutdown
 * complete") before or after a refusal. Returns the log's path. */
#define ARRIVING_DEADLINE_MS 30000
#define PROMPT_EXIT_MS 10000

static const char *start_for_shutdown(silt_server *s, int deadline_ms)
{
    const char *env[] = { sfmt("SHUTDOWN_TIMEOUT_MS=%d", deadline_ms), "LOG_LEVEL=info", NULL };
    return start_logged_env(s, env);
}

/* The refused push was waited for: the drain completed only after it. */
static void check_refused_before_the_end(const char *log_path, int refusals)
{
    const char *log = read_log(log_path);
    const char *end = strstr(log, "shutdown complete");
    CHECK(end != NULL);
    const char *at = log;
    for (int i = 0; i < refusals; i++) {
        at = strstr(at, "POST /api/v1/push 503");
        CHECK(at != NULL && at < end);
        at++;
    }
}

/* SIGTERM once the server holds the half push's first half, and wait until
 * it drains (it no longer accepts); it must still be running, waiting.
 * Returns when the signal was sent. */
static int64_t sigterm_while_arriving(silt_server *s)
{
    srv_await_metric(s, "silt_http_requests_arriving", 1, 5000);
    int64_t sent = now_ms();
    kill(s->pid, SIGTERM);
    await_refusing(s->port, 5000);
    CHECK_INT(waitpid(s->pid, NULL, WNOHANG), 0);
    return sent;
}

static void check_exits_promptly(silt_server *s)
{
    CHECK_INT(wait_exit(s->pid, PROMPT_EXIT_MS), 0);
    http_client_free(s->http);
    s->http = NULL;
}

TEST(sigterm_answers_a_push_still_arriving_with_503_once_its_body_is_in)
{
    silt_server s;
    const char *log = start_for_shutdown(&s, ARRIVING_DEADLINE_MS);
    char q[96];
    keep_str(q, uniq("arriving"));
    half_push h = start_half_push(&s, q);
    sigterm_while_arriving(&s);
    raw_send(h.fd, h.rest, strlen(h.rest));
    char text[4096];
    raw_read_reply(h.fd, text, sizeof text, 5000);
    check_shutting_down_reply(text);
    raw_await_eof(h.fd, 5000);
    close(h.fd);
    check_exits_promptly(&s);
    check_refused_before_the_end(log, 1);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", q), "0");
}

/* Draining, a whole request on a connection kept alive from before is
 * refused too, not served. */
TEST(sigterm_answers_a_new_request_on_a_kept_alive_connection_with_503)
{
    silt_server s;
    const char *log = start_for_shutdown(&s, ARRIVING_DEADLINE_MS);
    char q[96];
    keep_str(q, uniq("keptalive"));
    int kept = raw_connect(s.port);
    CHECK(kept >= 0);
    const char *health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    raw_send(kept, health, strlen(health));
    char text[4096];
    raw_read_reply(kept, text, sizeof text, 5000);
    CHECK(strncmp(text, "HTTP/1.1 200 ", 13) == 0);
    half_push h = start_half_push(&s, q);   /* keeps the server draining */
    sigterm_while_arriving(&s);
    const char *body = sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1}]}", q);
    const char *push = sfmt("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
    raw_send(kept, push, strlen(push));
    raw_read_reply(kept, text, sizeof text, 5000);
    check_shutting_down_reply(text);
    raw_await_eof(kept, 5000);
    close(kept);
    raw_send(h.fd, h.rest, strlen(h.rest));
    raw_read_reply(h.fd, text, sizeof text, 5000);
    check_shutting_down_reply(text);
    close(h.fd);
    check_exits_promptly(&s);
    check_refused_before_the_end(log, 2);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", q), "0");
}

/* A connection that served a request and sits idle is not a request
 * arriving: it does not hold the exit back until the deadline. */
TEST(sigterm_with_only_an_idle_kept_alive_connection_exits_promptly)
{
    silt_server s;
    const char *log = start_for_shutdown(&s, ARRIVING_DEADLINE_MS);
    int kept = raw_connect(s.port);
    CHECK(kept >= 0);
    const char *health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    raw_send(kept, health, strlen(health));
    char text[4096];
    raw_read_reply(kept, text, sizeof text, 5000);
    CHECK(strncmp(text, "HTTP/1.1 200 ", 13) == 0);
    CHECK_INT(srv_metric(&s, "silt_http_requests_arriving"), 0);
    kill(s.pid, SIGTERM);
    check_exits_promptly(&s);
    close(kept);
    CHECK(strstr(read_log(log), "shutdown complete") != NULL);
}

/* The client of a request still arriving hangs up during the drain: nothing
 * is left to wait for. */
TEST(sigterm_stops_waiting_for_an_arriving_request_whose_client_left)
{
    silt_server s;
    const char *log = start_for_shutdown(&s, ARRIVING_DEADLINE_MS);
    half_push h = start_half_push(&s, uniq("leaving"));
    sigterm_while_arriving(&s);
    close(h.fd);
    check_exits_promptly(&s);
    CHECK(strstr(read_log(log), "shutdown complete") != NULL);
}

/* A request that never completes is waited for until SHUTDOWN_TIMEOUT_MS,
 * not longer; the exit is still 0. */
TEST(sigterm_waits_for_an_arriving_request_only_until_the_deadline)
{
    silt_server s;
    const char *log = start_for_shutdown(&s, 1000);
    half_push h = start_half_push(&s, uniq("stalled"));
    int64_t signalled = sigterm_while_arriving(&s);
    check_exits_promptly(&s);
    CHECK(now_ms() - signalled >= 1000);   /* the deadline starts when the server takes the signal */
    close(h.fd);
    CHECK(strstr(read_log(log), "shutdown timeout: 0 requests still in flight, 1 still arriving") != NULL);
}

/* ---- clients that go away --------------------------------------------- */

TEST(client_closing_mid_body_writes_nothing_and_the_server_still_serves)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("halfbody"));
    int fd = raw_connect(s.port);
    CHECK(fd >= 0);
    char body[128];
    int n = snprintf(body, sizeof body, "{\"items\":[{\"queue\":\"%s\",\"payload\":\"", q);
    memset(body + n, 'z', 100 - (size_t)n);
    const char *head = sfmt("POST /api/v1/push HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                           "Content-Length: 1000\r\n\r\n", s.port);
    raw_send(fd, head, strlen(head));
    raw_send(fd, body, 100);
    int port = local_port(fd);
    close(fd);   /* the server reads the 100 bytes before the end of the stream */
    await_server_closed(s.port, port, 5000);
    /* And one that stops inside its headers. */
    fd = raw_connect(s.port);
    CHECK(fd >= 0);
    const char *half = "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Le";
    raw_send(fd, half, strlen(half));
    port = local_port(fd);
    close(fd);
    await_server_closed(s.port, port, 5000);
    CHECK_INT(status_of(&s, "GET", "/health", NULL), 200);
    CHECK_STR(sql("select count(*) from queen.queues where name = '%s'", q), "0");
    char q2[96];
    keep_str(q2, uniq("halfbody-after"));
    check_push_pop(&s, q2);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(client_gone_before_its_reply_still_gets_its_push_committed)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("gone"));
    const char *body = sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1},{\"queue\":\"%s\",\"payload\":2}]}", q, q);
    const char *head = sfmt("POST /api/v1/push HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\n\r\n", s.port, strlen(body));
    int fd = raw_connect(s.port);
    CHECK(fd >= 0);
    raw_send(fd, head, strlen(head));
    raw_send(fd, body, strlen(body));
    close(fd);
    sql_await("1", 5000, "select count(*) from queen.log_segments s join queen.log_partitions p on p.id = s.partition_id "
                         "where p.queue = '%s'", q);
    CHECK_STR(sql("select last_offset from queen.log_partitions where queue = '%s'", q), "1");
    CHECK_INT(status_of(&s, "GET", "/health", NULL), 200);
    CHECK_INT(srv_stop(&s), 0);
}

/* A long-poll whose client went away must not take the messages a later
 * push makes deliverable: with autoAck they would be committed unseen. */
static void gone_long_poll(const char *query)
{
    const char *env[] = { "LONG_POLL_RECHECK_MS=60000", NULL };
    silt_server s;
    srv_start(&s, env);
    char q[96];
    keep_str(q, uniq("gonelp"));
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\"}", q), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    bg_req b;
    bg_start(&b, &s, "GET", sfmt("/api/v1/pop/queue/%s?wait=true&timeout=20000%s", q, query), NULL);
    srv_await_metric(&s, "silt_long_polls_parked", 1, 5000);
    kill(b.pid, SIGKILL);       /* the client vanishes; the kernel closes its socket */
    waitpid(b.pid, NULL, 0);
    close(b.fd);
    /* The server notices and lets the pop go: no pop is left to be woken. */
    srv_await_metric(&s, "silt_long_polls_parked", 0, 5000);
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    /* Nobody is there to receive it: no cursor moved, no lease taken. */
    CHECK_STR(sql("select coalesce(max(c.committed), -1) || '/' || count(c.lease_id) from queen.log_consumers c "
                  "join queen.log_partitions p on p.id = c.partition_id where p.queue = '%s'", q), "-1/0");
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?batch=10", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(jraw(&r, "messages.0.data"), "{\"i\":0}");
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(long_poll_whose_client_left_does_not_auto_ack_a_later_push)
{
    gone_long_poll("&autoAck=true");
}

TEST(long_poll_whose_client_left_does_not_lease_a_later_push)
{
    gone_long_poll("");
}

/* ---- PostgreSQL restarts ---------------------------------------------- */

/* Alone: it stops the suite's PostgreSQL, which every other test uses. */
TEST_ALONE(server_reconnects_after_postgresql_restarts)
{
    const char *dir = getenv("SILT_TEST_PGDIR");
    if (!dir || !*dir || access("scripts/pgcluster.sh", X_OK) != 0) {
        printf("    note: SILT_TEST_PGDIR unset (or scripts/pgcluster.sh not here): restart not checked\n");
        return;
    }
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("restart"));
    check_push_pop(&s, q);
    CHECK_INT(system(sfmt("scripts/pgcluster.sh stop '%s'", dir)), 0);
    /* Down: /health turns 503 and a push fails fast with a JSON 503. */
    int64_t end = now_ms() + 10000;
    int st = 0;
    while ((st = status_of(&s, "GET", "/health", NULL)) != 503 && now_ms() < end) pause_ms(50);
    CHECK_INT(st, 503);
    reply r;
    rq(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":0}]}", q), &r);
    CHECK_INT(r.status, 503);
    CHECK(jstr(&r, "error") && strstr(jstr(&r, "error"), "database unavailable"));
    reply_fini(&r);
    CHECK_INT(system(sfmt("scripts/pgcluster.sh start '%s' %s fast", dir, pg_port())), 0);
    end = now_ms() + 30000;
    while ((st = status_of(&s, "GET", "/health", NULL)) != 200 && now_ms() < end) {
        CHECK(st == 503 || st == -1);
        pause_ms(100);
    }
    CHECK_INT(st, 200);
    check_push_pop(&s, q);
    CHECK_INT(srv_stop(&s), 0);
}

/* The server listens before its pool's connections have prepared their
 * statements. A push in those milliseconds waits for them: it is queued, not
 * a 503 "database unavailable" while the database is fine (issue 14). Each
 * round pushes as soon as the port takes a connection. */
TEST(push_the_moment_a_server_listens_is_queued_not_503)
{
    for (int round = 0; round < 5; round++) {
        silt_server s;
        srv_spawn(&s, NULL);
        const char *q = uniq("early");
        char body[256];
        snprintf(body, sizeof body, "{\"items\":[{\"queue\":\"%s\",\"payload\":%d}]}", q, round);
        http_response r;
        int64_t end = now_ms() + 20000;
        for (;;) {
            http_response_init(&r);
            if (http_request(s.http, "POST", "/api/v1/push", body, strlen(body), &r) == 0) break;
            http_response_fini(&r);
            if (now_ms() > end || waitpid(s.pid, NULL, WNOHANG) == s.pid)
                harness_fail(__FILE__, __LINE__, "the server never took a connection");
            pause_ms(1);   /* the port is not open yet: look again */
        }
        if (r.status != 201) harness_failf(__FILE__, __LINE__, "round %d: %d %s", round, r.status, r.body.data);
        http_response_fini(&r);
        CHECK_INT(status_of(&s, "GET", "/health", NULL), 200);
        CHECK_STR(sql("select count(*) from queen.log_partitions where queue = '%s'", q), "1");
        CHECK_INT(srv_stop(&s), 0);
    }
}

/* ---- migrations ------------------------------------------------------- */

static void migrate_twice_concurrently(const char *db)
{
    pid_t a = spawn_migrate(db), b = spawn_migrate(db);
    CHECK_INT(wait_exit(a, 30000), 0);
    CHECK_INT(wait_exit(b, 30000), 0);
}

TEST(migrate_run_twice_concurrently_on_a_fresh_database_both_exit_0)
{
    char db[96];
    snprintf(db, sizeof db, "silt_mig_%d_%ld", (int)getpid(), (long)time(NULL));
    sql("create database %s", db);
    migrate_twice_concurrently(db);
    PGconn *pg = PQconnectdb(sfmt("host=127.0.0.1 port=%s user=postgres dbname=%s", pg_port(), db));
    CHECK(PQstatus(pg) == CONNECTION_OK);
    int files = 0;
    while (embed_migrations[files].name) files++;
    PGresult *res = PQexec(pg, sfmt("select count(*) = %d and max(version) = %d, count(distinct version) = count(*) "
                                    "from queen.schema_migrations", files, migrate_latest()));
    CHECK(PQresultStatus(res) == PGRES_TUPLES_OK);
    CHECK_STR(PQgetvalue(res, 0, 0), "t");
    CHECK_STR(PQgetvalue(res, 0, 1), "t");
    PQclear(res);
    res = PQexec(pg, "select count(*) from pg_proc where proname = 'push_flush'");
    CHECK_STR(PQgetvalue(res, 0, 0), "1");
    PQclear(res);
    PQfinish(pg);
    /* Again, on the now-current schema. */
    migrate_twice_concurrently(db);
    sql("drop database %s with (force)", db);
}

TEST(migrate_run_twice_concurrently_on_a_current_database_both_exit_0)
{
    migrate_twice_concurrently(test_db());
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("migrated"));
    check_push_pop(&s, q);
    CHECK_INT(srv_stop(&s), 0);
}

/* ---- the command-line client ------------------------------------------ */

TEST(cli_push_then_pop_json_shows_the_payload)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("cli"));
    setenv("SILT_URL", s.url, 1);
    char out[16384];
    CHECK_INT(run_cmd(sfmt("%s push %s '{\"a\":1}'", silt_bin(), q), out, sizeof out), 0);
    CHECK_INT(run_cmd(sfmt("%s pop %s --json", silt_bin(), q), out, sizeof out), 0);
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, out, strlen(out), 1u << 16) < 0) harness_failf(__FILE__, __LINE__, "pop --json printed: %s", out);
    int msgs = json_get(&d, 0, "messages");
    CHECK(msgs >= 0);
    CHECK_INT(d.tokens[msgs].count, 1);
    int data = json_get(&d, (uint32_t)json_at(&d, (uint32_t)msgs, 0), "data");
    CHECK(data >= 0);
    CHECK_INT(d.tokens[data].type, JSON_OBJECT);
    int a = json_get(&d, (uint32_t)data, "a");
    int64_t v = 0;
    CHECK(a >= 0 && json_int64(&d, (uint32_t)a, &v) == 0);
    CHECK_INT(v, 1);
    int queue = json_get(&d, 0, "queue");
    CHECK(queue >= 0 && json_str_eq(&d, (uint32_t)queue, q));
    json_doc_fini(&d);
    /* The message is leased now: a second pop finds nothing and still exits 0. */
    CHECK_INT(run_cmd(sfmt("%s pop %s --json", silt_bin(), q), out, sizeof out), 0);
    CHECK(strstr(out, "\"a\"") == NULL);
    CHECK_INT(srv_stop(&s), 0);
}

/* ---- start-up that cannot succeed -------------------------------------- */

/* A wrong role or database name is refused for good: the server stops at
 * once with PostgreSQL's reason instead of waiting STARTUP_DB_WAIT_MS. */
TEST(a_wrong_role_or_database_stops_the_server_at_once_with_the_reason)
{
    struct { const char *env, *reason; } cases[] = {
        { "PG_USER=nosuchrole", "role \"nosuchrole\" does not exist" },
        { "PG_USER=postgres PG_DB=nosuchdb", "database \"nosuchdb\" does not exist" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[2048];
        int64_t started = now_ms();
        int rc = run_cmd(sfmt("PG_HOST=127.0.0.1 PG_PORT=%s %s STARTUP_DB_WAIT_MS=60000 PORT=1 %s server 2>&1",
                          pg_port(), cases[i].env, silt_bin()), out, sizeof out);
        CHECK(rc != 0);
        CHECK(now_ms() - started < 10000);
        CHECK(strstr(out, cases[i].reason) != NULL);
        CHECK(strstr(out, "waiting for the database") == NULL);
    }
}

/* A database that does not answer yet is waited for, up to the setting. */
TEST(a_database_that_does_not_answer_is_waited_for)
{
    char out[2048];
    int64_t started = now_ms();
    int rc = run_cmd(sfmt("PG_HOST=127.0.0.1 PG_PORT=1 STARTUP_DB_WAIT_MS=1200 PORT=1 %s server 2>&1", silt_bin()),
                 out, sizeof out);
    CHECK(rc != 0);
    CHECK(now_ms() - started >= 1100);
    CHECK(strstr(out, "waiting for the database") != NULL);
}

TEST(a_port_in_use_is_named_with_the_reason)
{
    silt_server s;
    srv_start(&s, NULL);
    char out[2048];
    int rc = run_cmd(sfmt("PG_HOST=127.0.0.1 PG_PORT=%s PG_DB=%s PORT=%d %s server 2>&1", pg_port(), test_db(), s.port,
                      silt_bin()), out, sizeof out);
    CHECK(rc != 0);
    CHECK(strstr(out, sfmt("cannot listen on 127.0.0.1:%d: Address already in use", s.port)) != NULL);
    srv_stop(&s);
}

/* One Ctrl-C can arrive twice (the terminal's and a wrapper's): a repeat of
 * the first signal at once still drains, and the push in flight commits. */
TEST(sigint_delivered_twice_at_once_still_drains)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("twice"));
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    sql("begin");
    sql("select 1 from queen.log_partitions where queue = '%s' for update", q);
    bg_req b;
    bg_start(&b, &s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1}]}", q));
    sql_await("true", 10000, "select (count(*) > 0)::text from pg_stat_activity where datname = current_database() "
                             "and wait_event_type = 'Lock'");
    kill(s.pid, SIGINT);
    kill(s.pid, SIGINT);
    await_refusing(s.port, 5000);
    CHECK_INT(waitpid(s.pid, NULL, WNOHANG), 0);   /* still draining */
    sql("commit");
    int status;
    int64_t elapsed;
    bg_wait(&b, &status, &elapsed);
    CHECK_INT(status, 201);
    CHECK_INT(wait_exit(s.pid, 10000), 0);
    http_client_free(s.http);
    CHECK_STR(sql("select last_offset from queen.log_partitions where queue = '%s'", q), "1");
}

/* Every pooled connection killed under the server: requests in flight and
 * after fail (503) or succeed once it reconnects, but none waits forever,
 * and the server serves again. */
TEST(connections_killed_under_the_server_leave_no_request_waiting)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *q = uniq("killed");
    CHECK_INT(push_simple(&s, q, "Default", 1), 201);
    bg_req b[4];
    for (int i = 0; i < 4; i++)
        bg_start(&b[i], &s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":%d}]}", q, i));
    sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name = 'silt' AND pid <> pg_backend_pid()");
    for (int i = 0; i < 4; i++) {
        int status;
        int64_t elapsed;
        bg_wait(&b[i], &status, &elapsed);
        CHECK(status == 201 || status == 503);
        CHECK(elapsed < 10000);
    }
    int64_t deadline = now_ms() + 10000;
    int status = 0;
    while ((status = push_simple(&s, q, "Default", 1)) != 201 && now_ms() < deadline) pause_ms(50);
    CHECK_INT(status, 201);
    srv_stop(&s);
}

/* ---- what the server says ---------------------------------------------- */

static void work(silt_server *s)
{
    const char *q = uniq("logged");
    CHECK_INT(push_simple(s, q, "Default", 2), 201);
    reply r;
    rq(s, "GET", sfmt("/api/v1/pop/queue/%s?batch=2&wait=false", q), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    rq(s, "POST", "/api/v1/system/retention/run", NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
}

/* LOG_LEVEL=debug follows the work: connections, flushes, pops, passes;
 * at info none of that is written. */
TEST(log_level_debug_says_what_the_server_does)
{
    silt_server s;
    const char *path = start_logged(&s, "debug");
    work(&s);
    srv_stop(&s);
    const char *log = read_log(path);
    CHECK(strstr(log, "debug pool: a connection is ready") != NULL);
    CHECK(strstr(log, "debug push flush: 2 messages, 1 partitions") != NULL);
    CHECK(strstr(log, "debug pop logged-") != NULL);
    CHECK(strstr(log, "debug retention pass: {") != NULL);
    path = start_logged(&s, "info");
    work(&s);
    srv_stop(&s);
    log = read_log(path);
    CHECK(strstr(log, "info  POST /api/v1/push 201") != NULL);
    CHECK(strstr(log, "debug") == NULL);
}

/* ---- make run's cluster -------------------------------------------------- */

/* The private cluster of `make run` says why it cannot start: a port that is
 * taken (exit 3; make run then names SILT_PG_PORT), or a directory the
 * postgres user cannot reach (exit 4). As root only: that is when the
 * cluster runs as postgres. */
TEST(pgcluster_says_which_port_is_taken_and_what_postgres_cannot_reach)
{
    if (getuid() != 0 || access("scripts/pgcluster.sh", X_OK) != 0) {
        printf("    note: not root or scripts/pgcluster.sh not here: not checked\n");
        return;
    }
    char dir[] = "/tmp/silt-pgc-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    chmod(dir, 0755);
    char out[4096];
    int rc = run_cmd(sfmt("scripts/pgcluster.sh start %s/pg %s 2>&1", dir, pg_port()), out, sizeof out);
    CHECK_INT(rc, 3);
    CHECK(strstr(out, sfmt("port %s is already in use", pg_port())) != NULL);
    run_cmd(sfmt("scripts/pgcluster.sh stop %s/pg", dir), out, sizeof out);
    chmod(dir, 0700);   /* as a home directory is */
    rc = run_cmd(sfmt("scripts/pgcluster.sh start %s/closed/pg 1 2>&1", dir), out, sizeof out);
    CHECK_INT(rc, 4);
    CHECK(strstr(out, "the postgres user cannot reach") != NULL);
    run_cmd(sfmt("rm -rf %s", dir), out, sizeof out);
}

/* Integration: input at the edges (issue 14, point 5): %00 in a path,
 * one name length limit everywhere, control characters in logs, the HTTP
 * layer's own errors as JSON, HEAD where GET works, and conflicting
 * Content-Length headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "raw_support.h"
#include "support.h"

/* One raw request on a new connection; the whole response (static ring). */
static const char *raw_exchange(silt_server *s, const char *bytes, size_t n)
{
    int fd = raw_connect(s);
    raw_send(fd, bytes, n);
    const char *r = raw_response(fd, 5000);
    close(fd);
    return r;
}

static void check_json_error_at(const char *file, int line, const char *response, int status, const char *what)
{
    if (raw_status(response) != status) harness_failf(file, line, "expected %d, got: %s", status, response);
    const char *type = raw_header(response, "Content-Type");
    if (!type || strcmp(type, "application/json") != 0) harness_failf(file, line, "not json: %s", response);
    if (strncmp(raw_body(response), "{\"error\":\"", 10) != 0 || !strstr(raw_body(response), what))
        harness_failf(file, line, "error does not mention \"%s\": %s", what, raw_body(response));
}
#define CHECK_JSON_ERROR(r, status, what) check_json_error_at(__FILE__, __LINE__, (r), (status), (what))

TEST(edges_nul_in_a_path_is_400_and_deletes_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("victim"));
    configure_queue(&s, q, "{}");
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s%%00zzz", q), NULL, &r);
    CHECK_INT(r.status, 400);
    CHECK(strstr(jstr(&r, "error"), "%00") != NULL);
    reply_fini(&r);
    CHECK_STR(sql("SELECT count(*) FROM queen.queues WHERE name = '%s'", q), "1");
    rq(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=g%%00x", q), NULL, &r);
    CHECK_INT(r.status, 400);
    reply_fini(&r);
    srv_stop(&s);
}

static void check_too_long_at(const char *file, int line, silt_server *s, const char *method, const char *path,
                              const char *body, const char *field)
{
    reply r;
    rq(s, method, path, body, &r);
    const char *e = jstr(&r, "error");
    char want[64];
    snprintf(want, sizeof want, "%s is longer than 255 bytes", field);
    if (r.status != 400 || !e || strlen(e) < strlen(want) || strcmp(e + strlen(e) - strlen(want), want) != 0)
        harness_failf(file, line, "%s %.60s...: %d %s, expected 400 \"%s\"", method, path, r.status, r.raw.body.data, want);
    if (!jstr(&r, "field") || strcmp(jstr(&r, "field"), field) != 0)
        harness_failf(file, line, "%s %.60s...: field is not %s: %s", method, path, field, r.raw.body.data);
    reply_fini(&r);
}
#define CHECK_TOO_LONG(s, m, p, b, f) check_too_long_at(__FILE__, __LINE__, (s), (m), (p), (b), (f))

static const char *name_of(int len, char c)
{
    char *n = malloc((size_t)len + 1);
    memset(n, c, (size_t)len);
    n[len] = '\0';
    const char *out = sfmt("%s", n);
    free(n);
    return out;
}

TEST(edges_names_over_255_bytes_are_400_with_one_message_on_configure_push_pop_ack_and_group_routes)
{
    silt_server s;
    srv_start(&s, NULL);
    char big[300], q[96];
    keep_str(q, uniq("names"));
    snprintf(big, sizeof big, "%s", name_of(256, 'n'));
    CHECK_TOO_LONG(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\"}", big), "queue");
    CHECK_TOO_LONG(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":\"%s\"}", q, big), "namespace");
    CHECK_TOO_LONG(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"task\":\"%s\"}", q, big), "task");
    CHECK_TOO_LONG(&s, "POST", "/api/v1/push", sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1}]}", big), "queue");
    CHECK_TOO_LONG(&s, "POST", "/api/v1/push",
                   sfmt("{\"items\":[{\"queue\":\"%s\",\"partition\":\"%s\",\"payload\":1}]}", q, big), "partition");
    CHECK_TOO_LONG(&s, "GET", sfmt("/api/v1/pop/queue/%s", big), NULL, "queue");
    CHECK_TOO_LONG(&s, "GET", sfmt("/api/v1/pop/queue/%s/partition/%s", q, big), NULL, "partition");
    CHECK_TOO_LONG(&s, "GET", sfmt("/api/v1/pop/queue/%s?consumerGroup=%s", q, big), NULL, "consumerGroup");
    CHECK_TOO_LONG(&s, "GET", sfmt("/api/v1/pop?namespace=%s", big), NULL, "namespace");
    CHECK_TOO_LONG(&s, "GET", sfmt("/api/v1/resources/queues/%s", big), NULL, "queue");
    CHECK_TOO_LONG(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", big), NULL, "queue");
    CHECK_TOO_LONG(&s, "GET", sfmt("/api/v1/consumer-groups/%s", big), NULL, "consumerGroup");
    CHECK_TOO_LONG(&s, "POST", sfmt("/api/v1/consumer-groups/%s/queues/%s/seek", big, q), "{}", "consumerGroup");
    CHECK_TOO_LONG(&s, "POST", sfmt("/api/v1/consumer-groups/g/queues/%s/seek", big), "{}", "queue");
    CHECK_TOO_LONG(&s, "POST", "/api/v1/ack",
                   sfmt("{\"transactionId\":\"t\",\"partitionId\":\"0190a0b0-0000-7000-8000-000000000000\","
                        "\"status\":\"completed\",\"consumerGroup\":\"%s\"}", big), "consumerGroup");
    CHECK_STR(sql("SELECT count(*) FROM queen.queues"), "0");
    srv_stop(&s);
}

TEST(edges_names_of_exactly_255_bytes_work_on_configure_push_and_pop)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[300], part[300], group[300];
    snprintf(q, sizeof q, "%s", name_of(255, 'q'));
    snprintf(part, sizeof part, "%s", name_of(255, 'p'));
    snprintf(group, sizeof group, "%s", name_of(255, 'g'));
    reply r;
    rq(&s, "POST", "/api/v1/configure", sfmt("{\"queue\":\"%s\",\"namespace\":\"%s\",\"task\":\"%s\"}", q, part, group), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    push_one(&s, q, part, "t1", "1");
    CHECK_INT(pop_from(&s, q, part, sfmt("consumerGroup=%s", group), &r), 200);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/consumer-groups/%s", group), NULL, &r);
    CHECK(r.status == 200 || r.status == 404);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(edges_control_characters_from_a_request_are_escaped_in_the_log)
{
    const char *log = log_file();
    silt_server s;
    srv_start(&s, (const char *[]){ "LOG_LEVEL=info", sfmt("SILT_TEST_STDERR=%s", log), NULL });
    const char req[] = "GET /health\x1b[31mFORGED\r\x0b HTTP/1.1\r\nHost: t\r\n\r\n";
    raw_exchange(&s, req, sizeof req - 1);
    int64_t deadline = now_ms() + 5000;
    while (!log_line(log, "FORGED") && now_ms() < deadline) pause_ms(20);
    const char *line = log_line(log, "FORGED");
    CHECK(line != NULL);
    CHECK(strstr(line, "/health\\x1b[31mFORGED") != NULL);
    CHECK(strchr(line, '\x1b') == NULL);
    srv_stop(&s);
}

TEST(edges_a_bad_request_line_and_oversized_headers_are_answered_as_json)
{
    silt_server s;
    srv_start(&s, NULL);
    const char garbage[] = "GARBAGE\r\n\r\n";
    CHECK_JSON_ERROR(raw_exchange(&s, garbage, sizeof garbage - 1), 400, "malformed request");
    char *big = malloc(80 * 1024);
    int n = snprintf(big, 80 * 1024, "GET /health HTTP/1.1\r\nHost: t\r\nX-Big: ");
    memset(big + n, 'a', 70 * 1024);
    memcpy(big + n + 70 * 1024, "\r\n\r\n", 4);
    CHECK_JSON_ERROR(raw_exchange(&s, big, (size_t)n + 70 * 1024 + 4), 400, "headers over their limit");
    free(big);
    reply r;
    rq(&s, "GET", "/health", NULL, &r);   /* and it still serves */
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    srv_stop(&s);
}

TEST(edges_head_on_a_get_route_answers_its_headers_without_a_body_but_not_on_a_pop)
{
    silt_server s;
    srv_start(&s, NULL);
    reply get;
    rq(&s, "GET", "/health", NULL, &get);
    int fd = raw_connect(&s);
    raw_send_str(fd, "HEAD /health HTTP/1.1\r\nHost: t\r\n\r\nGET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    bool closed;
    const char *both = raw_read(fd, 5000, &closed);
    close(fd);
    CHECK(closed);
    CHECK_INT(raw_status(both), 200);
    CHECK_STR(raw_header(both, "Content-Type"), "application/json");
    CHECK_INT(atoi(raw_header(both, "Content-Length")), (int)get.raw.body.len);
    CHECK(strncmp(raw_body(both), "HTTP/1.1 200", 12) == 0);   /* the next response follows at once: no body */
    reply_fini(&get);
    fd = raw_connect(&s);
    raw_send_str(fd, "HEAD /api/v1/pop/queue/q HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    CHECK_INT(raw_status(raw_read(fd, 5000, &closed)), 405);   /* headers only, then the close */
    close(fd);
    srv_stop(&s);
}

TEST(edges_conflicting_content_length_headers_are_400_and_write_nothing)
{
    silt_server s;
    srv_start(&s, NULL);
    char q[96];
    keep_str(q, uniq("smuggle"));
    const char *body = sfmt("{\"items\":[{\"queue\":\"%s\",\"payload\":1}]}", q);
    const char *req = sfmt("POST /api/v1/push HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\nContent-Length: 5\r\n\r\n%s",
                           strlen(body), body);
    const char *r = raw_exchange(&s, req, strlen(req));
    CHECK_JSON_ERROR(r, 400, "conflicting Content-Length");
    CHECK_STR(raw_header(r, "Connection"), "close");
    CHECK_STR(sql("SELECT count(*) FROM queen.queues WHERE name = '%s'", q), "0");
    srv_stop(&s);
}

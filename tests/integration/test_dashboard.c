/* The dashboard (issue 13): its files served from the binary, and its pages
 * loaded in Debian's headless chromium against a server with known data.
 * Each browser check compares what the page shows (its data-k cells, see
 * web/app.js) with what the HTTP API answers for the same data, and fails on
 * any console message: app.js writes none, so one is an uncaught error or a
 * blocked load. Buttons are pressed over the DevTools protocol, and what
 * the API answers afterwards is checked (browser.h). Without chromium
 * (`make test` installs it) the browser checks print a note and pass.
 * The task engine's pages are test_dashboard_tasks.c's, a queue of
 * 100,000 partitions test_dashboard_scale.c's. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "browser.h"
#include "dashboard_support.h"
#include "harness.h"
#include "support.h"
#include "retention_support.h"
#include "task_support.h"

/* ---- serving --------------------------------------------------------- */

/* GET path; the reply is not JSON, so not through rq(). Checks the status
 * and Content-Type; the body is the caller's to free. */
static void get_file(silt_server *s, const char *path, int status, const char *type, http_response *out)
{
    http_response_init(out);
    if (http_request(s->http, "GET", path, NULL, 0, out) < 0)
        harness_failf(__FILE__, __LINE__, "GET %s: %s", path, http_client_error(s->http));
    if (out->status != status) harness_failf(__FILE__, __LINE__, "GET %s: %d, expected %d", path, out->status, status);
    if (strcmp(out->content_type.data ? out->content_type.data : "", type) != 0)
        harness_failf(__FILE__, __LINE__, "GET %s: Content-Type %s, expected %s", path, out->content_type.data, type);
}

TEST(dashboard_files_are_served_from_the_binary_with_their_types)
{
    silt_server s;
    srv_start(&s, NULL);
    http_response f;
    get_file(&s, "/", 200, "text/html; charset=utf-8", &f);
    CHECK(strstr(f.body.data, "/dashboard/app.js") != NULL);
    http_response_fini(&f);
    get_file(&s, "/dashboard/app.js", 200, "application/javascript; charset=utf-8", &f);
    http_response_fini(&f);
    get_file(&s, "/dashboard/app.css", 200, "text/css; charset=utf-8", &f);
    http_response_fini(&f);
    get_file(&s, "/dashboard/chart.min.js", 200, "application/javascript; charset=utf-8", &f);
    CHECK(strstr(f.body.data, "Chart.js v") != NULL);   /* Debian's libjs-chart.js, embedded */
    http_response_fini(&f);
    reply r;
    rq(&s, "GET", "/dashboard/nope.js", NULL, &r);   /* the API's one error shape */
    CHECK_INT(r.status, 404);
    CHECK_STR(jstr(&r, "error"), "no such dashboard file");
    CHECK_STR(jstr(&r, "asset"), "nope.js");
    reply_fini(&r);
    srv_stop(&s);
}

/* A browser that has the file revalidates with its ETag and gets a 304
 * with no body; curl stands in for it (the test client sends no headers). */
TEST(dashboard_files_carry_an_etag_and_answer_304_when_unchanged)
{
    silt_server s;
    srv_start(&s, NULL);
    char out[4096];
    CHECK_INT(run_cmd(sfmt("curl -s -D - -o /dev/null %s/dashboard/app.js | tr -d '\\r' | sed -n 's/^ETag: //p'",
                           s.url), out, sizeof out), 0);
    CHECK(strlen(out) > 3 && out[0] == '"');
    out[strcspn(out, "\n")] = '\0';
    char etag[64];
    size_t n = strlen(out);
    CHECK(n < sizeof etag);
    memcpy(etag, out, n + 1);
    CHECK_INT(run_cmd(sfmt("curl -s -o /dev/null -w '%%{http_code} %%{size_download}' -H 'If-None-Match: %s' "
                           "%s/dashboard/app.js", etag, s.url), out, sizeof out), 0);
    CHECK_STR(out, "304 0");
    CHECK_INT(run_cmd(sfmt("curl -s -o /dev/null -w '%%{http_code}' -H 'If-None-Match: \"other\"' "
                           "%s/dashboard/app.js", s.url), out, sizeof out), 0);
    CHECK_STR(out, "200");
    srv_stop(&s);
}

/* GET url with Accept-Encoding ae (NULL: none), curl not decoding: the
 * reply's headers in dir/NAME.h and its bytes as sent in dir/NAME.b. */
static void fetch_raw(const char *dir, const char *name, const char *url, const char *ae, const char *more)
{
    char out[256];
    CHECK_INT(run_cmd(sfmt("curl -s %s%s%s %s -D %s/%s.h -o %s/%s.b %s", ae ? "-H 'Accept-Encoding: " : "",
                           ae ? ae : "", ae ? "'" : "", more ? more : "", dir, name, dir, name, url), out, sizeof out), 0);
}

/* The value of a header in a saved header file ("" when absent). */
static const char *saved_header(const char *dir, const char *name, const char *header)
{
    static char out[256];
    CHECK_INT(run_cmd(sfmt("tr -d '\\r' < %s/%s.h | sed -n 's/^%s: //Ip' | head -1", dir, name, header),
                      out, sizeof out), 0);
    out[strcspn(out, "\n")] = '\0';
    return out;
}

static long file_size(const char *path)
{
    char out[64];
    CHECK_INT(run_cmd(sfmt("wc -c < %s", path), out, sizeof out), 0);
    return atol(out);
}

/* "serve the dashboard's static assets gzip-compressed when the client
 * accepts it, with correct Content-Encoding/Vary": the same bytes once
 * decompressed, about a third of the size for the scripts; a client that
 * does not ask, or refuses gzip with q=0, gets them as they are; each form
 * has its own ETag and revalidates to 304. */
TEST(dashboard_files_are_sent_gzip_compressed_to_a_client_that_accepts_it)
{
    silt_server s;
    srv_start(&s, NULL);
    const char *dir = harness_scratch_dir();
    char out[256];
    const char *files[] = { "app.js", "chart.min.js", "app.css" };
    long plain_total = 0, gz_total = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const char *url = sfmt("%s/dashboard/%s", s.url, files[i]);
        fetch_raw(dir, "plain", url, NULL, NULL);
        fetch_raw(dir, "gz", url, "gzip, deflate, br", NULL);
        CHECK_STR(saved_header(dir, "gz", "Content-Encoding"), "gzip");
        CHECK_STR(saved_header(dir, "gz", "Vary"), "Accept-Encoding");
        CHECK_STR(saved_header(dir, "plain", "Content-Encoding"), "");
        CHECK_STR(saved_header(dir, "plain", "Vary"), "Accept-Encoding");
        CHECK_STR(saved_header(dir, "gz", "Content-Type"), saved_header(dir, "plain", "Content-Type"));
        CHECK_INT(run_cmd(sfmt("gzip -dc %s/gz.b | cmp -s - %s/plain.b", dir, dir), out, sizeof out), 0);
        char plain_etag[96];
        keep_str(plain_etag, saved_header(dir, "plain", "ETag"));
        CHECK(strcmp(plain_etag, saved_header(dir, "gz", "ETag")) != 0);
        long p = file_size(sfmt("%s/plain.b", dir)), g = file_size(sfmt("%s/gz.b", dir));
        CHECK(g < p);
        if (i < 2) { plain_total += p; gz_total += g; }
        fetch_raw(dir, "refused", url, "gzip;q=0, identity", NULL);
        CHECK_STR(saved_header(dir, "refused", "Content-Encoding"), "");
        CHECK_INT(run_cmd(sfmt("cmp -s %s/refused.b %s/plain.b", dir, dir), out, sizeof out), 0);
    }
    CHECK(gz_total * 2 < plain_total);   /* the scripts: 257 KB → about 84 */
    printf("    note: app.js and chart.min.js: %ld bytes, %ld gzip-compressed\n", plain_total, gz_total);
    fetch_raw(dir, "index", sfmt("%s/", s.url), "gzip", NULL);   /* the page too */
    CHECK_STR(saved_header(dir, "index", "Content-Encoding"), "gzip");
    char etag[96];
    keep_str(etag, saved_header(dir, "index", "ETag"));
    fetch_raw(dir, "again", sfmt("%s/", s.url), "gzip", sfmt("-H 'If-None-Match: %s'", etag));
    CHECK_INT(run_cmd(sfmt("test ! -s %s/again.b", dir), out, sizeof out), 0);   /* no body */
    CHECK_INT(run_cmd(sfmt("head -1 %s/again.h | cut -d' ' -f2", dir), out, sizeof out), 0);
    CHECK_STR(out, "304\n");
    fetch_raw(dir, "other", sfmt("%s/", s.url), NULL, sfmt("-H 'If-None-Match: %s'", etag));   /* the plain form: not that ETag */
    CHECK_INT(run_cmd(sfmt("head -1 %s/other.h | cut -d' ' -f2", dir), out, sizeof out), 0);
    CHECK_STR(out, "200\n");
    srv_stop(&s);
}

/* ---- pages in a browser -------------------------------------------- */

/* Two partitions with known offsets, one group that has consumed one. */
static void known_queue(silt_server *s, const char *q)
{
    configure_queue(s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push_queued(s, q, "p1", 0, 1, NULL);
    push_queued(s, q, "p2", 0, 3, NULL);
    reply r;
    CHECK_INT(pop_from(s, q, "p1", "consumerGroup=billing&batch=1&wait=false", &r), 200);
    reply_fini(&r);
}

TEST(dashboard_queue_page_shows_the_options_partitions_and_groups_the_api_holds)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-queue");
    known_queue(&s, q);
    const char *dom = browser_dump_dom(&s, sfmt("/queues/%s", q));
    reply r;
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(dom_value(dom, "name"), q);
    CHECK_STR(dom_value(dom, "messages.total"), sfmt("%lld", (long long)jint(&r, "messages.total")));
    CHECK_STR(dom_value(dom, "messages.total"), "4");
    CHECK_STR(dom_cell(dom, "retentionSeconds", "retentionSeconds"), "3600");
    CHECK_STR(dom_cell(dom, "leaseTime", "leaseTime"), sfmt("%lld", (long long)jint(&r, "options.leaseTime")));
    for (int i = 0; i < 2; i++) {
        const char *name = jstr(&r, sfmt("partitionList.%d.name", i));
        char part[96];
        keep_str(part, name);
        CHECK_STR(dom_cell(dom, part, "lastOffset"),
                  sfmt("%lld", (long long)jint(&r, sfmt("partitionList.%d.lastOffset", i))));
        CHECK_STR(dom_cell(dom, part, "logStart"),
                  sfmt("%lld", (long long)jint(&r, sfmt("partitionList.%d.logStart", i))));
        CHECK_STR(dom_title(dom, part, "lastWriteAt"), jstr(&r, sfmt("partitionList.%d.lastWriteAt", i)));
    }
    CHECK_STR(dom_cell(dom, "p2", "lastOffset"), "2");
    CHECK_STR(dom_cell(dom, "billing", "pending"), sfmt("%lld", (long long)jint(&r, "messages.pending.billing")));
    CHECK_STR(dom_cell(dom, "billing", "members"), "1");   /* the pop's lease */
    reply_fini(&r);
    srv_stop(&s);
}

TEST(dashboard_overview_shows_totals_queues_health_and_draws_its_chart)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-overview");
    known_queue(&s, q);
    const char *dom = browser_dump_dom(&s, "/");
    reply r;
    rq(&s, "GET", "/api/v1/resources/overview", NULL, &r);
    CHECK_STR(dom_value(dom, "messages"), sfmt("%lld", (long long)jint(&r, "messages")));
    CHECK_STR(dom_value(dom, "partitions"), sfmt("%lld", (long long)jint(&r, "partitions")));
    CHECK_STR(dom_title(dom, NULL, "lastWriteAt"), jstr(&r, "lastWriteAt"));
    reply_fini(&r);
    CHECK_STR(dom_cell(dom, q, "messages.total"), "4");
    CHECK_STR(dom_cell(dom, q, "partitions"), "2");
    CHECK_STR(dom_value(dom, "status"), "healthy");
    CHECK_STR(dom_value(dom, "database"), "connected");
    rq(&s, "GET", "/api/v1/consumer-groups", NULL, &r);   /* one group: the total is its lag */
    CHECK_STR(dom_value(dom, "totalLag"), sfmt("%lld", (long long)jint(&r, "0.totalLag")));
    CHECK_STR(dom_cell(dom, "billing", "state"), jstr(&r, "0.state"));
    reply_fini(&r);
    CHECK(dom_chart_drawn(dom, "rates"));
    srv_stop(&s);
}

/* A dead letter's payload, error and place, filtered by queue; the page
 * offers its replay (the action itself asks confirm(), which a --dump-dom
 * run cannot answer: the replay route is tested in test_admin.c). */
TEST(dashboard_dead_letters_page_shows_a_dead_letters_payload_and_offers_replay)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-dlq");
    configure_queue(&s, q, "{}");
    push_one(&s, q, "p1", "dl-1", "{\"order\":42}");
    dead_letter_next(&s, q, "billing", "dl-1");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "total"), 1);
    char id[96];
    keep_str(id, jstr(&r, "messages.0.id"));
    const char *dom = browser_dump_dom(&s, sfmt("/dead-letters?queue=%s", q));
    CHECK_STR(dom_value(dom, "total"), "1");
    CHECK(strstr(dom, sfmt("<tr data-row=\"%s\">", id)) != NULL);
    CHECK(strstr(dom, "<td data-k=\"data\"><pre>{\"order\":42}</pre></td>") != NULL);
    CHECK_STR(dom_cell(dom, id, "partition"), "p1");
    CHECK_STR(dom_cell(dom, id, "consumerGroup"), "billing");
    CHECK_STR(jraw(&r, "messages.0.producerSub"), "null");   /* pushed without a token */
    CHECK_STR(dom_cell(dom, id, "producerSub"), "—");
    CHECK_STR(dom_title(dom, id, "failedAt"), jstr(&r, "messages.0.failedAt"));
    CHECK(strstr(dom, "data-action=\"replay\"") != NULL);
    reply_fini(&r);
    srv_stop(&s);
}

/* The retention view after a pass: the offsets dropped by rule (the
 * history's totals, drawn as a chart), the watermark moved, and what pins
 * and what keeps the rest in words, as the explain route says it. */
TEST(dashboard_queue_retention_view_shows_what_a_pass_deleted_by_rule)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-ret");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "Default", 2);
    push(&s, q, "Default", 1);
    push(&s, q, "Default", 1);
    age_segments(pid_of(q, "Default"), 0, 4, 2 * HOUR);
    push(&s, q, "Default", 1);   /* young: retention keeps it */
    refresh(q);
    reply r;
    run(&s, false, &r);
    reply_fini(&r);
    const char *dom = browser_dump_dom(&s, sfmt("/queues/%s/retention", q));
    rq(&s, "GET", sfmt("/api/v1/analytics/retention?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "totals.retentionMsgs"), 4);
    CHECK_STR(dom_value(dom, "totals.retentionMsgs"), "4");
    CHECK_STR(dom_value(dom, "totals.eventCount"), sfmt("%lld", (long long)jint(&r, "totals.eventCount")));
    CHECK_STR(dom_value(dom, "totals.evictionMsgs"), "0");
    reply_fini(&r);
    CHECK(dom_chart_drawn(dom, "retention-chart"));
    rq(&s, "GET", sfmt("/api/v1/retention/explain?queue=%s", q), NULL, &r);
    CHECK_STR(dom_cell(dom, "Default", "watermark"), "4");
    CHECK_STR(dom_cell(dom, "Default", "watermark"), sfmt("%lld", (long long)jint(&r, "partitions.0.watermark")));
    CHECK(strstr(dom, sfmt("<div>%s</div>", jstr(&r, "partitions.0.notes.0"))) != NULL);
    reply_fini(&r);
    srv_stop(&s);
}

/* Leased offsets a pass evicted are called out in red over the chart's
 * span, and the span is the reader's: a step three hours old is outside
 * the last hour and inside the last six. */
TEST(dashboard_retention_view_calls_out_leased_evictions_over_the_chosen_span)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-evict");
    char queue[96];
    keep_str(queue, q);
    configure_queue(&s, queue, "{\"maxWaitTimeSeconds\":3600,\"leaseTime\":3600}");
    for (int i = 0; i < 3; i++) push(&s, queue, "Default", 1);
    CHECK_STR(pop_offsets(&s, queue, NULL, "consumerGroup=billing&batch=3"), "0,1,2");   /* a worker holds 0..2 */
    age_segments(pid_of(queue, "Default"), 0, 2, 2 * HOUR);
    refresh(queue);
    reply r;
    run(&s, false, &r);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/analytics/retention?queue=%s", queue), NULL, &r);
    CHECK_INT(jint(&r, "totals.leasedEvictedMsgs"), 2);
    CHECK_INT(jint(&r, "series.0.leasedEvictedMsgs"), 2);
    reply_fini(&r);
    const char *dom = browser_dump_dom(&s, sfmt("/queues/%s/retention", queue));
    CHECK_STR(dom_value(dom, "totals.leasedEvictedMsgs"), "2");
    CHECK(strstr(dom, "class=\"value bad\" data-k=\"totals.leasedEvictedMsgs\"") != NULL);
    CHECK_STR(dom_value(dom, "totals.evictionMsgs"), "2");
    CHECK(dom_chart_drawn(dom, "retention-chart"));

    sql("update queen.retention_history set executed_at = now() - interval '3 hours' where queue = '%s'", queue);
    dom = browser_dump_dom(&s, sfmt("/queues/%s/retention?range=1h", queue));
    CHECK(strstr(dom, "id=\"retention-empty\"") != NULL);
    CHECK_STR(dom_value(dom, "totals.leasedEvictedMsgs"), "0");
    dom = browser_dump_dom(&s, sfmt("/queues/%s/retention?range=6h", queue));
    CHECK_STR(dom_value(dom, "totals.evictionMsgs"), "2");
    CHECK_STR(dom_value(dom, "totals.leasedEvictedMsgs"), "2");
    CHECK(strstr(dom, "<strong data-range=\"6h\">") != NULL);
    srv_stop(&s);
}

/* "a queue with retention configured but nothing to delete shows nothing
 * rather than an error" */
TEST(dashboard_queue_retention_view_with_nothing_deleted_shows_nothing_not_an_error)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-ret0");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "Default", 1);
    const char *dom = browser_dump_dom(&s, sfmt("/queues/%s/retention", q));   /* fails on an error banner */
    CHECK(strstr(dom, "id=\"retention-empty\"") != NULL);
    CHECK(strstr(dom, "id=\"retention-chart\"") == NULL);
    CHECK_STR(dom_value(dom, "totals.totalMsgs"), "0");
    CHECK_STR(dom_cell(dom, "Default", "nextPass"), "nothing yet");
    srv_stop(&s);
}

/* Delete from the list of dead letters: it asks about that message first,
 * then /api/v1/dlq has none of it and the log still holds the message. */
TEST(dashboard_dead_letters_delete_button_asks_then_the_dead_letter_is_gone)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-dlqdel");
    configure_queue(&s, q, "{}");
    push_one(&s, q, "p1", "del-1", "{\"order\":8}");
    dead_letter_next(&s, q, "billing", "del-1");
    browser b;
    browser_open(&b, sfmt("%s/#/dead-letters?queue=%s", s.url, q));
    browser_await(&b, "document.querySelector('[data-action=delete]') !== null", 20000);
    browser_confirm_click(&b, "[data-action=delete]");
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 5000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), "del-1") != NULL);
    browser_await(&b, "document.querySelector('[data-k=total]') && document.querySelector('[data-k=total]').textContent === '0'", 10000);
    browser_close(&b);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "total"), 0);
    reply_fini(&r);
    CHECK_INT(pop_from(&s, q, "p1", "consumerGroup=fresh&batch=10&wait=false", &r), 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "del-1");   /* a dead letter is a copy: the log keeps the message */
    reply_fini(&r);
    srv_stop(&s);
}

/* Replay from the page: it asks first, then the dead letter is gone from
 * /api/v1/dlq and its message is back on its partition at a new offset. */
TEST(dashboard_replay_button_asks_then_puts_the_dead_letter_back_on_its_partition)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-replay");
    configure_queue(&s, q, "{}");
    push_one(&s, q, "p1", "rp-1", "{\"order\":7}");
    dead_letter_next(&s, q, "billing", "rp-1");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "total"), 1);
    char id[96];
    keep_str(id, jstr(&r, "messages.0.id"));
    reply_fini(&r);
    browser b;
    browser_open(&b, sfmt("%s/#/dead-letters?queue=%s", s.url, q));
    browser_await(&b, "document.querySelector('[data-action=replay]') !== null", 20000);
    browser_confirm_click(&b, "[data-action=replay]");
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 5000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), id) != NULL);   /* it asked about this one */
    /* the page re-reads the list once the replay answered */
    browser_await(&b, "document.querySelector('[data-k=total]') && document.querySelector('[data-k=total]').textContent === '0'", 10000);
    browser_close(&b);
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "total"), 0);
    reply_fini(&r);
    CHECK_INT(pop_from(&s, q, "p1", "consumerGroup=fresh&batch=10&wait=false", &r), 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "rp-1");   /* the original stays in the log */
    CHECK_STR(jstr(&r, "messages.1.transactionId"), sfmt("dlq:%s", id));
    CHECK_STR(jraw(&r, "messages.1.data"), "{\"order\":7}");
    reply_fini(&r);
    srv_stop(&s);
}

/* The retention view's buttons: a dry run reports what this queue would
 * lose and deletes nothing; run now asks first, then deletes it, and the
 * history the API answers shows the step. */
TEST(dashboard_retention_dry_run_reports_and_run_now_asks_then_deletes)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-run");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "Default", 3);
    age_segments(pid_of(q, "Default"), 0, 3, 2 * HOUR);
    push(&s, q, "Default", 1);
    refresh(q);
    browser b;
    browser_open(&b, sfmt("%s/#/queues/%s/retention", s.url, q));
    browser_await(&b, "document.querySelector('[data-action=dry-run]') !== null", 20000);
    browser_eval(&b, "document.querySelector('[data-action=dry-run]').click(); true");
    browser_await(&b, "document.querySelector('[data-k=runReport]') !== null", 10000);
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-k=runReport]').textContent"),
              "\"A pass now would delete 3 offsets of this queue in 1 step.\"");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/analytics/retention?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "totals.totalMsgs"), 0);   /* a dry run deletes nothing */
    reply_fini(&r);
    browser_confirm_click(&b, "[data-action=run-now]");
    browser_await(&b, "document.querySelector('[data-k=runReport]').textContent.startsWith('The pass deleted')", 10000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), "retention pass") != NULL);
    browser_close(&b);
    rq(&s, "GET", sfmt("/api/v1/analytics/retention?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "totals.retentionMsgs"), 3);
    reply_fini(&r);
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(jint(&r, "partitionList.0.logStart"), 3);
    reply_fini(&r);
    srv_stop(&s);
}

/* The group page shows each cursor's lag as the API does; seeking to the
 * end from the page asks first, then the API answers no lag. */
TEST(dashboard_group_page_shows_lag_and_seek_to_end_asks_then_moves_the_cursors)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-group");
    known_queue(&s, q);
    reply r;
    rq(&s, "GET", "/api/v1/consumer-groups/billing", NULL, &r);
    CHECK_INT(jint(&r, "partitions.0.lag"), 1);
    reply_fini(&r);
    browser b;
    browser_open(&b, sfmt("%s/#/groups/billing", s.url));
    browser_await(&b, sfmt("document.querySelector('[data-row=\"%s/p1\"] [data-k=lag]') !== null", q), 20000);
    CHECK_STR(browser_eval(&b, sfmt("document.querySelector('[data-row=\"%s/p1\"] [data-k=lag]').textContent", q)), "\"1\"");
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-k=members]').textContent"), "\"1\"");
    browser_confirm_click(&b, "[data-action=seek-end]");
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 5000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), q) != NULL);
    browser_await(&b, sfmt("document.querySelector('[data-row=\"%s/p2\"] [data-k=committedOffset]') !== null", q), 10000);
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-k=totalLag]').textContent"), "\"0\"");
    browser_eval(&b, "location.hash = '#/groups'; true");   /* the list page agrees */
    browser_await(&b, "document.querySelector('#page-groups [data-row=billing] [data-k=totalLag]') !== null", 10000);
    CHECK_STR(browser_eval(&b, "document.querySelector('#page-groups [data-row=billing] [data-k=totalLag]').textContent"), "\"0\"");
    browser_close(&b);
    rq(&s, "GET", "/api/v1/consumer-groups", NULL, &r);
    CHECK_INT(jint(&r, "0.totalLag"), 0);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/consumer-groups/billing", NULL, &r);
    for (int i = 0; i < 2; i++)
        if (strcmp(jstr(&r, sfmt("partitions.%d.partition", i)), "p2") == 0)
            CHECK_INT(jint(&r, sfmt("partitions.%d.committedOffset", i)), 2);
    reply_fini(&r);
    srv_stop(&s);
}

/* Seek to a time from the group page: two batches on one partition with a
 * known time between them (the commit time of the first, read from the
 * API, and a millisecond later). "A timestamp resolves to the first
 * retained segment at or after it": the second batch's, so the cursor
 * stands just before it and the next pop reads the second batch. */
TEST(dashboard_group_page_seek_to_a_time_asks_then_moves_the_cursor_before_the_first_segment_after_it)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-seek");
    configure_queue(&s, q, "{}");
    push_queued(&s, q, "p1", 0, 2, "early-");   /* offsets 0-1, one segment */
    reply r;
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    char between[96];   /* after the first segment's commit time (shown to the millisecond, never later) */
    keep_str(between, sql("SELECT queen.iso_ms('%s'::timestamptz + interval '1 millisecond')",
                          jstr(&r, "partitionList.0.lastWriteAt")));
    reply_fini(&r);
    sql_await("t", 5000, "SELECT clock_timestamp() >= '%s'::timestamptz", between);
    push_queued(&s, q, "p1", 0, 3, "late-");    /* offsets 2-4, committed at or after `between` */
    CHECK_INT(pop_from(&s, q, "p1", "consumerGroup=billing&batch=10&autoAck=true&wait=false", &r), 200);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/consumer-groups/billing", NULL, &r);
    CHECK_INT(jint(&r, "partitions.0.committedOffset"), 4);   /* all read: the seek moves it back */
    reply_fini(&r);
    browser b;
    browser_open(&b, sfmt("%s/#/groups/billing", s.url));
    browser_await(&b, sfmt("document.querySelector('[data-seek-time=\"%s\"]') !== null", q), 20000);
    browser_eval(&b, "window.confirm = (m) => { window.siltConfirmed = m; return true; }; true");
    /* typed and pressed in one evaluation: a refresh repaints the form (and empties the field) between two */
    browser_eval(&b, sfmt("document.querySelector('[data-seek-time=\"%s\"]').value = '%s';"
                          "document.querySelector('[data-action=seek-time][data-queue=\"%s\"]').click(); true",
                          q, between, q));
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 5000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), between) != NULL);
    browser_await(&b, sfmt("document.getElementById('notice').textContent === 'moved 1 cursors on %s'", q), 10000);
    browser_await(&b, sfmt("document.querySelector('[data-row=\"%s/p1\"] [data-k=lag]').textContent === '3'", q), 10000);
    browser_close(&b);
    rq(&s, "GET", "/api/v1/consumer-groups/billing", NULL, &r);
    CHECK_INT(jint(&r, "partitions.0.committedOffset"), 1);
    CHECK_INT(jint(&r, "partitions.0.lag"), 3);
    reply_fini(&r);
    CHECK_INT(pop_from(&s, q, "p1", "consumerGroup=billing&batch=10&wait=false", &r), 200);
    CHECK_STR(jstr(&r, "messages.0.transactionId"), "late-0");
    CHECK(jpath(&r, "messages.3") < 0);
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- screenshots for docs/dashboard.md --------------------------------- */

static void show_page(browser *b, const silt_server *s, const char *hash, const char *ready)
{
    browser_eval(b, sfmt("location.href = '%s/#%s'; true", s->url, hash));
    browser_await(b, ready, 20000);
}

/* Only with SILT_DASHBOARD_SCREENSHOTS=<dir> (docs/screenshots is where
 * docs/dashboard.md finds them): a scene with names a reader recognises,
 * each main page loaded and captured at 1280x900. */
TEST(dashboard_screenshots_of_the_main_pages)
{
    const char *dir = getenv("SILT_DASHBOARD_SCREENSHOTS");
    if (!dir) { printf("    note: SILT_DASHBOARD_SCREENSHOTS unset: no screenshots taken\n"); return; }
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    configure_queue(&s, "orders", "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, "orders", "eu", 40);
    push(&s, "orders", "us", 25);
    age_segments(pid_of("orders", "eu"), 0, 40, 2 * HOUR);
    refresh("orders");
    reply r;
    run(&s, false, &r);
    reply_fini(&r);
    push(&s, "orders", "eu", 12);
    configure_queue(&s, "emails", "{}");
    push(&s, "emails", "Default", 8);
    push_one(&s, "emails", "Default", "welcome-42", "{\"to\":\"ada@example.com\",\"template\":\"welcome\"}");
    CHECK_INT(pop_from(&s, "orders", "us", "consumerGroup=billing&batch=10&wait=false", &r), 200);
    reply_fini(&r);
    CHECK_INT(pop_from(&s, "emails", NULL, "consumerGroup=mailer&batch=8&autoAck=true&wait=false", &r), 200);
    reply_fini(&r);
    dead_letter_next(&s, "emails", "mailer", "welcome-42");
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"nightly-report\",\"nodes\":["
       "{\"id\":\"fetch\",\"task\":\"fetch\",\"queue\":\"etl\",\"retry\":{\"maxRetries\":1,\"delaysMs\":[0]}},"
       "{\"id\":\"parse\",\"task\":\"parse\",\"queue\":\"etl\",\"waitsFor\":[\"fetch\"]},"
       "{\"id\":\"enrich\",\"task\":\"enrich\",\"queue\":\"etl\",\"waitsFor\":[\"fetch\"]},"
       "{\"id\":\"report\",\"task\":\"report\",\"queue\":\"etl\",\"waitsFor\":[\"parse\",\"enrich\"]}]}", &r);
    CHECK_INT(r.status, 201);
    char workflow[96];
    keep_str(workflow, jstr(&r, "id"));
    reply_fini(&r);
    task_claimed fetch, parse;   /* fetch fails once and then completes; parse runs */
    CHECK(task_claim_one(&s, "worker-1", "etl", &fetch));
    CHECK_INT(task_call(&s, "start", &fetch, NULL), 200);
    CHECK_INT(task_call(&s, "fail", &fetch, "\"errorCode\":\"TIMEOUT\",\"errorMessage\":\"upstream took 30 s\""), 200);
    CHECK(task_claim_one(&s, "worker-2", "etl", &fetch));
    CHECK_INT(task_call(&s, "start", &fetch, NULL), 200);
    CHECK_INT(task_call(&s, "complete", &fetch, "\"result\":{\"rows\":1200}"), 200);
    CHECK(task_claim_one(&s, "worker-1", "etl", &parse));
    CHECK_INT(task_call(&s, "start", &parse, NULL), 200);
    /* three hours of history for the charts: a day's swell of orders, a steadier stream of emails */
    sql("insert into queen.minute_rolls select date_trunc('minute', now()) - interval '1 minute' * i, now(), 60"
        " from generate_series(1, 180) i");
    sql("insert into queen.minute_stats (minute, queue, pushed, consumed, dead_lettered)"
        " select date_trunc('minute', now()) - interval '1 minute' * i, q,"
        " (CASE q WHEN 'orders' THEN 1800 + 1200 * sin(i / 25.0) ELSE 600 END)::bigint,"
        " (CASE q WHEN 'orders' THEN 1700 + 1100 * sin((i + 6) / 25.0) ELSE 590 END)::bigint,"
        " (i %% 37 = 0)::integer from generate_series(1, 180) i, unnest(array['orders', 'emails']) q");
    browser b;
    browser_open(&b, "about:blank");
    reply m;
    browser_call(&b, false, "Emulation.setDeviceMetricsOverride",
                 "{\"width\":1280,\"height\":900,\"deviceScaleFactor\":1,\"mobile\":false}", &m);
    reply_fini(&m);
    show_page(&b, &s, "/", "document.getElementById('page-overview') !== null && rates.written.length > 0");   /* a rate drawn */
    browser_screenshot(&b, dir, "overview");
    show_page(&b, &s, "/queues/orders", "document.getElementById('page-queue') !== null");
    browser_screenshot(&b, dir, "queue");
    show_page(&b, &s, "/queues/orders/retention", "document.getElementById('page-queue-retention') !== null");
    browser_screenshot(&b, dir, "queue-retention");
    show_page(&b, &s, "/groups/billing", "document.getElementById('page-group') !== null");
    browser_screenshot(&b, dir, "group");
    show_page(&b, &s, "/dead-letters", "document.getElementById('page-dead-letters') !== null");
    browser_screenshot(&b, dir, "dead-letters");
    show_page(&b, &s, "/task-retention", "document.getElementById('page-task-retention') !== null");
    browser_screenshot(&b, dir, "task-retention");
    show_page(&b, &s, sfmt("/workflows/%s", workflow), "document.querySelector('#workflow-graph svg.edges') !== null");
    browser_screenshot(&b, dir, "workflow");
    show_page(&b, &s, sfmt("/tasks/%s", fetch.id), "document.getElementById('task-attempts') !== null");
    browser_screenshot(&b, dir, "task");
    browser_close(&b);
    srv_stop(&s);
}

/* A dead letter viewed from its list (the message lookup page: the log
 * still holds the message, so it reads retained), then its dead letter
 * deleted from there: asked first, and the API no longer has it. */
TEST(dashboard_message_lookup_shows_a_dead_letter_and_delete_asks_then_removes_it)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-msg");
    configure_queue(&s, q, "{}");
    push_one(&s, q, "p1", "ml-1", "{\"sku\":\"A-9\"}");
    dead_letter_next(&s, q, "billing", "ml-1");
    reply r;
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    char pid[96];
    keep_str(pid, jstr(&r, "messages.0.partitionId"));
    reply_fini(&r);
    browser b;
    browser_open(&b, sfmt("%s/#/dead-letters?queue=%s", s.url, q));
    browser_await(&b, "document.querySelector('[data-action=view]') !== null", 20000);
    browser_eval(&b, "document.querySelector('[data-action=view]').click(); true");
    browser_await(&b, "document.getElementById('message') !== null", 10000);
    /* the log still holds the message beside its dead letter: the API says retained */
    rq(&s, "GET", sfmt("/api/v1/messages/%s/ml-1", pid), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "retained");
    reply_fini(&r);
    CHECK_STR(browser_eval(&b, "document.querySelector('#message [data-k=status]').textContent"), "\"retained\"");
    CHECK_STR(browser_eval(&b, "document.querySelector('#message pre[data-k=data]').textContent"), "\"{\\\"sku\\\":\\\"A-9\\\"}\"");
    CHECK_STR(browser_eval(&b, "document.querySelector('#message [data-k=partitionId]').textContent"), sfmt("\"%s\"", pid));
    browser_confirm_click(&b, "[data-action=delete]");
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 5000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), "ml-1") != NULL);
    browser_await(&b, "document.getElementById('notice').textContent === 'deleted 1 dead letter(s)'", 10000);
    browser_close(&b);
    rq(&s, "GET", sfmt("/api/v1/dlq?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "total"), 0);
    reply_fini(&r);
    srv_stop(&s);
}

/* ---- failed requests ----------------------------------------------------
 *
 * Chromium logs no console line for a fetch answered 404 or 500, or for
 * one that got no reply: browser.c watches the page's requests (the
 * Network domain), and browser_close fails the test on one that failed,
 * unless the test declared it (browser_expect_failure). */

/* The first failed request recorded with this status, once there is one:
 * each evaluation reads the events chromium sent meanwhile. */
static browser_failure await_failure(browser *b, int status)
{
    int64_t deadline = now_ms() + 10000;
    for (;;) {
        int n;
        const browser_failure *f = browser_failures(b, &n);
        for (int i = 0; i < n; i++)
            if (f[i].status == status) return f[i];
        if (now_ms() > deadline) harness_failf(__FILE__, __LINE__, "no failed request with status %d recorded", status);
        browser_eval(b, "true");
        pause_ms(50);   /* a poll interval: the page works meanwhile */
    }
}

/* Opens the overview, runs script in it, closes it: in a process of its
 * own, since the close is to fail; its exit status, its complaint in
 * errfile. */
static int close_after(const silt_server *s, const char *script, const char *errfile)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (!freopen(errfile, "w", stderr)) _exit(3);
        browser b;
        browser_open(&b, sfmt("%s/#/", s->url));
        browser_await(&b, "document.querySelector('#page-overview') !== null", 20000);
        browser_eval(&b, script);
        browser_close(&b);
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A console message or an uncaught error in a page fails the test at
 * browser_close, naming the first (app.js writes none: one is a fault);
 * a page without one passes. */
TEST(dashboard_a_console_message_or_uncaught_error_fails_the_page_naming_it)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char errfile[PATH_MAX], text[4096];
    snprintf(errfile, sizeof errfile, "%s/console.txt", harness_scratch_dir());
    CHECK_INT(close_after(&s, "console.warn('silt-warned'); true", errfile), 1);
    CHECK_INT(run_cmd(sfmt("cat %s", errfile), text, sizeof text), 0);
    CHECK(strstr(text, "1 console message(s), the first: warning: \"silt-warned\"") != NULL);
    CHECK_INT(close_after(&s, "setTimeout(() => { throw new Error('silt-thrown'); }, 0); true", errfile), 1);
    CHECK_INT(run_cmd(sfmt("cat %s", errfile), text, sizeof text), 0);
    CHECK(strstr(text, "uncaught: Error: silt-thrown") != NULL);
    CHECK_INT(close_after(&s, "true", errfile), 0);
    srv_stop(&s);
}

/* The queue page of a queue that does not exist asks the queue route,
 * which answers 404: the request is recorded with its URL and status, and
 * the page says there is no such queue. With the server gone, the
 * overview's next refresh gets no reply: recorded with status 0 and
 * chromium's reason. */
TEST(dashboard_a_request_of_the_page_that_fails_is_recorded_with_its_url_and_status)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *missing = uniq("dash-missing");
    char path[128], want[256];
    snprintf(path, sizeof path, "/api/v1/resources/queues/%s", missing);
    snprintf(want, sizeof want, "%s%s?limit=50&offset=0", s.url, path);   /* the page's first page of partitions */
    browser b;
    browser_open(&b, sfmt("%s/#/queues/%s", s.url, missing));
    browser_await(&b, "document.getElementById('page-gone') !== null", 20000);
    CHECK(strstr(browser_eval(&b, "document.getElementById('page-gone').textContent"), "There is no queue") != NULL);
    browser_failure f = await_failure(&b, 404);
    CHECK_STR(f.url, want);
    CHECK_STR(f.error, "");
    browser_eval(&b, "location.hash = '#/'; true");
    browser_await(&b, "document.getElementById('page-overview') !== null && document.body.dataset.polling === 'true'",
                  20000);
    srv_stop(&s);
    f = await_failure(&b, 0);   /* the overview refreshes every 2 s */
    CHECK(strncmp(f.url, s.url, strlen(s.url)) == 0);
    CHECK(strncmp(f.error, "net::ERR_", 9) == 0);   /* refused, or reset if the server went mid-request */
    browser_expect_failure(&b, path, 404);   /* or browser_close would fail this test */
    browser_expect_failure(&b, "/", 0);
    browser_close(&b);
}

/* A message that is not there: the lookup route answers 404 for it
 * (path), and the message lookup page at hash asks that route. */
static void missing_message(silt_server *s, char path[160], char hash[200])
{
    const char *q = uniq("dash-nomsg");
    configure_queue(s, q, "{}");
    push_one(s, q, "p1", "there", "{}");
    const char *pid = pid_of(q, "p1");
    snprintf(path, 160, "/api/v1/messages/%s/not-there", pid);
    snprintf(hash, 200, "/messages?partitionId=%s&transactionId=not-there", pid);
    reply r;
    rq(s, "GET", path, NULL, &r);
    CHECK_INT(r.status, 404);
    reply_fini(&r);
}

/* A page loaded for its DOM whose request fails fails the test, naming the
 * URL and status: the load runs in a child, whose failure is the point. */
TEST(dashboard_a_failed_request_fails_a_page_load_naming_its_url_and_status)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char path[160], hash[200], log[PATH_MAX];
    missing_message(&s, path, hash);
    snprintf(log, sizeof log, "%s/child.log", harness_scratch_dir());
    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        if (!freopen(log, "w", stderr)) _exit(126);
        browser_dump_dom(&s, hash);
        _exit(0);
    }
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    char out[4096];
    CHECK_INT(run_cmd(sfmt("cat %s", log), out, sizeof out), 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    CHECK(strstr(out, sfmt("a request of the page failed: %s%s answered 404", s.url, path)) != NULL);
    srv_stop(&s);
}

/* The same lookup, the 404 declared: the page says there is no such
 * message, without an error banner. */
TEST(dashboard_message_lookup_of_a_missing_message_says_so)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char path[160], hash[200];
    missing_message(&s, path, hash);
    const char *dom = browser_dump_dom_expecting(&s, hash, path, 404);
    CHECK(strstr(dom, "id=\"msg-none\"") != NULL);
    srv_stop(&s);
}

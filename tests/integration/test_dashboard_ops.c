/* The dashboard as an operator's page (issue 36), in headless chromium
 * (see test_dashboard.c): a refresh that fails keeps the page under one
 * stale notice; a deleted queue's page says so and stops asking; actions
 * are offered only to a role that may take them; maintenance mode has a
 * switch; the overview ranks what needs attention; the workers page flags
 * a late worker; every page fits a 390 px screen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jwt.h>
#include "browser.h"
#include "dashboard_support.h"
#include "harness.h"
#include "support.h"
#include "retention_support.h"
#include "task_support.h"

/* ---- helpers ---------------------------------------------------------- */

/* The text of the first element matching a selector ("" when none). */
static const char *text_of(browser *b, const char *selector)
{
    const char *v = browser_eval(b, sfmt("(document.querySelector('%s') || { textContent: '' }).textContent", selector));
    size_t n = strlen(v);
    return n >= 2 && v[0] == '"' ? sfmt("%.*s", (int)(n - 2), v + 1) : v;   /* a JSON string, unquoted */
}

/* Opens the dashboard at hash and waits for the element that says the page is shown. */
static void open_page(browser *b, const silt_server *s, const char *hash, const char *ready)
{
    browser_open(b, sfmt("%s/#%s", s->url, hash));
    browser_await(b, sfmt("document.querySelector('%s') !== null", ready), 20000);
}

/* Stops and restarts new connections to the test's database, and ends the
 * server's: PostgreSQL is down for this test's server only (the suite's
 * other databases, and this process's own session, are left alone). */
static void database_unavailable(bool down)
{
    const char *db = test_db();
    const char *mine = sql("select pg_backend_pid()");
    char pid[32];
    snprintf(pid, sizeof pid, "%s", mine);
    sql_in("postgres", "ALTER DATABASE %s ALLOW_CONNECTIONS %s", db, down ? "false" : "true");
    if (down)
        sql_in("postgres", "select count(pg_terminate_backend(pid)) from pg_stat_activity "
                           "where datname = '%s' and pid <> %s", db, pid);
}

/* WCAG's contrast ratio of an element's text against the nearest
 * background colour behind it, computed in the page. */
static double contrast_of(browser *b, const char *selector)
{
    const char *v = browser_eval(b, sfmt(
        "(() => { const rgb = (c) => (c.match(/[0-9.]+/g) || []).map(Number);"
        " const lum = ([r, g, b]) => { const f = (x) => { x /= 255; return x <= 0.03928 ? x / 12.92"
        " : Math.pow((x + 0.055) / 1.055, 2.4); }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };"
        " const el = document.querySelector('%s'); let bg = el;"
        " while (bg && (rgb(getComputedStyle(bg).backgroundColor)[3] === 0"
        "   || getComputedStyle(bg).backgroundColor === 'transparent')) bg = bg.parentElement;"
        " const a = lum(rgb(getComputedStyle(el).color)), c = lum(rgb(getComputedStyle(bg || document.body).backgroundColor));"
        " return (Math.max(a, c) + 0.05) / (Math.min(a, c) + 0.05); })()", selector));
    return atof(v);
}

/* ---- a failed refresh ------------------------------------------------- */

/* "with PostgreSQL stopped the overview keeps its last data with a clear
 * stale notice (one message, not repeated ...); the header does not claim
 * the API is unreachable when only the database is" — and the header's
 * error text is readable (at least 4.5:1). The notice goes with the next
 * good read. */
TEST(dashboard_overview_keeps_its_data_under_one_stale_notice_while_the_database_is_unavailable)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-stale");
    push_queued(&s, q, "p1", 0, 3, NULL);
    browser b;
    open_page(&b, &s, "/", "#page-overview");
    browser_await(&b, "document.querySelector('[data-k=messages]').textContent === '3'", 20000);
    browser_expect_failure(&b, "/api/v1/", 503);
    browser_expect_failure(&b, "/health", 503);
    database_unavailable(true);
    browser_await(&b, "!document.getElementById('stale').hidden && Number(document.getElementById('stale').dataset.failures) >= 2",
                  30000);
    const char *notice = text_of(&b, "#stale");
    CHECK(strstr(notice, "the database is unavailable") != NULL);
    CHECK(strstr(notice, "database unavailable: database unavailable") == NULL);
    CHECK(strstr(notice, "Not current: showing what the API answered at ") == notice);
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-k=messages]').textContent"), "\"3\"");   /* kept */
    CHECK_STR(browser_eval(&b, "document.getElementById('page-error') === null"), "true");
    CHECK_STR(browser_eval(&b, "document.getElementById('main').textContent.includes('unavailable')"), "false");
    CHECK_STR(text_of(&b, "#status"), "server up; database unavailable");
    CHECK(contrast_of(&b, "#status") >= 4.5);
    database_unavailable(false);
    browser_await(&b, "document.getElementById('stale').hidden && document.getElementById('status').textContent.startsWith('updated')",
                  30000);
    browser_close(&b);
    srv_stop(&s);
}

/* "a queue deleted while its page is open says the queue no longer exists
 * and stops polling it" */
TEST(dashboard_queue_deleted_while_its_page_is_open_says_so_and_stops_asking_for_it)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-gone");
    push_queued(&s, q, "p1", 0, 1, NULL);
    browser b;
    open_page(&b, &s, sfmt("/queues/%s", q), "#page-queue");
    browser_expect_failure(&b, sfmt("/api/v1/resources/queues/%s", q), 404);
    reply r;
    rq(&s, "DELETE", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    browser_await(&b, "document.getElementById('page-gone') !== null", 20000);
    CHECK(strstr(text_of(&b, "#page-gone"), sfmt("The queue %s no longer exists", q)) != NULL);
    CHECK_STR(browser_eval(&b, "document.body.dataset.polling"), "\"false\"");
    char asked[256];
    snprintf(asked, sizeof asked, "performance.getEntriesByType('resource').filter((e) => e.name.includes('/resources/queues/%s')).length", q);
    int before = atoi(browser_eval(&b, asked));
    /* two refresh periods of the page's own time pass, and it asks nothing more */
    browser_eval(&b, "window.siltT0 = performance.now(); true");
    browser_await(&b, "performance.now() - window.siltT0 > 4500", 20000);
    CHECK_INT(atoi(browser_eval(&b, asked)), before);
    browser_close(&b);
    srv_stop(&s);
}

/* ---- defects ------------------------------------------------------------ */

/* The groups list printed ",http://…/#/queues/orders": each queue a group
 * reads is a link, separated by commas. */
TEST(dashboard_group_list_links_each_queue_a_group_reads)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char a[96], c[96];
    keep_str(a, uniq("dash-ga"));
    keep_str(c, uniq("dash-gb"));
    reply r;
    for (int i = 0; i < 2; i++) {
        const char *q = i ? c : a;
        push_queued(&s, q, "p1", 0, 1, NULL);
        CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=both&batch=1&wait=false", &r), 200);
        reply_fini(&r);
    }
    const char *dom = browser_dump_dom(&s, "/groups");
    CHECK(strstr(dom, ",http") == NULL);
    CHECK(strstr(dom, sfmt("<td data-k=\"queues\"><a href=\"#/queues/%s\">%s</a>, <a href=\"#/queues/%s\">%s</a></td>",
                           a, a, c, c)) != NULL);
    srv_stop(&s);
}

/* A dry run that deletes nothing says so, with no "null" after it; and an
 * offset span reads as the explain notes write it ("offsets 0-3"). */
TEST(dashboard_retention_dry_run_of_nothing_says_so_and_spans_read_as_the_notes_write_them)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-span");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, q, "Default", 4);
    age_segments(pid_of(q, "Default"), 0, 4, 2 * HOUR);
    push(&s, q, "Default", 1);
    refresh(q);
    reply r;
    explain(&s, q, &r);
    CHECK_INT(jint(&r, "partitions.0.nextPass.fromOffset"), 0);
    CHECK_INT(jint(&r, "partitions.0.nextPass.toOffset"), 4);   /* exclusive */
    CHECK(strstr(jstr(&r, "partitions.0.notes.0"), "offsets 0-3") != NULL);
    reply_fini(&r);
    const char *dom = browser_dump_dom(&s, sfmt("/queues/%s/retention", q));
    CHECK_STR(dom_cell(dom, "Default", "nextPass"), "retention: offsets 0-3 (4)");

    const char *empty = uniq("dash-span0");
    configure_queue(&s, empty, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push(&s, empty, "Default", 1);
    run_pass(&s);   /* the other queue's offsets go now: the dry run after finds nothing anywhere */
    browser b;
    open_page(&b, &s, sfmt("/queues/%s/retention", empty), "[data-action=dry-run]");
    browser_eval(&b, "document.querySelector('[data-action=dry-run]').click(); true");
    browser_await(&b, "document.querySelector('[data-k=runReport]') !== null", 10000);
    CHECK_STR(text_of(&b, "#run-report"), "A pass now would delete 0 offsets of this queue in 0 steps.");
    browser_close(&b);
    srv_stop(&s);
}

/* ---- roles ----------------------------------------------------------------- */

#define SECRET "test-secret-of-at-least-thirty-two-bytes"
static const char *const jwt_env[] = { "JWT_ENABLED=true", "JWT_ALGORITHM=HS256", "JWT_SECRET=" SECRET, NULL };

static const char *token(const char *role)
{
    jwt_t *jwt;
    CHECK_INT(jwt_new(&jwt), 0);
    CHECK_INT(jwt_add_grant(jwt, "sub", role), 0);
    CHECK_INT(jwt_add_grant(jwt, "role", role), 0);
    CHECK_INT(jwt_set_alg(jwt, JWT_ALG_HS256, (const unsigned char *)SECRET, (int)strlen(SECRET)), 0);
    char *text = jwt_encode_str(jwt);
    CHECK(text != NULL);
    const char *out = sfmt("%s", text);
    free(text);
    jwt_free(jwt);
    return out;
}

/* Page.navigate: a load of another document, which an evaluated
 * "location.href = ..." may report as the target navigated or closed. */
static void navigate(browser *b, const char *url)
{
    reply r;
    browser_call(b, false, "Page.navigate", sfmt("{\"url\":\"%s\"}", url), &r);
    reply_fini(&r);
}

/* Loads hash with the token in the page's localStorage, put there by a
 * script that runs before the page's own, so no API call goes out without it. */
static void open_as(browser *b, const silt_server *s, const char *tok, const char *hash, const char *ready)
{
    browser_open(b, "about:blank");
    reply r;
    browser_call(b, false, "Page.enable", NULL, &r);
    reply_fini(&r);
    browser_call(b, false, "Page.addScriptToEvaluateOnNewDocument",
                 sfmt("{\"source\":\"localStorage.setItem('silt.token', '%s')\"}", tok), &r);
    reply_fini(&r);
    navigate(b, sfmt("%s/#%s", s->url, hash));
    browser_await(b, sfmt("document.querySelector('%s') !== null", ready), 20000);
}

/* "admin buttons hidden for read-only tokens": the role comes from
 * GET /api/v1/whoami. Seek, replay, delete, the retention run and the
 * maintenance switch need admin; a read-only token sees none of them,
 * an admin all. */
TEST(dashboard_offers_admin_actions_only_to_an_admin_token)
{
    silt_server s;
    if (!dashboard_start(&s, jwt_env)) return;
    char admin[1024], viewer[1024];
    snprintf(admin, sizeof admin, "%s", token("admin"));
    snprintf(viewer, sizeof viewer, "%s", token("read-only"));
    const char *q = uniq("dash-roles");
    http_client_set_token(s.http, admin);
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push_one(&s, q, "p1", "r-1", "{\"n\":1}");
    dead_letter_next(&s, q, "billing", "r-1");
    http_client_set_token(s.http, NULL);
    char retention[160];
    snprintf(retention, sizeof retention, "/queues/%s/retention", q);
    struct { const char *hash, *ready, *action; } pages[] = {
        { "/groups/billing", "#page-group", "[data-action=seek-end]" },
        { "/dead-letters", "#page-dead-letters", "[data-action=replay]" },
        { "/dead-letters", "#page-dead-letters", "[data-action=delete]" },
        { retention, "#page-queue-retention", "[data-action=run-now]" },
        { "/", "#page-overview", "[data-action=maintenance-on]" },
    };
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        char hash[160];
        snprintf(hash, sizeof hash, "%s", pages[i].hash);
        browser b;
        open_as(&b, &s, viewer, hash, pages[i].ready);
        CHECK_STR(browser_eval(&b, sfmt("document.querySelector('%s') === null", pages[i].action)), "true");
        browser_close(&b);
        open_as(&b, &s, admin, hash, pages[i].action);   /* waits for the button */
        browser_close(&b);
    }
    srv_stop(&s);
}

/* A schedule made through the API has pause for an admin token only; a
 * read-only token sees the page and its origin column, no button. */
TEST(dashboard_offers_a_schedules_pause_only_to_an_admin_token)
{
    silt_server s;
    if (!dashboard_start(&s, jwt_env)) return;
    char admin[1024], viewer[1024];
    snprintf(admin, sizeof admin, "%s", token("admin"));
    snprintf(viewer, sizeof viewer, "%s", token("read-only"));
    http_client_set_token(s.http, admin);
    reply r;
    rq(&s, "POST", "/api/v1/schedules", "{\"name\":\"hourly\",\"cron\":\"0 * * * *\",\"task\":\"t\",\"queue\":\"q\"}", &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    http_client_set_token(s.http, NULL);
    browser b;
    open_as(&b, &s, viewer, "/schedules", "[data-row=hourly] [data-k=origin]");
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-row=hourly] button') === null"), "true");
    browser_close(&b);
    open_as(&b, &s, admin, "/schedules", "[data-row=hourly] [data-action=pause]");   /* waits for the button */
    browser_close(&b);
    srv_stop(&s);
}

/* "maintenance mode gets a switch (with confirmation) for admins" */
TEST(dashboard_maintenance_switch_asks_then_turns_maintenance_mode_on_and_off)
{
    const char *env[] = { "MAINTENANCE_REFRESH_MS=100", NULL };
    silt_server s;
    if (!dashboard_start(&s, env)) return;
    browser b;
    open_page(&b, &s, "/", "[data-action=maintenance-on]");
    browser_confirm_click(&b, "[data-action=maintenance-on]");
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 5000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), "Turn maintenance mode on?") != NULL);
    browser_await(&b, "document.querySelector('[data-action=maintenance-off]') !== null", 20000);
    reply r;
    rq(&s, "GET", "/api/v1/system/maintenance", NULL, &r);
    CHECK(jbool(&r, "maintenanceMode"));
    reply_fini(&r);
    CHECK(strstr(text_of(&b, "[data-attention=maintenance]"), "maintenance mode is on") != NULL);
    browser_eval(&b, "window.siltConfirmed = undefined; true");
    browser_confirm_click(&b, "[data-action=maintenance-off]");
    browser_await(&b, "document.querySelector('[data-action=maintenance-on]') !== null", 20000);
    rq(&s, "GET", "/api/v1/system/maintenance", NULL, &r);
    CHECK(!jbool(&r, "maintenanceMode"));
    reply_fini(&r);
    browser_close(&b);
    srv_stop(&s);
}

/* ---- what needs attention ---------------------------------------------- */

/* A worker that registered, claimed a task of queue q and started it. */
static void running_worker(silt_server *s, const char *worker, const char *q)
{
    reply r;
    rq(s, "POST", "/api/v1/workers", sfmt("{\"workerId\":\"%s\",\"queues\":[\"%s\"],\"concurrency\":1}", worker, q), &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    task_send(s, sfmt("{\"name\":\"t\",\"queue\":\"%s\"}", q));
    task_claimed c;
    CHECK(task_claim_one(s, worker, q, &c));
    CHECK_INT(task_call(s, "start", &c, NULL), 200);
}

/* "the overview ranks trouble now": a dead group, a late worker, red
 * coverage, failing tasks, dead letters arriving, a lagging group and
 * maintenance mode, in that order, each a link to its page. */
TEST(dashboard_overview_ranks_what_needs_attention_worst_first_each_linking_to_its_page)
{
    const char *env[] = { "MAINTENANCE_REFRESH_MS=100", NULL };
    silt_server s;
    if (!dashboard_start(&s, env)) return;
    const char *q = uniq("dash-attn");
    push_queued(&s, q, "p1", 0, 2, NULL);
    push_queued(&s, q, "p2", 0, 3, NULL);
    age_segments(pid_of(q, "p2"), 0, 3, 2 * HOUR);
    reply r;
    CHECK_INT(pop_from(&s, q, "p1", "consumerGroup=stalled&batch=10&autoAck=true&wait=false", &r), 200);
    reply_fini(&r);
    CHECK_INT(pop_from(&s, q, "p1", "consumerGroup=busy&batch=10&autoAck=true&wait=false", &r), 200);
    reply_fini(&r);
    sql("update queen.log_consumers set last_activity_at = now() - interval '2 hours' where consumer_group = 'stalled'");
    char dlq[96];
    keep_str(dlq, sfmt("%s-dlq", q));
    push_one(&s, dlq, "p1", "attn-dl", "{}");
    dead_letter_next(&s, dlq, "poison", "attn-dl");

    running_worker(&s, "w-stuck", "jobs");
    sql("update horsies_workers set last_seen_at = now() - interval '10 minutes' where worker_id = 'w-stuck'");
    task_send(&s, "{\"name\":\"f\",\"queue\":\"flaky\",\"retry\":{\"maxRetries\":0}}");
    task_claimed c;
    CHECK(task_claim_one(&s, "w-ok", "flaky", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_call(&s, "fail", &c, "\"errorCode\":\"E\",\"errorMessage\":\"boom\""), 200);

    rq(&s, "GET", "/api/v1/task-retention/leaves?class=standard_30d", NULL, &r);
    int n = 0;
    while (jpath(&r, sfmt("leaves.%d", n)) >= 0) n++;
    CHECK(n >= 2);
    char gone[96];
    keep_str(gone, jstr(&r, sfmt("leaves.%d.leaf", n - 1)));
    reply_fini(&r);
    sql("DROP TABLE %s", gone);   /* coverage red */
    rq(&s, "POST", "/api/v1/system/task-retention/run", NULL, &r);
    reply_fini(&r);
    rq(&s, "POST", "/api/v1/system/maintenance", "{\"enabled\":true}", &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    srv_await_metric(&s, "silt_maintenance_mode", 1, 10000);   /* this server's copy, which /health shows */

    browser b;
    browser_open(&b, sfmt("%s/#/", s.url));
    browser_expect_failure(&b, "/api/v1/task-retention/coverage", 503);
    browser_await(&b, "document.querySelectorAll('[data-attention]').length === 7", 20000);
    const char *kinds = browser_eval(&b, "[...document.querySelectorAll('[data-attention]')].map((e) => e.dataset.attention).join(' ')");
    CHECK_STR(kinds, "\"dead-group late-worker coverage failing-tasks dead-letters lagging-group maintenance\"");
    const char *hrefs = browser_eval(&b, "[...document.querySelectorAll('[data-attention] a')].map((e) => e.getAttribute('href')).join(' ')");
    CHECK_STR(hrefs, "\"#/groups/stalled #/workers #/task-retention #/tasks?status=FAILED #/dead-letters #/groups/busy #/\"");
    CHECK(strstr(text_of(&b, "[data-attention=late-worker]"), "worker w-stuck holds 1 task and") != NULL);
    CHECK(strstr(text_of(&b, "[data-attention=failing-tasks]"), "1 task sent in the last hour failed") != NULL);
    CHECK(strstr(text_of(&b, "[data-attention=dead-group]"), "consumer group stalled is Dead: 3 messages behind") != NULL);
    browser_eval(&b, "document.querySelector('[data-attention=late-worker] a').click(); true");
    browser_await(&b, "document.getElementById('page-workers') !== null", 20000);
    browser_close(&b);
    srv_stop(&s);
}

/* ---- workers -------------------------------------------------------------- */

/* "last heartbeat age, running tasks, flags a worker whose heartbeat is
 * older than its interval allows" — as GET /api/v1/workers answers it. */
TEST(dashboard_workers_page_flags_a_late_worker_and_lists_the_tasks_it_holds)
{
    const char *conf = test_file("silt.conf", "[queue.jobs]\nmax_concurrency = 2\n[queue.other]\n");
    const char *env[] = { sfmt("SILT_CONFIG=%s", conf), NULL };
    silt_server s;
    if (!dashboard_start(&s, env)) return;
    running_worker(&s, "w-late", "jobs");
    running_worker(&s, "w-fine", "jobs");
    task_send(&s, "{\"name\":\"t\",\"queue\":\"jobs\"}");   /* due, held back by the cap of 2 */
    sql("update horsies_workers set last_seen_at = now() - interval '5 minutes' where worker_id = 'w-late'");
    char held[96];
    keep_str(held, sql("select id from horsies_tasks where worker_id = 'w-late'"));
    const char *dom = browser_dump_dom(&s, "/workers");
    reply r;
    rq(&s, "GET", "/api/v1/workers", NULL, &r);
    CHECK_STR(jstr(&r, "workers.0.workerId"), "w-fine");
    CHECK(jbool(&r, "workers.1.late"));
    reply_fini(&r);
    CHECK_STR(dom_cell(dom, "w-late", "late"), "late");
    CHECK(strstr(dom, "<tr data-row=\"w-late\" class=\"bad\">") != NULL);
    CHECK_STR(dom_cell(dom, "w-fine", "late"), "no");
    CHECK_STR(dom_cell(dom, "w-late", "running"), "1");
    CHECK_STR(dom_cell(dom, "w-late", "heartbeatIntervalMs"), "30000");
    CHECK(atol(dom_cell(dom, "w-late", "lastSeenAgeMs")) >= 300000);
    CHECK(strstr(dom, sfmt("<a href=\"#/tasks/%s\">%s</a> (RUNNING)", held, held)) != NULL);
    CHECK(strstr(dom, "<p class=\"note\" data-held-back=\"jobs\">Queue jobs has tasks due that wait for its "
                      "concurrency cap: 2 claimed or running of max_concurrency 2") != NULL);
    CHECK(strstr(dom, "data-held-back=\"other\"") == NULL);
    srv_stop(&s);
}

/* ---- a small screen ----------------------------------------------------- */

/* "at 390 px the navigation wraps (no page wider than the viewport),
 * inputs have labels, a skip link, notices announced (aria-live)". */
TEST(dashboard_pages_fit_a_390_px_screen_with_labelled_inputs_a_skip_link_and_announced_notices)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-narrow-queue-with-a-rather-long-name");
    configure_queue(&s, q, "{\"retentionEnabled\":true,\"retentionSeconds\":3600}");
    push_one(&s, q, "p1", "n-1", "{\"a\":\"a payload long enough to need more than one line on a phone screen\"}");
    dead_letter_next(&s, q, "billing", "n-1");
    running_worker(&s, "w-narrow", "jobs");
    browser b;
    browser_open(&b, "about:blank");   /* no favicon asked, as a stylesheet's page would */
    reply r;
    browser_call(&b, false, "Emulation.setDeviceMetricsOverride",
                 "{\"width\":390,\"height\":844,\"deviceScaleFactor\":1,\"mobile\":true}", &r);
    reply_fini(&r);
    char queue_page[160], retention_page[160];   /* not sfmt's ring: the loop's calls reuse it */
    snprintf(queue_page, sizeof queue_page, "/queues/%s", q);
    snprintf(retention_page, sizeof retention_page, "/queues/%s/retention", q);
    const char *pages[] = { "/", "/queues", queue_page, retention_page, "/groups",
                            "/groups/billing", "/dead-letters", "/messages", "/tasks", "/workers", "/workflows",
                            "/schedules", "/task-retention" };
    navigate(&b, sfmt("%s/#/nowhere", s.url));   /* then each page by its hash, in the same document */
    browser_await(&b, "document.querySelector('#main h1') !== null", 20000);
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        browser_eval(&b, sfmt("document.getElementById('main').replaceChildren(); location.hash = '#%s'; true", pages[i]));
        browser_await(&b, "document.querySelector('#main h1') !== null", 20000);   /* this page's */
        CHECK_STR(browser_eval(&b, "window.innerWidth"), "390");
        const char *wide = browser_eval(&b, "document.documentElement.scrollWidth");
        if (atoi(wide) > 390) harness_failf(__FILE__, __LINE__, "#%s is %s px wide", pages[i], wide);
        CHECK_STR(browser_eval(&b, "[...document.querySelectorAll('header a, header nav a')]"
                                   ".every((a) => a.getBoundingClientRect().right <= 390)"), "true");
        const char *unlabelled = browser_eval(&b, "[...document.querySelectorAll('input, select')]"
            ".filter((e) => !e.labels.length && !e.getAttribute('aria-label')).map((e) => e.id).join(',')");
        if (strcmp(unlabelled, "\"\"") != 0) harness_failf(__FILE__, __LINE__, "#%s: inputs without a label: %s", pages[i], unlabelled);
    }
    CHECK_STR(browser_eval(&b, "document.body.firstElementChild.id"), "\"skip\"");
    browser_eval(&b, "document.getElementById('skip').focus(); true");
    CHECK_STR(browser_eval(&b, "document.getElementById('skip').getBoundingClientRect().left >= 0"), "true");
    browser_eval(&b, "document.getElementById('skip').click(); true");
    CHECK_STR(browser_eval(&b, "document.activeElement.id"), "\"main\"");
    CHECK_STR(browser_eval(&b, "location.hash"), "\"#/task-retention\"");   /* the skip link is not a route */
    CHECK_STR(browser_eval(&b, "document.getElementById('notice').getAttribute('aria-live')"), "\"polite\"");
    CHECK_STR(browser_eval(&b, "document.getElementById('stale').getAttribute('aria-live')"), "\"polite\"");
    browser_close(&b);
    srv_stop(&s);
}

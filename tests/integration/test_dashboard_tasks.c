/* The dashboard's task engine pages in headless chromium (see
 * test_dashboard.c for how pages are read and driven): tasks by status, a
 * task with its attempts and cancel, workflows as graphs with their
 * controls, schedules, and task record retention. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "browser.h"
#include "dashboard_support.h"
#include "harness.h"
#include "support.h"
#include "task_support.h"

/* The retention view lists every class and leaf the API lists; a leaf
 * dropped outside silt shows under absent leaves and in a red row, and the
 * coverage card says red, as the coverage route (503) does. */
TEST(dashboard_task_retention_page_shows_classes_leaves_and_absent_leaves_in_red)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    reply r;
    rq(&s, "GET", "/api/v1/task-retention/leaves?class=standard_30d", NULL, &r);
    int n = 0;
    while (jpath(&r, sfmt("leaves.%d", n)) >= 0) n++;
    CHECK(n >= 2);
    char gone[96];
    keep_str(gone, jstr(&r, sfmt("leaves.%d.leaf", n - 1)));
    reply_fini(&r);
    sql("DROP TABLE %s", gone);
    rq(&s, "POST", "/api/v1/system/task-retention/run", NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    rq(&s, "GET", "/api/v1/task-retention/coverage", NULL, &r);
    CHECK_INT(r.status, 503);
    reply_fini(&r);
    /* a red coverage answers 503 with its report, which the page shows */
    const char *dom = browser_dump_dom_expecting(&s, "/task-retention", "/api/v1/task-retention/coverage", 503);
    CHECK_STR(dom_value(dom, "healthy"), "red");
    CHECK(strstr(dom, sfmt("<li data-k=\"absent_leaf\" class=\"bad\">%s</li>", gone)) != NULL);
    CHECK(strstr(dom, sfmt("<tr data-row=\"%s\" class=\"bad\">", gone)) != NULL);
    CHECK_STR(dom_cell(dom, gone, "state"), "absent");
    rq(&s, "GET", "/api/v1/task-retention/classes", NULL, &r);
    for (int i = 0; jpath(&r, sfmt("classes.%d", i)) >= 0; i++) {
        char key[96];
        keep_str(key, jstr(&r, sfmt("classes.%d.classKey", i)));
        CHECK_STR(dom_cell(dom, key, "classKey"), key);
        CHECK_STR(dom_cell(dom, key, "leaves"), sfmt("%lld", (long long)jint(&r, sfmt("classes.%d.leaves", i))));
    }
    reply_fini(&r);
    CHECK_STR(dom_cell(dom, "standard_30d", "duration"), "30d");
    /* the forever leaf's bounds are infinite: null in the API, a dash on the page */
    rq(&s, "GET", "/api/v1/task-retention/leaves?class=forever", NULL, &r);
    CHECK_STR(jraw(&r, "leaves.0.from"), "null");
    CHECK_STR(jraw(&r, "leaves.0.to"), "null");
    reply_fini(&r);
    CHECK_STR(dom_cell(dom, "horsies_task_history_forever", "from"), "—");
    CHECK(strstr(dom, "id=\"problems\"") != NULL);   /* red coverage says why */
    srv_stop(&s);
}

/* Tasks by status, paged on the server: the page lists what the list route
 * answers for that status, and a task's page shows its stored fields. */
TEST(dashboard_tasks_page_lists_tasks_by_status_and_shows_one)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char kept[96], gone[96];
    keep_str(kept, task_send(&s, "{\"name\":\"resize\",\"queue\":\"images\",\"args\":{\"id\":7}}"));
    keep_str(gone, task_send(&s, "{\"name\":\"resize\",\"queue\":\"images\",\"args\":{\"id\":8}}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", gone), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    const char *dom = browser_dump_dom(&s, "/tasks?status=PENDING");
    CHECK_STR(dom_cell(dom, kept, "status"), "PENDING");
    CHECK_STR(dom_cell(dom, kept, "name"), "resize");
    CHECK(strstr(dom, sfmt("data-row=\"%s\"", gone)) == NULL);
    srv_stop(&s);
}

/* One browser load per test: under a loaded CI machine a load can take
 * 15 s, and the harness gives a test 60. */
TEST(dashboard_task_page_shows_a_tasks_stored_fields)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char gone[96];
    keep_str(gone, task_send(&s, "{\"name\":\"resize\",\"queue\":\"images\",\"args\":{\"id\":8}}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", gone), NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    const char *dom = browser_dump_dom(&s, sfmt("/tasks/%s", gone));
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", gone), NULL, &r);
    CHECK_STR(dom_cell(dom, "status", "status"), jstr(&r, "status"));
    CHECK(strstr(dom, "<pre>{\"id\":8}</pre>") != NULL);
    reply_fini(&r);
    srv_stop(&s);
}

/* A running task's progress report (docs/tasks.md, "Progress"): in the
 * list, its number and info in short; on its page, with a bar and when it
 * came. */
static void running_with_progress(silt_server *s, task_claimed *c)
{
    task_send(s, "{\"name\":\"resize\",\"queue\":\"images\"}");
    CHECK(task_claim_one(s, "w", "images", c));
    CHECK_INT(task_call(s, "start", c, NULL), 200);
    reply r;
    rq(s, "POST", "/api/v1/workers/w/heartbeat",
       sfmt("{\"tasks\":[{\"id\":\"%s\",\"claimId\":\"%s\",\"progress\":42.5,"
            "\"progressInfo\":{\"step\":\"copy\"}}]}", c->id, c->claim), &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
}

TEST(dashboard_tasks_page_shows_a_running_tasks_progress)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    task_claimed c;
    running_with_progress(&s, &c);
    const char *dom = browser_dump_dom(&s, "/tasks?status=RUNNING");
    CHECK_STR(dom_cell(dom, c.id, "progress"), "42.5 · {\"step\":\"copy\"}");
    srv_stop(&s);
}

TEST(dashboard_task_page_shows_its_progress_with_a_bar_and_when_it_came)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    task_claimed c;
    running_with_progress(&s, &c);
    const char *dom = browser_dump_dom(&s, sfmt("/tasks/%s", c.id));
    CHECK(strstr(dom, "id=\"task-progress\"") != NULL);
    CHECK(strstr(dom, "<progress max=\"100\" value=\"42.5\">") != NULL);
    CHECK(strstr(dom, "<b data-k=\"progress\">42.5 · {\"step\":\"copy\"}</b>") != NULL);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", c.id), NULL, &r);
    CHECK(strstr(dom, sfmt(" reported %s", jstr(&r, "progressAt"))) != NULL);
    reply_fini(&r);
    srv_stop(&s);
}

/* A task that failed once, then completed: its page shows both attempts
 * with the values the attempts route answers, and no cancel (it ended). */
TEST(dashboard_task_page_shows_a_tasks_attempts_as_the_api_holds_them)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"resize\",\"queue\":\"images\",\"retry\":{\"maxRetries\":1,\"delaysMs\":[0]}}"));
    task_claimed c;
    CHECK(task_claim_one(&s, "w1", "images", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_call(&s, "fail", &c, "\"errorCode\":\"BOOM\",\"errorMessage\":\"it broke\""), 200);
    CHECK(task_claim_one(&s, "w2", "images", &c));
    CHECK_INT(task_call(&s, "start", &c, NULL), 200);
    CHECK_INT(task_call(&s, "complete", &c, "\"result\":{\"ok\":true}"), 200);
    const char *dom = browser_dump_dom(&s, sfmt("/tasks/%s", id));
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s/attempts", id), NULL, &r);
    CHECK_INT(r.status, 200);
    static const char *const keys[] = { "workerId", "claimId", "startedAt", "finishedAt", "outcome", "errorCode",
                                        "errorMessage" };
    for (int i = 0; i < 2; i++) {
        char row[32];
        snprintf(row, sizeof row, "attempt-%d", i + 1);
        CHECK_STR(dom_cell(dom, row, "attempt"), sfmt("%d", i + 1));
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *want = jstr(&r, sfmt("attempts.%d.%s", i, keys[k]));
            bool time = want && strstr(keys[k], "At") != NULL;   /* "3 s ago", the exact time its title */
            CHECK_STR(time ? dom_title(dom, row, keys[k]) : dom_cell(dom, row, keys[k]), want ? want : "—");
        }
    }
    CHECK_STR(dom_cell(dom, "attempt-1", "errorMessage"), "it broke");
    CHECK_STR(dom_cell(dom, "attempt-2", "outcome"), "COMPLETED");
    CHECK(strstr(dom, "data-row=\"attempt-3\"") == NULL);
    CHECK(strstr(dom, "data-action=\"cancel\"") == NULL);
    reply_fini(&r);
    srv_stop(&s);
}

/* Cancel on a task that has not ended: asked first, then the API says
 * CANCELLED and the page, read again, offers it no more. */
TEST(dashboard_task_cancel_asks_then_the_api_says_cancelled)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"resize\",\"queue\":\"images\"}"));
    browser b;
    browser_open(&b, sfmt("%s/#/tasks/%s", s.url, id));
    browser_await(&b, "document.querySelector('[data-action=cancel]') !== null", 20000);
    browser_confirm_click(&b, "[data-action=cancel]");
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 5000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), id) != NULL);   /* it asked about this one */
    browser_await(&b, sfmt("document.getElementById('notice').textContent === 'cancelled task %s'", id), 10000);
    browser_await(&b, "document.querySelector('[data-row=status] [data-k=status]').textContent === 'CANCELLED'"
                  " && document.querySelector('[data-action=cancel]') === null", 10000);
    browser_close(&b);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/tasks/%s", id), NULL, &r);
    CHECK_STR(jstr(&r, "status"), "CANCELLED");
    reply_fini(&r);
    srv_stop(&s);
}

/* Rerun on an ended task: asked first, then the rerun's page opens, and it
 * names the task it reruns. */
TEST(dashboard_task_rerun_asks_then_opens_the_rerun)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    char id[96];
    keep_str(id, task_send(&s, "{\"name\":\"resize\",\"queue\":\"images\"}"));
    reply r;
    rq(&s, "POST", sfmt("/api/v1/tasks/%s/cancel", id), NULL, &r);
    reply_fini(&r);
    browser b;
    browser_open(&b, sfmt("%s/#/tasks/%s", s.url, id));
    browser_await(&b, "document.querySelector('[data-action=rerun]') !== null", 20000);
    browser_confirm_click(&b, "[data-action=rerun]");
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 5000);
    browser_await(&b, "document.getElementById('notice').textContent.startsWith('rerun sent: task ')", 10000);
    char again[96];
    keep_str(again, sql("SELECT id FROM horsies_tasks WHERE rerun_of = '%s'", id));
    browser_await(&b, sfmt("location.hash === '#/tasks/%s'", again), 10000);
    browser_close(&b);
    srv_stop(&s);
}

/* Pause from the tasks page filtered on a queue: the queue is listed as
 * paused, and its resume button brings it back. */
TEST(dashboard_tasks_page_pauses_the_queue_it_shows_and_resumes_it)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    task_send(&s, "{\"name\":\"resize\",\"queue\":\"images\"}");
    browser b;
    browser_open(&b, sfmt("%s/#/tasks?queue=images", s.url));
    browser_await(&b, "document.querySelector('[data-action=pause]') !== null", 20000);
    browser_confirm_click(&b, "[data-action=pause]");
    browser_await(&b, "document.querySelector('[data-paused=images] [data-action=resume]') !== null", 10000);
    CHECK_STR(sql("SELECT queue_name FROM tasks.paused_queues"), "images");
    browser_confirm_click(&b, "[data-paused=images] [data-action=resume]");
    browser_await(&b, "document.querySelector('[data-paused=images]') === null"
                  " && document.querySelector('[data-action=pause]') !== null", 10000);
    CHECK_STR(sql("SELECT count(*) FROM tasks.paused_queues"), "0");
    browser_close(&b);
    srv_stop(&s);
}

/* A workflow as a graph: each node in the column of its depth, in the
 * state the API gives it; the list shows the workflow. */
TEST(dashboard_workflow_page_draws_nodes_by_depth_in_their_states)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    reply r;
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"etl\",\"nodes\":["
       "{\"id\":\"fetch\",\"task\":\"fetch\",\"queue\":\"etl\"},"
       "{\"id\":\"parse\",\"task\":\"parse\",\"queue\":\"etl\",\"waitsFor\":[\"fetch\"]},"
       "{\"id\":\"aggregate\",\"task\":\"report\",\"queue\":\"etl\",\"waitsFor\":[\"parse\",\"fetch\"]}]}", &r);
    CHECK_INT(r.status, 201);
    char id[96];
    keep_str(id, jstr(&r, "id"));
    reply_fini(&r);
    const char *dom = browser_dump_dom(&s, sfmt("/workflows/%s", id));
    rq(&s, "GET", sfmt("/api/v1/workflows/%s", id), NULL, &r);
    CHECK_STR(dom_value(dom, "status"), jstr(&r, "status"));
    for (int i = 0; i < 3; i++) {
        char node[96];
        keep_str(node, jstr(&r, sfmt("nodes.%d.id", i)));
        const char *box = strstr(dom, sfmt("data-node=\"%s\"", node));
        CHECK(box != NULL);
        CHECK_STR(dom_value(box, "status"), jstr(&r, sfmt("nodes.%d.status", i)));
    }
    reply_fini(&r);
    /* by depth, not by name: fetch, then parse, then aggregate (it waits for parse too) */
    const char *fetch = strstr(dom, "data-node=\"fetch\""), *parse = strstr(dom, "data-node=\"parse\"");
    const char *aggregate = strstr(dom, "data-node=\"aggregate\"");
    CHECK(fetch && parse && aggregate && fetch < parse && parse < aggregate);
    CHECK(strstr(dom, "step 3") != NULL);
    srv_stop(&s);
}

TEST(dashboard_workflows_page_lists_workflows)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    reply r;
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"etl\",\"nodes\":[{\"id\":\"fetch\",\"task\":\"fetch\",\"queue\":\"etl\"}]}", &r);
    CHECK_INT(r.status, 201);
    char id[96];
    keep_str(id, jstr(&r, "id"));
    reply_fini(&r);
    const char *dom = browser_dump_dom(&s, "/workflows");
    rq(&s, "GET", sfmt("/api/v1/workflows/%s", id), NULL, &r);
    CHECK_STR(dom_cell(dom, id, "name"), "etl");
    CHECK_STR(dom_cell(dom, id, "status"), jstr(&r, "status"));
    reply_fini(&r);
    srv_stop(&s);
}

/* Every path of the edge layer starts on its predecessor's box (middle of
 * its right side), ends on its successor's (middle of its left side), and
 * passes through no other box (sampled every few pixels). */
static const char *const EDGES_ON_BOXES =
    "[...document.querySelectorAll('#workflow-graph svg.edges path[data-from]')].every((p) => {"
    "  const s = p.ownerSVGElement.getBoundingClientRect();"
    "  const all = [...document.querySelectorAll('[data-node]')];"
    "  const box = (id) => all.find((e) => e.getAttribute('data-node') === id).getBoundingClientRect();"
    "  const a = box(p.getAttribute('data-from')), b = box(p.getAttribute('data-to'));"
    "  const len = p.getTotalLength(), p0 = p.getPointAtLength(0), p1 = p.getPointAtLength(len);"
    "  const near = (x, y) => Math.abs(x - y) < 1.5;"
    "  const others = all.filter((e) => e.getAttribute('data-node') !== p.getAttribute('data-from')"
    "    && e.getAttribute('data-node') !== p.getAttribute('data-to')).map((e) => e.getBoundingClientRect());"
    "  for (let t = 0; t <= len; t += 4) {"
    "    const q = p.getPointAtLength(t), x = s.left + q.x, y = s.top + q.y;"
    "    if (others.some((r) => x > r.left && x < r.right && y > r.top && y < r.bottom)) return false;"
    "  }"
    "  return near(s.left + p0.x, a.right) && near(s.top + p0.y, a.top + a.height / 2)"
    "    && near(s.left + p1.x, b.left) && near(s.top + p1.y, b.top + b.height / 2); })";

/* The graph draws one edge per dependency the API gives (waitsFor), each
 * from its predecessor's box to its successor's and through no other box,
 * one that skips a column included. */
TEST(dashboard_workflow_page_draws_one_edge_per_dependency)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    reply r;
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"etl\",\"nodes\":["
       "{\"id\":\"fetch\",\"task\":\"fetch\",\"queue\":\"etl\"},"
       "{\"id\":\"parse\",\"task\":\"parse\",\"queue\":\"etl\",\"waitsFor\":[\"fetch\"]},"
       "{\"id\":\"enrich\",\"task\":\"enrich\",\"queue\":\"etl\",\"waitsFor\":[\"fetch\"]},"
       "{\"id\":\"aggregate\",\"task\":\"report\",\"queue\":\"etl\",\"waitsFor\":[\"parse\",\"enrich\",\"fetch\"]}]}",
       &r);
    CHECK_INT(r.status, 201);
    char id[96];
    keep_str(id, jstr(&r, "id"));
    reply_fini(&r);
    browser b;
    browser_open(&b, sfmt("%s/#/workflows/%s", s.url, id));
    browser_await(&b, "document.querySelector('#workflow-graph svg.edges') !== null", 20000);
    rq(&s, "GET", sfmt("/api/v1/workflows/%s", id), NULL, &r);
    int edges = 0;
    for (int i = 0; jpath(&r, sfmt("nodes.%d", i)) >= 0; i++)
        for (int k = 0; jpath(&r, sfmt("nodes.%d.waitsFor.%d", i, k)) >= 0; k++, edges++) {
            char from[96], to[96];
            keep_str(from, jstr(&r, sfmt("nodes.%d.waitsFor.%d", i, k)));
            keep_str(to, jstr(&r, sfmt("nodes.%d.id", i)));
            CHECK_STR(browser_eval(&b, sfmt("document.querySelectorAll('#workflow-graph svg.edges"
                                            " path[data-from=\"%s\"][data-to=\"%s\"]').length", from, to)), "1");
        }
    reply_fini(&r);
    CHECK_INT(edges, 5);
    CHECK_STR(browser_eval(&b, "document.querySelectorAll('#workflow-graph svg.edges path[data-from]').length"),
              sfmt("%d", edges));
    CHECK_STR(browser_eval(&b, EDGES_ON_BOXES), "true");
    browser_close(&b);
    srv_stop(&s);
}

/* Clicks a workflow page's action, answering confirm() with OK, and waits
 * until the notice gives the status the API answered. */
static void workflow_action(browser *b, const char *action, const char *id, const char *status)
{
    browser_await(b, sfmt("document.querySelector('[data-action=%s]') !== null", action), 20000);
    browser_eval(b, "window.siltConfirmed = undefined; true");
    browser_confirm_click(b, sfmt("[data-action=%s]", action));
    browser_await(b, "typeof window.siltConfirmed === 'string'", 5000);
    CHECK(strstr(browser_eval(b, "window.siltConfirmed"), id) != NULL);   /* it asked about this one */
    browser_await(b, sfmt("document.getElementById('notice').textContent === '%s: workflow %s is %s'",
                          action, id, status), 10000);
}

static const char *workflow_status(silt_server *s, const char *id)
{
    reply r;
    rq(s, "GET", sfmt("/api/v1/workflows/%s", id), NULL, &r);
    const char *status = sfmt("%s", jstr(&r, "status"));
    reply_fini(&r);
    return status;
}

/* Pause asks, then the API says PAUSED and the page offers resume instead;
 * resume brings it back to RUNNING; cancel ends it, and a workflow that
 * ended is offered nothing. */
TEST(dashboard_workflow_pause_asks_then_paused_and_resume_brings_it_back)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    reply r;
    rq(&s, "POST", "/api/v1/workflows", "{\"name\":\"etl\",\"nodes\":[{\"id\":\"fetch\",\"task\":\"fetch\",\"queue\":\"etl\"}]}", &r);
    CHECK_INT(r.status, 201);
    char id[96];
    keep_str(id, jstr(&r, "id"));
    reply_fini(&r);
    CHECK_STR(workflow_status(&s, id), "RUNNING");
    browser b;
    browser_open(&b, sfmt("%s/#/workflows/%s", s.url, id));
    workflow_action(&b, "pause", id, "PAUSED");
    CHECK_STR(workflow_status(&s, id), "PAUSED");
    browser_await(&b, "document.querySelector('[data-action=resume]') !== null"
                  " && document.querySelector('[data-action=pause]') === null", 10000);
    workflow_action(&b, "resume", id, "RUNNING");
    CHECK_STR(workflow_status(&s, id), "RUNNING");
    workflow_action(&b, "cancel", id, "CANCELLED");
    CHECK_STR(workflow_status(&s, id), "CANCELLED");
    browser_await(&b, "document.querySelector('[data-k=status]').textContent === 'CANCELLED'"
                  " && document.querySelector('[data-action]') === null", 10000);
    browser_close(&b);
    srv_stop(&s);
}

/* The schedules of the server's silt.conf, with their next fire as the
 * API answers it. */
TEST(dashboard_schedules_page_shows_each_schedule_and_its_next_fire)
{
    if (!browser_available()) return;
    const char *path = test_file("silt.conf", "[schedule.nightly]\ncron = 0 3 * * *\ntask = cleanup\n"
                                              "queue = maintenance\n");
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", path), NULL });
    const char *dom = browser_dump_dom(&s, "/schedules");
    reply r;
    rq(&s, "GET", "/api/v1/schedules", NULL, &r);
    CHECK_STR(dom_cell(dom, "nightly", "cron"), "0 3 * * *");
    CHECK_STR(dom_cell(dom, "nightly", "queue"), "maintenance");
    CHECK_STR(dom_title(dom, "nightly", "nextFire"), jstr(&r, "schedules.0.nextFire"));   /* its words: "in 14 h" */
    reply_fini(&r);
    srv_stop(&s);
}

/* The schedules page shows each schedule's origin and whether it is
 * paused; an API schedule has pause (then resume) for an admin, silt.conf's
 * has no button: the API would refuse it. */
TEST(dashboard_schedules_page_shows_the_origin_and_pauses_and_resumes_an_api_schedule)
{
    if (!browser_available()) return;
    const char *path = test_file("silt.conf", "[schedule.nightly]\ncron = 0 3 * * *\ntask = cleanup\n"
                                              "queue = maintenance\n");
    silt_server s;
    if (!dashboard_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", path), NULL })) return;
    reply r;
    rq(&s, "POST", "/api/v1/schedules", "{\"name\":\"hourly\",\"cron\":\"0 * * * *\",\"task\":\"t\",\"queue\":\"q\"}", &r);
    CHECK_INT(r.status, 201);
    reply_fini(&r);
    browser b;
    browser_open(&b, sfmt("%s/#/schedules", s.url));
    browser_await(&b, "document.querySelector('[data-row=hourly] [data-action=pause]') !== null", 20000);
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-row=nightly] [data-k=origin]').textContent"),
              "\"config\"");
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-row=nightly] button') === null"), "true");
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-row=hourly] [data-k=origin]').textContent"), "\"api\"");
    browser_confirm_click(&b, "[data-row=hourly] [data-action=pause]");
    browser_await(&b, "document.querySelector('[data-row=hourly] [data-action=resume]') !== null", 10000);
    CHECK_STR(browser_eval(&b, "document.querySelector('[data-row=hourly] [data-k=paused]').textContent"),
              "\"paused\"");
    CHECK_STR(sql("SELECT paused_at IS NOT NULL FROM tasks.schedules WHERE name = 'hourly'"), "t");
    browser_confirm_click(&b, "[data-row=hourly] [data-action=resume]");
    browser_await(&b, "document.querySelector('[data-row=hourly] [data-action=pause]') !== null", 10000);
    CHECK_STR(sql("SELECT paused_at IS NULL FROM tasks.schedules WHERE name = 'hourly'"), "t");
    browser_close(&b);
    srv_stop(&s);
}

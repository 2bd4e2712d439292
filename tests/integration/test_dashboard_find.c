/* The dashboard's bulk dead-letter actions, its searched and sorted lists,
 * its charts' stored history and its readable times and sizes (issue 36,
 * points 5 to 8), in headless chromium (browser.h) against a server with
 * known data; each checks what the page shows against what the API
 * answers. Without chromium the checks print a note and pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "browser.h"
#include "dashboard_support.h"
#include "harness.h"
#include "support.h"

/* Pushes n messages to q and dead-letters each (error "poison"). */
static void dead_letters(silt_server *s, const char *q, int n)
{
    for (int i = 0; i < n; i++) {
        push_one(s, q, "Default", sfmt("dl-%d", i), sfmt("{\"n\":%d}", i));
        reply r;
        CHECK_INT(pop_from(s, q, NULL, "batch=1", &r), 200);
        char pid[96];
        keep_str(pid, jstr(&r, "partitionId"));
        reply_fini(&r);
        rq(s, "POST", "/api/v1/ack", sfmt("{\"transactionId\":\"dl-%d\",\"partitionId\":\"%s\",\"status\":\"dlq\","
                                          "\"error\":\"poison\"}", i, pid), &r);
        CHECK(jbool(&r, "0.dlq"));
        reply_fini(&r);
    }
}

/* "replay all matching" asks for the count first (a dry run) and says it
 * on the page; declined, nothing changes; accepted, every matching dead
 * letter is replayed, however many calls that takes. */
TEST(dashboard_bulk_replay_shows_the_matching_count_then_asks_then_replays_them_all)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-bulk");
    dead_letters(&s, q, 3);
    browser b;
    browser_open(&b, sfmt("%s/#/dead-letters?queue=%s", s.url, q));
    browser_await(&b, "document.querySelector('[data-action=replay-matching]') !== null", 20000);
    /* declined: the preview stays on the page, nothing is replayed */
    browser_eval(&b, "window.confirm = (m) => { window.siltAsked = m; return false; }; true");
    browser_eval(&b, "document.querySelector('[data-action=delete-matching]').click(); true");
    browser_await(&b, "typeof window.siltAsked === 'string'", 10000);
    CHECK_STR(browser_eval(&b, "document.querySelector('#dlq-preview [data-k=matching]').textContent"), "\"3\"");
    CHECK(strstr(browser_eval(&b, "window.siltAsked"), "Delete 3 dead letters") != NULL);
    CHECK_STR(sql("select count(*) from queen.log_dlq where queue = '%s'", q), "3");
    /* accepted */
    browser_confirm_click(&b, "[data-action=replay-matching]");
    browser_await(&b, "typeof window.siltConfirmed === 'string'", 10000);
    CHECK(strstr(browser_eval(&b, "window.siltConfirmed"), sfmt("Replay 3 dead letters (queue %s)", q)) != NULL);
    browser_await(&b, "document.getElementById('notice').textContent === 'replayed 3 dead letters'", 10000);
    browser_await(&b, "document.querySelector('[data-k=total]') && document.querySelector('[data-k=total]').textContent === '0'",
                  10000);
    browser_close(&b);
    CHECK_STR(sql("select count(*) from queen.log_dlq where queue = '%s'", q), "0");
    reply r;
    CHECK_INT(pop_from(&s, q, NULL, "consumerGroup=fresh&batch=10&wait=false", &r), 200);
    CHECK_INT(r.doc.tokens[jpath(&r, "messages")].count, 6);   /* the three originals, then their replays */
    CHECK(strncmp(jstr(&r, "messages.5.transactionId"), "dlq:", 4) == 0);
    reply_fini(&r);
    srv_stop(&s);
}

/* The rows of the page's table, "a,b,c" (their data-row). */
static const char *page_rows(browser *b, const char *page)
{
    return browser_eval(b, sfmt("Array.from(document.querySelectorAll('#%s tbody tr[data-row]'))"
                                ".map((r) => r.dataset.row).join(',')", page));
}

/* The queues page asks the server to search and sort (its hash carries
 * them), and says how many match: the API's X-Total-Count. */
TEST(dashboard_queue_list_is_searched_and_sorted_by_the_server_with_the_total)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *p = uniq("findme");
    char a[96], c[96];
    keep_str(a, sfmt("%s-a", p));
    keep_str(c, sfmt("%s-c", p));
    push_simple(&s, a, "Default", 1);
    push_simple(&s, c, "Default", 3);
    push_simple(&s, uniq("unrelated"), "Default", 5);
    browser b;
    browser_open(&b, sfmt("%s/#/queues", s.url));
    browser_await(&b, "document.getElementById('queues-search') !== null", 20000);
    browser_eval(&b, sfmt("document.getElementById('queues-search').value = '%s'; "
                          "document.getElementById('queues-sort').value = 'messages'; "
                          "document.getElementById('queues-find').requestSubmit(); true", p));
    browser_await(&b, sfmt("document.querySelectorAll('#page-queues tbody tr[data-row]').length === 2 && "
                           "document.querySelector('#page-queues tbody tr[data-row]').dataset.row === '%s'", c), 10000);
    CHECK_STR(page_rows(&b, "page-queues"), sfmt("\"%s,%s\"", c, a));   /* most messages first */
    CHECK_STR(browser_eval(&b, "document.querySelector('#page-queues [data-k=total]').textContent"), "\"2\"");
    CHECK(strstr(browser_eval(&b, "location.hash"), "sort=messages") != NULL);
    /* ascending, from the order menu */
    browser_eval(&b, "const o = document.getElementById('queues-order'); o.value = 'asc'; "
                     "o.dispatchEvent(new Event('change')); true");
    browser_await(&b, sfmt("document.querySelector('#page-queues tbody tr[data-row]').dataset.row === '%s'", a), 10000);
    browser_close(&b);
    srv_stop(&s);
}

/* The number after data-history-points= on canvas id in dom; -1: none. */
static int history_points(const char *dom, const char *id)
{
    const char *canvas = strstr(dom, sfmt("id=\"%s\"", id));
    if (!canvas) return -1;
    while (canvas > dom && *canvas != '<') canvas--;
    const char *close = strchr(canvas, '>'), *v = strstr(canvas, "data-history-points=\"");
    if (!v || v > close) return -1;
    return atoi(v + strlen("data-history-points=\""));
}

/* On first load the overview's and a queue's charts draw the minutes the
 * server kept (here five, an hour ago), not only what the page saw. */
TEST(dashboard_charts_show_the_stored_24_hours_on_first_load)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-hist");
    push_simple(&s, q, "Default", 1);
    sql("insert into queen.minute_rolls select date_trunc('minute', now()) - interval '1 hour' + interval '1 minute' * i,"
        " now(), 60 from generate_series(0, 4) i");
    sql("insert into queen.minute_stats (minute, queue, pushed, consumed) select date_trunc('minute', now())"
        " - interval '1 hour' + interval '1 minute' * i, '%s', 600 * i, 60 from generate_series(0, 4) i", q);
    const char *dom = browser_dump_dom(&s, "/");
    CHECK(history_points(dom, "rates") >= 5);   /* the server's own roller may have rolled a minute since */
    CHECK(dom_chart_drawn(dom, "rates"));
    dom = browser_dump_dom(&s, sfmt("/queues/%s", q));
    CHECK(history_points(dom, "queue-rates") >= 5);
    CHECK(dom_chart_drawn(dom, "queue-rates"));
    reply r;
    rq(&s, "GET", sfmt("/api/v1/stats/history?queue=%s", q), NULL, &r);
    CHECK_INT(jint(&r, "minutes.4.pushed"), 2400);
    reply_fini(&r);
    srv_stop(&s);
}

/* Times read "3 h ago" with the API's exact time as the title; sizes read
 * in KB or MB with the exact byte count as the title. */
TEST(dashboard_times_are_relative_with_the_exact_time_as_title_and_sizes_in_units)
{
    silt_server s;
    if (!dashboard_start(&s, NULL)) return;
    const char *q = uniq("dash-times");
    push_simple(&s, q, "Default", 1);
    sql("update queen.queues set created_at = now() - interval '3 hours 5 minutes' where name = '%s'", q);
    reply r;
    rq(&s, "GET", sfmt("/api/v1/resources/queues/%s", q), NULL, &r);
    char created[96];
    keep_str(created, jstr(&r, "createdAt"));
    reply_fini(&r);
    const char *dom = browser_dump_dom(&s, sfmt("/queues/%s", q));
    CHECK_STR(dom_value(dom, "createdAt"), "3 h ago");
    CHECK_STR(dom_title(dom, NULL, "createdAt"), created);
    srv_await_metric(&s, "silt_task_partition_passes_total", 1, 20000);   /* the leaves made: none comes between */
    dom = browser_dump_dom(&s, "/task-retention");
    rq(&s, "GET", "/api/v1/task-retention/leaves", NULL, &r);
    int n = r.doc.tokens[jpath(&r, "leaves")].count, checked = 0;
    for (int i = 0; i < n; i++) {
        const char *leaf = jstr(&r, sfmt("leaves.%d.leaf", i));
        int64_t bytes = jint(&r, sfmt("leaves.%d.bytes", i));
        CHECK_STR(dom_title(dom, leaf, "bytes"), sfmt("%lld bytes", (long long)bytes));
        const char *text = dom_cell(dom, leaf, "bytes");
        CHECK(bytes < 1024 ? strstr(text, " B") != NULL : (strstr(text, " KB") || strstr(text, " MB")));
        checked++;
    }
    CHECK(checked > 0);
    reply_fini(&r);
    srv_stop(&s);
}

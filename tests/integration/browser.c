/* browser: headless chromium for the dashboard's tests (see browser.h). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "browser.h"
#include "chromium.h"
#include "harness.h"

#define DOM_CAP (512 * 1024)

bool browser_available(void)
{
    char out[256];
    if (run_cmd("command -v chromium", out, sizeof out) == 0) return true;
    printf("    note: chromium not installed (make test installs it): the page was not checked in a browser\n");
    return false;
}

/* ---- the DevTools protocol ----------------------------------------------
 *
 * The page gets a target of its own with the Network domain enabled before
 * it loads, so every request it makes is seen (chromium reports no console
 * message for a fetch answered 404 or 500, or for one that got no reply,
 * and the pages are to load with no failed request), and the Runtime and
 * Log domains, so every console message and uncaught error is. */

/* Reads what chromium has sent into b->in: waits up to wait_ms (0: only
 * what is there now); false when nothing came. Fails the test when
 * chromium closed the socket. */
static bool browser_fill(browser *b, int wait_ms)
{
    return chromium_read(b->ws, &b->raw, &b->in, wait_ms);
}

/* Takes the first whole message out of b->in, parsed into r (reply_fini
 * it); false when b->in holds none yet. */
static bool browser_take(browser *b, reply *r)
{
    const char *nul = b->in.len ? memchr(b->in.data, '\0', b->in.len) : NULL;
    if (!nul) return false;
    size_t n = (size_t)(nul - b->in.data);
    http_response_init(&r->raw);
    json_doc_init(&r->doc);
    buf_append(&r->raw.body, b->in.data, n);
    memmove(b->in.data, b->in.data + n + 1, b->in.len - n - 1);
    b->in.len -= n + 1;
    if (json_parse(&r->doc, r->raw.body.data, r->raw.body.len, 1u << 20) < 0)
        harness_failf(__FILE__, __LINE__, "chromium sent no JSON: %.200s", r->raw.body.data);
    return true;
}

static void remember_request(browser *b, const char *id, const char *url)
{
    if (!id || !url) return;
    int slot = b->requests++ % BROWSER_REQUESTS;
    snprintf(b->request[slot].id, sizeof b->request[slot].id, "%s", id);
    snprintf(b->request[slot].url, sizeof b->request[slot].url, "%s", url);
}

static const char *url_of_request(const browser *b, const char *id)
{
    for (int i = 0; id && i < BROWSER_REQUESTS; i++)
        if (strcmp(b->request[i].id, id) == 0) return b->request[i].url;
    return sfmt("(request %s)", id ? id : "?");
}

static bool failure_expected(const browser *b, const browser_failure *f);

/* Past the first BROWSER_FAILURES, a failure the test declared takes no
 * place and is not counted (a page that keeps refreshing while its server
 * is down repeats the declared failures); any other is counted. */
static void record_failure(browser *b, const char *url, int status, const char *error)
{
    browser_failure f;
    snprintf(f.url, sizeof f.url, "%s", url ? url : "?");
    f.status = status;
    snprintf(f.error, sizeof f.error, "%s", error ? error : "");
    if (b->nfailed >= BROWSER_FAILURES && failure_expected(b, &f)) return;
    if (b->nfailed < BROWSER_FAILURES) b->failed[b->nfailed] = f;
    b->nfailed++;
}

/* A console message or an uncaught error: the first is kept. */
static void record_console(browser *b, const char *kind, const char *text)
{
    if (b->nconsole++ == 0) snprintf(b->console, sizeof b->console, "%s: %s", kind, text ? text : "?");
}

/* What an event tells the test: a request's URL, a request that failed, a
 * console message (a network one is a request, checked as such), the
 * virtual time budget spent. A request the page or a navigation dropped
 * (canceled) did not fail. */
static void note_event(browser *b, const reply *e)
{
    const char *method = jpath(e, "method") >= 0 ? jstr(e, "method") : "";
    if (strcmp(method, "Network.requestWillBeSent") == 0)
        remember_request(b, jstr(e, "params.requestId"), jstr(e, "params.request.url"));
    else if (strcmp(method, "Network.responseReceived") == 0 && jint(e, "params.response.status") >= 400)
        record_failure(b, jstr(e, "params.response.url"), (int)jint(e, "params.response.status"), "");
    else if (strcmp(method, "Network.loadingFailed") == 0 && !jbool(e, "params.canceled"))
        record_failure(b, url_of_request(b, jstr(e, "params.requestId")), 0, jstr(e, "params.errorText"));
    else if (strcmp(method, "Emulation.virtualTimeBudgetExpired") == 0)
        b->budget_spent = true;
    else if (strcmp(method, "Runtime.consoleAPICalled") == 0)
        record_console(b, jstr(e, "params.type"), jpath(e, "params.args.0.value") >= 0 ? jraw(e, "params.args.0.value")
                                                                                       : jstr(e, "params.args.0.description"));
    else if (strcmp(method, "Runtime.exceptionThrown") == 0)
        record_console(b, "uncaught", jpath(e, "params.exceptionDetails.exception.description") >= 0
                                          ? jstr(e, "params.exceptionDetails.exception.description")
                                          : jstr(e, "params.exceptionDetails.text"));
    else if (strcmp(method, "Log.entryAdded") == 0 && strcmp(jstr(e, "params.entry.source"), "network") != 0)
        record_console(b, jstr(e, "params.entry.level"), jstr(e, "params.entry.text"));
}

/* The next message, reading with a deadline; an event is noted on the
 * way. Fails the test when none comes in time. */
static void browser_next(browser *b, int64_t deadline, reply *r)
{
    while (!browser_take(b, r)) {
        int64_t left = deadline - now_ms();
        if (left <= 0 || !browser_fill(b, (int)left))
            harness_failf(__FILE__, __LINE__, "chromium did not answer in time");
    }
    if (jpath(r, "method") >= 0) note_event(b, r);
}

/* Sends one command (params a JSON object or NULL) in the page's session
 * unless top is set, and waits for its reply, noting the events that come
 * first; the reply is parsed into r (reply_fini it). Fails the test on a
 * protocol error. */
void browser_call(browser *b, bool top, const char *method, const char *params, reply *r)
{
    int id = ++b->next_id;
    buf cmd;
    buf_init(&cmd);
    buf_printf(&cmd, "{\"id\":%d,\"method\":\"%s\",\"params\":%s", id, method, params ? params : "{}");
    if (!top) buf_printf(&cmd, ",\"sessionId\":\"%s\"", b->session);
    buf_putc(&cmd, '}');
    chromium_send(b->ws, cmd.data, cmd.len);
    buf_fini(&cmd);
    int64_t deadline = now_ms() + 20000;
    for (;;) {
        browser_next(b, deadline, r);
        if (jpath(r, "id") >= 0 && jint(r, "id") == id) break;
        reply_fini(r);   /* an event, or a reply to someone else */
    }
    if (jpath(r, "error") >= 0) harness_failf(__FILE__, __LINE__, "%s: %s", method, jraw(r, "error"));
}

static void browser_call_quietly(browser *b, bool top, const char *method, const char *params)
{
    reply r;
    browser_call(b, top, method, params, &r);
    reply_fini(&r);
}

/* A blank page of its own, in a browser context of its own (storage,
 * cookies: a fresh profile's), whose requests and console are watched,
 * ready to navigate. The context goes with the socket if the test dies. */
static void browser_start(browser *b)
{
    memset(b, 0, sizeof *b);
    buf_init(&b->raw);
    buf_init(&b->in);
    b->ws = chromium_connect();
    reply r;
    browser_call(b, true, "Target.createBrowserContext", "{\"disposeOnDetach\":true}", &r);
    keep_str(b->context, jstr(&r, "result.browserContextId"));
    reply_fini(&r);
    browser_call(b, true, "Target.createTarget",
                 sfmt("{\"url\":\"about:blank\",\"browserContextId\":\"%s\"}", b->context), &r);
    keep_str(b->target, jstr(&r, "result.targetId"));
    reply_fini(&r);
    browser_call(b, true, "Target.attachToTarget", sfmt("{\"targetId\":\"%s\",\"flatten\":true}", b->target), &r);
    snprintf(b->session, sizeof b->session, "%s", jstr(&r, "result.sessionId"));
    reply_fini(&r);
    browser_call_quietly(b, false, "Network.enable", NULL);
    browser_call_quietly(b, false, "Runtime.enable", NULL);
    browser_call_quietly(b, false, "Log.enable", NULL);
}

static void browser_navigate(browser *b, const char *url)
{
    buf p;
    buf_init(&p);
    buf_puts(&p, "{\"url\":");
    json_put_cstr(&p, url);
    buf_puts(&p, "}");
    reply r;
    browser_call(b, false, "Page.navigate", p.data, &r);
    buf_fini(&p);
    if (jpath(&r, "result.errorText") >= 0)
        harness_failf(__FILE__, __LINE__, "%s did not load: %s", url, jstr(&r, "result.errorText"));
    reply_fini(&r);
}

/* Opens url in a page of its own (url may sit in sfmt's ring, which the
 * start reuses). */
void browser_open(browser *b, const char *url)
{
    char *mine = strdup(url);
    CHECK(mine != NULL);
    browser_start(b);
    browser_navigate(b, mine);
    free(mine);
}

/* Runtime.evaluate of the expression into r (reply_fini it); fails the
 * test when it throws. */
static void browser_evaluate(browser *b, const char *expr, reply *r)
{
    buf p;
    buf_init(&p);
    buf_puts(&p, "{\"expression\":");
    json_put_cstr(&p, expr);
    buf_puts(&p, ",\"returnByValue\":true}");
    browser_call(b, false, "Runtime.evaluate", p.data, r);
    buf_fini(&p);
    if (jpath(r, "result.exceptionDetails") >= 0)
        harness_failf(__FILE__, __LINE__, "%s threw: %s", expr, jraw(r, "result.exceptionDetails"));
}

/* Evaluates a JavaScript expression in the page; its value as JSON text. */
const char *browser_eval(browser *b, const char *expr)
{
    reply r;
    browser_evaluate(b, expr, &r);
    const char *v = jpath(&r, "result.result.value") >= 0 ? jraw(&r, "result.result.value") : "null";
    reply_fini(&r);
    return v;
}

/* Waits for the expression to be true, polling with a deadline. */
void browser_await(browser *b, const char *expr, int timeout_ms)
{
    char *mine = strdup(expr);   /* expr may sit in sfmt's ring, which the polls reuse */
    CHECK(mine != NULL);
    int64_t deadline = now_ms() + timeout_ms;
    while (strcmp(browser_eval(b, mine), "true") != 0) {
        if (now_ms() > deadline) harness_failf(__FILE__, __LINE__, "%s never became true", mine);
        struct pollfd none = { -1, 0, 0 };
        poll(&none, 0, 50);   /* the page works meanwhile; this is a poll interval, not a wait for it */
    }
    free(mine);
}

/* Answers the page's next confirm() with OK, remembering its question in
 * window.siltConfirmed, and clicks the element. */
void browser_confirm_click(browser *b, const char *selector)
{
    browser_eval(b, "window.confirm = (m) => { window.siltConfirmed = m; return true; }; true");
    browser_eval(b, sfmt("document.querySelector('%s').click(); true", selector));
}

void browser_expect_failure(browser *b, const char *path, int status)
{
    CHECK(b->nexpected < BROWSER_EXPECTED);
    snprintf(b->expected[b->nexpected].path, sizeof b->expected[0].path, "%s", path);
    b->expected[b->nexpected++].status = status;
}

/* Notes the events chromium has sent so far, waiting for none. */
static void browser_drain(browser *b)
{
    for (;;) {
        reply r;
        while (browser_take(b, &r)) {
            if (jpath(&r, "method") >= 0) note_event(b, &r);
            reply_fini(&r);
        }
        if (!browser_fill(b, 0)) return;
    }
}

const browser_failure *browser_failures(browser *b, int *n)
{
    browser_drain(b);
    *n = b->nfailed < BROWSER_FAILURES ? b->nfailed : BROWSER_FAILURES;
    return b->failed;
}

static bool failure_matches(const browser_failure *f, const char *path, int status)
{
    return f->status == status && strstr(f->url, path) != NULL;
}

static bool failure_expected(const browser *b, const browser_failure *f)
{
    for (int i = 0; i < b->nexpected; i++)
        if (failure_matches(f, b->expected[i].path, b->expected[i].status)) return true;
    return false;
}

static bool failure_seen(const browser *b, const char *path, int status)
{
    int kept = b->nfailed < BROWSER_FAILURES ? b->nfailed : BROWSER_FAILURES;
    for (int i = 0; i < kept; i++)
        if (failure_matches(&b->failed[i], path, status)) return true;
    return false;
}

/* Fails the test on the first failed request it did not expect, and on an
 * expected one that never came (the declaration would excuse nothing and
 * only hide a later failure of that path). Past the first BROWSER_FAILURES
 * only the count is known: those fail it too. */
static void check_requests(const browser *b)
{
    int kept = b->nfailed < BROWSER_FAILURES ? b->nfailed : BROWSER_FAILURES;
    for (int i = 0; i < kept; i++)
        if (!failure_expected(b, &b->failed[i]))
            harness_failf(__FILE__, __LINE__, "a request of the page failed: %s answered %d%s%s (%d failed in all)",
                          b->failed[i].url, b->failed[i].status, b->failed[i].error[0] ? ", " : "",
                          b->failed[i].error, b->nfailed);
    if (b->nfailed > kept)
        harness_failf(__FILE__, __LINE__, "%d requests of the page failed; only the first %d were kept",
                      b->nfailed, kept);
    for (int e = 0; e < b->nexpected; e++)
        if (!failure_seen(b, b->expected[e].path, b->expected[e].status))
            harness_failf(__FILE__, __LINE__, "the test expected a request to %s to answer %d; none did",
                          b->expected[e].path, b->expected[e].status);
}

/* Closes the page and its context, then fails the test on what the page
 * logged or failed to load. A round trip first: the page's events before
 * it have come by its answer. */
void browser_close(browser *b)
{
    browser_eval(b, "true");
    browser_drain(b);
    browser_call_quietly(b, true, "Target.closeTarget", sfmt("{\"targetId\":\"%s\"}", b->target));
    browser_call_quietly(b, true, "Target.disposeBrowserContext", sfmt("{\"browserContextId\":\"%s\"}", b->context));
    close(b->ws);
    buf_fini(&b->raw);
    buf_fini(&b->in);
    if (b->nconsole > 0)
        harness_failf(__FILE__, __LINE__, "the page logged %d console message(s), the first: %s", b->nconsole, b->console);
    check_requests(b);
}

/* Waits for the virtual time budget to be spent; fails the test after
 * timeout_ms of real time. */
static void browser_await_budget(browser *b, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    while (!b->budget_spent) {
        reply r;
        browser_next(b, deadline, &r);
        reply_fini(&r);
    }
}

/* Loads http://server/#<hash> and returns the DOM once the page's work is
 * done (static buffer): what chromium's --dump-dom does with
 * --virtual-time-budget, through the protocol so that the page's requests
 * are watched. Virtual time runs 5 s of the page's timers (two refreshes
 * of a live page) and stands still while a fetch is pending. */
const char *browser_dump_dom_expecting(const silt_server *s, const char *hash_arg, const char *path_arg, int status)
{
    static char dom[DOM_CAP];
    /* Copies first: a caller's sfmt() string lives in a ring of 16 that
     * starting the browser can go round (its waits format as they poll,
     * more often on a loaded machine), and the page asked for was then
     * another string's bytes. */
    char hash[1024], path[sizeof ((browser *)0)->expected[0].path];
    snprintf(hash, sizeof hash, "%s", hash_arg);
    snprintf(path, sizeof path, "%s", path_arg ? path_arg : "");
    browser b;
    browser_start(&b);
    if (path_arg) browser_expect_failure(&b, path, status);
    browser_call_quietly(&b, false, "Emulation.setVirtualTimePolicy", "{\"policy\":\"pause\"}");
    browser_navigate(&b, sfmt("%s/#%s", s->url, hash));
    browser_call_quietly(&b, false, "Emulation.setVirtualTimePolicy",
                         "{\"policy\":\"pauseIfNetworkFetchesPending\",\"budget\":5000}");
    browser_await_budget(&b, 40000);
    reply r;
    browser_evaluate(&b, "document.documentElement.outerHTML", &r);
    const char *html = jstr(&r, "result.result.value");
    CHECK(html != NULL && strlen(html) < DOM_CAP);
    memcpy(dom, html, strlen(html) + 1);
    reply_fini(&r);
    browser_close(&b);
    if (strstr(dom, "id=\"page-error\""))
        harness_failf(__FILE__, __LINE__, "#%s shows an error: %.300s", hash, strstr(dom, "id=\"page-error\""));
    return dom;
}

/* Writes the page as it is now to dir/name.png (Page.captureScreenshot
 * answers base64; base64(1) decodes it). */
void browser_screenshot(browser *b, const char *dir, const char *name)
{
    reply r;
    browser_call(b, false, "Page.captureScreenshot", "{\"format\":\"png\"}", &r);
    FILE *f = popen(sfmt("base64 -d > %s/%s.png", dir, name), "w");
    CHECK(f != NULL);
    const char *data = jstr(&r, "result.data");
    CHECK(data != NULL);
    fwrite(data, 1, strlen(data), f);
    CHECK_INT(pclose(f), 0);
    reply_fini(&r);
}


const char *browser_dump_dom(const silt_server *s, const char *hash)
{
    return browser_dump_dom_expecting(s, hash, NULL, 0);
}

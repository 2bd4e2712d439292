/* browser: headless chromium for the dashboard's tests (see browser.h). */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "browser.h"
#include "harness.h"

#define DOM_CAP (512 * 1024)

bool browser_available(void)
{
    char out[256];
    if (run_cmd("command -v chromium", out, sizeof out) == 0) return true;
    printf("    note: chromium not installed (make test installs it): the page was not checked in a browser\n");
    return false;
}

/* Fails the test on any console line chromium logged ("INFO:CONSOLE..."). */
static void check_console(const char *log_path)
{
    FILE *f = fopen(log_path, "r");
    if (!f) harness_failf(__FILE__, __LINE__, "no chromium log at %s", log_path);
    char line[2048];
    while (fgets(line, sizeof line, f))
        if (strstr(line, ":CONSOLE")) {
            fclose(f);
            harness_failf(__FILE__, __LINE__, "console message in the page: %s", line);
        }
    fclose(f);
}

/* Loads http://server/#<hash> in headless chromium and returns the DOM once
 * the page's work is done (static buffer). The D-Bus addresses point
 * nowhere: chromium otherwise spends seconds looking for a bus a test
 * machine does not run. */
const char *browser_dump_dom(const silt_server *s, const char *hash)
{
    static char dom[DOM_CAP];
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/silt-dash-%d", (int)getpid());
    const char *cmd = sfmt(
        "rm -rf %s && mkdir -p %s && DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent "
        "DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent timeout 50 chromium --headless=new --no-sandbox "
        "--disable-gpu --no-first-run --disable-extensions --disable-background-networking "
        "--disable-component-update --user-data-dir=%s/profile --enable-logging=stderr --v=0 "
        "--virtual-time-budget=5000 --dump-dom '%s/#%s' 2>%s/chromium.log",
        dir, dir, dir, s->url, hash, dir);
    int rc = run_cmd(cmd, dom, sizeof dom);
    if (rc != 0) harness_failf(__FILE__, __LINE__, "chromium exited %d on #%s", rc, hash);
    check_console(sfmt("%s/chromium.log", dir));
    char ignored[16];
    (void)run_cmd(sfmt("rm -rf %s", dir), ignored, sizeof ignored);
    if (strstr(dom, "id=\"page-error\""))
        harness_failf(__FILE__, __LINE__, "#%s shows an error: %.300s", hash, strstr(dom, "id=\"page-error\""));
    return dom;
}

/* ---- pressing buttons: the DevTools protocol over a pipe ---------------
 *
 * --dump-dom cannot click, and a button's confirm() needs an answer. With
 * --remote-debugging-pipe chromium reads protocol commands on fd 3 and
 * writes replies and events on fd 4, each a JSON text ended by a NUL byte:
 * no WebSocket, no port. The test opens the page, waits (polling with a
 * deadline) for a selector, answers confirm() with OK by replacing it with
 * a function that records its question, and clicks. */


static void browser_exec(int cmd_read, int ev_write, const char *dir)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int a = fcntl(cmd_read, F_DUPFD, 10), b = fcntl(ev_write, F_DUPFD, 10);
    if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0) _exit(126);
    if (!freopen(sfmt("%s/chromium.log", dir), "w", stderr)) _exit(126);
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent", 1);
    setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent", 1);
    execlp("chromium", "chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--disable-background-networking", "--disable-component-update",
           sfmt("--user-data-dir=%s/profile", dir), "--enable-logging=stderr", "--v=0",
           "--remote-debugging-pipe", "about:blank", (char *)NULL);
    _exit(127);
}

/* The next whole message (NUL-terminated in b->in up to the returned
 * length), reading with a deadline; fails the test when none comes. */
static size_t browser_read(browser *b, int64_t deadline)
{
    for (;;) {
        const char *nul = b->in.len ? memchr(b->in.data, '\0', b->in.len) : NULL;
        if (nul) return (size_t)(nul - b->in.data);
        int64_t left = deadline - now_ms();
        struct pollfd p = { b->from, POLLIN, 0 };
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            harness_failf(__FILE__, __LINE__, "chromium did not answer in time");
        char chunk[65536];
        ssize_t n = read(b->from, chunk, sizeof chunk);
        if (n <= 0) harness_failf(__FILE__, __LINE__, "chromium closed its pipe");
        buf_append(&b->in, chunk, (size_t)n);
    }
}

/* Sends one command (params a JSON object or NULL) in the page's session
 * unless top is set, and waits for its reply, skipping events; the reply
 * is parsed into r (reply_fini it). Fails the test on a protocol error. */
void browser_call(browser *b, bool top, const char *method, const char *params, reply *r)
{
    int id = ++b->next_id;
    buf cmd;
    buf_init(&cmd);
    buf_printf(&cmd, "{\"id\":%d,\"method\":\"%s\",\"params\":%s", id, method, params ? params : "{}");
    if (!top) buf_printf(&cmd, ",\"sessionId\":\"%s\"", b->session);
    buf_append(&cmd, "}", 2);   /* and the NUL that ends a message */
    if (write(b->to, cmd.data, cmd.len) != (ssize_t)cmd.len) harness_failf(__FILE__, __LINE__, "write to chromium");
    buf_fini(&cmd);
    int64_t deadline = now_ms() + 20000;
    for (;;) {
        size_t n = browser_read(b, deadline);
        http_response_init(&r->raw);
        json_doc_init(&r->doc);
        buf_append(&r->raw.body, b->in.data, n);
        memmove(b->in.data, b->in.data + n + 1, b->in.len - n - 1);
        b->in.len -= n + 1;
        if (json_parse(&r->doc, r->raw.body.data, r->raw.body.len, 1u << 20) < 0)
            harness_failf(__FILE__, __LINE__, "chromium sent no JSON: %.200s", r->raw.body.data);
        if (jpath(r, "id") >= 0 && jint(r, "id") == id) break;
        reply_fini(r);   /* an event, or a reply to someone else */
    }
    if (jpath(r, "error") >= 0) harness_failf(__FILE__, __LINE__, "%s: %s", method, jraw(r, "error"));
}

/* Starts chromium and opens url in a page of its own. */
void browser_open(browser *b, const char *url)
{
    memset(b, 0, sizeof *b);
    buf_init(&b->in);
    snprintf(b->dir, sizeof b->dir, "/tmp/silt-cdp-%d", (int)getpid());
    char ignored[16];
    (void)run_cmd(sfmt("rm -rf %s && mkdir -p %s", b->dir, b->dir), ignored, sizeof ignored);
    int cmd[2], ev[2];
    CHECK(pipe(cmd) == 0 && pipe(ev) == 0);
    fflush(NULL);
    b->pid = fork();
    CHECK(b->pid >= 0);
    if (b->pid == 0) browser_exec(cmd[0], ev[1], b->dir);
    close(cmd[0]);
    close(ev[1]);
    b->to = cmd[1];
    b->from = ev[0];
    reply r;
    browser_call(b, true, "Target.createTarget", sfmt("{\"url\":\"%s\"}", url), &r);
    char target[96];
    keep_str(target, jstr(&r, "result.targetId"));
    reply_fini(&r);
    browser_call(b, true, "Target.attachToTarget", sfmt("{\"targetId\":\"%s\",\"flatten\":true}", target), &r);
    snprintf(b->session, sizeof b->session, "%s", jstr(&r, "result.sessionId"));
    reply_fini(&r);
}

/* Evaluates a JavaScript expression in the page; its value as JSON text. */
const char *browser_eval(browser *b, const char *expr)
{
    buf p;
    buf_init(&p);
    buf_puts(&p, "{\"expression\":");
    json_put_cstr(&p, expr);
    buf_puts(&p, ",\"returnByValue\":true}");
    reply r;
    browser_call(b, false, "Runtime.evaluate", p.data, &r);
    buf_fini(&p);
    if (jpath(&r, "result.exceptionDetails") >= 0)
        harness_failf(__FILE__, __LINE__, "%s threw: %s", expr, jraw(&r, "result.exceptionDetails"));
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

/* Closes chromium (it exits on Browser.close), then checks its log for
 * console messages. */
void browser_close(browser *b)
{
    reply r;
    browser_call(b, true, "Browser.close", NULL, &r);
    reply_fini(&r);
    int status;
    int64_t deadline = now_ms() + 10000;
    while (waitpid(b->pid, &status, WNOHANG) == 0) {
        if (now_ms() > deadline) { kill(b->pid, SIGKILL); waitpid(b->pid, &status, 0); break; }
        struct pollfd none = { -1, 0, 0 };
        poll(&none, 0, 20);
    }
    close(b->to);
    close(b->from);
    buf_fini(&b->in);
    check_console(sfmt("%s/chromium.log", b->dir));
    char ignored[16];
    (void)run_cmd(sfmt("rm -rf %s", b->dir), ignored, sizeof ignored);
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


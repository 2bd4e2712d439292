/* worker: `silt worker`, which runs a command once per task.
 *
 * ## silt worker
 *
 *     silt worker --queue Q [--queue Q2 ...] [--concurrency N] [--timeout S]
 *                 [--grace S] [--worker-id ID] [--heartbeat-ms MS] -- CMD ARGS...
 *
 * A worker registers with the server (POST /api/v1/workers: hostname, pid,
 * queues, concurrency; without --worker-id the server names it), then loops:
 *
 * - **Claim.** It claims as many tasks as it has free slots (POST
 *   /api/v1/workers/:id/claim, `max` = free slots). With nothing running it
 *   long-polls (`waitMs` 2000); while tasks run it asks without waiting, at
 *   most every half second, so its children are never left unwatched.
 * - **Start and run.** Each claimed task is started at once (POST
 *   /api/v1/tasks/:id/start with its claimId), then CMD ARGS runs once for
 *   it, in a process group of its own, with:
 *   - stdin: the task's args, as JSON (from an unlinked temporary file, so
 *     a large argument never blocks);
 *   - environment: `SILT_TASK_ID`, `SILT_TASK_ATTEMPT` (1 for the first
 *     run, 2 for the first retry...), `SILT_TASK_NAME`, `SILT_TASK_QUEUE`;
 *   - stdout: the result, a JSON value (at most 16 MiB);
 *   - stderr: free text; its last non-empty line becomes the error message.
 * - **Report.** How the command ended decides what the server is told:
 *
 *   | the command                                   | reported                                  |
 *   |-----------------------------------------------|-------------------------------------------|
 *   | exits 0, stdout a JSON value                  | complete, result = stdout                 |
 *   | exits 0, stdout empty (or only whitespace)    | complete, result = null                   |
 *   | exits 0, stdout not JSON                      | fail `INVALID_RESULT`                     |
 *   | writes more than 16 MiB to stdout             | fail `RESULT_TOO_LARGE`                   |
 *   | exits N (not 0)                               | fail `EXIT_<N>`, message: last stderr line |
 *   | is killed by signal N                         | fail `SIGNAL_<N>`, message: last stderr line |
 *   | runs past its timeout                         | fail `TASK_TIMEOUT` (killed)              |
 *   | its task is cancelled                         | fail `CANCELLED` (SIGTERM, SIGKILL a second later) |
 *   | is still running when the worker's grace ends | fail `WORKER_CRASHED` (killed)            |
 *   | cannot be started (fork, temporary file)      | fail `SPAWN_FAILED`                       |
 *
 *   A command that cannot be executed exits 127 (`EXIT_127`, the message
 *   says why). A failure is retried when the task's retry policy retries
 *   that code; `CANCELLED` never is.
 * - **Timeout.** A task's own `timeoutMs` if it was sent with one, else
 *   `--timeout S` (0, the default: none). Past it the command's process
 *   group is killed (SIGKILL).
 * - **Heartbeat.** Every `runnerHeartbeatIntervalMs` of the registration
 *   reply (or every --heartbeat-ms, when that is sooner), even when idle,
 *   the worker names every task it holds (POST
 *   /api/v1/workers/:id/heartbeat). A task the server says was `cancelled`
 *   is stopped as above; one it says is `lost` (recovery took it back, or it
 *   ended meanwhile) is killed and dropped without a report.
 * - **Signals.** SIGTERM or SIGINT: the worker stops claiming, hands back
 *   tasks it claimed but has not started (POST /api/v1/workers/:id/release),
 *   lets running commands finish for up to `--grace S` (default 30), then
 *   kills the rest and fails them with `WORKER_CRASHED` (so their retry
 *   policy treats them as a crash), and exits 0. A second signal kills every
 *   command at once and exits 1.
 * - **Exit status.** 0 after a signal's orderly stop; 1 when registration
 *   fails; 2 on a usage error.
 *
 * Every task's start and end is one log line on stderr (task id, name,
 * outcome, milliseconds). A server that cannot be reached is retried: the
 * commands keep running, and a report that is lost leaves the task to the
 * server's recovery.
 *
 * The process handling (fork, pipes, process groups) is worker_child.c;
 * this file is the protocol and the loop. The HTTP client blocks, so the
 * loop never waits on the server while it has children to watch, except
 * for the calls themselves. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/worker_child.h"
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"

#define WK_CLAIM_WAIT_MS    2000    /* a claim's long poll while nothing runs */
#define WK_BUSY_CLAIM_MS    500     /* claims without waiting while busy, at most this often */
#define WK_IDLE_CLAIM_MS    50      /* between empty long polls (a server that answers at once) */
#define WK_RETRY_MS         1000    /* after a failed call to the server */
#define WK_CALL_SLACK_MS    30000   /* the client's timeout beyond a call's own wait */
#define WK_KILL_AFTER_MS    1000    /* SIGTERM, then SIGKILL this much later */
#define WK_TICK_MS          50      /* poll's timeout while commands run */
#define WK_MAX_CONCURRENCY  1000    /* tasks one claim may return */

static const char worker_usage[] =
    "usage: silt worker --queue Q [--queue Q2 ...] [options] -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD ARGS once per task claimed from the queues, until SIGTERM or\n"
    "SIGINT. The task's args (JSON) are CMD's stdin; its environment has\n"
    "SILT_TASK_ID, SILT_TASK_ATTEMPT, SILT_TASK_NAME and SILT_TASK_QUEUE.\n"
    "Exit 0 completes the task with stdout as the result (a JSON value; empty:\n"
    "null; anything else fails it with INVALID_RESULT). A non-zero exit N\n"
    "fails it with EXIT_<N> and the last line of stderr as the message; death\n"
    "by signal N with SIGNAL_<N>; a timeout with TASK_TIMEOUT; a cancel (told\n"
    "on a heartbeat) stops CMD and fails it with CANCELLED.\n"
    "\n"
    "On SIGTERM or SIGINT the worker claims nothing more, hands back claimed\n"
    "tasks it has not started, waits up to --grace seconds for running ones,\n"
    "then kills them (WORKER_CRASHED) and exits 0. A second signal kills\n"
    "every command and exits 1 at once.\n"
    "\n"
    "options:\n"
    "  --queue Q          a queue to take tasks from (repeat for more; required)\n"
    "  --concurrency N    tasks run at once, 1 to 1000 (default 1)\n"
    "  --timeout S        kill a task after S seconds, unless it was sent with\n"
    "                     its own timeout (default 0: none)\n"
    "  --grace S          on SIGTERM, how long running tasks may finish (default 30)\n"
    "  --worker-id ID     the worker's name (default: one the server makes)\n"
    "  --heartbeat-ms MS  heartbeat at least this often (default: the server's\n"
    "                     runnerHeartbeatIntervalMs); a cancel is noticed on one\n"
    "  --help             show this help\n"
    "\n"
    "The server is SILT_URL (default " CLI_DEFAULT_URL ").\n";

/* How a running task is to end, once its command is gone. */
typedef enum wk_end { WK_RUN, WK_CANCELLING, WK_TIMED_OUT, WK_LOST, WK_CRASHING, WK_NOT_STARTED } wk_end;

typedef struct wk_task {
    bool     used;
    char     id[48], claim[48];
    char    *name, *queue;
    int      attempt;
    int64_t  timeout_ms;   /* 0: none */
    int64_t  started_ms, kill_at_ms;
    wk_end   end;
    wk_child child;
} wk_task;

typedef struct worker {
    cli_list     queues;
    long         concurrency, timeout_s, grace_s, heartbeat_ms;
    const char  *worker_id;
    char *const *argv;
    http_client *http;
    char        *id;
    int64_t      hb_interval_ms, next_hb_ms, next_claim_ms, grace_until_ms;
    wk_task     *slots;
    int          running;
    bool         stopping;
} worker;

/* For the signal handler: a second signal kills every command's group. */
static volatile sig_atomic_t wk_signals;
static pid_t *wk_pids;
static int wk_npids;

static void on_stop_signal(int sig)
{
    (void)sig;
    if (wk_signals++ == 0) return;
    for (int i = 0; i < wk_npids; i++)
        if (wk_pids[i] > 0) kill(-wk_pids[i], SIGKILL);
    _exit(CLI_EXIT_FAILED);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ---- talking to the server ------------------------------------------- */

/* One call. The HTTP status with the reply parsed into d (a status of 400
 * or more logged with the server's error), or -1 on a transport failure
 * (logged). what names the call in the log. */
static int wk_call(worker *w, const char *what, const char *path, const buf *body, int wait_ms,
                   http_response *r, json_doc *d)
{
    http_client_set_timeout(w->http, wait_ms + WK_CALL_SLACK_MS);
    if (http_request(w->http, "POST", path, body->data, body->len, r) < 0) {
        log_warn("worker: %s: %s", what, http_client_error(w->http));
        return -1;
    }
    if (json_parse(d, r->body.data, r->body.len, CLI_MAX_TOKENS) < 0) {
        log_warn("worker: %s: malformed reply (HTTP %d): %s", what, r->status, d->error);
        return -1;
    }
    if (r->status >= 400) {
        char *error = cli_get_str(d, 0, "error");
        log_warn("worker: %s: HTTP %d: %s", what, r->status, error ? error : r->body.data);
        free(error);
    }
    return r->status;
}

static void put_held(buf *b, const wk_task *t, bool first)
{
    buf_puts(b, first ? "{\"id\":" : ",{\"id\":");
    json_put_cstr(b, t->id);
    buf_puts(b, ",\"claimId\":");
    json_put_cstr(b, t->claim);
    buf_putc(b, '}');
}

static void worker_path(buf *path, const worker *w, const char *what)
{
    buf_puts(path, "/api/v1/workers");
    cli_path_segment(path, w->id);
    buf_putc(path, '/');
    buf_puts(path, what);
}

static void task_path(buf *path, const char *id, const char *what)
{
    buf_puts(path, "/api/v1/tasks");
    cli_path_segment(path, id);
    buf_putc(path, '/');
    buf_puts(path, what);
}

static void put_queues(buf *b, const worker *w)
{
    buf_puts(b, "\"queues\":[");
    for (int i = 0; i < w->queues.n; i++) {
        if (i) buf_putc(b, ',');
        json_put_cstr(b, w->queues.items[i]);
    }
    buf_putc(b, ']');
}

static int worker_register(worker *w)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    buf body;
    buf_init(&body);
    buf_puts(&body, "{\"hostname\":");
    json_put_cstr(&body, host);
    buf_printf(&body, ",\"pid\":%d,\"concurrency\":%ld,", (int)getpid(), w->concurrency);
    put_queues(&body, w);
    if (w->worker_id) { buf_puts(&body, ",\"workerId\":"); json_put_cstr(&body, w->worker_id); }
    buf_putc(&body, '}');
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    int rc = wk_call(w, "register", "/api/v1/workers", &body, 0, &r, &d) == 201 ? 0 : -1;
    if (rc == 0) {
        w->id = cli_get_str(&d, 0, "workerId");
        int iv = json_get(&d, 0, "runnerHeartbeatIntervalMs");
        int64_t ms = 0;
        if (iv < 0 || json_int64(&d, (uint32_t)iv, &ms) < 0 || ms <= 0) ms = 30000;
        w->hb_interval_ms = w->heartbeat_ms > 0 && w->heartbeat_ms < ms ? w->heartbeat_ms : ms;
        if (!w->id) rc = -1;
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body);
    return rc;
}

/* ---- finishing a task -------------------------------------------------- */

static void trim(const char **s, size_t *n)
{
    while (*n && strchr(" \t\r\n", (*s)[0])) { (*s)++; (*n)--; }
    while (*n && strchr(" \t\r\n", (*s)[*n - 1])) (*n)--;
}

/* What to report: a result (body gets "result") or an error code and message. */
static void outcome(const worker *w, const wk_task *t, buf *body, char *code, size_t codelen, buf *message)
{
    const wk_child *c = &t->child;
    const char *line = wk_child_last_line(c);
    switch (t->end) {
    case WK_TIMED_OUT:
        snprintf(code, codelen, "TASK_TIMEOUT");
        buf_printf(message, "ran past its timeout of %lld ms", (long long)t->timeout_ms);
        return;
    case WK_CANCELLING:
        snprintf(code, codelen, "CANCELLED");
        buf_puts(message, "cancelled while running");
        return;
    case WK_CRASHING:
        snprintf(code, codelen, "WORKER_CRASHED");
        buf_printf(message, "the worker stopped and its grace of %ld s ran out", w->grace_s);
        return;
    case WK_NOT_STARTED:
        snprintf(code, codelen, "SPAWN_FAILED");
        buf_puts(message, line);
        return;
    case WK_RUN: case WK_LOST: break;
    }
    if (WIFSIGNALED(c->status)) {
        snprintf(code, codelen, "SIGNAL_%d", WTERMSIG(c->status));
        if (*line) buf_puts(message, line);
        else buf_printf(message, "killed by signal %d (%s)", WTERMSIG(c->status), strsignal(WTERMSIG(c->status)));
        return;
    }
    if (WEXITSTATUS(c->status) != 0) {
        snprintf(code, codelen, "EXIT_%d", WEXITSTATUS(c->status));
        if (*line) buf_puts(message, line);
        else buf_printf(message, "exited %d", WEXITSTATUS(c->status));
        return;
    }
    if (c->out_overflow) {
        snprintf(code, codelen, "RESULT_TOO_LARGE");
        buf_printf(message, "stdout exceeded %u bytes", WK_STDOUT_MAX);
        return;
    }
    const char *text = c->out.data ? c->out.data : "";
    size_t n = c->out.len;
    trim(&text, &n);
    json_doc d;
    json_doc_init(&d);
    if (n == 0) buf_puts(body, ",\"result\":null");
    else if (json_parse_shallow(&d, text, n, 16, 0) == 0) { buf_puts(body, ",\"result\":"); buf_append(body, text, n); }
    else {
        snprintf(code, codelen, "INVALID_RESULT");
        buf_printf(message, "stdout is not a JSON value: %s", d.error);
    }
    json_doc_fini(&d);
}

static void task_free(wk_task *t)
{
    wk_child_fini(&t->child);
    free(t->name);
    free(t->queue);
    memset(t, 0, sizeof *t);
}

/* Reports the end of t's command and frees its slot. */
static void task_finish(worker *w, wk_task *t)
{
    int64_t ms = clock_mono_ms() - t->started_ms;
    if (t->end == WK_LOST) {
        log_info("task %s %s: lost (taken back by the server), dropped after %lld ms", t->id, t->name, (long long)ms);
        return;
    }
    char code[64] = "";
    buf body, message, path;
    buf_init(&body); buf_init(&message); buf_init(&path);
    buf_puts(&body, "{\"claimId\":");
    json_put_cstr(&body, t->claim);
    outcome(w, t, &body, code, sizeof code, &message);
    if (*code) {
        buf_puts(&body, ",\"errorCode\":");
        json_put_cstr(&body, code);
        buf_puts(&body, ",\"errorMessage\":");
        json_put_str(&body, message.data ? message.data : "", message.len);
    }
    buf_putc(&body, '}');
    task_path(&path, t->id, *code ? "fail" : "complete");
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    int status = wk_call(w, *code ? "fail" : "complete", path.data, &body, 0, &r, &d);
    char *now = status == 200 ? cli_get_str(&d, 0, "status") : NULL;
    log_info("task %s %s: %s%s%s, %lld ms%s%s", t->id, t->name, *code ? code : "completed", *code ? ": " : "",
             *code ? message.data : "", (long long)ms, now ? ", now " : status == 409 ? ", refused (fenced)" : "",
             now ? now : "");
    free(now);
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body); buf_fini(&message); buf_fini(&path);
}

/* ---- starting a task ---------------------------------------------------- */

static wk_task *free_slot(worker *w)
{
    for (long i = 0; i < w->concurrency; i++)
        if (!w->slots[i].used) return &w->slots[i];
    return NULL;
}

/* POST start; the attempt it began, or -1 (refused or failed: dropped). */
static int start_call(worker *w, const wk_task *t)
{
    buf body, path;
    buf_init(&body); buf_init(&path);
    buf_puts(&body, "{\"claimId\":");
    json_put_cstr(&body, t->claim);
    buf_putc(&body, '}');
    task_path(&path, t->id, "start");
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    int64_t attempt = -1;
    int a;
    if (wk_call(w, "start", path.data, &body, 0, &r, &d) != 200 || (a = json_get(&d, 0, "attempt")) < 0 ||
        json_int64(&d, (uint32_t)a, &attempt) < 0)
        attempt = -1;
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body); buf_fini(&path);
    return (int)attempt;
}

/* Starts claimed task (element tok of the claim reply) in slot t. */
static void task_start(worker *w, wk_task *t, const json_doc *d, int tok)
{
    char *id = cli_get_str(d, tok, "id"), *claim = cli_get_str(d, tok, "claimId");
    t->child.out_fd = t->child.err_fd = -1;   /* nothing to close until it starts */
    snprintf(t->id, sizeof t->id, "%s", id ? id : "");
    snprintf(t->claim, sizeof t->claim, "%s", claim ? claim : "");
    free(id); free(claim);
    t->name = cli_get_str(d, tok, "name");
    t->queue = cli_get_str(d, tok, "queue");
    if (!t->name) t->name = xstrdup("?");
    int to = json_get(d, (uint32_t)tok, "timeoutMs");
    if (to < 0 || json_int64(d, (uint32_t)to, &t->timeout_ms) < 0) t->timeout_ms = w->timeout_s * 1000;
    t->attempt = start_call(w, t);
    if (t->attempt < 0) { task_free(t); return; }
    t->used = true;
    t->started_ms = clock_mono_ms();
    int args = json_get(d, (uint32_t)tok, "args");
    size_t n = 4;
    const char *text = args >= 0 ? json_span(d, (uint32_t)args, &n) : "null";
    const wk_child_env env = { t->id, t->name, t->queue, t->attempt };
    char err[256];
    if (wk_child_start(&t->child, w->argv, text, n, &env, err, sizeof err) < 0) {
        log_warn("task %s %s: cannot start %s: %s", t->id, t->name, w->argv[0], err);
        t->end = WK_NOT_STARTED;
        buf_printf(&t->child.last, "cannot start %s: %s", w->argv[0], err);
        task_finish(w, t);
        task_free(t);
        return;
    }
    w->running++;
    wk_pids[t - w->slots] = t->child.pid;
    log_info("task %s %s: started (queue %s, attempt %d, pid %d)", t->id, t->name, t->queue ? t->queue : "?",
             t->attempt, (int)t->child.pid);
}

/* ---- the loop ------------------------------------------------------------ */

static void release(worker *w, const buf *held)
{
    buf body, path;
    buf_init(&body); buf_init(&path);
    buf_puts(&body, "{\"tasks\":[");
    buf_append(&body, held->data, held->len);
    buf_puts(&body, "]}");
    worker_path(&path, w, "release");
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    if (wk_call(w, "release", path.data, &body, 0, &r, &d) == 200) {
        buf n;
        buf_init(&n);
        cli_put_cell(&n, &d, json_get(&d, 0, "released"));
        log_info("worker: stopping: handed back %s claimed task(s)", n.data);
        buf_fini(&n);
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body); buf_fini(&path);
}

/* Starts what a claim returned; once stopping, hands it back instead. */
static int claimed(worker *w, const json_doc *d)
{
    int list = json_get(d, 0, "tasks"), tok, n = 0;
    buf held;
    buf_init(&held);
    for (uint32_t i = 0; list >= 0 && (tok = json_at(d, (uint32_t)list, i)) >= 0; i++, n++) {
        wk_task *t = wk_signals ? NULL : free_slot(w);
        if (t) { task_start(w, t, d, tok); continue; }
        wk_task back = { 0 };
        char *id = cli_get_str(d, tok, "id"), *claim = cli_get_str(d, tok, "claimId");
        snprintf(back.id, sizeof back.id, "%s", id ? id : "");
        snprintf(back.claim, sizeof back.claim, "%s", claim ? claim : "");
        free(id); free(claim);
        put_held(&held, &back, held.len == 0);
    }
    if (held.len) release(w, &held);
    buf_fini(&held);
    return n;
}

static void claim(worker *w)
{
    /* idle: wait for work, but not past the next heartbeat */
    int64_t to_hb = w->next_hb_ms - clock_mono_ms();
    int wait = w->running || to_hb <= 0 ? 0 : to_hb < WK_CLAIM_WAIT_MS ? (int)to_hb : WK_CLAIM_WAIT_MS;
    buf body, path;
    buf_init(&body); buf_init(&path);
    buf_putc(&body, '{');
    put_queues(&body, w);
    buf_printf(&body, ",\"max\":%ld,\"waitMs\":%d}", w->concurrency - w->running, wait);
    worker_path(&path, w, "claim");
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    int64_t pause = WK_RETRY_MS;
    if (wk_call(w, "claim", path.data, &body, wait, &r, &d) == 200)
        pause = claimed(w, &d) > 0 ? 0 : w->running ? WK_BUSY_CLAIM_MS : WK_IDLE_CLAIM_MS;
    w->next_claim_ms = clock_mono_ms() + pause;
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body); buf_fini(&path);
}

static wk_task *find_task(worker *w, const json_doc *d, int tok)
{
    int id = json_get(d, (uint32_t)tok, "id");
    for (long i = 0; id >= 0 && i < w->concurrency; i++)
        if (w->slots[i].used && json_str_eq(d, (uint32_t)id, w->slots[i].id)) return &w->slots[i];
    return NULL;
}

/* What the server says of each task held: cancelled ones are stopped, lost
 * ones killed and dropped. */
static void heard(worker *w, const json_doc *d)
{
    int list = json_get(d, 0, "tasks"), tok;
    for (uint32_t i = 0; list >= 0 && (tok = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        wk_task *t = find_task(w, d, tok);
        int state = json_get(d, (uint32_t)tok, "state");
        if (!t || state < 0) continue;
        if (json_str_eq(d, (uint32_t)state, "cancelled") && t->end == WK_RUN) {
            log_info("task %s %s: cancelled: stopping it", t->id, t->name);
            t->end = WK_CANCELLING;
            t->kill_at_ms = clock_mono_ms() + WK_KILL_AFTER_MS;
            wk_child_kill(&t->child, SIGTERM);
        } else if (json_str_eq(d, (uint32_t)state, "lost") && t->end != WK_LOST) {
            t->end = WK_LOST;
            wk_child_kill(&t->child, SIGKILL);
        }
    }
}

static void heartbeat(worker *w)
{
    buf body, path;
    buf_init(&body); buf_init(&path);
    buf_puts(&body, "{\"tasks\":[");
    bool first = true;
    for (long i = 0; i < w->concurrency; i++)
        if (w->slots[i].used) { put_held(&body, &w->slots[i], first); first = false; }
    buf_puts(&body, "]}");
    worker_path(&path, w, "heartbeat");
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    if (wk_call(w, "heartbeat", path.data, &body, 0, &r, &d) == 200) heard(w, &d);
    w->next_hb_ms = clock_mono_ms() + w->hb_interval_ms;
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body); buf_fini(&path);
}

/* Reads the commands' output for up to timeout_ms. */
static void pump(worker *w, int64_t timeout_ms)
{
    struct pollfd *fds = xcalloc((size_t)w->concurrency * 2 + 1, sizeof *fds);
    int n = 0;
    for (long i = 0; i < w->concurrency; i++)
        if (w->slots[i].used) n += wk_child_fds(&w->slots[i].child, fds + n);
    if (timeout_ms > 0 || n > 0) poll(fds, (nfds_t)n, (int)(timeout_ms > 0 ? timeout_ms : 0));
    for (long i = 0; i < w->concurrency; i++)
        if (w->slots[i].used) wk_child_read(&w->slots[i].child);
    free(fds);
}

static void reap(worker *w)
{
    for (long i = 0; i < w->concurrency; i++) {
        wk_task *t = &w->slots[i];
        if (!t->used || !wk_child_reap(&t->child)) continue;
        wk_pids[i] = 0;
        w->running--;
        task_finish(w, t);
        task_free(t);
        w->next_claim_ms = clock_mono_ms();   /* a slot is free: claim for it now */
    }
}

/* Timeouts, the SIGKILL after a cancel's SIGTERM, and the end of the grace. */
static void enforce(worker *w)
{
    int64_t now = clock_mono_ms();
    for (long i = 0; i < w->concurrency; i++) {
        wk_task *t = &w->slots[i];
        if (!t->used) continue;
        if (t->end == WK_RUN && t->timeout_ms > 0 && now - t->started_ms >= t->timeout_ms) {
            t->end = WK_TIMED_OUT;
            wk_child_kill(&t->child, SIGKILL);
        } else if (t->end == WK_RUN && w->stopping && now >= w->grace_until_ms) {
            t->end = WK_CRASHING;
            wk_child_kill(&t->child, SIGKILL);
        } else if (t->end == WK_CANCELLING && now >= t->kill_at_ms) {
            wk_child_kill(&t->child, SIGKILL);
            t->kill_at_ms = now + WK_KILL_AFTER_MS;
        }
    }
}

static void notice_signal(worker *w)
{
    if (!wk_signals || w->stopping) return;
    w->stopping = true;
    w->grace_until_ms = clock_mono_ms() + w->grace_s * 1000;
    log_info("worker: stopping: %d task(s) running, %ld s of grace", w->running, w->grace_s);
}

/* How long the loop may wait on the commands before its next duty. */
static int64_t idle_for(const worker *w)
{
    int64_t now = clock_mono_ms(), wake = now + (w->running ? WK_TICK_MS : 250);
    if (!w->stopping && w->running < w->concurrency && w->next_claim_ms < wake) wake = w->next_claim_ms;
    if (w->next_hb_ms < wake) wake = w->next_hb_ms;
    return wake > now ? wake - now : 0;
}

static int worker_loop(worker *w)
{
    w->next_hb_ms = clock_mono_ms();
    while (!(w->stopping && w->running == 0)) {
        notice_signal(w);
        if (!w->stopping && w->running < w->concurrency && clock_mono_ms() >= w->next_claim_ms) claim(w);
        notice_signal(w);
        pump(w, idle_for(w));
        reap(w);
        enforce(w);
        if (clock_mono_ms() >= w->next_hb_ms) heartbeat(w);
    }
    log_info("worker: %s stopped", w->id);
    return CLI_EXIT_OK;
}

static int worker_run(worker *w)
{
    w->http = http_client_new(cli_server_url());
    if (!w->http) {
        cli_error("invalid server url \"%s\" (expected http://host[:port])", cli_server_url());
        return CLI_EXIT_FAILED;
    }
    const char *level = getenv("LOG_LEVEL");
    if (level && *level && log_set_level(level) < 0) log_warn("worker: LOG_LEVEL \"%s\" unknown: info", level);
    install_signals();
    int rc = CLI_EXIT_FAILED;
    if (worker_register(w) == 0) {
        log_info("worker: %s registered: queues %s%s, concurrency %ld, heartbeat every %lld ms", w->id,
                 w->queues.items[0], w->queues.n > 1 ? " and more" : "", w->concurrency,
                 (long long)w->hb_interval_ms);
        w->slots = xcalloc((size_t)w->concurrency, sizeof *w->slots);
        wk_pids = xcalloc((size_t)w->concurrency, sizeof *wk_pids);
        wk_npids = (int)w->concurrency;
        rc = worker_loop(w);
    } else {
        cli_error("worker: registration with %s failed", cli_server_url());
    }
    free(w->slots);
    free(w->id);
    http_client_free(w->http);
    return rc;
}

static int worker_check(const cli_cmd *cmd, const worker *w)
{
    if (w->queues.n == 0) return cli_usage_error(cmd, "--queue is required");
    for (int i = 0; i < w->queues.n; i++)
        if (!*w->queues.items[i]) return cli_usage_error(cmd, "--queue needs a queue name");
    if (w->concurrency < 1 || w->concurrency > WK_MAX_CONCURRENCY)
        return cli_usage_error(cmd, "--concurrency must be from 1 to %d", WK_MAX_CONCURRENCY);
    if (w->worker_id && !*w->worker_id) return cli_usage_error(cmd, "--worker-id needs a name");
    if (w->timeout_s > 86400 || w->grace_s > 86400) return cli_usage_error(cmd, "--timeout and --grace are at most 86400 s");
    return 0;
}

int cli_worker(int argc, char **argv)
{
    worker w = { .concurrency = 1, .grace_s = 30 };
    const cli_opt opts[] = {
        { "queue",        CLI_OPT_LIST, &w.queues },
        { "concurrency",  CLI_OPT_INT,  &w.concurrency },
        { "timeout",      CLI_OPT_INT,  &w.timeout_s },
        { "grace",        CLI_OPT_INT,  &w.grace_s },
        { "worker-id",    CLI_OPT_STR,  &w.worker_id },
        { "heartbeat-ms", CLI_OPT_INT,  &w.heartbeat_ms },
    };
    const cli_cmd cmd = { "worker", worker_usage, opts, sizeof opts / sizeof opts[0], 1, -1 };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) {
        rc = worker_check(&cmd, &w);
        w.argv = a.pos;
        if (rc == 0) rc = worker_run(&w);
    }
    cli_list_fini(&w.queues);
    cli_args_fini(&a);
    return rc;
}

/* worker_calls: the worker protocol, one blocking call at a time (see
 * worker.h; the routes are in src/api/workers.c). A call that fails is
 * logged and left: a claim is tried again, a heartbeat at the next
 * interval, and a lost report leaves the task to the server's recovery. */
#include "cli/worker.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"

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

int wk_register(worker *w)
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

void wk_task_free(wk_task *t)
{
    wk_child_fini(&t->child);
    free(t->name);
    free(t->queue);
    memset(t, 0, sizeof *t);
}

/* Reports the end of t's command (the caller frees the slot). */
void wk_task_finish(worker *w, wk_task *t)
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
    buf after;   /* what the server made of it */
    buf_init(&after);
    if (now) buf_printf(&after, ", now %s", now);
    else buf_puts(&after, status == 409 ? ", refused (fenced)" : ", not reported");
    if (*code) log_info("task %s %s: %s: %s, %lld ms%s", t->id, t->name, code, message.data ? message.data : "",
                        (long long)ms, after.data);
    else log_info("task %s %s: completed, %lld ms%s", t->id, t->name, (long long)ms, after.data);
    buf_fini(&after);
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
    if (t->attempt < 0) { wk_task_free(t); return; }
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
        wk_task_finish(w, t);
        wk_task_free(t);
        return;
    }
    w->running++;
    wk_pids[t - w->slots] = t->child.pid;
    log_info("task %s %s: started (queue %s, attempt %d, pid %d)", t->id, t->name, t->queue ? t->queue : "?",
             t->attempt, (int)t->child.pid);
}

/* ---- claims and heartbeats ------------------------------------------------ */

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

void wk_claim(worker *w)
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

void wk_heartbeat(worker *w)
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


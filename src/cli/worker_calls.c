/* worker_calls: the worker protocol: register, claim, heartbeat (see
 * worker.h; the routes are in src/api/workers.c and src/api/claims.c). A
 * claim or heartbeat that fails is logged and tried again later; the ends
 * of commands are worker_reports.c's, which keeps them until delivered. */
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

int wk_reply(http_client *c, const char *what, int rc, http_response *r, json_doc *d)
{
    if (rc < 0) {
        if (http_client_abandoned(c)) log_debug("worker: %s: given up", what);
        else log_warn("worker: %s: %s", what, http_client_error(c));
        return -1;
    }
    /* A claim given up before the server replied: it answers with no body
     * (204) and gives back what it took. */
    if (r->status == 204 || (http_client_abandoned(c) && r->body.len == 0)) return 204;
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

int wk_call(worker *w, const char *what, const char *path, const buf *body, int wait_ms,
            http_response *r, json_doc *d)
{
    http_client_set_timeout(w->http, wait_ms + WK_CALL_SLACK_MS);
    int rc = http_request(w->http, "POST", path, body->data, body->len, r);
    return wk_reply(w->http, what, rc, r, d);
}

/* One heartbeat item; progress: a report's members (NULL: none). */
static void put_held(buf *b, const char *id, const char *claim, const buf *progress, bool first)
{
    buf_puts(b, first ? "{\"id\":" : ",{\"id\":");
    json_put_cstr(b, id);
    buf_puts(b, ",\"claimId\":");
    json_put_cstr(b, claim);
    if (progress && progress->len) { buf_putc(b, ','); buf_append(b, progress->data, progress->len); }
    buf_putc(b, '}');
}

static void worker_path(buf *path, const worker *w, const char *what)
{
    buf_puts(path, "/api/v1/workers");
    cli_path_segment(path, w->id);
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

void wk_task_free(wk_task *t)
{
    wk_child_fini(&t->child);
    free(t->name);
    free(t->queue);
    memset(t, 0, sizeof *t);
}

/* ---- starting a task ---------------------------------------------------- */

static wk_task *free_slot(worker *w)
{
    for (long i = 0; i < w->concurrency; i++)
        if (!w->slots[i].used) return &w->slots[i];
    return NULL;
}

/* Starts claimed task (element tok of the claim reply) in slot t. */
static void task_start(worker *w, wk_task *t, const json_doc *d, int tok)
{
    char *id = cli_get_str(d, tok, "id"), *claim = cli_get_str(d, tok, "claimId");
    t->child.out_fd = t->child.err_fd = t->child.prog_fd = -1;   /* nothing to close until it starts */
    snprintf(t->id, sizeof t->id, "%s", id ? id : "");
    snprintf(t->claim, sizeof t->claim, "%s", claim ? claim : "");
    free(id); free(claim);
    t->name = cli_get_str(d, tok, "name");
    t->queue = cli_get_str(d, tok, "queue");
    if (!t->name) t->name = xstrdup("?");
    int to = json_get(d, (uint32_t)tok, "timeoutMs");
    if (to < 0 || json_int64(d, (uint32_t)to, &t->timeout_ms) < 0) t->timeout_ms = w->timeout_s * 1000;
    int at = json_get(d, (uint32_t)tok, "attempt");
    int64_t attempt = 0;
    if (at >= 0 && json_int64(d, (uint32_t)at, &attempt) < 0) attempt = 0;
    t->attempt = (int)attempt;
    t->used = true;
    t->started_ms = clock_mono_ms();
    int args = json_get(d, (uint32_t)tok, "args");
    size_t n = 4;
    const char *text = args >= 0 ? json_span(d, (uint32_t)args, &n) : "null";
    const wk_child_env env = { t->id, t->name, t->queue, t->attempt };
    char err[256];
    if (wk_child_start(&t->child, w->program, w->argv, text, n, &env, err, sizeof err) < 0) {
        log_warn("task %s %s: cannot start %s: %s", t->id, t->name, w->argv[0], err);
        t->end = WK_NOT_STARTED;
        buf_printf(&t->child.last, "cannot start %s: %s", w->argv[0], err);
        wk_report_add(w, t);
        wk_task_free(t);
        return;
    }
    w->running++;
    wk_pids[t - w->slots] = t->child.pid;
    log_info("task %s %s: started (queue %s, attempt %d, pid %d)", t->id, t->name, t->queue ? t->queue : "?",
             t->attempt, (int)t->child.pid);
}

/* ---- watching while a call waits ------------------------------------------ */

void wk_drain_wake(worker *w)
{
    char b[64];
    ssize_t n;
    while ((n = read(w->wake_fd, b, sizeof b)) > 0)
        for (ssize_t i = 0; i < n; i++)
            if (b[i] == 'C') w->child_ended = true;
}

struct pollfd *wk_watch_fds(worker *w, int *n)
{
    struct pollfd *fds = xcalloc((size_t)w->concurrency * WK_CHILD_FDS + 1, sizeof *fds);
    fds[0] = (struct pollfd){ .fd = w->wake_fd, .events = POLLIN };
    *n = 1;
    for (long i = 0; i < w->concurrency; i++)
        if (w->slots[i].used) *n += wk_child_fds(&w->slots[i].child, fds + *n);
    return fds;
}

/* A pipe the read closed is no longer watched (its number may be reused). */
static void unwatch_closed(worker *w)
{
    for (int i = 1; i < w->nwatch; i++) {
        int fd = w->watch[i].fd;
        if (fd < 0) continue;
        bool open = false;
        for (long j = 0; j < w->concurrency && !open; j++) {
            const wk_child *c = &w->slots[j].child;
            open = w->slots[j].used && (c->out_fd == fd || c->err_fd == fd || c->prog_fd == fd);
        }
        if (!open) w->watch[i].fd = -1;
    }
}

/* The watch a claim keeps on the commands and the signals while it waits:
 * reads the wake pipe and the commands' pipes. A stop signal gives the
 * claim up at once. A command's end gives it up only once the claim has
 * had WK_CLAIM_ANSWER_MS to answer: the server answers at once while tasks
 * wait, so a claim given up sooner would throw away the tasks it is
 * bringing (the server gives them back); one that has not answered by
 * then is parked on empty queues, and the freed slot and the command's
 * end should not wait for its whole long poll. */
static int watch_claim(void *arg)
{
    worker *w = arg;
    wk_drain_wake(w);
    bool closed = false;
    for (long i = 0; i < w->concurrency; i++) {
        wk_child *c = &w->slots[i].child;
        if (!w->slots[i].used) continue;
        int open = (c->out_fd >= 0) + (c->err_fd >= 0) + (c->prog_fd >= 0);
        wk_child_read(c);
        if ((c->out_fd >= 0) + (c->err_fd >= 0) + (c->prog_fd >= 0) < open) closed = true;
    }
    if (closed) unwatch_closed(w);
    if (wk_signals) return HTTP_WATCH_ABANDON;
    if (!w->child_ended) return HTTP_WATCH_WAIT;
    int64_t left = w->claim_sent_ms + WK_CLAIM_ANSWER_MS - clock_mono_ms();
    return left > 0 ? (int)left : HTTP_WATCH_ABANDON;
}

/* ---- claims -------------------------------------------------------------- */

/* Starts what a claim returned (started by the claim itself: RUNNING). A
 * claim answered as a stop signal came is run too, within the grace: its
 * tasks are already started, and only the claim itself can be given back. */
static int claimed(worker *w, const json_doc *d)
{
    int list = json_get(d, 0, "tasks"), tok, n = 0;
    for (uint32_t i = 0; list >= 0 && (tok = json_at(d, (uint32_t)list, i)) >= 0; i++, n++) {
        wk_task *t = free_slot(w);
        if (t) task_start(w, t, d, tok);
        else log_warn("worker: the server returned more tasks than asked for: left to recovery");
    }
    return n;
}

void wk_claim(worker *w, int64_t wait_ms)
{
    int wait = wait_ms > WK_CLAIM_WAIT_MS ? WK_CLAIM_WAIT_MS : wait_ms > 0 ? (int)wait_ms : 0;
    buf body, path;
    buf_init(&body); buf_init(&path);
    buf_putc(&body, '{');
    put_queues(&body, w);
    buf_printf(&body, ",\"max\":%ld,\"waitMs\":%d,\"start\":true}", w->concurrency - w->running, wait);
    worker_path(&path, w, "claim");
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    w->watch = wait ? wk_watch_fds(w, &w->nwatch) : NULL;
    http_client_watch(w->http, w->watch, w->nwatch, watch_claim, w);
    int64_t t0 = w->claim_sent_ms = clock_mono_ms();
    int status = wk_call(w, "claim", path.data, &body, wait, &r, &d);
    http_client_watch(w->http, NULL, 0, NULL, NULL);
    free(w->watch);
    w->watch = NULL;
    w->nwatch = 0;
    int64_t pause = WK_RETRY_MS;
    if (status == 200) {
        int n = claimed(w, &d);
        /* an empty answer long before its wait (a draining server): do not spin */
        pause = n > 0 || clock_mono_ms() - t0 >= wait / 2 ? 0 : WK_IDLE_CLAIM_MS;
    } else if (status == 204 || http_client_abandoned(w->http)) {
        pause = 0;   /* given up for a command's end or a signal: nothing taken */
    }
    w->next_claim_ms = clock_mono_ms() + pause;
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body); buf_fini(&path);
}

/* ---- heartbeats ----------------------------------------------------------- */

/* An undelivered end the server says is lost to this worker: dropped. One
 * carried by a finish call in flight is left to that call's answer (the
 * end may be what made the claim stale). */
static void heard_report(worker *w, wk_report *e, const json_doc *d, int state)
{
    if (e->in_flight || !json_str_eq(d, (uint32_t)state, "lost")) return;
    log_info("task %s %s: %s, not reported: the task was taken back meanwhile", e->id, e->name, e->what);
    wk_report_drop(w, e);
}

static void heard_task(wk_task *t, const json_doc *d, int state)
{
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

/* What the server says of each (task, claim) held, answered in the order
 * named: the running slots, then the undelivered ends (a task may be in
 * both, under an old claim and a new one). Cancelled ones are stopped,
 * lost ones killed and dropped, a lost end dropped. */
static void heard(worker *w, const json_doc *d, wk_task **slots, int nslots, int nreports)
{
    int list = json_get(d, 0, "tasks"), tok;
    wk_report **ends = xcalloc((size_t)nreports + 1, sizeof *ends);
    for (int i = 0; i < nreports; i++) ends[i] = &w->reports[i];
    for (uint32_t i = 0; list >= 0 && (int)i < nslots && (tok = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        int state = json_get(d, (uint32_t)tok, "state");
        if (state >= 0) heard_task(slots[i], d, state);
    }
    /* ends last, highest first: a drop moves the last end into its place */
    for (uint32_t i = (uint32_t)(nslots + nreports); list >= 0 && i-- > (uint32_t)nslots;) {
        tok = json_at(d, (uint32_t)list, i);
        int state = tok >= 0 ? json_get(d, (uint32_t)tok, "state") : -1;
        if (state >= 0) heard_report(w, ends[i - (uint32_t)nslots], d, state);
    }
    free(ends);
}

void wk_heartbeat(worker *w)
{
    buf body, path;
    buf_init(&body); buf_init(&path);
    buf_puts(&body, "{\"tasks\":[");
    wk_task **slots = xcalloc((size_t)w->concurrency, sizeof *slots);
    bool *reporting = xcalloc((size_t)w->concurrency, sizeof *reporting);
    int nslots = 0, nreports = w->nreports;
    for (long i = 0; i < w->concurrency; i++)
        if (w->slots[i].used) {
            wk_child *c = &w->slots[i].child;
            reporting[nslots] = c->progress_new;   /* a report goes once; again only if this call fails */
            c->progress_new = false;
            put_held(&body, w->slots[i].id, w->slots[i].claim, reporting[nslots] ? &c->progress : NULL, nslots == 0);
            slots[nslots++] = &w->slots[i];
        }
    for (int i = 0; i < nreports; i++)
        put_held(&body, w->reports[i].id, w->reports[i].claim, NULL, nslots + i == 0);
    buf_puts(&body, "]}");
    worker_path(&path, w, "heartbeat");
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    if (wk_call(w, "heartbeat", path.data, &body, 0, &r, &d) == 200) heard(w, &d, slots, nslots, nreports);
    else
        for (int i = 0; i < nslots; i++) slots[i]->child.progress_new |= reporting[i];
    free(slots);
    free(reporting);
    w->last_hb_ms = clock_mono_ms();
    w->next_hb_ms = w->last_hb_ms + w->hb_interval_ms;
    json_doc_fini(&d);
    http_response_fini(&r);
    buf_fini(&body); buf_fini(&path);
}


/* worker_reports: what each command's end is reported as, and the delivery of
 * those reports (see worker.h).
 *
 * An end that could not be delivered is not forgotten: the server may be
 * restarting, or PostgreSQL failing over. Left undelivered, recovery would
 * later fail the attempt WORKER_CRASHED, and a task whose command succeeded
 * would end FAILED or run again. So every end stays in w->reports, is named in
 * every heartbeat (its task stays held: recovery leaves it alone while the
 * heartbeats land), and is sent again with its claimId until the server
 * answers for it: a status, or "not the current claim" (the end was applied
 * before a reply that got lost, or recovery took the task). The claimId
 * fences it: an end can never apply twice. */
#include "cli/worker.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"

/* ---- what the end is ------------------------------------------------------ */

static void trim(const char **s, size_t *n)
{
    while (*n && strchr(" \t\r\n", (*s)[0])) { (*s)++; (*n)--; }
    while (*n && strchr(" \t\r\n", (*s)[*n - 1])) (*n)--;
}

/* An error code for how the worker ended it, or NULL when the command's
 * own exit decides. */
static const char *worker_code(const worker *w, const wk_task *t, buf *message)
{
    switch (t->end) {
    case WK_TIMED_OUT:
        buf_printf(message, "ran past its timeout of %lld ms", (long long)t->timeout_ms);
        return "TASK_TIMEOUT";
    case WK_CANCELLING:
        buf_puts(message, "cancelled while running");
        return "CANCELLED";
    case WK_CRASHING:
        buf_printf(message, "the worker stopped and its grace of %ld s ran out", w->grace_s);
        return "WORKER_CRASHED";
    case WK_NOT_STARTED:
        buf_puts(message, wk_child_last_line(&t->child));
        return "SPAWN_FAILED";
    case WK_RUN: case WK_LOST: break;
    }
    return NULL;
}

/* The code of a command that exited or was killed on its own, or NULL when
 * it exited 0. */
static const char *exit_code(const wk_child *c, char *code, size_t codelen, buf *message)
{
    const char *line = wk_child_last_line(c);
    if (WIFSIGNALED(c->status)) {
        snprintf(code, codelen, "SIGNAL_%d", WTERMSIG(c->status));
        if (*line) buf_puts(message, line);
        else buf_printf(message, "killed by signal %d (%s)", WTERMSIG(c->status), strsignal(WTERMSIG(c->status)));
        return code;
    }
    if (WEXITSTATUS(c->status) != 0) {
        snprintf(code, codelen, "EXIT_%d", WEXITSTATUS(c->status));
        if (*line) buf_puts(message, line);
        else buf_printf(message, "exited %d", WEXITSTATUS(c->status));
        return code;
    }
    return NULL;
}

/* A result (item gets "result"), or an error code with message for stdout
 * that is not one JSON value. */
static const char *result_of(const wk_child *c, buf *item, buf *message)
{
    if (c->out_overflow) {
        buf_printf(message, "stdout exceeded %u bytes", WK_STDOUT_MAX);
        return "RESULT_TOO_LARGE";
    }
    const char *text = c->out.data ? c->out.data : "";
    size_t n = c->out.len;
    trim(&text, &n);
    const char *code = NULL;
    json_doc d;
    json_doc_init(&d);
    if (n == 0) buf_puts(item, ",\"result\":null");
    else if (json_parse_shallow(&d, text, n, 16, 0) == 0) { buf_puts(item, ",\"result\":"); buf_append(item, text, n); }
    else {
        code = "INVALID_RESULT";
        buf_printf(message, "stdout is not a JSON value: %s", d.error);
    }
    json_doc_fini(&d);
    return code;
}

static void put_head(wk_report *e)
{
    buf_reset(&e->item);
    buf_puts(&e->item, "{\"id\":");
    json_put_cstr(&e->item, e->id);
    buf_puts(&e->item, ",\"claimId\":");
    json_put_cstr(&e->item, e->claim);
}

/* Makes e a failure: its item and its log text. */
static void set_failure(wk_report *e, const char *code, const buf *message)
{
    const char *text = message->data ? message->data : "";
    put_head(e);
    buf_puts(&e->item, ",\"errorCode\":");
    json_put_cstr(&e->item, code);
    buf_puts(&e->item, ",\"errorMessage\":");
    json_put_str(&e->item, text, message->len);
    buf_putc(&e->item, '}');
    buf what;
    buf_init(&what);
    buf_printf(&what, "%s: %s", code, text);
    free(e->what);
    e->what = xstrdup(what.data);
    buf_fini(&what);
}

/* Fills e's item and log text from how t's command ended. */
static void describe(const worker *w, const wk_task *t, wk_report *e)
{
    char code_buf[64];
    buf message;
    buf_init(&message);
    put_head(e);
    const char *code = worker_code(w, t, &message);
    if (!code) code = exit_code(&t->child, code_buf, sizeof code_buf, &message);
    if (!code) code = result_of(&t->child, &e->item, &message);
    if (code) {
        set_failure(e, code, &message);
    } else {
        buf_putc(&e->item, '}');
        e->what = xstrdup("completed");
    }
    buf_fini(&message);
}

void wk_report_add(worker *w, wk_task *t)
{
    int64_t ms = clock_mono_ms() - t->started_ms;
    if (t->end == WK_LOST) {
        log_info("task %s %s: lost (taken back by the server), dropped after %lld ms", t->id, t->name, (long long)ms);
        return;
    }
    if (w->nreports == w->reports_cap) {
        w->reports_cap = w->reports_cap ? w->reports_cap * 2 : 16;
        w->reports = xrealloc(w->reports, (size_t)w->reports_cap * sizeof *w->reports);
    }
    wk_report *e = &w->reports[w->nreports++];
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", t->id);
    snprintf(e->claim, sizeof e->claim, "%s", t->claim);
    e->name = xstrdup(t->name);
    e->ran_ms = ms;
    buf_init(&e->item);
    describe(w, t, e);
    if (w->nreports == 1) { w->next_report_ms = clock_mono_ms(); w->report_backoff_ms = WK_END_RETRY_MS; }
    /* stopping: an end decided late still gets its time to be delivered */
    if (w->stopping && w->give_up_ms < clock_mono_ms() + WK_END_LINGER_MS) w->give_up_ms = clock_mono_ms() + WK_END_LINGER_MS;
}

/* ---- the undelivered ends ------------------------------------------------- */

wk_report *wk_report_find(worker *w, const char *id)
{
    for (int i = 0; i < w->nreports; i++)
        if (strcmp(w->reports[i].id, id) == 0) return &w->reports[i];
    return NULL;
}

void wk_report_drop(worker *w, wk_report *e)
{
    buf_fini(&e->item);
    free(e->name);
    free(e->what);
    *e = w->reports[--w->nreports];
}

void wk_reports_free(worker *w)
{
    while (w->nreports) wk_report_drop(w, &w->reports[w->nreports - 1]);
    free(w->reports);
    w->reports = NULL;
    w->reports_cap = 0;
}

/* The server answered for e: status is what the task is now, or NULL for
 * a claim that was no longer current. */
static void answered(worker *w, wk_report *e, const char *status)
{
    const char *after = status ? status : "refused (fenced: the end was already applied, or the task taken back)";
    log_info("task %s %s: %s, %lld ms, now %s", e->id, e->name, e->what, (long long)e->ran_ms, after);
    wk_report_drop(w, e);
}

static void heard_reports(worker *w, const json_doc *d)
{
    int list = json_get(d, 0, "tasks"), tok;
    for (uint32_t i = 0; list >= 0 && (tok = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        char *id = cli_get_str(d, tok, "id"), *status = cli_get_str(d, tok, "status");
        wk_report *e = id ? wk_report_find(w, id) : NULL;
        if (e) answered(w, e, status);
        free(id);
        free(status);
    }
}

/* How many ends go in one call: the server takes at most this many, and a
 * body of at most this many bytes unless one end alone is larger. */
#define WK_REPORTS_PER_CALL  1000
#define WK_REPORTS_MAX_BYTES (8u << 20)

/* The ends of the next call: after a refused batch, those it carried go
 * one at a time (alone), so one bad end cannot hold the others back. */
static void put_reports(worker *w, buf *body)
{
    int first_alone = -1;
    for (int i = 0; i < w->nreports && first_alone < 0; i++)
        if (w->reports[i].alone) first_alone = i;
    for (int i = 0, n = 0; i < w->nreports && n < WK_REPORTS_PER_CALL; i++) {
        wk_report *e = &w->reports[i];
        if (first_alone >= 0 && i != first_alone) continue;
        if (n && body->len + e->item.len > WK_REPORTS_MAX_BYTES) break;
        if (n++) buf_putc(body, ',');
        buf_append(body, e->item.data, e->item.len);
        e->in_flight = true;
    }
}

void wk_reports_send(worker *w)
{
    buf body, path;
    buf_init(&body); buf_init(&path);
    buf_puts(&body, "{\"tasks\":[");
    put_reports(w, &body);
    buf_puts(&body, "]}");
    buf_puts(&path, "/api/v1/workers");
    cli_path_segment(&path, w->id);
    buf_puts(&path, "/finish");
    http_client_set_timeout(w->ends_http, WK_CALL_SLACK_MS);
    (void)http_request_begin(w->ends_http, "POST", path.data, body.data, body.len);   /* finish tells */
    w->reports_in_flight = true;
    buf_fini(&body); buf_fini(&path);
}

/* The server refused the call whole (400: an end it cannot read, e.g. a
 * result nested deeper than it reads; 413: too large). A batch is sent
 * again one end at a time; a single end refused becomes a failure the
 * server can take (the task ends FAILED, or is retried, with what was
 * wrong). Anything else refused (401, 403...) is sent again as it is. */
static void refused_reports(worker *w, int status, const json_doc *d)
{
    int carried = 0;
    for (int i = 0; i < w->nreports; i++) carried += w->reports[i].in_flight;
    char *why = cli_get_str(d, 0, "error");
    for (int i = w->nreports - 1; i >= 0; i--) {
        wk_report *e = &w->reports[i];
        if (!e->in_flight) continue;
        if (carried > 1) { e->alone = true; continue; }
        if (e->refused) {   /* its failure refused too: nothing more to say */
            log_warn("task %s %s: the server refused its end (HTTP %d): %s; left to recovery", e->id, e->name,
                     status, why ? why : "");
            wk_report_drop(w, e);
            continue;
        }
        buf msg;
        buf_init(&msg);
        buf_printf(&msg, "the server refused the end (HTTP %d): %s", status, why ? why : "");
        set_failure(e, status == 413 ? "RESULT_TOO_LARGE" : "INVALID_RESULT", &msg);
        buf_fini(&msg);
        e->refused = true;
        e->alone = false;
    }
    free(why);
}

void wk_reports_heard(worker *w)
{
    if (!w->reports_in_flight) return;
    w->reports_in_flight = false;
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    int rc = http_request_finish(w->ends_http, &r);
    int status = wk_reply(w->ends_http, "finish", rc, &r, &d);
    int before = w->nreports;
    bool refused = status == 400 || status == 413;
    if (status == 200) heard_reports(w, &d);
    else if (refused) refused_reports(w, status, &d);
    for (int i = 0; i < w->nreports; i++) w->reports[i].in_flight = false;
    if (w->nreports && w->nreports == before && !refused) {
        w->next_report_ms = clock_mono_ms() + w->report_backoff_ms;
        w->report_backoff_ms = w->report_backoff_ms * 2 > WK_END_RETRY_MAX_MS ? WK_END_RETRY_MAX_MS
                                                                              : w->report_backoff_ms * 2;
    } else {
        w->next_report_ms = clock_mono_ms();
        w->report_backoff_ms = WK_END_RETRY_MS;
    }
    json_doc_fini(&d);
    http_response_fini(&r);
}

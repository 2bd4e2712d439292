/* chaos_tasks: the task half of `silt chaos` (see chaos.h).
 *
 * A sender sends tasks in batches, task i with idempotency key "<queue>-t<i>"
 * and a retry policy for WORKER_CRASHED, and records each batch's outcome:
 * acknowledged (201 with an id per task) or unknown; an unknown batch is sent
 * again with the same keys until acknowledged, so a crash between a send's
 * commit and its reply is answered by the key. `silt worker` processes that
 * scripts/chaos.sh starts run them, and so does the HTTP worker
 * (chaos_http_worker.c); each run leaves a line in the runs file
 * (chaos_runs.c).
 *
 * The checks, once every acknowledged task has ended: none lost (an
 * acknowledged id the server does not know), none unfinished, none FAILED
 * (a crash only ever costs an attempt that never ran: the claim's answer
 * was lost, and the policy retries it), none with two COMPLETED attempts,
 * and none whose command ran twice (a worker keeps an end until the server
 * has it, and recovery does not count time it could not see). The waits
 * and the figures of one task are shared with the workflows' and the
 * schedule's tasks (chaos_task_await, chaos_task_tally). */
#include "cli/chaos.h"
#include "cli/cli_common.h"
#include "base/clock.h"
#include "base/ids.h"
#include "base/xalloc.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TASK_BATCH     50

enum { TASK_UNSENT, TASK_UNKNOWN, TASK_ACKED };

typedef struct chaos_task {
    chaos_task_end end;   /* end.id: the id the send was answered with */
    uint8_t        sent;  /* TASK_UNSENT, TASK_UNKNOWN or TASK_ACKED */
} chaos_task;

struct chaos_tasks {
    const char     *url, *queue;
    long            n;
    chaos_task     *tasks;
    chaos_spread    sender;
    _Atomic uint64_t requests, failed_requests;
};

chaos_tasks *chaos_tasks_new(const char *url, const char *queue, long n)
{
    chaos_tasks *t = xcalloc(1, sizeof *t);
    t->url = url;
    t->queue = queue;
    t->n = n;
    t->tasks = xcalloc((size_t)n, sizeof *t->tasks);
    return t;
}

void chaos_tasks_free(chaos_tasks *t)
{
    if (!t) return;
    free(t->tasks);
    free(t);
}

/* ---- sending ---- */

static void put_task(buf *b, const void *ctx, long i)
{
    const chaos_tasks *t = ctx;
    buf_printf(b, "{\"name\":\"chaos\",\"queue\":\"%s\",\"args\":{\"i\":%ld},\"idempotencyKey\":\"%s-t%ld\","
               "\"retry\":{\"maxRetries\":5,\"retryOn\":[\"WORKER_CRASHED\"]}}", t->queue, i, t->queue, i);
}

static void send_body(const chaos_tasks *t, long first, long n, buf *b)
{
    chaos_batch_body(b, "tasks", first, n, put_task, t);
}

/* Acknowledged: one id per task sent; the ids are kept. */
static bool send_acked(chaos_tasks *t, const json_doc *d, long first, long n)
{
    int list = d->ntokens ? json_get(d, 0, "tasks") : -1;
    if (list < 0 || d->tokens[list].type != JSON_ARRAY || d->tokens[list].count != (uint32_t)n) return false;
    for (long k = 0; k < n; k++) {
        int id = json_get(d, (uint32_t)json_at(d, (uint32_t)list, (uint32_t)k), "id");
        if (id < 0 || d->tokens[id].type != JSON_STRING) return false;
        size_t len;
        const char *s = json_span(d, (uint32_t)id, &len);
        if (len != IDS_UUID_TEXT + 1) return false;   /* quoted */
        memcpy(t->tasks[first + k].end.id, s + 1, IDS_UUID_TEXT - 1);
        t->tasks[first + k].end.id[IDS_UUID_TEXT - 1] = '\0';
    }
    return true;
}

static void send_until_acked(chaos_tasks *t, http_client *h, long first, long n, buf *body)
{
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    send_body(t, first, n, body);
    while (!chaos_past(t->sender.t_drain_ms)) {
        for (long i = first; i < first + n; i++) t->tasks[i].sent = TASK_UNKNOWN;
        t->requests++;
        if (chaos_call(h, "POST", "/api/v1/tasks", body, &r, &d) == 0 && send_acked(t, &d, first, n)) {
            for (long i = first; i < first + n; i++) t->tasks[i].sent = TASK_ACKED;
            break;
        }
        t->failed_requests++;
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    }
    json_doc_fini(&d);
    http_response_fini(&r);
}

/* Spread over the workload: a batch every tenth of a second or so, so that
 * sends, claims and ends go on through every kill. */
static void *sender_main(void *arg)
{
    chaos_tasks *t = arg;
    http_client *h = http_client_new(t->url);
    http_client_set_timeout(h, CHAOS_TIMEOUT_MS);
    buf body;
    buf_init(&body);
    for (long i = 0; i < t->n && chaos_spread_wait(&t->sender, i, t->n); i += TASK_BATCH)
        send_until_acked(t, h, i, t->n - i < TASK_BATCH ? t->n - i : TASK_BATCH, &body);
    buf_fini(&body);
    http_client_free(h);
    return NULL;
}

void chaos_tasks_start(chaos_tasks *t, int64_t t_end_ms, int64_t t_drain_ms)
{
    chaos_spread_start(&t->sender, sender_main, t, t_end_ms, t_drain_ms);
}

void chaos_tasks_join(chaos_tasks *t)
{
    chaos_spread_join(&t->sender);
}

/* ---- checking ---- */

static bool terminal(const char *status)
{
    return !strcmp(status, "COMPLETED") || !strcmp(status, "FAILED") || !strcmp(status, "CANCELLED") ||
           !strcmp(status, "EXPIRED");
}

/* e->status once the task has ended (waited for), "" when unknown to the
 * server, "RUNNING" and the like when the deadline came first. */
static void await_end(http_client *h, chaos_task_end *e, int64_t deadline, http_response *r, json_doc *d)
{
    char path[96];
    snprintf(path, sizeof path, "/api/v1/tasks/%s?wait=2000", e->id);
    snprintf(e->status, sizeof e->status, "?");
    for (;;) {
        if (chaos_call(h, "GET", path, NULL, r, d) == 0 && d->ntokens) {
            chaos_str(d, 0, "status", e->status, sizeof e->status);
            if (terminal(e->status)) break;
        } else if (r->status == 404) {
            e->status[0] = '\0';
            break;
        } else {
            chaos_sleep_ms(CHAOS_BACKOFF_MS);
        }
        if (chaos_past(deadline)) break;
    }
}

/* Attempt rows and those COMPLETED; -1 each when they could not be read. */
static void read_attempts(http_client *h, chaos_task_end *e, int64_t deadline, http_response *r, json_doc *d)
{
    char path[112];
    snprintf(path, sizeof path, "/api/v1/tasks/%s/attempts", e->id);
    e->attempts = e->completed = -1;
    if (chaos_call_until(h, "GET", path, NULL, deadline, r, d) < 0) return;
    int list = json_get(d, 0, "attempts");
    e->completed = 0;
    e->attempts = list >= 0 ? (int)d->tokens[list].count : 0;
    for (int k = 0; k < e->attempts; k++) {
        int outcome = json_get(d, (uint32_t)json_at(d, (uint32_t)list, (uint32_t)k), "outcome");
        e->completed += outcome >= 0 && json_str_eq(d, (uint32_t)outcome, "COMPLETED");
    }
}

/* Both reads answered into one reply, as a consumer's pops are. */
void chaos_task_await(http_client *h, chaos_task_end *e, int64_t deadline)
{
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    await_end(h, e, deadline, &r, &d);
    if (terminal(e->status)) read_attempts(h, e, deadline, &r, &d);
    json_doc_fini(&d);
    http_response_fini(&r);
}

void chaos_task_tally(const chaos_task_end *e, int runs, chaos_task_figures *f)
{
    f->checked++;
    if (!e->status[0]) { f->lost++; return; }
    if (!strcmp(e->status, "FAILED")) f->failed++;
    else if (strcmp(e->status, "COMPLETED")) { f->unfinished++; return; }
    else f->completed++;
    if (e->completed > 1) f->completed_twice++;
    if (e->attempts > 1) f->retried++;
    if (runs > 1) f->ran_twice++;
}

bool chaos_task_figures_ok(const chaos_task_figures *f)
{
    return f->lost == 0 && f->unfinished == 0 && f->failed == 0 && f->completed_twice == 0 && f->ran_twice == 0;
}

static void figure(const char *what, const char *rule, uint64_t n)
{
    char label[96];
    snprintf(label, sizeof label, "%s %s:", what, rule);
    printf("  %-40s%" PRIu64 "\n", label, n);
}

void chaos_task_figures_print(const char *what, const chaos_task_figures *f)
{
    printf("            %" PRIu64 " %s checked: %" PRIu64 " COMPLETED, %" PRIu64
           " retried (an attempt lost with a claim's or a start's answer)\n", f->checked, what, f->completed, f->retried);
    figure(what, "lost (acknowledged, unknown)", f->lost);
    figure(what, "unfinished", f->unfinished);
    figure(what, "FAILED", f->failed);
    figure(what, "COMPLETED twice", f->completed_twice);
    figure(what, "whose command ran twice", f->ran_twice);
}

/* One page of GET /api/v1/tasks?queue=; the next cursor in cursor ("" at the end). */
static int list_page(http_client *h, const char *queue, char *cursor, int64_t deadline, char (**ids)[IDS_UUID_TEXT],
                     long *n, long *cap)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/tasks?queue=%s&limit=1000%s%s", queue, cursor[0] ? "&cursor=" : "", cursor);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    int rc = chaos_call_until(h, "GET", path, NULL, deadline, &r, &d);
    int list = rc == 0 ? json_get(&d, 0, "tasks") : -1;
    for (uint32_t k = 0; list >= 0 && k < d.tokens[list].count; k++) {
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 256;
            *ids = xrealloc(*ids, (size_t)*cap * sizeof **ids);
        }
        chaos_str(&d, json_at(&d, (uint32_t)list, k), "id", (*ids)[(*n)++], IDS_UUID_TEXT);
    }
    chaos_str(&d, 0, "nextCursor", cursor, IDS_UUID_TEXT);
    json_doc_fini(&d);
    http_response_fini(&r);
    return rc;
}

int chaos_task_ids(http_client *h, const char *queue, int64_t deadline, char (**ids)[IDS_UUID_TEXT], long *n)
{
    char cursor[IDS_UUID_TEXT] = "";
    long cap = 0;
    *ids = NULL;
    *n = 0;
    do {
        if (list_page(h, queue, cursor, deadline, ids, n, &cap) < 0) return -1;
    } while (cursor[0]);
    return 0;
}

void chaos_tasks_await(chaos_tasks *t)
{
    http_client *h = chaos_client(t->url);
    int64_t deadline = t->sender.t_drain_ms + CHAOS_GRACE_MS;
    for (long i = 0; i < t->n; i++)
        if (t->tasks[i].sent == TASK_ACKED) chaos_task_await(h, &t->tasks[i].end, deadline);
    http_client_free(h);
}

bool chaos_tasks_report(const chaos_tasks *t, const chaos_runs *runs)
{
    chaos_task_figures f;
    memset(&f, 0, sizeof f);
    uint64_t unknown = 0;
    for (long i = 0; i < t->n; i++) {
        const chaos_task *task = &t->tasks[i];
        unknown += task->sent == TASK_UNKNOWN;
        if (task->sent == TASK_ACKED) chaos_task_tally(&task->end, chaos_runs_of(runs, task->end.id), &f);
    }
    printf("  tasks:    %" PRIu64 " sent and acknowledged (%" PRIu64 " requests, %" PRIu64 " failed or unanswered), "
           "%" PRIu64 " unknown at the end; %ld runs of any task in all\n", f.checked, (uint64_t)t->requests,
           (uint64_t)t->failed_requests, unknown, chaos_runs_total(runs));
    chaos_task_figures_print("tasks", &f);
    return f.checked > 0 && chaos_task_figures_ok(&f);
}

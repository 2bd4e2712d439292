/* chaos_tasks: the task half of `silt chaos` (see chaos.h).
 *
 * A sender sends tasks in batches, task i with idempotency key "<queue>-t<i>"
 * and a retry policy for WORKER_CRASHED, and records each batch's outcome:
 * acknowledged (201 with an id per task) or unknown; an unknown batch is sent
 * again with the same keys until acknowledged, so a crash between a send's
 * commit and its reply is answered by the key. `silt worker` processes that
 * scripts/chaos.sh starts run them; their command appends "<id> <attempt>"
 * to the runs file.
 *
 * The checks, once every acknowledged task has ended: none lost (an
 * acknowledged id the server does not know), none unfinished, none FAILED
 * (a crash only ever costs an attempt that never ran: the claim's answer
 * was lost, and the policy retries it), none with two COMPLETED attempts,
 * and none whose command ran twice (a worker keeps an end until the server
 * has it, and recovery does not count time it could not see). */
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
#define CHECK_GRACE_MS 60000   /* past the drain deadline, for the last tasks to end */

enum { TASK_UNSENT, TASK_UNKNOWN, TASK_ACKED };

typedef struct chaos_task {
    char    id[IDS_UUID_TEXT];
    uint8_t sent;       /* TASK_UNSENT, TASK_UNKNOWN or TASK_ACKED */
    int     runs;       /* lines of the runs file */
} chaos_task;

typedef struct task_figures {
    uint64_t acked, completed, lost, unfinished, failed, completed_twice, ran_twice, retried;
} task_figures;

struct chaos_tasks {
    const char     *url, *queue, *runs;
    long            n;
    chaos_task     *tasks;
    int64_t         t_end_ms, t_drain_ms;
    pthread_t       sender;
    bool            started;
    _Atomic uint64_t requests, failed_requests;
};

chaos_tasks *chaos_tasks_new(const char *url, const char *queue, long n, const char *runs)
{
    chaos_tasks *t = xcalloc(1, sizeof *t);
    t->url = url;
    t->queue = queue;
    t->runs = runs;
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

static void send_body(const chaos_tasks *t, long first, long n, buf *b)
{
    buf_reset(b);
    buf_puts(b, "{\"tasks\":[");
    for (long i = first; i < first + n; i++)
        buf_printf(b, "%s{\"name\":\"chaos\",\"queue\":\"%s\",\"args\":{\"i\":%ld},\"idempotencyKey\":\"%s-t%ld\","
                   "\"retry\":{\"maxRetries\":5,\"retryOn\":[\"WORKER_CRASHED\"]}}",
                   i > first ? "," : "", t->queue, i, t->queue, i);
    buf_puts(b, "]}");
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
        memcpy(t->tasks[first + k].id, s + 1, IDS_UUID_TEXT - 1);
        t->tasks[first + k].id[IDS_UUID_TEXT - 1] = '\0';
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
    while (!chaos_past(t->t_drain_ms)) {
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
    int64_t start = clock_mono_ms(), span = t->t_end_ms - start;
    for (long i = 0; i < t->n && !chaos_past(t->t_end_ms); i += TASK_BATCH) {
        int64_t due = start + span * i / (t->n > 0 ? t->n : 1);
        while (clock_mono_ms() < due && !chaos_past(t->t_end_ms)) chaos_sleep_ms(10);
        send_until_acked(t, h, i, t->n - i < TASK_BATCH ? t->n - i : TASK_BATCH, &body);
    }
    buf_fini(&body);
    http_client_free(h);
    return NULL;
}

void chaos_tasks_start(chaos_tasks *t, int64_t t_end_ms, int64_t t_drain_ms)
{
    t->t_end_ms = t_end_ms;
    t->t_drain_ms = t_drain_ms;
    if (pthread_create(&t->sender, NULL, sender_main, t) != 0) abort();
    t->started = true;
}

void chaos_tasks_join(chaos_tasks *t)
{
    if (t->started) pthread_join(t->sender, NULL);
    t->started = false;
}

/* ---- checking ---- */

static int by_id(const void *a, const void *b)
{
    return strcmp(((const chaos_task *)a)->id, ((const chaos_task *)b)->id);
}

/* Counts the runs file's lines per task; the tasks are sorted by id for it. */
static void count_runs(chaos_tasks *t)
{
    qsort(t->tasks, (size_t)t->n, sizeof *t->tasks, by_id);
    FILE *f = fopen(t->runs, "r");
    if (!f) return;   /* no task ran */
    char line[128];
    while (fgets(line, sizeof line, f)) {
        chaos_task key;
        snprintf(key.id, sizeof key.id, "%.*s", IDS_UUID_TEXT - 1, line);
        chaos_task *hit = bsearch(&key, t->tasks, (size_t)t->n, sizeof *t->tasks, by_id);
        if (hit) hit->runs++;
    }
    fclose(f);
}

/* The task's status once it has ended (waited for), "" when unknown to the
 * server, "RUNNING" and the like when the deadline came first. */
static void await_end(http_client *h, const chaos_task *task, int64_t deadline, char *status, size_t cap)
{
    char path[96];
    snprintf(path, sizeof path, "/api/v1/tasks/%s", task->id);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    snprintf(status, cap, "?");
    for (;;) {
        if (chaos_call(h, "GET", path, NULL, &r, &d) == 0 && d.ntokens) {
            int st = json_get(&d, 0, "status");
            size_t n = 0;
            const char *s = st >= 0 ? json_span(&d, (uint32_t)st, &n) : "\"?\"";
            snprintf(status, cap, "%.*s", (int)(n > 2 ? n - 2 : 1), s + 1);
            if (!strcmp(status, "COMPLETED") || !strcmp(status, "FAILED") || !strcmp(status, "CANCELLED") ||
                !strcmp(status, "EXPIRED"))
                break;
        } else if (r.status == 404) {
            snprintf(status, cap, "%s", "");
            break;
        }
        if (chaos_past(deadline)) break;
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    }
    json_doc_fini(&d);
    http_response_fini(&r);
}

/* COMPLETED attempts and attempts in all; -1 when they could not be read. */
static int completed_attempts(http_client *h, const chaos_task *task, int *all, int64_t deadline)
{
    char path[112];
    snprintf(path, sizeof path, "/api/v1/tasks/%s/attempts", task->id);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    int completed = -1;
    while (completed < 0 && !chaos_past(deadline)) {
        if (chaos_call(h, "GET", path, NULL, &r, &d) < 0) { chaos_sleep_ms(CHAOS_BACKOFF_MS); continue; }
        int list = json_get(&d, 0, "attempts");
        completed = 0;
        *all = list >= 0 ? (int)d.tokens[list].count : 0;
        for (int k = 0; k < *all; k++) {
            int outcome = json_get(&d, (uint32_t)json_at(&d, (uint32_t)list, (uint32_t)k), "outcome");
            completed += outcome >= 0 && json_str_eq(&d, (uint32_t)outcome, "COMPLETED");
        }
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    return completed;
}

static void check_one(http_client *h, const chaos_task *task, int64_t deadline, task_figures *f)
{
    char status[32];
    await_end(h, task, deadline, status, sizeof status);
    if (!status[0]) { f->lost++; return; }
    if (!strcmp(status, "FAILED")) f->failed++;
    else if (strcmp(status, "COMPLETED")) { f->unfinished++; return; }
    else f->completed++;
    int all = 0, completed = completed_attempts(h, task, &all, deadline);
    if (completed > 1) f->completed_twice++;
    if (all > 1) f->retried++;
    if (task->runs > 1) f->ran_twice++;
}

bool chaos_tasks_check(chaos_tasks *t)
{
    task_figures f;
    memset(&f, 0, sizeof f);
    count_runs(t);
    http_client *h = http_client_new(t->url);
    http_client_set_timeout(h, CHAOS_TIMEOUT_MS);
    int64_t deadline = t->t_drain_ms + CHECK_GRACE_MS;
    uint64_t unknown = 0, runs = 0;
    for (long i = 0; i < t->n; i++) {
        const chaos_task *task = &t->tasks[i];
        runs += (uint64_t)task->runs;
        unknown += task->sent == TASK_UNKNOWN;
        if (task->sent != TASK_ACKED) continue;
        f.acked++;
        check_one(h, task, deadline, &f);
    }
    http_client_free(h);
    printf("  tasks:    %" PRIu64 " sent and acknowledged (%" PRIu64 " requests, %" PRIu64 " failed or unanswered), "
           "%" PRIu64 " unknown at the end\n", f.acked, (uint64_t)t->requests, (uint64_t)t->failed_requests, unknown);
    printf("            %" PRIu64 " COMPLETED, %" PRIu64 " runs of the command, %" PRIu64
           " retried (an attempt lost with a claim's answer)\n", f.completed, runs, f.retried);
    printf("  tasks lost (acknowledged, unknown):     %" PRIu64 "\n", f.lost);
    printf("  tasks unfinished:                       %" PRIu64 "\n", f.unfinished);
    printf("  tasks FAILED:                           %" PRIu64 "\n", f.failed);
    printf("  tasks COMPLETED twice:                  %" PRIu64 "\n", f.completed_twice);
    printf("  tasks whose command ran twice:          %" PRIu64 "\n", f.ran_twice);
    return f.acked > 0 && f.lost == 0 && f.unfinished == 0 && f.failed == 0 && f.completed_twice == 0 &&
           f.ran_twice == 0;
}

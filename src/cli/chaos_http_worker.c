/* chaos_http_worker: a task worker that speaks docs/tasks.md's protocol
 * itself, beside the `silt worker` processes (see chaos.h).
 *
 * It registers, claims without starting ("start": false), starts each task
 * it claimed with its claimId, "runs" it (a line in the runs file, once the
 * start was answered 2xx: a start whose answer was lost may have committed,
 * and then recovery fails that attempt WORKER_CRASHED and the policy
 * retries it, so the task is never run by a start nobody heard of), and
 * keeps the end until the server has answered for it through
 * POST /workers/:id/finish, naming every end it holds in a heartbeat every
 * second meanwhile. An end the heartbeat calls lost (recovery took the task
 * back) is dropped unreported, as silt worker does. A claim whose answer is
 * lost with a killed server leaves CLAIMED tasks nobody holds: recovery
 * gives them back after claimed_stale_after_ms (chaos.sh sets 10 s). */
#include "cli/chaos.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HW_SLOTS        4       /* tasks claimed at a time */
#define HW_WAIT_MS      500     /* a claim's long poll */
#define HW_HEARTBEAT_MS 1000    /* chaos.sh's runner heartbeat interval */
#define HW_MAX_QUEUES   4

typedef struct hw_end {
    char id[IDS_UUID_TEXT], claim[IDS_UUID_TEXT];
} hw_end;

struct chaos_http_worker {
    const char     *runs;
    const char     *queues[HW_MAX_QUEUES];
    int             nqueues;
    int64_t         give_up_ms;
    char            id[64];
    http_client    *http;
    hw_end          held[HW_SLOTS];   /* ends not yet answered for */
    int             nheld;
    int64_t         next_heartbeat;
    atomic_bool     stop;
    pthread_t       th;
    uint64_t        claims, claims_failed, claimed, started, starts_failed, finishes, finishes_failed, lost;
};

/* ---- calls ---- */

/* A reply: the doc points into the response's body, so they live together. */
typedef struct hw_reply {
    http_response r;
    json_doc      d;
} hw_reply;

static void reply_init(hw_reply *y)
{
    http_response_init(&y->r);
    json_doc_init(&y->d);
}

static void reply_fini(hw_reply *y)
{
    json_doc_fini(&y->d);
    http_response_fini(&y->r);
}

static int post(chaos_http_worker *w, const char *path, const buf *body, hw_reply *y)
{
    return chaos_call(w->http, "POST", path, body, &y->r, &y->d);
}

static void put_queues(const chaos_http_worker *w, buf *b)
{
    buf_puts(b, "\"queues\":[");
    for (int k = 0; k < w->nqueues; k++) buf_printf(b, "%s\"%s\"", k ? "," : "", w->queues[k]);
    buf_putc(b, ']');
}

static bool register_worker(chaos_http_worker *w)
{
    buf b;
    buf_init(&b);
    buf_printf(&b, "{\"workerId\":\"%s\",\"hostname\":\"chaos\",\"pid\":%d,\"concurrency\":%d,", w->id, (int)getpid(),
               HW_SLOTS);
    put_queues(w, &b);
    buf_putc(&b, '}');
    hw_reply y;
    reply_init(&y);
    int rc = -1;
    while (!w->stop && !chaos_past(w->give_up_ms) && (rc = post(w, "/api/v1/workers", &b, &y)) < 0)
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    reply_fini(&y);
    buf_fini(&b);
    return rc == 0;
}

static bool start_task(chaos_http_worker *w, const hw_end *e)
{
    char path[96];
    snprintf(path, sizeof path, "/api/v1/tasks/%s/start", e->id);
    buf b;
    buf_init(&b);
    buf_printf(&b, "{\"claimId\":\"%s\"}", e->claim);
    hw_reply y;
    reply_init(&y);
    int rc = post(w, path, &b, &y);
    reply_fini(&y);
    buf_fini(&b);
    return rc == 0;
}

/* Starts and runs one claimed task; its end is held until answered for. */
static void run_task(chaos_http_worker *w, const json_doc *d, int task)
{
    hw_end e;
    chaos_str(d, task, "id", e.id, sizeof e.id);
    chaos_str(d, task, "claimId", e.claim, sizeof e.claim);
    int at = json_get(d, (uint32_t)task, "attempt");
    int64_t attempt = 0;
    if (at < 0 || json_int64(d, (uint32_t)at, &attempt) < 0) attempt = 0;
    w->claimed++;
    if (!start_task(w, &e)) { w->starts_failed++; return; }
    w->started++;
    if (chaos_runs_append(w->runs, e.id, (long)attempt) < 0) abort();   /* the check would count it lost */
    w->held[w->nheld++] = e;
}

static void claim(chaos_http_worker *w)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/workers/%s/claim", w->id);
    buf b;
    buf_init(&b);
    buf_printf(&b, "{\"max\":%d,\"waitMs\":%d,\"start\":false,", HW_SLOTS - w->nheld, HW_WAIT_MS);
    put_queues(w, &b);
    buf_putc(&b, '}');
    hw_reply y;
    reply_init(&y);
    w->claims++;
    if (post(w, path, &b, &y) < 0) {
        w->claims_failed++;
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    } else {
        const json_doc *d = &y.d;
        int list = d->ntokens ? json_get(d, 0, "tasks") : -1;
        for (uint32_t k = 0; list >= 0 && k < d->tokens[list].count && w->nheld < HW_SLOTS; k++)
            run_task(w, d, json_at(d, (uint32_t)list, k));
    }
    reply_fini(&y);
    buf_fini(&b);
}

static void drop_held(chaos_http_worker *w, const char *id)
{
    for (int k = 0; k < w->nheld; k++)
        if (!strcmp(w->held[k].id, id)) { w->held[k] = w->held[--w->nheld]; return; }
}

static void put_held(const chaos_http_worker *w, buf *b, bool result)
{
    buf_puts(b, "{\"tasks\":[");
    for (int k = 0; k < w->nheld; k++)
        buf_printf(b, "%s{\"id\":\"%s\",\"claimId\":\"%s\"%s}", k ? "," : "", w->held[k].id, w->held[k].claim,
                   result ? ",\"result\":{\"by\":\"chaos-http-worker\"}" : "");
    buf_puts(b, "]}");
}

/* Posts every held task (with a result for ends) to /workers/:id/<verb>:
 * the index of the reply's "tasks" list in y, or -1 when it failed. */
static int post_held(chaos_http_worker *w, const char *verb, bool result, hw_reply *y)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/workers/%s/%s", w->id, verb);
    buf b;
    buf_init(&b);
    put_held(w, &b, result);
    int list = post(w, path, &b, y) == 0 && y->d.ntokens ? json_get(&y->d, 0, "tasks") : -1;
    buf_fini(&b);
    return list;
}

/* Every answered end (a status, or "not the current claim") is done with. */
static void finish(chaos_http_worker *w)
{
    hw_reply y;
    reply_init(&y);
    w->finishes++;
    const json_doc *d = &y.d;
    int list = post_held(w, "finish", true, &y);
    if (list < 0) w->finishes_failed++;
    for (uint32_t k = 0; list >= 0 && k < d->tokens[list].count; k++) {
        char id[IDS_UUID_TEXT];
        chaos_str(d, json_at(d, (uint32_t)list, k), "id", id, sizeof id);
        drop_held(w, id);
    }
    reply_fini(&y);
}

/* A task the server says is lost (its claim was retired) is dropped. */
static void heartbeat(chaos_http_worker *w)
{
    hw_reply y;
    reply_init(&y);
    const json_doc *d = &y.d;
    int list = post_held(w, "heartbeat", false, &y);
    for (uint32_t k = 0; list >= 0 && k < d->tokens[list].count; k++) {
        int it = json_at(d, (uint32_t)list, k), st = json_get(d, (uint32_t)it, "state");
        char id[IDS_UUID_TEXT];
        chaos_str(d, it, "id", id, sizeof id);
        if (st >= 0 && json_str_eq(d, (uint32_t)st, "lost")) { w->lost++; drop_held(w, id); }
    }
    reply_fini(&y);
}

/* ---- the loop ---- */

static void *worker_main(void *arg)
{
    chaos_http_worker *w = arg;
    if (!register_worker(w)) return NULL;
    while (!chaos_past(w->give_up_ms) && (!w->stop || w->nheld > 0)) {
        if (!w->stop && w->nheld < HW_SLOTS) claim(w);
        if (w->nheld > 0) finish(w);
        if (clock_mono_ms() >= w->next_heartbeat) {
            heartbeat(w);
            w->next_heartbeat = clock_mono_ms() + HW_HEARTBEAT_MS;
        }
        if (w->nheld > 0) chaos_sleep_ms(CHAOS_BACKOFF_MS);   /* the server did not take them: it is down */
    }
    return NULL;
}

chaos_http_worker *chaos_http_worker_start(const char *url, const char *const *queues, int nqueues,
                                           const char *runs, int64_t t_give_up_ms)
{
    chaos_http_worker *w = xcalloc(1, sizeof *w);
    w->runs = runs;
    w->nqueues = nqueues < HW_MAX_QUEUES ? nqueues : HW_MAX_QUEUES;
    for (int k = 0; k < w->nqueues; k++) w->queues[k] = queues[k];
    w->give_up_ms = t_give_up_ms;
    uint8_t raw[16];
    char id[IDS_UUID_TEXT];
    ids_uuid7(raw);
    ids_uuid_format(raw, id);
    snprintf(w->id, sizeof w->id, "chaos-http-%s", id + 24);
    w->http = chaos_client(url);
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) abort();
    return w;
}

void chaos_http_worker_stop(chaos_http_worker *w)
{
    if (!w) return;
    w->stop = true;
    pthread_join(w->th, NULL);
    printf("  HTTP worker %s: %" PRIu64 " claims (%" PRIu64 " failed), %" PRIu64 " tasks claimed, %" PRIu64
           " started (%" PRIu64 " starts failed), %" PRIu64 " finish calls (%" PRIu64 " failed), %" PRIu64
           " ends dropped as lost, %d held at the end\n", w->id, w->claims, w->claims_failed, w->claimed, w->started,
           w->starts_failed, w->finishes, w->finishes_failed, w->lost, w->nheld);
    http_client_free(w->http);
    free(w);
}

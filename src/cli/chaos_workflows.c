/* chaos_workflows: workflows started through the kills (see chaos.h).
 *
 * Workflow i is a diamond named "<queue>-w<i>": a, then b (argsFrom a) and
 * c, then d waiting for both, d its output; every node retries
 * WORKER_CRASHED (an attempt lost with a claim's or a start's answer) up to
 * 5 times. The nodes are run by the `silt worker` processes and the HTTP
 * worker. A start has no idempotency key, so a start whose answer was lost
 * is looked up by its name before it is sent again: a workflow is started
 * again only when the server, answering, does not know it.
 *
 * The checks, once every workflow has ended: every workflow the server
 * acknowledged (or that a lookup found) exists, ended COMPLETED with every
 * node COMPLETED; each node's task completed once, and its command ran
 * once (advancement happens in the transaction that ends a node's task, so
 * a crash cannot advance a node twice); and the queue holds no task beyond
 * the nodes' own (no node sent twice). */
#include "cli/chaos.h"
#include "base/clock.h"
#include "base/xalloc.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WF_NODES     4
#define WF_MAX_FOUND 4    /* workflows of one name looked at */

enum { WF_UNSENT, WF_UNKNOWN, WF_ACKED };

typedef struct chaos_wf {
    uint8_t        sent;                     /* WF_UNSENT, WF_UNKNOWN or WF_ACKED */
    int            nfound;                   /* workflows of its name, at the check */
    char           status[WF_MAX_FOUND][16]; /* theirs, once ended */
    int            nodes_done[WF_MAX_FOUND]; /* their nodes COMPLETED */
    chaos_task_end ends[WF_MAX_FOUND][WF_NODES];
    int            nends[WF_MAX_FOUND];
} chaos_wf;

struct chaos_workflows {
    const char      *url, *queue;
    long             n;
    chaos_wf        *wfs;
    chaos_spread     starter;
    uint64_t         requests, failed_requests, adopted;
    long             queue_tasks;   /* tasks of the queue, at the check; -1 unread */
    long             foreign_tasks; /* of them, no node's */
};

chaos_workflows *chaos_workflows_new(const char *url, const char *queue, long n)
{
    chaos_workflows *w = xcalloc(1, sizeof *w);
    w->url = url;
    w->queue = queue;
    w->n = n;
    w->wfs = xcalloc((size_t)n, sizeof *w->wfs);
    return w;
}

void chaos_workflows_free(chaos_workflows *w)
{
    if (!w) return;
    free(w->wfs);
    free(w);
}

/* ---- starting ---- */

static void definition(const chaos_workflows *w, long i, buf *b)
{
    static const char retry[] = "\"retry\":{\"maxRetries\":5,\"retryOn\":[\"WORKER_CRASHED\"]}";
    buf_reset(b);
    buf_printf(b, "{\"name\":\"%s-w%ld\",\"output\":\"d\",\"nodes\":["
               "{\"id\":\"a\",\"task\":\"chaos-a\",\"queue\":\"%s\",\"args\":{\"w\":%ld},%s},"
               "{\"id\":\"b\",\"task\":\"chaos-b\",\"queue\":\"%s\",\"waitsFor\":[\"a\"],\"argsFrom\":{\"x\":\"a\"},%s},"
               "{\"id\":\"c\",\"task\":\"chaos-c\",\"queue\":\"%s\",\"waitsFor\":[\"a\"],%s},"
               "{\"id\":\"d\",\"task\":\"chaos-d\",\"queue\":\"%s\",\"waitsFor\":[\"b\",\"c\"],%s}]}",
               w->queue, i, w->queue, i, retry, w->queue, retry, w->queue, retry, w->queue, retry);
}

/* Ids of the workflows named name (up to cap); -1 when not answered. */
static int find_by_name(http_client *h, const char *queue, long i, char ids[][IDS_UUID_TEXT], int cap)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/workflows?name=%s-w%ld&limit=%d", queue, i, cap);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    int n = -1;
    if (chaos_call(h, "GET", path, NULL, &r, &d) == 0 && d.ntokens) {
        int list = json_get(&d, 0, "workflows");
        n = 0;
        for (uint32_t k = 0; list >= 0 && k < d.tokens[list].count && n < cap; k++)
            chaos_str(&d, json_at(&d, (uint32_t)list, k), "id", ids[n++], IDS_UUID_TEXT);
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    return n;
}

/* Sends workflow i until the server has it: a 201, or, after a start whose
 * answer was lost, a lookup that finds it. */
static void start_until_known(chaos_workflows *w, http_client *h, long i, buf *body)
{
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    definition(w, i, body);
    while (!chaos_past(w->starter.t_drain_ms) && w->wfs[i].sent != WF_ACKED) {
        char ids[1][IDS_UUID_TEXT];
        int found = w->wfs[i].sent == WF_UNKNOWN ? find_by_name(h, w->queue, i, ids, 1) : 0;
        if (found > 0) { w->wfs[i].sent = WF_ACKED; w->adopted++; break; }
        if (found == 0) {
            w->wfs[i].sent = WF_UNKNOWN;
            w->requests++;
            if (chaos_call(h, "POST", "/api/v1/workflows", body, &r, &d) == 0) { w->wfs[i].sent = WF_ACKED; break; }
            w->failed_requests++;
        }
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    }
    json_doc_fini(&d);
    http_response_fini(&r);
}

/* Spread over the workload, like the task sender. */
static void *starter_main(void *arg)
{
    chaos_workflows *w = arg;
    http_client *h = chaos_client(w->url);
    buf body;
    buf_init(&body);
    for (long i = 0; i < w->n && chaos_spread_wait(&w->starter, i, w->n); i++)
        start_until_known(w, h, i, &body);
    buf_fini(&body);
    http_client_free(h);
    return NULL;
}

void chaos_workflows_start(chaos_workflows *w, int64_t t_end_ms, int64_t t_drain_ms)
{
    chaos_spread_start(&w->starter, starter_main, w, t_end_ms, t_drain_ms);
}

void chaos_workflows_join(chaos_workflows *w)
{
    chaos_spread_join(&w->starter);
}

/* ---- checking ---- */

/* Waits for workflow id to end; its status and its nodes' tasks into wf's
 * slot k. */
static void await_workflow(http_client *h, const char *id, int64_t deadline, chaos_wf *wf, int k)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/workflows/%s?wait=2000", id);
    http_response r;
    json_doc d;
    http_response_init(&r);
    json_doc_init(&d);
    snprintf(wf->status[k], sizeof wf->status[k], "?");
    while (!chaos_past(deadline)) {
        if (chaos_call(h, "GET", path, NULL, &r, &d) < 0) { chaos_sleep_ms(CHAOS_BACKOFF_MS); continue; }
        chaos_str(&d, 0, "status", wf->status[k], sizeof wf->status[k]);
        if (strcmp(wf->status[k], "RUNNING") && strcmp(wf->status[k], "PAUSED") && strcmp(wf->status[k], "PENDING"))
            break;
    }
    int nodes = d.ntokens ? json_get(&d, 0, "nodes") : -1;
    for (uint32_t x = 0; nodes >= 0 && x < d.tokens[nodes].count && wf->nends[k] < WF_NODES; x++) {
        int node = json_at(&d, (uint32_t)nodes, x), st = json_get(&d, (uint32_t)node, "status");
        wf->nodes_done[k] += st >= 0 && json_str_eq(&d, (uint32_t)st, "COMPLETED");
        chaos_str(&d, node, "taskId", wf->ends[k][wf->nends[k]++].id, IDS_UUID_TEXT);
    }
    json_doc_fini(&d);
    http_response_fini(&r);
}

static void await_one(chaos_workflows *w, http_client *h, long i, int64_t deadline)
{
    chaos_wf *wf = &w->wfs[i];
    char ids[WF_MAX_FOUND][IDS_UUID_TEXT];
    while ((wf->nfound = find_by_name(h, w->queue, i, ids, WF_MAX_FOUND)) < 0 && !chaos_past(deadline))
        chaos_sleep_ms(CHAOS_BACKOFF_MS);
    for (int k = 0; k < wf->nfound; k++) {
        await_workflow(h, ids[k], deadline, wf, k);
        for (int x = 0; x < wf->nends[k]; x++)
            if (wf->ends[k][x].id[0]) chaos_task_await(h, &wf->ends[k][x], deadline);
    }
}

static int by_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Tasks of the queue that are no node's task: a node sent twice. */
static void count_queue(chaos_workflows *w, http_client *h, int64_t deadline)
{
    char (*ids)[IDS_UUID_TEXT] = NULL;
    long n = 0, nodes = 0;
    w->queue_tasks = -1;
    if (chaos_task_ids(h, w->queue, deadline, &ids, &n) < 0) { free(ids); return; }
    for (long i = 0; i < w->n; i++)
        for (int k = 0; k < w->wfs[i].nfound; k++) nodes += w->wfs[i].nends[k];
    char (*known)[IDS_UUID_TEXT] = xcalloc((size_t)(nodes ? nodes : 1), sizeof *known);
    long m = 0;
    for (long i = 0; i < w->n; i++)
        for (int k = 0; k < w->wfs[i].nfound; k++)
            for (int x = 0; x < w->wfs[i].nends[k]; x++) memcpy(known[m++], w->wfs[i].ends[k][x].id, IDS_UUID_TEXT);
    qsort(known, (size_t)m, sizeof *known, by_id);
    w->queue_tasks = n;
    w->foreign_tasks = 0;
    for (long t = 0; t < n; t++) w->foreign_tasks += !bsearch(ids[t], known, (size_t)m, sizeof *known, by_id);
    free(known);
    free(ids);
}

void chaos_workflows_await(chaos_workflows *w)
{
    http_client *h = chaos_client(w->url);
    int64_t deadline = w->starter.t_drain_ms + CHAOS_GRACE_MS;
    for (long i = 0; i < w->n; i++)
        if (w->wfs[i].sent != WF_UNSENT) await_one(w, h, i, deadline);
    count_queue(w, h, deadline);
    http_client_free(h);
}

typedef struct wf_figures {
    uint64_t acked, unknown, found, twice, lost, not_completed, nodes_not_completed;
} wf_figures;

static void tally(const chaos_workflows *w, const chaos_runs *runs, wf_figures *f, chaos_task_figures *tf)
{
    for (long i = 0; i < w->n; i++) {
        const chaos_wf *wf = &w->wfs[i];
        if (wf->sent == WF_UNSENT) continue;
        f->acked += wf->sent == WF_ACKED;
        f->unknown += wf->sent == WF_UNKNOWN;
        f->found += (uint64_t)(wf->nfound > 0 ? wf->nfound : 0);
        f->twice += wf->nfound > 1;
        f->lost += wf->sent == WF_ACKED && wf->nfound <= 0;
        for (int k = 0; k < wf->nfound; k++) {
            f->not_completed += strcmp(wf->status[k], "COMPLETED") != 0;
            f->nodes_not_completed += (uint64_t)(WF_NODES - wf->nodes_done[k]);
            for (int x = 0; x < wf->nends[k]; x++)
                chaos_task_tally(&wf->ends[k][x], chaos_runs_of(runs, wf->ends[k][x].id), tf);
        }
    }
}

bool chaos_workflows_report(const chaos_workflows *w, const chaos_runs *runs)
{
    wf_figures f;
    chaos_task_figures tf;
    memset(&f, 0, sizeof f);
    memset(&tf, 0, sizeof tf);
    tally(w, runs, &f, &tf);
    printf("  workflows: %" PRIu64 " started and acknowledged (%" PRIu64 " requests, %" PRIu64 " failed or unanswered, %"
           PRIu64 " found by name after a lost answer), %" PRIu64 " unknown at the end; %" PRIu64
           " found, %" PRIu64 " names started twice (a start still in flight when looked up)\n",
           f.acked, w->requests, w->failed_requests, w->adopted, f.unknown, f.found, f.twice);
    printf("  workflows lost (acknowledged, unknown): %" PRIu64 "\n", f.lost);
    printf("  workflows not COMPLETED:                %" PRIu64 "\n", f.not_completed);
    printf("  workflow nodes not COMPLETED:           %" PRIu64 "\n", f.nodes_not_completed);
    printf("  workflow queue tasks that are no node's: %ld (of %ld)\n", w->foreign_tasks, w->queue_tasks);
    chaos_task_figures_print("nodes", &tf);
    return f.acked > 0 && f.lost == 0 && f.not_completed == 0 && f.nodes_not_completed == 0 && w->queue_tasks >= 0 &&
           w->foreign_tasks == 0 && chaos_task_figures_ok(&tf);
}

/* worker: what the two halves of `silt worker` share (the behaviour is told
 * at the top of worker.c). worker.c runs the loop: signals, the commands'
 * pipes, reaping, timeouts and the grace; worker_calls.c speaks the worker
 * protocol to the server: register, claim, start, heartbeat, release, and
 * the report of each command's end. One thread; the HTTP client blocks. */
#ifndef SILT_CLI_WORKER_H
#define SILT_CLI_WORKER_H
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include "cli/cli_common.h"
#include "cli/worker_child.h"

#define WK_CLAIM_WAIT_MS    2000    /* a claim's long poll while nothing runs */
#define WK_BUSY_CLAIM_MS    500     /* claims without waiting while busy, at most this often */
#define WK_IDLE_CLAIM_MS    50      /* between empty long polls (a server that answers at once) */
#define WK_RETRY_MS         1000    /* after a failed call to the server */
#define WK_CALL_SLACK_MS    30000   /* the client's timeout beyond a call's own wait */
#define WK_KILL_AFTER_MS    1000    /* SIGTERM, then SIGKILL this much later */
#define WK_TICK_MS          50      /* poll's timeout while commands run */
#define WK_MAX_CONCURRENCY  1000    /* tasks one claim may return */

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

/* Stop signals received (worker.c's handler counts them). */
extern volatile sig_atomic_t wk_signals;
/* The process group of each slot's command (0: none), for the handler. */
extern pid_t *wk_pids;

/* Registers; sets w->id and w->hb_interval_ms. 0, or -1 (logged). */
int  wk_register(worker *w);
/* Claims for the free slots and starts what comes (once a stop signal came,
 * hands it back instead); sets w->next_claim_ms. */
void wk_claim(worker *w);
/* Names every held task; stops the cancelled, kills the lost. Sets
 * w->next_hb_ms. */
void wk_heartbeat(worker *w);
/* Reports how t's command ended (nothing for a lost task), logs it. */
void wk_task_finish(worker *w, wk_task *t);
void wk_task_free(wk_task *t);

#endif

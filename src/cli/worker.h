/* worker: what the parts of `silt worker` share (the behaviour is told at
 * the top of worker.c). worker.c runs the loop: signals, the commands'
 * pipes, reaping, timeouts and the grace; worker_calls.c speaks the worker
 * protocol to the server: register, claim (and start), heartbeat;
 * worker_reports.c turns each command's end into a report and delivers it,
 * again and again until the server has answered it; worker_guard.c kills
 * the commands if the worker dies. One thread; the HTTP client blocks, but
 * a claim's long poll watches the commands and the signals (wk_watch) and
 * gives the claim up when one ends or a signal comes. */
#ifndef SILT_CLI_WORKER_H
#define SILT_CLI_WORKER_H
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include "cli/cli_common.h"
#include "cli/worker_child.h"

#define WK_CLAIM_WAIT_MS    2000    /* a claim's long poll, at most */
#define WK_IDLE_CLAIM_MS    50      /* after an empty claim the server answered at once */
#define WK_CLAIM_ANSWER_MS  25      /* a claim not answered by then is parked (worker_calls.c) */
#define WK_RETRY_MS         1000    /* after a claim that failed */
#define WK_END_RETRY_MS     50      /* an undelivered end is sent again after this, */
#define WK_END_RETRY_MAX_MS 1000    /* doubling up to this */
#define WK_END_LINGER_MS    2000    /* stopping: how long ends of killed commands may take to deliver */
#define WK_CALL_SLACK_MS    30000   /* the client's timeout beyond a call's own wait */
#define WK_KILL_AFTER_MS    1000    /* SIGTERM, then SIGKILL this much later */
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

/* A command's end, kept until the server has answered it: a status, or
 * "not the current claim". */
typedef struct wk_report {
    char     id[48], claim[48];
    char    *name;
    buf      item;         /* {"id","claimId","result"} or {..."errorCode","errorMessage"} */
    char    *what;         /* for the log: "completed" or "CODE: message" */
    int64_t  ran_ms;       /* how long the command ran */
    bool     in_flight;    /* carried by the finish call awaiting its answer */
    bool     alone;        /* a batch carrying it was refused: send it by itself */
    bool     refused;      /* already replaced by a failure the server can read */
} wk_report;

typedef struct worker {
    cli_list     queues;
    long         concurrency, timeout_s, grace_s, heartbeat_ms;
    const char  *worker_id;
    char *const *argv;
    char        *program;               /* the file argv[0] names (wk_child_find), NULL: looked up at each start */
    http_client *http;                  /* register, claims, heartbeats */
    http_client *ends_http;             /* finish calls, in flight beside a claim */
    bool         reports_in_flight;     /* a finish call awaits its answer */
    char        *id;
    int64_t      hb_interval_ms, next_hb_ms, next_claim_ms, grace_until_ms;
    int64_t      last_hb_ms;            /* when the last heartbeat was sent: progress waits a second from it */
    wk_task     *slots;
    int          running;
    bool         stopping;
    int64_t      give_up_ms;            /* stopping: undelivered ends are given up after this */
    wk_report   *reports;               /* ends not yet delivered, nreports of them */
    int          nreports, reports_cap;
    int64_t      next_report_ms, report_backoff_ms;
    int          wake_fd;               /* read end of the self-pipe (SIGCHLD, stop signals) */
    bool         child_ended;           /* SIGCHLD seen since the last reap */
    struct pollfd *watch;               /* a claim's watched descriptors, nwatch of them */
    int          nwatch;
    int64_t      claim_sent_ms;         /* when the claim in flight went out */
} worker;

/* Stop signals received (worker.c's handler counts them). */
extern volatile sig_atomic_t wk_signals;
/* The process group of each slot's command (0: none), for the handler. */
extern pid_t *wk_pids;

/* One call to the server: the HTTP status with the reply parsed into d (a
 * status of 400 or more logged with the server's error), or -1 on a
 * transport failure (logged). what names the call in the log. */
int  wk_call(worker *w, const char *what, const char *path, const buf *body, int wait_ms,
             http_response *r, json_doc *d);
/* The second half of a call made on client c: rc is http_request's (or
 * http_request_finish's). The same result as wk_call. */
int  wk_reply(http_client *c, const char *what, int rc, http_response *r, json_doc *d);
/* Registers; sets w->id and w->hb_interval_ms. 0, or -1 (logged). */
int  wk_register(worker *w);
/* Claims for the free slots, starting them in the same call, and runs what
 * comes. The claim long-polls up to wait_ms, watching the commands and the
 * signals (a stop gives it up at once, a command's end after
 * WK_CLAIM_ANSWER_MS); sets w->next_claim_ms. */
void wk_claim(worker *w, int64_t wait_ms);
/* Names every held task (running, or its end undelivered), with the
 * progress reports read since the last; stops the cancelled, kills the
 * lost. Sets w->next_hb_ms. */
void wk_heartbeat(worker *w);
/* Makes the pollfds of the wake pipe and the commands' pipes (caller frees). */
struct pollfd *wk_watch_fds(worker *w, int *n);
/* Drains the wake pipe: sets w->child_ended on SIGCHLD. */
void wk_drain_wake(worker *w);

/* worker_reports.c: the report of how t's command ended joins the undelivered
 * ends (nothing for a lost task); logs it. */
void wk_report_add(worker *w, wk_task *t);
/* Sends every undelivered end in one finish call on w->ends_http, without
 * waiting for the answer (the worker claims meanwhile)... */
void wk_reports_send(worker *w);
/* ...and reads it: drops the ends the server answered, keeps the others to
 * send again after a backoff. */
void wk_reports_heard(worker *w);
/* The end of task id, if undelivered. */
wk_report *wk_report_find(worker *w, const char *id);
/* Drops an end (the server said the task is lost to this worker). */
void wk_report_drop(worker *w, wk_report *e);
void wk_reports_free(worker *w);
void wk_task_free(wk_task *t);

#endif

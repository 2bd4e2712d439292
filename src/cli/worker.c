/* worker: `silt worker`, which runs a command once per task.
 *
 * It registers, claims as many tasks as it has free slots, starts each at
 * once and runs CMD ARGS for it (args on stdin, SILT_TASK_* in the
 * environment, the result on stdout), heartbeats while anything is held,
 * turns the command's end into a completion or an error code, kills a
 * command past its timeout or whose task was cancelled, and stops
 * gracefully on SIGTERM. The contract — every error code, the signals, the
 * exit statuses — is docs/tasks.md, "silt worker: a command per task".
 *
 * The process handling (vfork, pipes, process groups) is worker_child.c,
 * the guard that kills the commands if the worker dies worker_guard.c, the
 * calls to the server worker_calls.c, the ends and their delivery
 * worker_reports.c; this file is the loop. The HTTP client blocks, but a
 * claim's long poll watches the commands and the signals (wk_watch) and is
 * given up when a command ends or a stop comes. */
#include "cli/cli.h"
#include "cli/worker.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "cli/worker_guard.h"
#include "cli/worker_progress.h"
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"

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
    "CMD may report progress: one line per report to descriptor 3 (also in\n"
    "SILT_PROGRESS_FD), a number (`echo 40 >&3`) or an object with progress\n"
    "and/or progressInfo (JSON, at most 4096 bytes). The latest goes with the\n"
    "next heartbeat, brought forward to at most one a second; a bad line is\n"
    "logged and ignored. The pipe never blocks: a write that finds it full\n"
    "fails (EAGAIN) and is lost, the next report superseding it.\n"
    "\n"
    "On SIGTERM or SIGINT the worker claims nothing more, waits up to --grace\n"
    "seconds for running tasks, then kills them (WORKER_CRASHED), delivers the\n"
    "ends it holds and exits 0. A second signal kills every command and exits\n"
    "1 at once. An end the server could not take (it is restarting, say) is\n"
    "kept and sent again until it answers; commands die with the worker.\n"
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
    CLI_USAGE_SERVER;

/* Signals, counted for the loop; a second one kills every command's group
 * from the handler and exits. Each signal also writes a byte to the wake
 * pipe, so a poll or a claim's long poll returns at once: 'S' a stop, 'C' a
 * command that ended (SIGCHLD). */
volatile sig_atomic_t wk_signals;
pid_t *wk_pids;
static int wk_npids;
static int wake_write = -1;

static void wake(char why)
{
    int saved = errno;
    if (wake_write >= 0 && write(wake_write, &why, 1) < 0) { /* full: a wake-up is pending anyway */ }
    errno = saved;
}

static void on_stop_signal(int sig)
{
    (void)sig;
    wake('S');
    if (wk_signals++ == 0) return;
    for (int i = 0; i < wk_npids; i++)
        if (wk_pids[i] > 0) kill(-wk_pids[i], SIGKILL);
    _exit(CLI_EXIT_FAILED);
}

static void on_child(int sig)
{
    (void)sig;
    wake('C');
}

static int install_signals(worker *w)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) return -1;
    w->wake_fd = p[0];
    wake_write = p[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_child;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* ---- the loop ------------------------------------------------------------ */

/* Reads the commands' output, waiting up to timeout_ms for it, for a
 * command's end or for a signal. */
static void pump(worker *w, int64_t timeout_ms)
{
    int n = 0;
    struct pollfd *fds = wk_watch_fds(w, &n);
    poll(fds, (nfds_t)n, (int)(timeout_ms > 0 ? timeout_ms : 0));
    free(fds);
    wk_drain_wake(w);
    for (long i = 0; i < w->concurrency; i++)
        if (w->slots[i].used) wk_child_read(&w->slots[i].child);
}

/* A command that ended with a report not yet sent (often its last, "100"
 * before it exits) has it sent before its end, in a heartbeat of its own,
 * so the finished task shows where it ended. */
static void reap(worker *w)
{
    if (!w->child_ended) return;
    w->child_ended = false;
    bool *ended = xcalloc((size_t)w->concurrency, sizeof *ended), last_reports = false;
    for (long i = 0; i < w->concurrency; i++) {
        wk_task *t = &w->slots[i];
        ended[i] = t->used && wk_child_reap(&t->child);
        last_reports = last_reports || (ended[i] && t->child.progress_new && t->end == WK_RUN);
    }
    if (last_reports) wk_heartbeat(w);
    for (long i = 0; i < w->concurrency; i++) {
        wk_task *t = &w->slots[i];
        if (!ended[i]) continue;
        wk_pids[i] = 0;
        w->running--;
        wk_report_add(w, t);
        wk_task_free(t);
    }
    free(ended);
}

/* A report read brings the next heartbeat forward, to at most one a
 * WK_PROGRESS_EVERY_MS: a chatty command costs the server one heartbeat a
 * second, carrying the latest report of each task. */
static void progress_due(worker *w)
{
    bool any = false;
    for (long i = 0; i < w->concurrency && !any; i++) any = w->slots[i].used && w->slots[i].child.progress_new;
    if (!any) return;
    int64_t at = w->last_hb_ms + WK_PROGRESS_EVERY_MS, now = clock_mono_ms();
    if (at < now) at = now;
    if (at < w->next_hb_ms) w->next_hb_ms = at;
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
            w->give_up_ms = now + WK_END_LINGER_MS;
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
    w->grace_until_ms = w->give_up_ms = clock_mono_ms() + w->grace_s * 1000;
    log_info("worker: stopping: %d task(s) running, %ld s of grace", w->running, w->grace_s);
}

/* The next moment something is due: a heartbeat, an end to send again, a
 * timeout, a cancel's SIGKILL, the end of the grace. */
static int64_t next_duty(const worker *w)
{
    int64_t at = w->next_hb_ms;
    if (w->nreports && w->next_report_ms < at) at = w->next_report_ms;
    if (w->stopping && !w->running && w->nreports && w->give_up_ms < at) at = w->give_up_ms;
    for (long i = 0; i < w->concurrency; i++) {
        const wk_task *t = &w->slots[i];
        if (!t->used) continue;
        /* only commands still to be killed make a deadline: one already
         * killed wakes the loop with its SIGCHLD */
        if (t->end == WK_RUN && w->stopping && w->grace_until_ms < at) at = w->grace_until_ms;
        if (t->end == WK_RUN && t->timeout_ms > 0 && t->started_ms + t->timeout_ms < at) at = t->started_ms + t->timeout_ms;
        if (t->end == WK_CANCELLING && t->kill_at_ms < at) at = t->kill_at_ms;
    }
    return at;
}

static bool done(const worker *w)
{
    if (!w->stopping || w->running) return false;
    if (w->nreports && clock_mono_ms() < w->give_up_ms) return false;
    if (w->nreports)
        log_warn("worker: %d end(s) not delivered: the server's recovery fails those tasks WORKER_CRASHED", w->nreports);
    return true;
}

/* A free slot, and room in a heartbeat: a worker names every task it holds
 * (running, or its end undelivered) in one heartbeat of at most
 * WK_MAX_CONCURRENCY, so undelivered ends (a server that takes claims but
 * not ends) stop the claims before they would outgrow it. */
static bool may_claim_now(const worker *w)
{
    return !w->stopping && !wk_signals && w->running < w->concurrency &&
           w->running + w->nreports < WK_MAX_CONCURRENCY;
}

static int worker_loop(worker *w)
{
    w->next_hb_ms = clock_mono_ms();
    for (;;) {
        notice_signal(w);
        reap(w);
        enforce(w);
        /* the ends go out on their own connection while this one claims:
         * one round trip per turn instead of two */
        if (w->nreports && !w->reports_in_flight && clock_mono_ms() >= w->next_report_ms) wk_reports_send(w);
        progress_due(w);
        if (clock_mono_ms() >= w->next_hb_ms) wk_heartbeat(w);
        int64_t now = clock_mono_ms(), wait = next_duty(w) - now;
        bool may_claim = may_claim_now(w);
        bool claiming = may_claim && now >= w->next_claim_ms;
        if (claiming) wk_claim(w, w->reports_in_flight ? 0 : wait);
        wk_reports_heard(w);
        if (done(w)) break;
        if (claiming) continue;
        now = clock_mono_ms();
        wait = next_duty(w) - now;
        may_claim = may_claim_now(w);   /* ends heard */
        if (may_claim && w->next_claim_ms - now < wait) wait = w->next_claim_ms - now;
        pump(w, w->child_ended || (wk_signals && !w->stopping) ? 0 : wait);
    }
    log_info("worker: %s stopped", w->id);
    return CLI_EXIT_OK;
}

static int worker_run(worker *w)
{
    if (wk_guard_start() < 0) {   /* first: the guard holds nothing of ours but its pipe */
        cli_error("worker: cannot start the guard of its commands: %s", strerror(errno));
        return CLI_EXIT_FAILED;
    }
    w->http = cli_http_client(cli_server_url());
    w->ends_http = cli_http_client(cli_server_url());
    if (!w->http || !w->ends_http) {
        cli_error("invalid server url \"%s\" (expected http://host[:port])", cli_server_url());
        return CLI_EXIT_FAILED;
    }
    const char *level = getenv("LOG_LEVEL");
    if (level && *level && log_set_level(level) < 0) log_warn("worker: LOG_LEVEL \"%s\" unknown: info", level);
    int rc = CLI_EXIT_FAILED;
    if (install_signals(w) < 0) {
        cli_error("worker: cannot make its wake-up pipe: %s", strerror(errno));
    } else if (wk_register(w) == 0) {
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
    wk_reports_free(w);
    wk_npids = 0;
    free(wk_pids);
    wk_pids = NULL;
    free(w->slots);
    free(w->id);
    http_client_free(w->http);
    http_client_free(w->ends_http);
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
    if (w->timeout_s > 86400 || w->grace_s > 86400)
        return cli_usage_error(cmd, "--timeout and --grace are at most 86400 s");
    return 0;
}

/* The command's arguments are the child's argv: they live while the worker runs. */
static int worker_main(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    worker *w = opts;
    int rc = worker_check(cmd, w);
    if (rc) return rc;
    w->argv = a->pos;
    w->program = wk_child_find(w->argv[0]);
    rc = worker_run(w);
    free(w->program);
    return rc;
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
    int rc = cli_run(&cmd, argc, argv, worker_main, &w);
    cli_list_fini(&w.queues);
    return rc;
}

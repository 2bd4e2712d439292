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
 * The process handling (fork, pipes, process groups) is worker_child.c,
 * the calls to the server worker_calls.c; this file is the loop. The HTTP
 * client blocks, so the loop waits on the server only for the calls
 * themselves (a long poll only while nothing runs). */
#include "cli/cli.h"
#include "cli/worker.h"
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
    "On SIGTERM or SIGINT the worker claims nothing more, hands back claimed\n"
    "tasks it has not started, waits up to --grace seconds for running ones,\n"
    "then kills them (WORKER_CRASHED) and exits 0. A second signal kills\n"
    "every command and exits 1 at once.\n"
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
    "\n"
    "The server is SILT_URL (default " CLI_DEFAULT_URL ").\n";

/* Signals, counted for the loop; a second one kills every command's group
 * from the handler and exits. */
volatile sig_atomic_t wk_signals;
pid_t *wk_pids;
static int wk_npids;

static void on_stop_signal(int sig)
{
    (void)sig;
    if (wk_signals++ == 0) return;
    for (int i = 0; i < wk_npids; i++)
        if (wk_pids[i] > 0) kill(-wk_pids[i], SIGKILL);
    _exit(CLI_EXIT_FAILED);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ---- the loop ------------------------------------------------------------ */

/* Reads the commands' output for up to timeout_ms. */
static void pump(worker *w, int64_t timeout_ms)
{
    struct pollfd *fds = xcalloc((size_t)w->concurrency * 2 + 1, sizeof *fds);
    int n = 0;
    for (long i = 0; i < w->concurrency; i++)
        if (w->slots[i].used) n += wk_child_fds(&w->slots[i].child, fds + n);
    if (timeout_ms > 0 || n > 0) poll(fds, (nfds_t)n, (int)(timeout_ms > 0 ? timeout_ms : 0));
    for (long i = 0; i < w->concurrency; i++)
        if (w->slots[i].used) wk_child_read(&w->slots[i].child);
    free(fds);
}

static void reap(worker *w)
{
    for (long i = 0; i < w->concurrency; i++) {
        wk_task *t = &w->slots[i];
        if (!t->used || !wk_child_reap(&t->child)) continue;
        wk_pids[i] = 0;
        w->running--;
        wk_task_finish(w, t);
        wk_task_free(t);
        w->next_claim_ms = clock_mono_ms();   /* a slot is free: claim for it now */
    }
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
    w->grace_until_ms = clock_mono_ms() + w->grace_s * 1000;
    log_info("worker: stopping: %d task(s) running, %ld s of grace", w->running, w->grace_s);
}

/* How long the loop may wait on the commands before its next duty. */
static int64_t idle_for(const worker *w)
{
    int64_t now = clock_mono_ms(), wake = now + (w->running ? WK_TICK_MS : 250);
    if (!w->stopping && w->running < w->concurrency && w->next_claim_ms < wake) wake = w->next_claim_ms;
    if (w->next_hb_ms < wake) wake = w->next_hb_ms;
    return wake > now ? wake - now : 0;
}

static int worker_loop(worker *w)
{
    w->next_hb_ms = clock_mono_ms();
    while (!(w->stopping && w->running == 0)) {
        notice_signal(w);
        if (!w->stopping && w->running < w->concurrency && clock_mono_ms() >= w->next_claim_ms) wk_claim(w);
        notice_signal(w);
        pump(w, idle_for(w));
        reap(w);
        enforce(w);
        if (clock_mono_ms() >= w->next_hb_ms) wk_heartbeat(w);
    }
    log_info("worker: %s stopped", w->id);
    return CLI_EXIT_OK;
}

static int worker_run(worker *w)
{
    w->http = cli_http_client(cli_server_url());
    if (!w->http) {
        cli_error("invalid server url \"%s\" (expected http://host[:port])", cli_server_url());
        return CLI_EXIT_FAILED;
    }
    const char *level = getenv("LOG_LEVEL");
    if (level && *level && log_set_level(level) < 0) log_warn("worker: LOG_LEVEL \"%s\" unknown: info", level);
    install_signals();
    int rc = CLI_EXIT_FAILED;
    if (wk_register(w) == 0) {
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
    wk_npids = 0;
    free(wk_pids);
    wk_pids = NULL;
    free(w->slots);
    free(w->id);
    http_client_free(w->http);
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
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) {
        rc = worker_check(&cmd, &w);
        w.argv = a.pos;
        if (rc == 0) rc = worker_run(&w);
    }
    cli_list_fini(&w.queues);
    cli_args_fini(&a);
    return rc;
}

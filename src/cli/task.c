/* task: `silt task send|get|cancel|list` and `silt workers`, the task
 * engine's HTTP API from the command line (/api/v1/tasks, /api/v1/workers).
 * A send's options are checked here first (JSON args, exclusive options,
 * lists of numbers), so a typo is a usage error instead of a 400; the
 * server still checks every bound. Replies are found by member name. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const char task_usage[] =
    "usage: silt task <send | get | cancel | list | rerun | pause | resume | paused> [options]\n"
    "\n"
    "The task engine from the command line:\n"
    "\n"
    "  send <name> --queue Q [options]   send a task; prints its id\n"
    "  get <id> [--wait MS]              a task's status, result and error\n"
    "  cancel <id>                       cancel a task (a running one is told\n"
    "                                    on its worker's next heartbeat)\n"
    "  list [--queue Q] [--status S]     tasks, oldest first, a page at a time\n"
    "  rerun <id> | --queue Q ...        send finished tasks again, as new tasks\n"
    "  pause <queue>                     claim nothing from a queue (sends go on)\n"
    "  resume <queue>                    claim from it again\n"
    "  paused                            the paused queues\n"
    "\n"
    "\"silt task <verb> --help\" describes each. Tasks are run by \"silt worker\";\n"
    "\"silt workers\" lists the registered workers.\n"
    CLI_USAGE_SERVER;

static const char send_usage[] =
    "usage: silt task send <name> --queue Q [options]\n"
    "\n"
    "Sends one task and prints its id, followed by \"(existing task)\" when an\n"
    "earlier send with the same --idempotency-key or unique key made it\n"
    "(\"(existing task, changed)\" when --on-conflict replace or debounce changed it).\n"
    "\n"
    "options:\n"
    "  --queue Q                 the queue whose workers run it (required)\n"
    "  --args JSON               its arguments, any JSON value (default null)\n"
    "  --args-file F             the arguments read from file F (\"-\": stdin)\n"
    "  --priority N              1 (most urgent) to 100 (default: the queue's, else 100)\n"
    "  --delay-ms N              run no sooner than N ms from now\n"
    "  --run-at ISO              run no sooner than this time (2026-12-01T07:04:30Z)\n"
    "  --good-until ISO          expire it if it has not started by then\n"
    "  --timeout-ms N            fail an attempt that runs longer (TASK_TIMEOUT)\n"
    "  --max-retries N           retry a failed attempt up to N times (default 0)\n"
    "  --retry-delays MS,MS...   the delay before each retry (the last repeats)\n"
    "  --backoff-base-ms N       or exponential delays: N, 2N, 4N... ms\n"
    "  --backoff-cap-ms N        ...never more than N ms\n"
    "  --jitter F                vary each delay by up to ±F (0 to 1)\n"
    "  --retry-on CODE,...       retry only these error codes (default: any)\n"
    "  --idempotency-key K       a second send with K returns the first task\n"
    "  --unique-key K            one task of this name and key at a time: a send of\n"
    "                            a held key returns the task holding it\n"
    "  --unique-by-args          the same, the key being the name and the args\n"
    "  --unique-for-ms N         the key is held N ms from the send ...\n"
    "  --unique-while live       ... or while its task is live (the default)\n"
    "  --on-conflict WHAT        existing (default), replace (its args) or debounce\n"
    "                            (its start: this send's), while it has not started\n"
    "  --retention-class-key K   how long its record is kept: standard_30d, forever,\n"
    "                            or a class of the server's silt.conf (default: the\n"
    "                            queue's queue_retention mapping, else standard_30d)\n"
    "  --rate-key K              its key for the queue's rate_limit_per_key\n"
    "  --json                    print the server's reply as JSON\n"
    "  --help                    show this help\n";

static const char get_usage[] =
    "usage: silt task get <id> [--wait MS] [--json]\n"
    "\n"
    "Shows a task: status, attempt, retries, times, result and error.\n"
    "\n"
    "options:\n"
    "  --wait MS      wait up to MS ms (at most 60000) for it to end first\n"
    CLI_USAGE_JSON_HELP;

static const char cancel_usage[] =
    "usage: silt task cancel <id> [--json]\n"
    "\n"
    "Cancels a task. One that has not started ends CANCELLED at once; a\n"
    "running one is marked, and its worker stops it on its next heartbeat.\n"
    "Cancelling a task that already ended changes nothing and exits 1.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char list_usage[] =
    "usage: silt task list [--queue Q] [--status S] [--limit N] [--cursor C] [--json]\n"
    "\n"
    "Lists tasks, live and ended, oldest first, a page at a time. When the\n"
    "page is full its last line is the cursor of the next page.\n"
    "\n"
    "options:\n"
    "  --queue Q      only tasks of queue Q\n"
    "  --status S     only tasks in status S: PENDING, CLAIMED, RUNNING,\n"
    "                 COMPLETED, FAILED, CANCELLED or EXPIRED\n"
    "  --limit N      tasks per page, 1 to 1000 (default 100)\n"
    "  --cursor C     the page after C (the cursor a previous page printed)\n"
    CLI_USAGE_JSON_HELP;

static const char workers_usage[] =
    "usage: silt workers [--json]\n"
    "\n"
    "Lists the registered workers: their queues and concurrency, when they\n"
    "were last seen, and the tasks each holds claimed and running.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP
    CLI_USAGE_SERVER;

/* ---- send ------------------------------------------------------------- */

typedef struct send_opts {
    const char *queue, *args, *args_file, *run_at, *good_until, *delays, *jitter, *retry_on, *key, *class_key;
    const char *rate_key, *unique_key, *unique_while, *on_conflict;
    long priority, delay_ms, timeout_ms, max_retries, base_ms, cap_ms, unique_for_ms;   /* -1: not given */
    bool json, unique_by_args;
} send_opts;

/* The args as a checked JSON text appended to b. */
static int put_args(const cli_cmd *cmd, const send_opts *o, buf *b)
{
    buf text;
    buf_init(&text);
    buf_append(&text, "", 0);
    int rc = 0;
    if (o->args) buf_puts(&text, o->args);
    else if (o->args_file && cli_read_file(o->args_file, &text) < 0)
        rc = cli_usage_error(cmd, "cannot read --args-file %s", o->args_file);
    json_doc d;
    json_doc_init(&d);
    if (rc == 0 && (o->args || o->args_file)) {
        if (json_parse_shallow(&d, text.data, text.len, 16, 0) < 0)
            rc = cli_usage_error(cmd, "the args are not valid JSON: %s", d.error);
        else {
            size_t n;
            const char *span = json_span(&d, 0, &n);
            cli_put_key(b, "args");
            buf_append(b, span, n);
        }
    }
    json_doc_fini(&d);
    buf_fini(&text);
    return rc;
}

/* "1000,5000" as a JSON array of integers. */
static int put_delays(const cli_cmd *cmd, const char *list, buf *b)
{
    cli_put_key(b, "delaysMs");
    buf_putc(b, '[');
    for (const char *p = list; ; p++) {
        char *end;
        if (!isdigit((unsigned char)*p)) goto bad;
        long v = strtol(p, &end, 10);
        buf_printf(b, "%s%ld", p == list ? "" : ",", v);
        p = end;
        if (*p == '\0') break;
        if (*p != ',') goto bad;
    }
    buf_putc(b, ']');
    return 0;
bad:
    return cli_usage_error(cmd, "--retry-delays needs milliseconds separated by commas, got \"%s\"", list);
}

static int put_codes(const cli_cmd *cmd, const char *list, buf *b)
{
    cli_put_key(b, "retryOn");
    buf_putc(b, '[');
    for (const char *p = list; ; ) {
        size_t n = strcspn(p, ",");
        if (n == 0) return cli_usage_error(cmd, "--retry-on needs error codes separated by commas");
        if (p != list) buf_putc(b, ',');
        json_put_str(b, p, n);
        p += n;
        if (!*p++) break;
    }
    buf_putc(b, ']');
    return 0;
}

static int put_jitter(const cli_cmd *cmd, const char *text, buf *b)
{
    char *end;
    double j = strtod(text, &end);
    if (!isdigit((unsigned char)*text) || *end || !(j >= 0 && j <= 1))
        return cli_usage_error(cmd, "--jitter needs a number from 0 to 1, got \"%s\"", text);
    cli_put_key(b, "jitter");
    buf_puts(b, text);
    return 0;
}

static bool has_retry(const send_opts *o)
{
    return o->max_retries >= 0 || o->delays || o->base_ms >= 0 || o->cap_ms >= 0 || o->jitter || o->retry_on;
}

/* "retry": {...}, when any retry option was given. */
static int put_retry(const cli_cmd *cmd, const send_opts *o, buf *b)
{
    if (!has_retry(o)) return 0;
    if (o->delays && (o->base_ms >= 0 || o->cap_ms >= 0))
        return cli_usage_error(cmd, "--retry-delays and --backoff-base-ms cannot both be given");
    if (o->cap_ms >= 0 && o->base_ms < 0) return cli_usage_error(cmd, "--backoff-cap-ms needs --backoff-base-ms");
    buf m;
    buf_init(&m);
    cli_put_long_member(&m, "maxRetries", o->max_retries);
    int rc = o->delays ? put_delays(cmd, o->delays, &m) : 0;
    if (rc == 0 && o->base_ms >= 0) {
        cli_put_key(&m, "backoff");
        buf_printf(&m, "{\"baseMs\":%ld", o->base_ms);
        if (o->cap_ms >= 0) buf_printf(&m, ",\"capMs\":%ld", o->cap_ms);
        buf_putc(&m, '}');
    }
    if (rc == 0 && o->jitter) rc = put_jitter(cmd, o->jitter, &m);
    if (rc == 0 && o->retry_on) rc = put_codes(cmd, o->retry_on, &m);
    if (rc != 0 || m.len == 0) { buf_fini(&m); return rc; }
    cli_put_key(b, "retry");
    buf_putc(b, '{');
    buf_puts(b, m.data);
    buf_putc(b, '}');
    buf_fini(&m);
    return rc;
}

/* "unique": {...} when any --unique-* or --on-conflict is given; the
 * server checks the combination (docs/tasks.md, "Uniqueness"). */
static void put_unique(const send_opts *o, buf *b)
{
    if (!o->unique_key && !o->unique_by_args && o->unique_for_ms < 0 && !o->unique_while && !o->on_conflict) return;
    cli_put_key(b, "unique");
    buf_putc(b, '{');
    cli_put_str_member(b, "key", o->unique_key);
    if (o->unique_by_args) { cli_put_key(b, "byArgs"); buf_puts(b, "true"); }
    cli_put_long_member(b, "forMs", o->unique_for_ms);
    cli_put_str_member(b, "while", o->unique_while);
    cli_put_str_member(b, "onConflict", o->on_conflict);
    buf_putc(b, '}');
}

static int send_check(const cli_cmd *cmd, const send_opts *o)
{
    if (!o->queue || !*o->queue) return cli_usage_error(cmd, "--queue is required");
    if (o->args && o->args_file) return cli_usage_error(cmd, "--args and --args-file cannot both be given");
    if (o->delay_ms >= 0 && o->run_at) return cli_usage_error(cmd, "--delay-ms and --run-at cannot both be given");
    return 0;
}

/* The body of POST /api/v1/tasks. */
static int send_body(const cli_cmd *cmd, const char *name, const send_opts *o, buf *b)
{
    int rc = send_check(cmd, o);
    if (rc) return rc;
    buf_puts(b, "{\"name\":");
    json_put_cstr(b, name);
    cli_put_str_member(b, "queue", o->queue);
    rc = put_args(cmd, o, b);
    cli_put_long_member(b, "priority", o->priority);
    cli_put_long_member(b, "delayMs", o->delay_ms);
    cli_put_str_member(b, "runAt", o->run_at);
    cli_put_str_member(b, "goodUntil", o->good_until);
    cli_put_long_member(b, "timeoutMs", o->timeout_ms);
    cli_put_str_member(b, "idempotencyKey", o->key);
    cli_put_str_member(b, "retentionClassKey", o->class_key);
    cli_put_str_member(b, "rateKey", o->rate_key);
    put_unique(o, b);
    if (rc == 0) rc = put_retry(cmd, o, b);
    buf_putc(b, '}');
    return rc;
}

static void send_render(const json_doc *d)
{
    int created = json_get(d, 0, "created"), changed = json_get(d, 0, "changed");
    bool existing = created >= 0 && d->tokens[created].type == JSON_FALSE;
    bool was_changed = changed >= 0 && d->tokens[changed].type == JSON_TRUE;
    cli_print_member(d, "", "id", !existing ? "\n" : was_changed ? " (existing task, changed)\n" : " (existing task)\n");
}

static int send_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const send_opts *o = opts;
    buf body;
    buf_init(&body);
    int rc = send_body(cmd, a->pos[0], o, &body);
    if (rc == 0) rc = cli_call("POST", "/api/v1/tasks", &body, o->json, send_render);
    buf_fini(&body);
    return rc;
}

static int task_send(int argc, char **argv)
{
    send_opts o = { .priority = -1, .delay_ms = -1, .timeout_ms = -1, .max_retries = -1, .base_ms = -1, .cap_ms = -1,
                    .unique_for_ms = -1 };
    const cli_opt opts[] = {
        { "queue",           CLI_OPT_STR,  &o.queue },
        { "args",            CLI_OPT_STR,  &o.args },
        { "args-file",       CLI_OPT_STR,  &o.args_file },
        { "priority",        CLI_OPT_INT,  &o.priority },
        { "delay-ms",        CLI_OPT_INT,  &o.delay_ms },
        { "run-at",          CLI_OPT_STR,  &o.run_at },
        { "good-until",      CLI_OPT_STR,  &o.good_until },
        { "timeout-ms",      CLI_OPT_INT,  &o.timeout_ms },
        { "max-retries",     CLI_OPT_INT,  &o.max_retries },
        { "retry-delays",    CLI_OPT_STR,  &o.delays },
        { "backoff-base-ms", CLI_OPT_INT,  &o.base_ms },
        { "backoff-cap-ms",  CLI_OPT_INT,  &o.cap_ms },
        { "jitter",          CLI_OPT_STR,  &o.jitter },
        { "retry-on",        CLI_OPT_STR,  &o.retry_on },
        { "idempotency-key", CLI_OPT_STR,  &o.key },
        { "retention-class-key", CLI_OPT_STR, &o.class_key },
        { "rate-key",        CLI_OPT_STR,  &o.rate_key },
        { "unique-key",      CLI_OPT_STR,  &o.unique_key },
        { "unique-by-args",  CLI_OPT_FLAG, &o.unique_by_args },
        { "unique-for-ms",   CLI_OPT_INT,  &o.unique_for_ms },
        { "unique-while",    CLI_OPT_STR,  &o.unique_while },
        { "on-conflict",     CLI_OPT_STR,  &o.on_conflict },
        { "json",            CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "task send", send_usage, opts, sizeof opts / sizeof opts[0], 1, 1 };
    return cli_run(&cmd, argc, argv, send_run, &o);
}

/* ---- get -------------------------------------------------------------- */

static void get_render(const json_doc *d)
{
    static const char *const fields[] = {
        "id", "name", "queue", "status", "progress", "progressInfo", "progressAt", "attempt", "retryCount",
        "maxRetries", "priority", "args", "result", "errorCode", "errorMessage", "workerId", "sentAt", "runAt", "claimedAt", "startedAt", "finishedAt",
        "goodUntil", "timeoutMs", "cancelRequested", "idempotencyKey", "retentionClassKey", "rerunOf",
        "rateKey",
    };
    cli_print_named_fields(d, fields, sizeof fields / sizeof fields[0]);
}

static int task_get(int argc, char **argv)
{
    return cli_get_item_waiting("task get", get_usage, "/api/v1/tasks", argc, argv, get_render);
}

/* ---- cancel ----------------------------------------------------------- */

/* A task that had already ended is not cancelled: exit 1, saying how it ended. */
static int cancel_report(const char *id, bool json, const http_response *r)
{
    json_doc d;
    if (cli_read_reply(r, &d) < 0) return CLI_EXIT_FAILED;
    bool cancelled = cli_is_true(&d, 0, "cancelled"), requested = cli_is_true(&d, 0, "cancelRequested");
    char *status = cli_get_str(&d, 0, "status");
    if (json) cli_print_json(r->body.data, r->body.len);
    else if (cancelled) printf("cancelled %s\n", id);
    else if (requested) printf("cancel requested: %s is running; its worker stops it on its next heartbeat\n", id);
    if (!cancelled && !requested) cli_error("task %s already ended %s: nothing to cancel", id, status ? status : "?");
    free(status);
    json_doc_fini(&d);
    return cancelled || requested ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

static int task_cancel(int argc, char **argv)
{
    static const cli_item_verb verb = { "task cancel", cancel_usage, "POST", "/api/v1/tasks", "/cancel" };
    return cli_item_request(&verb, argc, argv, cancel_report);
}

/* ---- list ------------------------------------------------------------- */

static void list_render(const json_doc *d)
{
    static const char *const headers[] = { "ID", "NAME", "QUEUE", "STATUS", "PROGRESS", "ATTEMPT", "SENT_AT" };
    static const char *const fields[] = { "id", "name", "queue", "status", "progress", "attempt", "sentAt" };
    cli_print_rows(d, "tasks", 7, headers, fields, "(no tasks)");
}

static int list_run(const char *queue, const char *status, long limit, const char *cursor, bool json)
{
    buf st;
    buf_init(&st);
    for (const char *p = status; p && *p; p++) buf_putc(&st, (char)toupper((unsigned char)*p));
    const cli_param filters[] = { { "queue", queue }, { "status", status ? st.data : NULL } };
    int rc = cli_get_page("/api/v1/tasks", filters, 2, limit, cursor, json, list_render);
    buf_fini(&st);
    return rc;
}

static int task_list(int argc, char **argv)
{
    bool json = false;
    const char *queue = NULL, *status = NULL, *cursor = NULL;
    long limit = 0;
    const cli_opt opts[] = {
        { "queue",  CLI_OPT_STR,  &queue },
        { "status", CLI_OPT_STR,  &status },
        { "limit",  CLI_OPT_INT,  &limit },
        { "cursor", CLI_OPT_STR,  &cursor },
        { "json",   CLI_OPT_FLAG, &json },
    };
    const cli_cmd cmd = { "task list", list_usage, opts, sizeof opts / sizeof opts[0], 0, 0 };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0)
        rc = list_run(queue, status, limit, cursor, json);
    cli_args_fini(&a);
    return rc;
}

/* "silt task" alone: the usage, as a mistake. */
static int task_none(int argc, char **argv)
{
    return cli_no_verb("task", task_usage, "which verb? send, get, cancel, list, rerun, pause, resume or paused",
                       argc, argv);
}

int cli_task(int argc, char **argv)
{
    static const cli_verb verbs[] = {
        { "",       task_none },
        { "send",   task_send },
        { "get",    task_get },
        { "cancel", task_cancel },
        { "list",   task_list },
        { "pause",  cli_task_pause },
        { "resume", cli_task_resume },
        { "paused", cli_task_paused },
        { "rerun",  cli_task_rerun },
    };
    return cli_dispatch("task", task_usage, verbs, sizeof verbs / sizeof verbs[0], argc, argv);
}

/* ---- workers ---------------------------------------------------------- */

static void workers_render(const json_doc *d)
{
    static const char *const headers[] = {
        "WORKER_ID", "HOSTNAME", "PID", "QUEUES", "CONCURRENCY", "CLAIMED", "RUNNING", "LAST_SEEN_AT",
    };
    static const char *const fields[] = { "concurrency", "claimed", "running", "lastSeenAt" };
    int list = json_get(d, 0, "workers"), w;
    cli_table t;
    cli_table_init(&t, 8, headers);
    for (uint32_t i = 0; list >= 0 && (w = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        cli_table_add_field(&t, d, w, "workerId");
        cli_table_add_field(&t, d, w, "hostname");
        cli_table_add_field(&t, d, w, "pid");
        cli_table_add_joined(&t, d, json_get(d, (uint32_t)w, "queues"));
        for (int f = 0; f < 4; f++) cli_table_add_field(&t, d, w, fields[f]);
    }
    cli_table_print_or(&t, "(no workers)");
    cli_table_fini(&t);
}

int cli_workers(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "workers", workers_usage, "/api/v1/workers", workers_render);
}

/* task_control: `silt task pause|resume|paused|rerun`, an operator's hold
 * on the task engine: pausing a queue (POST /api/v1/task-queues/:queue/pause,
 * /resume; GET /api/v1/task-queues) and sending finished tasks again (POST
 * /api/v1/tasks/:id/rerun, POST /api/v1/tasks/rerun). The server checks
 * every bound; here only what would make the request ambiguous is a usage
 * error. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char pause_usage[] =
    "usage: silt task pause <queue> [--json]\n"
    "\n"
    "Pauses a task queue: sends are accepted, nothing is claimed until it is\n"
    "resumed. Tasks already claimed or running finish. The pause is kept in\n"
    "the database: every server honours it, and it outlives restarts.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char resume_usage[] =
    "usage: silt task resume <queue> [--json]\n"
    "\n"
    "Resumes a paused task queue: its waiting workers claim at once.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char paused_usage[] =
    "usage: silt task paused [--json]\n"
    "\n"
    "Lists the paused task queues and since when.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char rerun_usage[] =
    "usage: silt task rerun <id> [options]\n"
    "       silt task rerun --queue Q | --name N | --error-code C | --status S |\n"
    "                       --finished-after ISO | --finished-before ISO ... [options]\n"
    "\n"
    "Sends a finished task again, as a new task that names it (rerunOf): same\n"
    "name, queue, args, priority, retry policy, timeout and retention class\n"
    "unless an option below overrides it. FAILED, CANCELLED and EXPIRED tasks\n"
    "are rerun; COMPLETED ones with --include-completed. A task is rerun at\n"
    "most once: asking again prints the rerun it already has. To run it once\n"
    "more, rerun the rerun. A workflow node's task is rerun into its node, and\n"
    "its workflow goes on from there (printed: the workflow and its status).\n"
    "\n"
    "With filters instead of an id, reruns up to --limit matching tasks that\n"
    "have no rerun yet (workflow nodes' tasks are left out); running it again\n"
    "goes on with the next ones.\n"
    "\n"
    "filters:\n"
    "  --queue Q                 tasks of queue Q\n"
    "  --name N                  tasks named N\n"
    "  --error-code C            tasks that ended with error code C\n"
    "  --status S                FAILED, CANCELLED, EXPIRED or COMPLETED\n"
    "  --finished-after ISO      ended at or after this time\n"
    "  --finished-before ISO     ended before this time\n"
    "  --limit N                 at most N tasks, 1 to 1000 (default 100)\n"
    "  --dry-run                 only count what would be rerun\n"
    "options:\n"
    "  --include-completed       COMPLETED tasks too\n"
    "  --priority N              the reruns' priority, 1 to 100\n"
    "  --timeout-ms N            the reruns' timeout\n"
    "  --retention-class-key K   the reruns' retention class\n"
    "  --to-queue Q              (with an id) send the rerun to queue Q\n"
    "  --args JSON               (with an id) the rerun's arguments\n"
    CLI_USAGE_JSON_HELP;

/* ---- pause, resume, paused ---- */

static void pause_render(const json_doc *d)
{
    char *queue = cli_get_str(d, 0, "queue");
    bool paused = cli_is_true(d, 0, "paused"), changed = cli_is_true(d, 0, "changed");
    printf("%s %s%s\n", queue ? queue : "?", changed ? "" : "was already ", paused ? "paused" : "running");
    free(queue);
}

int cli_task_pause(int argc, char **argv)
{
    static const cli_item_verb verb = { "task pause", pause_usage, "POST", "/api/v1/task-queues", "/pause" };
    return cli_item_call(&verb, argc, argv, pause_render);
}

int cli_task_resume(int argc, char **argv)
{
    static const cli_item_verb verb = { "task resume", resume_usage, "POST", "/api/v1/task-queues", "/resume" };
    return cli_item_call(&verb, argc, argv, pause_render);
}

static void paused_render(const json_doc *d)
{
    static const char *const headers[] = { "QUEUE", "PAUSED_AT" };
    static const char *const fields[] = { "queue", "pausedAt" };
    cli_print_rows(d, "paused", 2, headers, fields, "(no paused queues)");
}

int cli_task_paused(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "task paused", paused_usage, "/api/v1/task-queues", paused_render);
}

/* ---- rerun ---- */

typedef struct rerun_opts {
    const char *queue, *name, *code, *status, *after, *before, *class_key, *to_queue, *args;
    long limit, priority, timeout_ms;   /* -1: not given */
    bool dry_run, completed, json;
} rerun_opts;

static void put_raw(buf *b, const char *key, const char *text)
{
    cli_put_key(b, key);
    buf_puts(b, text);
}

static bool has_filter(const rerun_opts *o)
{
    return o->queue || o->name || o->code || o->status || o->after || o->before;
}

/* The body of either request; a usage error when the options mix them. */
static int rerun_body(const cli_cmd *cmd, bool one, const rerun_opts *o, buf *b)
{
    if (one && (has_filter(o) || o->limit >= 0 || o->dry_run))
        return cli_usage_error(cmd, "filters, --limit and --dry-run choose tasks: give them instead of an id");
    if (!one && !has_filter(o)) return cli_usage_error(cmd, "name a task id, or tasks by a filter (--queue, ...)");
    if (!one && (o->to_queue || o->args)) return cli_usage_error(cmd, "--to-queue and --args go with an id");
    if (o->args) {
        json_doc d;
        json_doc_init(&d);
        int bad = json_parse_shallow(&d, o->args, strlen(o->args), 1u << 16, 0) < 0;
        json_doc_fini(&d);
        if (bad) return cli_usage_error(cmd, "--args is not valid JSON");
    }
    buf_putc(b, '{');
    cli_put_str_member(b, "queue", one ? o->to_queue : o->queue);
    cli_put_str_member(b, "name", o->name);
    cli_put_str_member(b, "errorCode", o->code);
    cli_put_str_member(b, "status", o->status);
    cli_put_str_member(b, "finishedAfter", o->after);
    cli_put_str_member(b, "finishedBefore", o->before);
    cli_put_str_member(b, "retentionClassKey", o->class_key);
    cli_put_long_member(b, "limit", o->limit);
    cli_put_long_member(b, "priority", o->priority);
    cli_put_long_member(b, "timeoutMs", o->timeout_ms);
    if (o->args) put_raw(b, "args", o->args);
    if (o->dry_run) put_raw(b, "dryRun", "true");
    if (o->completed) put_raw(b, "includeCompleted", "true");
    buf_putc(b, '}');
    return 0;
}

static void one_render(const json_doc *d)
{
    char *id = cli_get_str(d, 0, "id"), *of = cli_get_str(d, 0, "rerunOf");
    if (cli_is_true(d, 0, "created")) printf("%s (rerun of %s)\n", id ? id : "?", of ? of : "?");
    else printf("%s (rerun of %s, made before: nothing sent)\n", id ? id : "?", of ? of : "?");
    char *wf = cli_get_str(d, 0, "workflowId"), *wf_status = cli_get_str(d, 0, "workflowStatus");
    if (wf) printf("workflow %s is %s\n", wf, wf_status ? wf_status : "?");
    free(id);
    free(of);
    free(wf);
    free(wf_status);
}

static void many_render(const json_doc *d)
{
    int count = cli_lookup(d, 0, "count");
    buf n;
    buf_init(&n);
    cli_put_cell(&n, d, count);
    bool more = cli_is_true(d, 0, "more");
    if (cli_is_true(d, 0, "dryRun")) {
        printf("%s tasks would be rerun%s\n", n.data, more ? " (more match: raise --limit or run again)" : "");
        buf_fini(&n);
        return;
    }
    static const char *const headers[] = { "ID", "RERUN_OF", "CREATED" };
    static const char *const fields[] = { "id", "rerunOf", "created" };
    cli_print_rows(d, "tasks", 3, headers, fields, "(no tasks to rerun)");
    printf("%s tasks rerun%s\n", n.data, more ? "; more match: run again to go on" : "");
    buf_fini(&n);
}

/* One task by id (then --to-queue and --args may override), or tasks by a
 * filter: the two routes. */
static int rerun_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const rerun_opts *o = opts;
    bool one = a->npos == 1;
    buf body, path;
    buf_init(&body);
    buf_init(&path);
    buf_puts(&path, "/api/v1/tasks");
    if (one) { cli_path_segment(&path, a->pos[0]); buf_puts(&path, "/rerun"); }
    else buf_puts(&path, "/rerun");
    int rc = rerun_body(cmd, one, o, &body);
    if (rc == 0) rc = cli_call("POST", path.data, &body, o->json, one ? one_render : many_render);
    buf_fini(&body);
    buf_fini(&path);
    return rc;
}

int cli_task_rerun(int argc, char **argv)
{
    rerun_opts o = { .limit = -1, .priority = -1, .timeout_ms = -1 };
    const cli_opt opts[] = {
        { "queue",               CLI_OPT_STR,  &o.queue },
        { "name",                CLI_OPT_STR,  &o.name },
        { "error-code",          CLI_OPT_STR,  &o.code },
        { "status",              CLI_OPT_STR,  &o.status },
        { "finished-after",      CLI_OPT_STR,  &o.after },
        { "finished-before",     CLI_OPT_STR,  &o.before },
        { "limit",               CLI_OPT_INT,  &o.limit },
        { "dry-run",             CLI_OPT_FLAG, &o.dry_run },
        { "include-completed",   CLI_OPT_FLAG, &o.completed },
        { "priority",            CLI_OPT_INT,  &o.priority },
        { "timeout-ms",          CLI_OPT_INT,  &o.timeout_ms },
        { "retention-class-key", CLI_OPT_STR,  &o.class_key },
        { "to-queue",            CLI_OPT_STR,  &o.to_queue },
        { "args",                CLI_OPT_STR,  &o.args },
        { "json",                CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "task rerun", rerun_usage, opts, sizeof opts / sizeof opts[0], 0, 1 };
    return cli_run(&cmd, argc, argv, rerun_run, &o);
}

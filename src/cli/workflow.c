/* workflow: `silt workflow start|get|list|pause|resume|cancel`, the
 * workflows of /api/v1/workflows from the command line. A definition is a
 * JSON file sent as written (checked here only for being one JSON object);
 * the server checks the graph whole, and a refusal lists every problem:
 * start prints each on its own line instead of the one summary
 * cli_request would. Replies are found by member name. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char workflow_usage[] =
    "usage: silt workflow <start | get | list | pause | resume | cancel> [options]\n"
    "\n"
    "Workflows (graphs of tasks) from the command line:\n"
    "\n"
    "  start FILE                  start a workflow defined in FILE; prints its id\n"
    "  get <id> [--wait MS]        a workflow's status and result, and its nodes\n"
    "  list [--status S] [--name N]  workflows, oldest first, a page at a time\n"
    "  pause <id>                  start no new node until resumed\n"
    "  resume <id>                 go on after a pause\n"
    "  cancel <id>                 skip what has not started, cancel what runs\n"
    "\n"
    "\"silt workflow <verb> --help\" describes each. Nodes are tasks, run by\n"
    "\"silt worker\".\n"
    CLI_USAGE_SERVER;

static const char start_usage[] =
    "usage: silt workflow start FILE [--json]\n"
    "\n"
    "Starts the workflow FILE defines (\"-\": read it from stdin) and prints its\n"
    "id. FILE holds one JSON object:\n"
    "\n"
    "  {\"name\": \"etl\", \"onError\": \"FAIL\", \"output\": \"load\", \"nodes\": [\n"
    "    {\"id\": \"extract\", \"task\": \"extract\", \"queue\": \"etl\", \"args\": {...}},\n"
    "    {\"id\": \"load\", \"task\": \"load\", \"queue\": \"etl\", \"waitsFor\": [\"extract\"],\n"
    "     \"argsFrom\": {\"rows\": \"extract\"}}]}\n"
    "\n"
    "A node may also give join (all, any or quorum), minSuccess, allowFailedDeps\n"
    "and a task's options (priority, timeoutMs, retry, goodUntil). onError is\n"
    "FAIL (the default) or PAUSE; output names the node whose result is the\n"
    "workflow's. The server checks the whole definition first: a refused one\n"
    "starts nothing, and every problem is printed on its own line (exit 1).\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char get_usage[] =
    "usage: silt workflow get <id> [--wait MS] [--json]\n"
    "\n"
    "Shows a workflow (status, times, result and error), then its nodes: ID,\n"
    "TASK, QUEUE, STATUS, WAITS_FOR and RESULT (a failed node's error code and\n"
    "message when it has no result; cut to fit 100 columns: --json shows all).\n"
    "\n"
    "options:\n"
    "  --wait MS      wait up to MS ms (at most 60000) for it to end first\n"
    CLI_USAGE_JSON_HELP;

static const char list_usage[] =
    "usage: silt workflow list [--status S] [--name N] [--limit N] [--cursor C] [--json]\n"
    "\n"
    "Lists workflows, oldest first, a page at a time. When the page is full\n"
    "its last line is the cursor of the next page.\n"
    "\n"
    "options:\n"
    "  --status S     only workflows in status S: PENDING, RUNNING, PAUSED,\n"
    "                 COMPLETED, FAILED, CANCELLED or EXPIRED\n"
    "  --name N       only workflows named N\n"
    "  --limit N      workflows per page, 1 to 1000 (default 100)\n"
    "  --cursor C     the page after C (the cursor a previous page printed)\n"
    CLI_USAGE_JSON_HELP;

static const char pause_usage[] =
    "usage: silt workflow pause <id> [--json]\n"
    "\n"
    "Pauses a workflow and prints its status (PAUSED). Nodes already enqueued\n"
    "or running finish; no new node starts until \"silt workflow resume\".\n"
    "A workflow that already ended is not paused: its status is printed and\n"
    "the exit status is 1.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char resume_usage[] =
    "usage: silt workflow resume <id> [--json]\n"
    "\n"
    "Resumes a paused workflow and prints its status: RUNNING, or how it ended\n"
    "when nothing was left to run. A workflow that already ended is not\n"
    "resumed: its status is printed and the exit status is 1.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char cancel_usage[] =
    "usage: silt workflow cancel <id> [--json]\n"
    "\n"
    "Cancels a workflow and prints its status (CANCELLED): nodes that have not\n"
    "started are skipped, their enqueued tasks cancelled, and running ones are\n"
    "told on their worker's next heartbeat. A workflow that already ended is\n"
    "not cancelled: its status is printed and the exit status is 1.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

/* ---- start ------------------------------------------------------------ */

/* The definition read and checked for being one JSON object. */
static int read_definition(const cli_cmd *cmd, const char *path, buf *text)
{
    buf_append(text, "", 0);
    if (cli_read_file(path, text) < 0) return cli_usage_error(cmd, "cannot read %s", path);
    return cli_check_json_object(cmd, path, text, "must hold one JSON object (the workflow)");
}

/* A refusal: every problem of "problems" on its own line, else the error. */
static void report_refusal(const http_response *r)
{
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, r->body.data, r->body.len, CLI_MAX_TOKENS) < 0) {
        cli_error("server answered HTTP %d", r->status);
        json_doc_fini(&d);
        return;
    }
    int problems = json_get(&d, 0, "problems"), p;
    uint32_t shown = 0;
    for (uint32_t i = 0; problems >= 0 && (p = json_at(&d, (uint32_t)problems, i)) >= 0; i++, shown++) {
        buf line;
        buf_init(&line);
        buf_append(&line, "", 0);
        cli_put_cell(&line, &d, p);
        cli_error("%s", line.data);
        buf_fini(&line);
    }
    char *error = shown ? NULL : cli_get_str(&d, 0, "error");
    char *invalid = shown ? NULL : cli_get_str(&d, 0, "invalid");
    if (error && invalid) cli_error("%s (option \"%s\")", error, invalid);
    else if (error) cli_error("%s", error);
    else if (!shown) cli_error("server answered HTTP %d", r->status);
    free(error);
    free(invalid);
    json_doc_fini(&d);
}

static void start_render(const json_doc *d)
{
    cli_print_member(d, "", "id", "\n");
}

/* POST /api/v1/workflows, by hand: cli_request would report a refusal
 * as its one-line summary. */
static int start_post(const buf *body, bool json)
{
    const char *url = cli_server_url();
    http_client *c = cli_http_client(url);
    if (!c) {
        cli_error("invalid server url \"%s\" (expected http://host[:port])", url);
        return CLI_EXIT_FAILED;
    }
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    int rc = CLI_EXIT_FAILED;
    if (http_request(c, "POST", "/api/v1/workflows", body->data, body->len, &r) < 0)
        cli_error("%s", http_client_error(c));
    else if (r.status >= 400) report_refusal(&r);
    else if (cli_parse_reply(&r, &d) == 0) {
        if (json) cli_print_json(r.body.data, r.body.len);
        else start_render(&d);
        rc = CLI_EXIT_OK;
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    http_client_free(c);
    return rc;
}

static int start_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const bool *json = opts;
    buf text;
    buf_init(&text);
    int rc = read_definition(cmd, a->pos[0], &text);
    if (rc == 0) rc = start_post(&text, *json);
    buf_fini(&text);
    return rc;
}

static int wf_start(int argc, char **argv)
{
    return cli_run_json_only("workflow start", start_usage, 1, 1, argc, argv, start_run);
}

/* ---- get -------------------------------------------------------------- */

static void fields_render(const json_doc *d)
{
    static const char *const fields[] = {
        "id", "name", "status", "onError", "output", "createdAt", "startedAt", "pausedAt", "finishedAt",
        "result", "errorCode", "errorMessage",
    };
    cli_print_named_fields(d, fields, sizeof fields / sizeof fields[0]);
}

static bool absent(const json_doc *d, int tok)
{
    return tok < 0 || d->tokens[tok].type == JSON_NULL;
}

/* The result; for a node that failed without one, "CODE: message". */
static void add_outcome(cli_table *t, const json_doc *d, int node)
{
    int result = json_get(d, (uint32_t)node, "result"), code = json_get(d, (uint32_t)node, "errorCode");
    if (!absent(d, result) || absent(d, code)) { cli_table_add_field(t, d, node, "result"); return; }
    buf cell;
    buf_init(&cell);
    cli_put_cell(&cell, d, code);
    int message = json_get(d, (uint32_t)node, "errorMessage");
    if (!absent(d, message)) {
        buf_puts(&cell, ": ");
        cli_put_cell(&cell, d, message);
    }
    cli_table_add(t, cell.data);
    buf_fini(&cell);
}

static void nodes_render(const json_doc *d)
{
    static const char *const headers[] = { "ID", "TASK", "QUEUE", "STATUS", "WAITS_FOR", "RESULT" };
    static const char *const fields[] = { "id", "task", "queue", "status" };
    int list = json_get(d, 0, "nodes"), node;
    cli_table t;
    cli_table_init(&t, 6, headers);
    t.fit = CLI_TABLE_WIDTH;   /* a long result is cut, not wrapped */
    for (uint32_t i = 0; list >= 0 && (node = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        for (int f = 0; f < 4; f++) cli_table_add_field(&t, d, node, fields[f]);
        cli_table_add_joined(&t, d, json_get(d, (uint32_t)node, "waitsFor"));
        add_outcome(&t, d, node);
    }
    cli_table_print_or(&t, "(no nodes)");
    cli_table_fini(&t);
}

static void get_render(const json_doc *d)
{
    fields_render(d);
    putchar('\n');
    nodes_render(d);
}

static int wf_get(int argc, char **argv)
{
    return cli_get_item_waiting("workflow get", get_usage, "/api/v1/workflows", argc, argv, get_render);
}

/* ---- list ------------------------------------------------------------- */

static void list_render(const json_doc *d)
{
    static const char *const headers[] = { "ID", "NAME", "STATUS", "CREATED_AT", "FINISHED_AT" };
    static const char *const fields[] = { "id", "name", "status", "createdAt", "finishedAt" };
    cli_print_rows(d, "workflows", 5, headers, fields, "(no workflows)");
}

/* A workflow status, any case, in upper case; NULL when it is none. The
 * server reads any other word as a status no workflow has, so a typo would
 * list nothing instead of being refused: checked here. */
static const char *workflow_status(const char *s, char out[16])
{
    static const char *const statuses[] = { "PENDING", "RUNNING", "PAUSED", "COMPLETED", "FAILED", "CANCELLED",
                                            "EXPIRED" };
    size_t n = strlen(s);
    if (n >= 16) return NULL;
    for (size_t i = 0; i <= n; i++) out[i] = (char)toupper((unsigned char)s[i]);
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (strcmp(out, statuses[i]) == 0) return out;
    return NULL;
}

static int wf_list(int argc, char **argv)
{
    bool json = false;
    const char *status = NULL, *name = NULL, *cursor = NULL;
    long limit = 0;
    const cli_opt opts[] = {
        { "status", CLI_OPT_STR,  &status },
        { "name",   CLI_OPT_STR,  &name },
        { "limit",  CLI_OPT_INT,  &limit },
        { "cursor", CLI_OPT_STR,  &cursor },
        { "json",   CLI_OPT_FLAG, &json },
    };
    const cli_cmd cmd = { "workflow list", list_usage, opts, sizeof opts / sizeof opts[0], 0, 0 };
    cli_args a;
    int rc;
    char upper[16];
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) {
        const char *st = status ? workflow_status(status, upper) : NULL;
        if (status && !st) rc = cli_usage_error(&cmd, "--status must be a workflow status, got \"%s\"", status);
        else {
            const cli_param filters[] = { { "status", st }, { "name", name } };
            rc = cli_get_page("/api/v1/workflows", filters, 2, limit, cursor, json, list_render);
        }
    }
    cli_args_fini(&a);
    return rc;
}

/* ---- pause, resume, cancel -------------------------------------------- */

/* The server answers a control with the status the workflow has after it,
 * applied or not (docs/workflows.md): an ended workflow answers how it
 * ended. From the answer alone a resume that finished a paused workflow
 * (nothing left to run: COMPLETED) looks like a resume of one that had
 * already completed, and a cancel like a cancel of one already cancelled.
 * So the status is read first: a control applies to a workflow that has not
 * ended (PENDING, RUNNING, PAUSED), and one that had ended exits 1. One that
 * ends between the two requests is caught by the answer where the control
 * leaves a known status (PAUSED, CANCELLED). */

typedef struct control {
    const char *verb;     /* "pause": the path's last segment */
    const char *usage;
    const char *expect;   /* the status the action leaves, NULL: any */
} control;

static bool status_ended(const char *status)
{
    return status && strcmp(status, "PENDING") != 0 && strcmp(status, "RUNNING") != 0
           && strcmp(status, "PAUSED") != 0;
}

/* 1 when the workflow at path (GET) has ended, 0 when it has not or its
 * status cannot be read (the control then reports why, as it would have),
 * -1 when the server could not be reached (printed). */
static int ended_before(const char *path)
{
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    bool ended = false;
    int rc = cli_request_any("GET", path, NULL, 0, &r);
    if (rc == 0 && r.status == 200 && json_parse(&d, r.body.data, r.body.len, CLI_MAX_TOKENS) == 0) {
        char *status = cli_get_str(&d, 0, "status");
        ended = status_ended(status);
        free(status);
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    return rc < 0 ? -1 : ended;
}

/* Prints the status; a control that did not apply (the workflow had ended
 * before it, or the answer is not the status the action leaves) exits 1,
 * saying so. */
static int control_report(const control *ctl, const char *id, bool json, bool had_ended, const http_response *r)
{
    json_doc d;
    if (cli_read_reply(r, &d) < 0) return CLI_EXIT_FAILED;
    char *status = cli_get_str(&d, 0, "status");
    bool done = !had_ended && (!ctl->expect || (status && strcmp(status, ctl->expect) == 0));
    if (json) cli_print_json(r->body.data, r->body.len);
    else printf("%s\n", status ? status : "-");
    if (!done) cli_error("workflow %s already ended %s: nothing to %s", id, status ? status : "?", ctl->verb);
    free(status);
    json_doc_fini(&d);
    return done ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* GET /api/v1/workflows/:id, then POST .../:verb. */
static int control_send(const control *ctl, const char *id, bool json)
{
    buf path;
    buf_init(&path);
    buf_puts(&path, "/api/v1/workflows");
    cli_path_segment(&path, id);
    int ended = ended_before(path.data);
    cli_path_segment(&path, ctl->verb);
    http_response r;
    http_response_init(&r);
    int rc = CLI_EXIT_FAILED;
    if (ended >= 0 && cli_request("POST", path.data, NULL, 0, &r) == 0)
        rc = control_report(ctl, id, json, ended > 0, &r);
    http_response_fini(&r);
    buf_fini(&path);
    return rc;
}

static int control_run(const control *ctl, int argc, char **argv)
{
    bool json = false;
    char name[32];
    snprintf(name, sizeof name, "workflow %s", ctl->verb);
    const cli_opt opts[] = { { "json", CLI_OPT_FLAG, &json } };
    const cli_cmd cmd = { name, ctl->usage, opts, 1, 1, 1 };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) rc = control_send(ctl, a.pos[0], json);
    cli_args_fini(&a);
    return rc;
}

static int wf_pause(int argc, char **argv)
{
    static const control ctl = { "pause", pause_usage, "PAUSED" };
    return control_run(&ctl, argc, argv);
}

static int wf_resume(int argc, char **argv)
{
    static const control ctl = { "resume", resume_usage, NULL };
    return control_run(&ctl, argc, argv);
}

static int wf_cancel(int argc, char **argv)
{
    static const control ctl = { "cancel", cancel_usage, "CANCELLED" };
    return control_run(&ctl, argc, argv);
}

/* "silt workflow" alone: the usage, as a mistake. */
static int wf_none(int argc, char **argv)
{
    return cli_no_verb("workflow", workflow_usage, "which verb? start, get, list, pause, resume or cancel", argc, argv);
}

int cli_workflow(int argc, char **argv)
{
    static const cli_verb verbs[] = {
        { "",       wf_none },
        { "start",  wf_start },
        { "get",    wf_get },
        { "list",   wf_list },
        { "pause",  wf_pause },
        { "resume", wf_resume },
        { "cancel", wf_cancel },
    };
    return cli_dispatch("workflow", workflow_usage, verbs, sizeof verbs / sizeof verbs[0], argc, argv);
}

/* task_retention: `silt retention classes | leaves | coverage`, what the
 * partition pass keeps and drops of task history (api/task_retention.c,
 * sql/025): every retention class with the size of its leaves, every leaf
 * with its day and state, and the coverage health surface. `silt retention`
 * (retention.c) dispatches here; the message log's explain and run stay
 * there. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char classes_usage[] =
    "usage: silt retention classes [--json]\n"
    "\n"
    "Lists task history's retention classes: CLASS, DURATION (\"forever\": its\n"
    "records are never dropped), ORIGIN (silt's own, declared in silt.conf's\n"
    "[retention], or a queue_retention mapping), the LEAVES holding its records\n"
    "with their BYTES and RECORDS (PostgreSQL's estimate), OLDEST_LEAF (the\n"
    "oldest leaf's start) and NEXT_DROP (when the next leaf goes). --json also\n"
    "shows when each class was registered.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP
    CLI_USAGE_SERVER;

static const char leaves_usage[] =
    "usage: silt retention leaves [--class K] [--json]\n"
    "\n"
    "Lists the leaves of task history (one per class and day; a forever class\n"
    "has one): LEAF, CLASS, DAY, BYTES, DROPS_AT and STATE: attached,\n"
    "detach_pending, detached (dropped by the next pass) or absent (cataloged,\n"
    "but its relation is gone: see \"silt retention coverage\"). --json also\n"
    "shows each leaf's span (from, to).\n"
    "\n"
    "options:\n"
    "  --class K      only class K's leaves\n"
    CLI_USAGE_JSON_HELP
    CLI_USAGE_SERVER;

static const char coverage_usage[] =
    "usage: silt retention coverage [--json]\n"
    "\n"
    "Whether task history's partitions are healthy: a partition pass finished\n"
    "lately with outcome ok, every cataloged leaf still has its relation, and\n"
    "leaves reach a day (history) and an hour (heartbeats) ahead. Prints\n"
    "\"coverage: healthy\" or \"coverage: RED\" and why, the last pass (runner,\n"
    "when it finished, outcome), how far history and heartbeats are covered,\n"
    "then what is wrong: absent leaves, classes the pass failed on and leaves it\n"
    "refused to drop, with their reasons, and the pass's message.\n"
    "\n"
    "Exit status: 0 healthy, 1 red (or the server could not answer).\n"
    "\n"
    "options:\n"
    "  --json         print the server's reply as JSON (also when red)\n"
    "  --help         show this help\n"
    CLI_USAGE_SERVER;

#define COVERAGE_PATH "/api/v1/task-retention/coverage"

/* ---- classes ------------------------------------------------------------ */

/* A null duration keeps the class's records forever. */
static void add_duration(cli_table *t, const json_doc *d, int obj)
{
    int tok = json_get(d, (uint32_t)obj, "duration");
    if (tok >= 0 && d->tokens[tok].type == JSON_NULL) cli_table_add(t, "forever");
    else cli_table_add_value(t, d, tok);
}

static void classes_render(const json_doc *d)
{
    static const char *const headers[] = { "CLASS", "DURATION", "ORIGIN", "LEAVES", "BYTES", "RECORDS",
                                           "OLDEST_LEAF", "NEXT_DROP" };
    static const char *const fields[] = { "leaves", "bytes", "records", "oldestLeaf", "nextDropAt" };
    int list = json_get(d, 0, "classes"), c;
    cli_table t;
    cli_table_init(&t, 8, headers);
    for (uint32_t i = 0; list >= 0 && (c = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        cli_table_add_field(&t, d, c, "classKey");
        add_duration(&t, d, c);
        cli_table_add_field(&t, d, c, "origin");
        for (int f = 0; f < 5; f++) cli_table_add_field(&t, d, c, fields[f]);
    }
    cli_table_print_or(&t, "(no retention classes)");
    cli_table_fini(&t);
}

int cli_task_retention_classes(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "retention classes", classes_usage, "/api/v1/task-retention/classes",
                        classes_render);
}

/* ---- leaves ------------------------------------------------------------- */

static void leaves_render(const json_doc *d)
{
    static const char *const headers[] = { "LEAF", "CLASS", "DAY", "BYTES", "DROPS_AT", "STATE" };
    static const char *const fields[] = { "leaf", "classKey", "day", "bytes", "dropsAt", "state" };
    cli_print_rows(d, "leaves", 6, headers, fields, "(no leaves)");
}

int cli_task_retention_leaves(int argc, char **argv)
{
    const char *class_key = NULL;
    bool json = false;
    const cli_opt opts[] = { { "class", CLI_OPT_STR, &class_key }, { "json", CLI_OPT_FLAG, &json } };
    const cli_cmd cmd = { "retention leaves", leaves_usage, opts, 2, 0, 0 };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) {
        const cli_param params[] = { { "class", class_key } };
        rc = cli_get_query("/api/v1/task-retention/leaves", params, 1, json, leaves_render);
    }
    cli_args_fini(&a);
    return rc;
}

/* ---- coverage ----------------------------------------------------------- */

/* The value at path under obj as text ("-" when absent or null). */
static void put_field(buf *out, const json_doc *d, int obj, const char *path)
{
    int tok = obj < 0 ? -1 : cli_lookup(d, obj, path);
    cli_put_cell(out, d, tok >= 0 && d->tokens[tok].type == JSON_NULL ? -1 : tok);
}

static void print_line(const char *label, const json_doc *d, int obj, const char *path)
{
    buf b;
    buf_init(&b);
    put_field(&b, d, obj, path);
    printf("%s: %s\n", label, b.data);
    buf_fini(&b);
}

static void print_last_pass(const json_doc *d, int pass)
{
    if (pass < 0 || d->tokens[pass].type != JSON_OBJECT) { puts("last pass: none yet"); return; }
    if (json_get(d, (uint32_t)pass, "runner") < 0) { puts("last pass: yielded to another server"); return; }
    buf b;
    buf_init(&b);
    buf_puts(&b, "last pass: ");
    put_field(&b, d, pass, "runner");
    buf_puts(&b, ", finished ");
    put_field(&b, d, pass, "finishedAt");
    buf_puts(&b, ", outcome ");
    put_field(&b, d, pass, "outcome");
    puts(b.data);
    buf_fini(&b);
}

/* The non-empty array at key under obj, with its title printed; or -1. */
static int section(const json_doc *d, int obj, const char *key, const char *title)
{
    int list = obj < 0 ? -1 : json_get(d, (uint32_t)obj, key);
    if (list < 0 || json_at(d, (uint32_t)list, 0) < 0) return -1;
    printf("%s:\n", title);
    return list;
}

static void print_names(const json_doc *d, int obj, const char *key, const char *title)
{
    cli_print_elements(d, section(d, obj, key, title), "  ");
}

/* Objects naming what (name_key) and why (reason): "  name (class): reason",
 * the class shown when it is not the name. */
static void print_reasons(const json_doc *d, int obj, const char *key, const char *title, const char *name_key)
{
    int list = section(d, obj, key, title), e;
    bool with_class = strcmp(name_key, "classKey") != 0;
    for (uint32_t i = 0; list >= 0 && (e = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        buf b;
        buf_init(&b);
        buf_puts(&b, "  ");
        put_field(&b, d, e, name_key);
        if (with_class && json_get(d, (uint32_t)e, "classKey") >= 0) {
            buf_puts(&b, " (");
            put_field(&b, d, e, "classKey");
            buf_putc(&b, ')');
        }
        buf_puts(&b, ": ");
        put_field(&b, d, e, "reason");
        puts(b.data);
        buf_fini(&b);
    }
}

/* A string member's line; nothing when it is absent or null. */
static void print_text(const char *label, const json_doc *d, int obj, const char *key)
{
    int tok = obj < 0 ? -1 : json_get(d, (uint32_t)obj, key);
    if (tok >= 0 && d->tokens[tok].type == JSON_STRING) print_line(label, d, obj, key);
}

static void coverage_render(const json_doc *d)
{
    int healthy = json_get(d, 0, "healthy"), pass = json_get(d, 0, "lastPass");
    puts(d->tokens[healthy].type == JSON_TRUE ? "coverage: healthy" : "coverage: RED");
    print_names(d, 0, "problems", "why");
    print_last_pass(d, pass);
    print_line("history covered through", d, 0, "historyCoveredThrough");
    print_line("heartbeats covered through", d, 0, "heartbeatsCoveredThrough");
    print_names(d, 0, "absent_leaves", "absent leaves (cataloged, their relation gone)");
    print_reasons(d, pass, "failedClasses", "failed classes", "classKey");
    print_reasons(d, pass, "refusals", "refused drops", "leaf");
    print_text("error", d, pass, "error");
    print_text("message", d, pass, "message");
}

/* The reply's "healthy" token, or -1 when it has none: not the coverage
 * surface's answer. */
static int healthy_token(const json_doc *d)
{
    int t = json_get(d, 0, "healthy");
    return t >= 0 && (d->tokens[t].type == JSON_TRUE || d->tokens[t].type == JSON_FALSE) ? t : -1;
}

/* 200 and 503 both carry the answer. Any other error status, and a 503
 * without one (the database unreachable), is reported as cli_request
 * does. The exit status: 0 healthy, 1 red or no answer. */
static int coverage_answer(const http_response *r, json_doc *d, bool json)
{
    bool parsed = r->status < 400 ? cli_parse_reply(r, d) == 0
                : r->status == 503 && json_parse(d, r->body.data, r->body.len, CLI_MAX_TOKENS) == 0;
    int healthy = parsed ? healthy_token(d) : -1;
    if (healthy < 0) {
        if (r->status >= 400) cli_report_status(r);
        else if (parsed) cli_error("malformed reply from server (HTTP %d): no \"healthy\"", r->status);
        return CLI_EXIT_FAILED;
    }
    if (json) cli_print_json(r->body.data, r->body.len);
    else coverage_render(d);
    return d->tokens[healthy].type == JSON_TRUE ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

static int coverage_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const bool *json = opts;
    (void)cmd;
    (void)a;
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    int rc = cli_request_any("GET", COVERAGE_PATH, NULL, 0, &r) == 0 ? coverage_answer(&r, &d, *json)
                                                                       : CLI_EXIT_FAILED;
    json_doc_fini(&d);
    http_response_fini(&r);
    return rc;
}

int cli_task_retention_coverage(int argc, char **argv)
{
    return cli_run_json_only("retention coverage", coverage_usage, 0, 0, argc, argv, coverage_run);
}

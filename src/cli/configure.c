/* configure: `silt configure`, one POST /api/v1/configure. Each --set
 * key=value becomes an option; the value goes as JSON when it is JSON
 * (numbers, true, false, null, quoted strings) and as a string otherwise, so
 * `--set leaseTime=60` sends a number and `--set x=abc` the string "abc".
 * The server merges options, so only the keys given change. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <string.h>

static const char configure_usage[] =
    "usage: silt configure <queue> [options]\n"
    "\n"
    "Creates a queue if needed and sets its options; prints all of them.\n"
    "\n"
    "options:\n"
    "  --namespace NS     namespace tag of the queue\n"
    "  --task T           task tag of the queue\n"
    "  --set KEY=VALUE    set an option (repeatable), e.g. --set leaseTime=60;\n"
    "                     VALUE is sent as JSON if it parses, else as a string;\n"
    "                     null returns an option to its default\n"
    "  --json             print the server's reply as JSON\n"
    "  --help             show this help\n"
    CLI_USAGE_SERVER;

typedef struct configure_opts {
    const char *namespace_;
    const char *task;
    cli_list    set;
    bool        json;
} configure_opts;

static void configure_put_value(buf *b, const char *v)
{
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, v, strlen(v), CLI_MAX_TOKENS) == 0) {
        size_t n;
        const char *span = json_span(&d, 0, &n);
        buf_append(b, span, n);
    } else {
        json_put_cstr(b, v);
    }
    json_doc_fini(&d);
}

static bool configure_key_repeats(const cli_list *set, int i, size_t keylen)
{
    for (int j = 0; j < i; j++)
        if (strncmp(set->items[j], set->items[i], keylen + 1) == 0) return true;
    return false;
}

/* Appends "options":{...} from --set; 2 on a malformed or repeated one. */
static int configure_put_options(const cli_cmd *cmd, buf *b, const cli_list *set)
{
    buf_puts(b, ",\"options\":{");
    for (int i = 0; i < set->n; i++) {
        const char *kv = set->items[i], *eq = strchr(kv, '=');
        if (!eq || eq == kv)
            return cli_usage_error(cmd, "--set needs KEY=VALUE, got \"%s\"", kv);
        if (configure_key_repeats(set, i, (size_t)(eq - kv)))
            return cli_usage_error(cmd, "option \"%.*s\" set twice", (int)(eq - kv), kv);
        if (i) buf_putc(b, ',');
        json_put_str(b, kv, (size_t)(eq - kv));
        buf_putc(b, ':');
        configure_put_value(b, eq + 1);
    }
    buf_puts(b, "}}");
    return 0;
}

static int configure_build(const cli_cmd *cmd, buf *b, const char *queue,
                           const configure_opts *o)
{
    buf_puts(b, "{\"queue\":");
    json_put_cstr(b, queue);
    if (o->namespace_) {
        buf_puts(b, ",\"namespace\":");
        json_put_cstr(b, o->namespace_);
    }
    if (o->task) {
        buf_puts(b, ",\"task\":");
        json_put_cstr(b, o->task);
    }
    return configure_put_options(cmd, b, &o->set);
}

static void configure_table(const json_doc *d)
{
    static const char *const tags[] = { "queue", "namespace", "task" };
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        int t = json_get(d, 0, tags[i]);
        if (t < 0 || d->tokens[t].type == JSON_NULL) continue;
        buf line;
        buf_init(&line);
        cli_put_cell(&line, d, t);
        printf("%-10s %s\n", tags[i], line.data);
        buf_fini(&line);
    }
    putchar('\n');
    cli_print_members(d, json_get(d, 0, "options"), "OPTION");
}

static int configure_report(const void *opts, const http_response *r)
{
    const configure_opts *o = opts;
    json_doc d;
    json_doc_init(&d);
    int rc = cli_parse_reply(r, &d) < 0 ? CLI_EXIT_FAILED : CLI_EXIT_OK;
    if (rc == CLI_EXIT_OK && o->json) cli_print_json(r->body.data, r->body.len);
    else if (rc == CLI_EXIT_OK) configure_table(&d);
    json_doc_fini(&d);
    return rc;
}

static int configure_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const configure_opts *o = opts;
    buf body;
    buf_init(&body);
    int rc = configure_build(cmd, &body, a->pos[0], o);
    if (rc == 0) rc = cli_request_judged("POST", "/api/v1/configure", &body, 0, configure_report, o);
    buf_fini(&body);
    return rc;
}

int cli_configure(int argc, char **argv)
{
    configure_opts o = { 0 };
    const cli_opt opts[] = {
        { "namespace", CLI_OPT_STR,  &o.namespace_ },
        { "task",      CLI_OPT_STR,  &o.task },
        { "set",       CLI_OPT_LIST, &o.set },
        { "json",      CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "configure", configure_usage, opts, sizeof opts / sizeof opts[0], 1, 1 };
    int rc = cli_run(&cmd, argc, argv, configure_run, &o);
    cli_list_fini(&o.set);
    return rc;
}

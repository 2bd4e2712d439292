/* push: `silt push`, one POST /api/v1/push carrying every payload given.
 * Payloads come from the arguments, or one per line from stdin when there
 * are none. Each is checked to be JSON here, so a typo is a usage error
 * instead of a 400, and is sent byte-for-byte (outer whitespace trimmed):
 * the server stores payloads exactly as received. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdlib.h>
#include <string.h>

static const char push_usage[] =
    "usage: silt push <queue> [options] [<payload-json> ...]\n"
    "\n"
    "Pushes one message per JSON payload argument. With no payload arguments,\n"
    "reads one JSON payload per line from standard input (blank lines skipped).\n"
    "\n"
    "options:\n"
    "  --partition P   partition to push to (default \"Default\")\n"
    "  --txn ID        transactionId, the idempotency key (one payload only)\n"
    "  --trace UUID    traceId to attach\n"
    "  --json          print the server's reply as JSON\n"
    "  --help          show this help\n"
    CLI_USAGE_SERVER;

typedef struct push_opts {
    const char *queue;
    const char *partition;
    const char *txn;
    const char *trace;
    bool        json;
} push_opts;

typedef struct push_items {
    buf body;    /* {"items":[ ... so far */
    int count;
} push_items;

/* Validates one payload and appends its item. where names it in errors. */
static int push_add(const cli_cmd *cmd, const push_opts *o, push_items *items,
                    const char *text, size_t len, const char *where)
{
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, text, len, CLI_MAX_TOKENS) < 0) {
        int rc = cli_usage_error(cmd, "%s is not valid JSON: %s", where, d.error);
        json_doc_fini(&d);
        return rc;
    }
    size_t n;
    const char *span = json_span(&d, 0, &n);
    buf *b = &items->body;
    buf_puts(b, items->count++ ? ",{\"queue\":" : "{\"queue\":");
    json_put_cstr(b, o->queue);
    cli_put_str_member(b, "partition", o->partition);
    cli_put_str_member(b, "transactionId", o->txn);
    cli_put_str_member(b, "traceId", o->trace);
    buf_puts(b, ",\"payload\":");
    buf_append(b, span, n);
    buf_putc(b, '}');
    json_doc_fini(&d);
    return 0;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r\n", s[i])) return false;
    return true;
}

static int push_read_stdin(const cli_cmd *cmd, const push_opts *o, push_items *items)
{
    char *line = NULL, where[48];
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    for (long lineno = 1; rc == 0 && (n = getline(&line, &cap, stdin)) >= 0; lineno++) {
        if (blank(line, (size_t)n)) continue;
        snprintf(where, sizeof where, "stdin line %ld", lineno);
        rc = push_add(cmd, o, items, line, (size_t)n, where);
    }
    free(line);
    return rc;
}

static int push_collect(const cli_cmd *cmd, const push_opts *o, const cli_args *a,
                        push_items *items)
{
    char where[48];
    if (a->npos == 1) return push_read_stdin(cmd, o, items);
    for (int i = 1; i < a->npos; i++) {
        snprintf(where, sizeof where, "payload %d", i);
        int rc = push_add(cmd, o, items, a->pos[i], strlen(a->pos[i]), where);
        if (rc) return rc;
    }
    return 0;
}

static int push_item_failed(const json_doc *d, int item, uint32_t i)
{
    char *err = cli_get_str(d, item, "error");
    cli_error("item %u failed: %s", i, err ? err : "no reason given");
    free(err);
    return 1;
}

/* One row per item; failed items are also reported on stderr. */
static int push_report(const void *opts, const http_response *r)
{
    const push_opts *o = opts;
    json_doc d;
    if (cli_read_reply(r, &d) < 0) return CLI_EXIT_FAILED;
    static const char *const headers[] = { "INDEX", "STATUS", "TRANSACTION_ID", "MESSAGE_ID" };
    cli_table t;
    cli_table_init(&t, 4, headers);
    int failed = 0, item;
    for (uint32_t i = 0; (item = json_at(&d, 0, i)) >= 0; i++) {
        int status = json_get(&d, (uint32_t)item, "status");
        cli_table_add_value(&t, &d, json_get(&d, (uint32_t)item, "index"));
        cli_table_add_value(&t, &d, status);
        cli_table_add_value(&t, &d, json_get(&d, (uint32_t)item, "transaction_id"));
        cli_table_add_value(&t, &d, json_get(&d, (uint32_t)item, "message_id"));
        if (status >= 0 && json_str_eq(&d, (uint32_t)status, "failed"))
            failed += push_item_failed(&d, item, i);
    }
    if (o->json) cli_print_json(r->body.data, r->body.len);
    else cli_table_print(&t, stdout);
    cli_table_fini(&t);
    json_doc_fini(&d);
    return failed ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

static int push_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    push_opts *o = opts;
    o->queue = a->pos[0];
    push_items items = { .count = 0 };
    buf_init(&items.body);
    buf_puts(&items.body, "{\"items\":[");
    int rc = push_collect(cmd, o, a, &items);
    if (rc == 0 && o->txn && items.count > 1)
        rc = cli_usage_error(cmd, "--txn names one message, but %d payloads were given",
                             items.count);
    if (rc == 0) {
        buf_puts(&items.body, "]}");
        rc = cli_request_judged("POST", "/api/v1/push", &items.body, 0, push_report, o);
    }
    buf_fini(&items.body);
    return rc;
}

int cli_push(int argc, char **argv)
{
    push_opts o = { 0 };
    const cli_opt opts[] = {
        { "partition", CLI_OPT_STR,  &o.partition },
        { "txn",       CLI_OPT_STR,  &o.txn },
        { "trace",     CLI_OPT_STR,  &o.trace },
        { "json",      CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "push", push_usage, opts, sizeof opts / sizeof opts[0], 1, -1 };
    return cli_run(&cmd, argc, argv, push_run, &o);
}

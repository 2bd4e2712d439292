/* pop: `silt pop`, one GET /api/v1/pop/queue/<q>[/partition/<p>]. Only the
 * query parameters the user gave are sent, so the server's defaults stay the
 * only defaults. A long poll gets an HTTP timeout longer than its own wait.
 * Every answered pop is recorded for `silt ack --last` (cli/last_pop.h). */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/last_pop.h"
#include <stdio.h>
#include <string.h>

#define POP_DEFAULT_WAIT_MS 30000   /* the server's default long-poll timeout */
#define POP_HTTP_SLACK_MS   15000   /* margin over the long poll for the reply */

static const char pop_usage[] =
    "usage: silt pop <queue> [options]\n"
    "\n"
    "Pops a batch of messages from a queue (or one partition of it) under a lease\n"
    "and prints one row per message: OFFSET, PARTITION, TRANSACTION_ID and DATA,\n"
    "cut to fit 100 columns. \"silt ack --last\" then acknowledges the batch.\n"
    "\n"
    "options:\n"
    "  --partition P             pop from this partition only\n"
    "  --batch N                 messages to take (server default 1)\n"
    "  --wait                    long-poll until something is deliverable\n"
    "  --timeout MS              how long --wait waits (server default 30000)\n"
    "  --group G                 consumer group (default: queue mode)\n"
    "  --auto-ack                commit on delivery; no lease, no ack needed\n"
    "  --subscription-mode M     all | from_beginning | new | new-only, for a\n"
    "                            group's first pop\n"
    "  --from TS                 a new group starts at ISO timestamp TS (or \"now\")\n"
    "  --wide                    also print PARTITION_ID and LEASE_ID (what\n"
    "                            \"silt ack\" takes), and DATA whole\n"
    "  --json                    print the server's reply as JSON\n"
    "  --help                    show this help\n"
    "\n"
    "The batch's last message (its partitionId, transactionId and leaseId) is\n"
    "recorded in $XDG_STATE_HOME/silt/last-pop (~/.local/state/silt/last-pop\n"
    "when XDG_STATE_HOME is unset) for \"silt ack --last\"; a pop that leases\n"
    "nothing (no messages, or --auto-ack) removes the record.\n"
    CLI_USAGE_SERVER;

typedef struct pop_opts {
    const char *partition;
    long        batch;       /* -1: not given */
    bool        wait;
    long        timeout_ms;  /* -1: not given */
    const char *group;
    bool        auto_ack;
    const char *mode;
    const char *from;
    bool        wide;
    bool        json;
} pop_opts;

static void pop_param(buf *path, bool *first, const char *key, const char *value)
{
    if (!value) return;
    buf_putc(path, *first ? '?' : '&');
    *first = false;
    buf_puts(path, key);
    buf_putc(path, '=');
    cli_url_encode(path, value);
}

static void pop_build_path(buf *path, const char *queue, const pop_opts *o)
{
    char batch[24], timeout[24];
    snprintf(batch, sizeof batch, "%ld", o->batch);
    snprintf(timeout, sizeof timeout, "%ld", o->timeout_ms);
    buf_puts(path, "/api/v1/pop/queue/");
    cli_url_encode(path, queue);
    if (o->partition) {
        buf_puts(path, "/partition/");
        cli_url_encode(path, o->partition);
    }
    bool first = true;
    pop_param(path, &first, "batch", o->batch >= 0 ? batch : NULL);
    pop_param(path, &first, "wait", o->wait ? "true" : NULL);
    pop_param(path, &first, "timeout", o->timeout_ms >= 0 ? timeout : NULL);
    pop_param(path, &first, "consumerGroup", o->group);
    pop_param(path, &first, "autoAck", o->auto_ack ? "true" : NULL);
    pop_param(path, &first, "subscriptionMode", o->mode);
    pop_param(path, &first, "subscriptionFrom", o->from);
}

static int pop_check(const cli_cmd *cmd, const pop_opts *o)
{
    if (o->batch == 0) return cli_usage_error(cmd, "--batch must be at least 1");
    if (o->timeout_ms > 24L * 3600 * 1000)
        return cli_usage_error(cmd, "--timeout must be at most one day");
    return 0;
}

/* The table's columns. The ids a human rarely reads are --wide only; in it
 * the partition id comes before the transaction id, the order silt ack and
 * silt dlq rm take them in. */
typedef struct pop_column {
    const char *header;
    const char *field;
    bool        wide_only;
} pop_column;

static const pop_column pop_columns[] = {
    { "OFFSET",         "offset",        false },
    { "PARTITION",      "partition",     false },
    { "PARTITION_ID",   "partitionId",   true },
    { "TRANSACTION_ID", "transactionId", false },
    { "LEASE_ID",       "leaseId",       true },
    { "DATA",           "data",          false },
};
#define POP_NCOLUMNS ((int)(sizeof pop_columns / sizeof pop_columns[0]))

static void pop_table(const json_doc *d, bool wide)
{
    const char *headers[POP_NCOLUMNS], *fields[POP_NCOLUMNS];
    int ncols = 0;
    for (int c = 0; c < POP_NCOLUMNS; c++) {
        if (pop_columns[c].wide_only && !wide) continue;
        headers[ncols] = pop_columns[c].header;
        fields[ncols++] = pop_columns[c].field;
    }
    int messages = json_get(d, 0, "messages"), m;
    cli_table t;
    cli_table_init(&t, ncols, headers);
    if (!wide) t.fit = CLI_TABLE_WIDTH;   /* a long payload is cut, not wrapped */
    for (uint32_t i = 0; messages >= 0 && (m = json_at(d, (uint32_t)messages, i)) >= 0; i++)
        for (int f = 0; f < ncols; f++)
            cli_table_add_value(&t, d, json_get(d, (uint32_t)m, fields[f]));
    cli_table_print_or(&t, "(no messages)");
    cli_table_fini(&t);
}

static int pop_report(const void *opts, const http_response *r)
{
    const pop_opts *o = opts;
    static const char empty[] = "{\"messages\":[]}";
    if (r->status == 204) {
        cli_last_pop_save(NULL, o->group, false);
        if (o->json) cli_print_json(empty, sizeof empty - 1);
        else puts("(no messages)");
        return CLI_EXIT_OK;
    }
    json_doc d;
    json_doc_init(&d);
    int rc = cli_parse_reply(r, &d) < 0 ? CLI_EXIT_FAILED : CLI_EXIT_OK;
    if (rc == CLI_EXIT_OK) cli_last_pop_save(&d, o->group, !o->auto_ack);
    if (rc == CLI_EXIT_OK && o->json) cli_print_json(r->body.data, r->body.len);
    else if (rc == CLI_EXIT_OK) pop_table(&d, o->wide);
    json_doc_fini(&d);
    return rc;
}

static int pop_run(const char *queue, const pop_opts *o)
{
    buf path;
    buf_init(&path);
    pop_build_path(&path, queue, o);
    int http_timeout = 0;
    if (o->wait)
        http_timeout = (int)(o->timeout_ms >= 0 ? o->timeout_ms : POP_DEFAULT_WAIT_MS)
                     + POP_HTTP_SLACK_MS;
    int rc = cli_request_judged("GET", path.data, NULL, http_timeout, pop_report, o);
    buf_fini(&path);
    return rc;
}

static int pop_main(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    int rc = pop_check(cmd, opts);
    return rc ? rc : pop_run(a->pos[0], opts);
}

int cli_pop(int argc, char **argv)
{
    pop_opts o = { .batch = -1, .timeout_ms = -1 };
    const cli_opt opts[] = {
        { "partition",         CLI_OPT_STR,  &o.partition },
        { "batch",             CLI_OPT_INT,  &o.batch },
        { "wait",              CLI_OPT_FLAG, &o.wait },
        { "timeout",           CLI_OPT_INT,  &o.timeout_ms },
        { "group",             CLI_OPT_STR,  &o.group },
        { "auto-ack",          CLI_OPT_FLAG, &o.auto_ack },
        { "subscription-mode", CLI_OPT_STR,  &o.mode },
        { "from",              CLI_OPT_STR,  &o.from },
        { "wide",              CLI_OPT_FLAG, &o.wide },
        { "json",              CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "pop", pop_usage, opts, sizeof opts / sizeof opts[0], 1, 1 };
    return cli_run(&cmd, argc, argv, pop_main, &o);
}

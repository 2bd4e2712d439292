/* queues: `silt queues` — list queues, show one (options and partitions),
 * delete one, and the server-wide overview, over /api/v1/resources. The
 * replies are built by PostgreSQL as jsonb, so members are found by name
 * (json_get), never by position. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <string.h>

static const char queues_usage[] =
    "usage: silt queues [list | show <queue> | rm <queue> | overview] [options]\n"
    "\n"
    "Lists queues with their partitions, messages, dead letters and the\n"
    "messages each consumer group has still to read (\"silt queues list\" is\n"
    "the same). The other subcommands:\n"
    "\n"
    "  show <queue>   the queue's options and partitions\n"
    "  rm <queue>     delete a queue with its messages, cursors and dead letters\n"
    "  overview       totals over the whole server\n"
    "\n"
    "options:\n"
    "  --json         print the server's reply as JSON\n"
    "  --help         show this help (\"silt queues show --help\" for show)\n"
    CLI_USAGE_SERVER;

static const char show_usage[] =
    "usage: silt queues show <queue> [--json]\n"
    "\n"
    "Shows a queue: its tags and counts, its options and its partitions.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char rm_usage[] =
    "usage: silt queues rm <queue> [--json]\n"
    "\n"
    "Deletes a queue and everything of it: partitions, messages, consumer\n"
    "group cursors, subscriptions and dead letters. There is no undo.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char overview_usage[] =
    "usage: silt queues overview [--json]\n"
    "\n"
    "Shows server-wide totals: queues, partitions, messages, segments,\n"
    "consumer groups, active leases, dead letters and the last write.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

/* "group=N group=N" from messages.pending, "-" when no group reads the queue. */
static void queues_add_pending(cli_table *t, const json_doc *d, int queue)
{
    int pending = cli_lookup(d, queue, "messages.pending");
    if (pending < 0 || d->tokens[pending].type != JSON_OBJECT || d->tokens[pending].count == 0) {
        cli_table_add(t, "-");
        return;
    }
    buf cell;
    buf_init(&cell);
    uint32_t k = (uint32_t)pending + 1;
    for (uint32_t m = 0; m < d->tokens[pending].count; m++) {
        if (m) buf_putc(&cell, ' ');
        cli_put_cell(&cell, d, (int)k);
        buf_putc(&cell, '=');
        cli_put_cell(&cell, d, (int)k + 1);
        k = d->tokens[k + 1].next;
    }
    cli_table_add(t, cell.data);
    buf_fini(&cell);
}

static void queues_list_render(const json_doc *d)
{
    static const char *const headers[] = {
        "NAME", "NAMESPACE", "TASK", "PARTITIONS", "MESSAGES", "DEAD_LETTERS", "PENDING",
    };
    static const char *const fields[] = {
        "name", "namespace", "task", "partitions", "messages.total", "messages.deadLetters",
    };
    cli_table t;
    cli_table_init(&t, 7, headers);
    int q;
    for (uint32_t i = 0; (q = json_at(d, 0, i)) >= 0; i++) {
        for (int f = 0; f < 6; f++) cli_table_add_field(&t, d, q, fields[f]);
        queues_add_pending(&t, d, q);
    }
    cli_table_print_or(&t, "(no queues)");
    cli_table_fini(&t);
}

static void queues_show_summary(const json_doc *d)
{
    static const char *const labels[] = {
        "name", "namespace", "task", "created", "partitions", "messages", "dead letters",
    };
    static const char *const fields[] = {
        "name", "namespace", "task", "createdAt", "partitions", "messages.total",
        "messages.deadLetters",
    };
    static const char *const headers[] = { "FIELD", "VALUE" };
    cli_table t;
    cli_table_init(&t, 2, headers);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        cli_table_add(&t, labels[i]);
        cli_table_add_field(&t, d, 0, fields[i]);
    }
    cli_table_add(&t, "pending");
    queues_add_pending(&t, d, 0);
    cli_table_print(&t, stdout);
    cli_table_fini(&t);
}

static void queues_show_partitions(const json_doc *d)
{
    static const char *const headers[] = {
        "PARTITION", "ID", "LAST_OFFSET", "LOG_START", "MESSAGES", "LAST_WRITE_AT",
    };
    static const char *const fields[] = {
        "name", "id", "lastOffset", "logStart", "messages", "lastWriteAt",
    };
    cli_print_rows(d, "partitionList", 6, headers, fields, "(no partitions)");
}

static void queues_show_render(const json_doc *d)
{
    queues_show_summary(d);
    putchar('\n');
    cli_print_members(d, json_get(d, 0, "options"), "OPTION");
    putchar('\n');
    queues_show_partitions(d);
}

static int queues_list(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "queues", queues_usage, "/api/v1/resources/queues", queues_list_render);
}

static int queues_show(int argc, char **argv)
{
    static const cli_item_verb verb = { "queues show", show_usage, "GET", "/api/v1/resources/queues", NULL };
    return cli_item_call(&verb, argc, argv, queues_show_render);
}

/* {"deleted": false} (nothing by that name) is a failure, like a 404. */
static int queues_rm_report(const char *queue, bool json, const http_response *r)
{
    json_doc d;
    if (cli_read_reply(r, &d) < 0) return CLI_EXIT_FAILED;
    bool ok = cli_is_true(&d, 0, "deleted");
    if (json) cli_print_json(r->body.data, r->body.len);
    else if (ok) printf("deleted queue %s\n", queue);
    if (!ok) cli_error("queue \"%s\" not found", queue);
    json_doc_fini(&d);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

static int queues_rm(int argc, char **argv)
{
    static const cli_item_verb verb = { "queues rm", rm_usage, "DELETE", "/api/v1/resources/queues", NULL };
    return cli_item_request(&verb, argc, argv, queues_rm_report);
}

static int queues_overview(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "queues overview", overview_usage, "/api/v1/resources/overview", cli_render_fields);
}

int cli_queues(int argc, char **argv)
{
    static const cli_verb verbs[] = {
        { "list",     queues_list },
        { "show",     queues_show },
        { "rm",       queues_rm },
        { "overview", queues_overview },
    };
    return cli_dispatch("queues", queues_usage, verbs, sizeof verbs / sizeof verbs[0], argc, argv);
}

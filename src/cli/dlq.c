/* dlq: `silt dlq` — list dead letters a page at a time (GET /api/v1/dlq),
 * replay one into its partition (POST /api/v1/dlq/<id>/replay), or remove
 * the dead letters of one message (DELETE /api/v1/messages/<pid>/<txn>).
 * Only the filters the user gave are sent: the server's paging defaults and
 * bounds stay the only ones. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <string.h>

static const char dlq_usage[] =
    "usage: silt dlq [list | replay <id> | rm <partitionId> <transactionId>] [options]\n"
    "\n"
    "Lists dead letters, newest first (\"silt dlq\" alone is the same).\n"
    "\n"
    "  list                           one page of dead letters\n"
    "  replay <id>                    push a dead letter back to its partition\n"
    "                                 (as transactionId dlq:<id>) and remove it\n"
    "  rm <partitionId> <txnId>       remove a message's dead letters for good\n"
    "\n"
    "list options:\n"
    "  --queue Q       only dead letters of queue Q\n"
    "  --group G       only those of consumer group G\n"
    "  --partition P   only those of partitions named P\n"
    "  --limit N       page size (server default 100)\n"
    "  --offset N      dead letters to skip (default 0)\n"
    "  --json          print the server's reply as JSON\n"
    "  --help          show this help\n"
    CLI_USAGE_SERVER;

static const char replay_usage[] =
    "usage: silt dlq replay <id> [--json]\n"
    "\n"
    "Pushes a dead letter back to the partition it came from, with\n"
    "transactionId dlq:<id>, and removes it from the dead letters; both or\n"
    "neither. <id> is the ID column of \"silt dlq list\".\n"
    "\n"
    "options:\n"
    "  --json          print the server's reply as JSON\n"
    "  --help          show this help\n";

static const char rm_usage[] =
    "usage: silt dlq rm <partitionId> <transactionId> [--json]\n"
    "\n"
    "Removes the dead letters of one message for good, without replaying it.\n"
    "\n"
    "options:\n"
    "  --json          print the server's reply as JSON\n"
    "  --help          show this help\n";

typedef struct dlq_list_opts {
    const char *queue;
    const char *group;
    const char *partition;
    long        limit;    /* -1: not given */
    long        offset;   /* -1: not given */
    bool        json;
} dlq_list_opts;

static void dlq_list_render(const json_doc *d)
{
    static const char *const headers[] = {
        "ID", "QUEUE", "PARTITION", "PARTITION_ID", "OFFSET", "TRANSACTION_ID", "PRODUCER", "RETRIES",
        "ERROR", "FAILED_AT",
    };
    static const char *const fields[] = {
        "id", "queue", "partition", "partitionId", "offset", "transactionId", "producerSub", "retryCount",
        "errorMessage", "failedAt",
    };
    enum { NFIELDS = sizeof fields / sizeof fields[0] };
    int list = json_get(d, 0, "messages"), m;
    uint32_t shown = 0;
    cli_table t;
    cli_table_init(&t, NFIELDS, headers);
    for (; list >= 0 && (m = json_at(d, (uint32_t)list, shown)) >= 0; shown++)
        for (int f = 0; f < NFIELDS; f++) cli_table_add_field(&t, d, m, fields[f]);
    buf total;
    buf_init(&total);
    cli_put_cell(&total, d, json_get(d, 0, "total"));
    /* One line when the page is empty: "(no dead letters)" and "0 of 0"
     * would say the same twice. */
    if (shown > 0) {
        cli_table_print(&t, stdout);
        printf("%u of %s\n", shown, total.data);
    } else if (strcmp(total.data, "0") == 0) puts("(no dead letters)");
    else printf("(no dead letters on this page; %s in all)\n", total.data);
    cli_table_fini(&t);
    buf_fini(&total);
}

static int dlq_list_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const dlq_list_opts *o = opts;
    (void)a;
    if (o->limit == 0) return cli_usage_error(cmd, "--limit must be at least 1");
    char limit[24], offset[24];
    snprintf(limit, sizeof limit, "%ld", o->limit);
    snprintf(offset, sizeof offset, "%ld", o->offset);
    const cli_param params[] = {
        { "queue", o->queue }, { "consumerGroup", o->group }, { "partition", o->partition },
        { "limit", o->limit >= 0 ? limit : NULL }, { "offset", o->offset >= 0 ? offset : NULL },
    };
    return cli_get_query("/api/v1/dlq", params, sizeof params / sizeof params[0], o->json, dlq_list_render);
}

static int dlq_list(int argc, char **argv)
{
    dlq_list_opts o = { .limit = -1, .offset = -1 };
    const cli_opt opts[] = {
        { "queue",     CLI_OPT_STR,  &o.queue },
        { "group",     CLI_OPT_STR,  &o.group },
        { "partition", CLI_OPT_STR,  &o.partition },
        { "limit",     CLI_OPT_INT,  &o.limit },
        { "offset",    CLI_OPT_INT,  &o.offset },
        { "json",      CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "dlq", dlq_usage, opts, sizeof opts / sizeof opts[0], 0, 0 };
    return cli_run(&cmd, argc, argv, dlq_list_run, &o);
}

static int dlq_replay(int argc, char **argv)
{
    static const cli_item_verb verb = { "dlq replay", replay_usage, "POST", "/api/v1/dlq", "/replay" };
    return cli_item_call(&verb, argc, argv, cli_render_fields);
}

static void dlq_rm_render(const json_doc *d)
{
    cli_print_deleted(d, "deleted", "dead letter");
}

static int rm_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const bool *json = opts;
    (void)cmd;
    buf path;
    buf_init(&path);
    buf_puts(&path, "/api/v1/messages");
    cli_path_segment(&path, a->pos[0]);
    cli_path_segment(&path, a->pos[1]);
    int rc = cli_call("DELETE", path.data, NULL, *json, dlq_rm_render);
    buf_fini(&path);
    return rc;
}

static int dlq_rm(int argc, char **argv)
{
    return cli_run_json_only("dlq rm", rm_usage, 2, 2, argc, argv, rm_run);
}

int cli_dlq(int argc, char **argv)
{
    static const cli_verb verbs[] = {
        { "list",   dlq_list },
        { "replay", dlq_replay },
        { "rm",     dlq_rm },
    };
    return cli_dispatch("dlq", dlq_usage, verbs, sizeof verbs / sizeof verbs[0], argc, argv);
}

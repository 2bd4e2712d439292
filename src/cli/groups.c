/* groups: `silt groups` — list consumer groups, show one (its cursor on each
 * partition and its stored subscriptions), delete one or its cursors on one
 * queue, over /api/v1/consumer-groups. The replies are jsonb built by
 * PostgreSQL, so members are found by name, never by position. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <string.h>

static const char groups_usage[] =
    "usage: silt groups [list | show <group> | rm <group>] [options]\n"
    "\n"
    "Lists consumer groups with their state (Stable, Lagging, Dead), messages\n"
    "still to read, the age in seconds of the oldest of them, members (live\n"
    "leases) and queues (\"silt groups list\" is the same). The other\n"
    "subcommands:\n"
    "\n"
    "  show <group>   the group's cursor on every partition, and subscriptions\n"
    "  rm <group>     delete the group's cursors (see \"silt groups rm --help\")\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP
    CLI_USAGE_SERVER;

static const char show_usage[] =
    "usage: silt groups show <group> [--json]\n"
    "\n"
    "Shows a consumer group's cursor on each partition it reads (committed\n"
    "offset, lag, retries, live lease) and its stored subscriptions.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP;

static const char rm_usage[] =
    "usage: silt groups rm <group> [--queue Q] [--delete-metadata] [--json]\n"
    "\n"
    "Deletes a consumer group's cursors, on every queue or on one. The group\n"
    "reads from its subscription start again on its next pop.\n"
    "\n"
    "options:\n"
    "  --queue Q           only the group's cursors on queue Q\n"
    "  --delete-metadata   also forget the group's stored subscriptions\n"
    "  --json              print the server's reply as JSON\n"
    "  --help              show this help\n";

static void groups_list_render(const json_doc *d)
{
    static const char *const headers[] = {
        "NAME", "STATE", "TOTAL_LAG", "MAX_TIME_LAG", "MEMBERS", "QUEUES",
    };
    static const char *const fields[] = { "name", "state", "totalLag", "maxTimeLag", "members" };
    cli_table t;
    cli_table_init(&t, 6, headers);
    int g;
    for (uint32_t i = 0; (g = json_at(d, 0, i)) >= 0; i++) {
        for (int f = 0; f < 5; f++) cli_table_add_field(&t, d, g, fields[f]);
        cli_table_add_joined(&t, d, json_get(d, (uint32_t)g, "queues"));
    }
    cli_table_print_or(&t, "(no consumer groups)");
    cli_table_fini(&t);
}

static void groups_show_cursors(const json_doc *d)
{
    static const char *const headers[] = {
        "QUEUE", "PARTITION", "COMMITTED", "LAG", "TIME_LAG", "RETRIES", "CONSUMED",
        "LEASE_ID", "LEASE_EXPIRES", "LAST_ACTIVITY",
    };
    static const char *const fields[] = {
        "queue", "partition", "committedOffset", "lag", "timeLag", "retryCount",
        "totalConsumed", "lease.leaseId", "lease.expiresAt", "lastActivityAt",
    };
    cli_print_rows(d, "partitions", 10, headers, fields, "(no cursors)");
}

static void groups_show_subscriptions(const json_doc *d)
{
    static const char *const headers[] = { "SUBSCRIBED_QUEUE", "FROM", "CREATED_AT" };
    static const char *const fields[] = { "queue", "from", "createdAt" };
    cli_print_rows(d, "subscriptions", 3, headers, fields, "(no subscriptions)");
}

static void groups_show_render(const json_doc *d)
{
    cli_print_member(d, "group ", "name", "\n\n");
    groups_show_cursors(d);
    putchar('\n');
    groups_show_subscriptions(d);
}

static int groups_list(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "groups", groups_usage, "/api/v1/consumer-groups", groups_list_render);
}

static int groups_show(int argc, char **argv)
{
    static const cli_item_verb verb = { "groups show", show_usage, "GET", "/api/v1/consumer-groups", NULL };
    return cli_item_call(&verb, argc, argv, groups_show_render);
}

static void groups_rm_render(const json_doc *d)
{
    cli_print_deleted(d, "cursors", "cursor");
}

typedef struct rm_opts {
    const char *queue;
    bool        metadata;
    bool        json;
} rm_opts;

static int groups_rm_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const rm_opts *o = opts;
    if (o->queue && !*o->queue) return cli_usage_error(cmd, "--queue needs a queue name");
    buf path;
    buf_init(&path);
    buf_puts(&path, "/api/v1/consumer-groups");
    cli_path_segment(&path, a->pos[0]);
    if (o->queue) {
        buf_puts(&path, "/queues");
        cli_path_segment(&path, o->queue);
    }
    cli_query_param(&path, "deleteMetadata", o->metadata ? "true" : "false");
    int rc = cli_call("DELETE", path.data, NULL, o->json, groups_rm_render);
    buf_fini(&path);
    return rc;
}

static int groups_rm(int argc, char **argv)
{
    rm_opts o = { 0 };
    const cli_opt opts[] = {
        { "queue",           CLI_OPT_STR,  &o.queue },
        { "delete-metadata", CLI_OPT_FLAG, &o.metadata },
        { "json",            CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "groups rm", rm_usage, opts, sizeof opts / sizeof opts[0], 1, 1 };
    return cli_run(&cmd, argc, argv, groups_rm_run, &o);
}

int cli_groups(int argc, char **argv)
{
    static const cli_verb verbs[] = {
        { "list", groups_list },
        { "show", groups_show },
        { "rm",   groups_rm },
    };
    return cli_dispatch("groups", groups_usage, verbs, sizeof verbs / sizeof verbs[0], argc, argv);
}

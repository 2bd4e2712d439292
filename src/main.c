/* main: the silt binary's subcommand table. Everything silt does is reached
 * from here: the broker, the schema tool and the command-line client. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "db/migrate.h"
#include "api/server.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    { "server",    server_main,   "run the broker (HTTP API and maintenance)" },
    { "migrate",   migrate_main,  "apply the schema to the database and exit" },
    { "push",      cli_push,      "push messages to a queue" },
    { "pop",       cli_pop,       "pop messages from a queue" },
    { "ack",       cli_ack,       "acknowledge a popped message" },
    { "configure", cli_configure, "create a queue or change its options" },
    { "queues",    cli_queues,    "list queues, show or delete one" },
    { "groups",    cli_groups,    "list consumer groups, show or delete one" },
    { "dlq",       cli_dlq,       "list, replay or remove dead letters" },
    { "seek",      cli_seek,      "move a consumer group's cursors" },
    { "tx",        cli_tx,        "run a transaction from a JSON file" },
    { "retention", cli_retention, "explain retention, or run a pass now" },
    { "bench",     cli_bench,     "measure a running server's throughput" },
};

static int usage(void)
{
    fputs("usage: silt <command> [options]\n\ncommands:\n", stderr);
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(stderr, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "silt: unknown command \"%s\"\n", argv[1]);
    return usage();
}

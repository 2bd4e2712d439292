/* main: the silt binary's subcommand table. Everything silt does is reached
 * from here: the broker, the schema tool and the command-line client. */
#include <stdio.h>
#include <string.h>
#include "api/server.h"
#include "base/conffile.h"
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "db/migrate.h"

static const char server_usage[] =
    "usage: silt server [--config FILE]\n"
    "\n"
    "Runs the broker: applies the schema, then serves the HTTP API (PORT,\n"
    "default 6632) and runs retention and maintenance-mode work until SIGTERM\n"
    "or SIGINT, which drain it. Its own settings are environment variables\n"
    "(docs/operations.md lists every one and its default).\n"
    "\n"
    "  --config FILE   silt.conf: task queues and recovery (default: the file\n"
    "                  SILT_CONFIG names; with neither, every default). A file\n"
    "                  with errors stops the server before it starts, with the\n"
    "                  report of \"silt check-config\" (docs/configuration.md).\n";

static const char migrate_usage[] =
    "usage: silt migrate\n"
    "\n"
    "Applies the schema to the database (PG_HOST, PG_PORT, PG_USER,\n"
    "PG_PASSWORD, PG_DB or DATABASE_URL) and exits; safe to run concurrently\n"
    "and again. silt server does the same at start.\n";

/* The broker and the schema tool take no arguments: anything given is a
 * mistake worth saying, not something to ignore. */
static int no_arguments(const char *name, const char *usage, int argc, char **argv, int (*run)(int, char **))
{
    const cli_cmd cmd = { name, usage, NULL, 0, 0, 0 };
    cli_args args;
    int code;
    int parsed = cli_parse(&cmd, argc, argv, &args, &code);
    cli_args_fini(&args);   /* allocated on every path, --help's too */
    return parsed < 0 ? code : run(argc, argv);
}

/* `--config FILE` or SILT_CONFIG: resolved here, read by the server. */
static int run_server(int argc, char **argv)
{
    const char *config = NULL;
    const cli_opt opts[] = { { "config", CLI_OPT_STR, &config } };
    const cli_cmd cmd = { "server", server_usage, opts, 1, 0, 0 };
    cli_args args;
    int code;
    int parsed = cli_parse(&cmd, argc, argv, &args, &code);
    cli_args_fini(&args);
    return parsed < 0 ? code : server_main(conffile_locate(config));
}

static int run_migrate(int argc, char **argv) { return no_arguments("migrate", migrate_usage, argc, argv, migrate_main); }

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    { "server",    run_server,    "run the broker (HTTP API and maintenance)" },
    { "migrate",   run_migrate,   "apply the schema to the database and exit" },
    { "check-config", cli_check_config, "check silt.conf, every problem reported together" },
    { "push",      cli_push,      "push messages to a queue" },
    { "pop",       cli_pop,       "pop messages from a queue" },
    { "ack",       cli_ack,       "acknowledge a popped message" },
    { "configure", cli_configure, "create a queue or change its options" },
    { "queues",    cli_queues,    "list queues, show or delete one" },
    { "groups",    cli_groups,    "list consumer groups, show or delete one" },
    { "dlq",       cli_dlq,       "list, replay or remove dead letters" },
    { "seek",      cli_seek,      "move a consumer group's cursors" },
    { "tx",        cli_tx,        "run a transaction from a JSON file" },
    { "retention", cli_retention, "explain log retention, run a pass; task history classes, leaves, coverage" },
    { "task",      cli_task,      "send a task, show, cancel, list or rerun tasks; pause a queue" },
    { "worker",    cli_worker,    "run a command once per task claimed from queues" },
    { "workers",   cli_workers,   "list the registered workers" },
    { "workflow",  cli_workflow,  "start a workflow, show, list, pause, resume or cancel one" },
    { "schedules", cli_schedules, "list the schedules, their origin, last and next fires" },
    { "schedule",  cli_schedule,  "list, show, create, change, pause, resume or delete a schedule" },
    { "bench",     cli_bench,     "measure a running server's throughput" },
    { "chaos",     cli_chaos,     "a push/pop/ack workload that checks crash safety (scripts/chaos.sh)" },
};

static void usage(FILE *out)
{
    fputs("usage: silt <command> [options]\n\ncommands:\n", out);
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-12s %s\n", subcommands[i].name, subcommands[i].summary);
    fputs("\n\"silt <command> --help\" describes a command; \"silt --version\" prints the version.\n", out);
}

static bool is_any(const char *arg, const char *a, const char *b, const char *c)
{
    return strcmp(arg, a) == 0 || strcmp(arg, b) == 0 || (c && strcmp(arg, c) == 0);
}

int main(int argc, char **argv)
{
    if (argc < 2) { usage(stderr); return CLI_EXIT_USAGE; }
    if (is_any(argv[1], "--help", "-h", "help")) { usage(stdout); return CLI_EXIT_OK; }
    if (is_any(argv[1], "--version", "version", NULL)) { printf("silt %s\n", SILT_VERSION); return CLI_EXIT_OK; }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "silt: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}

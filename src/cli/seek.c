/* seek: `silt seek`, one POST /api/v1/consumer-groups/<g>/queues/<q>
 * [/partitions/<p>]/seek moving a group's cursors to the end of the queue or
 * to a timestamp. The server wants exactly one target; asking for both or
 * neither is caught here as a usage error. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>

static const char seek_usage[] =
    "usage: silt seek <group> <queue> (--to-end | --to TIMESTAMP) [options]\n"
    "\n"
    "Moves a consumer group's cursors on a queue (or one partition of it),\n"
    "releasing its leases and resetting retry counts. The group's next pop\n"
    "reads from there.\n"
    "\n"
    "options:\n"
    "  --to-end          skip everything written so far\n"
    "  --to TIMESTAMP    go back or forward to the first message committed at\n"
    "                    or after TIMESTAMP (ISO 8601, e.g. 2025-01-31T12:00:00Z)\n"
    "  --partition P     only partition P\n"
    "  --json            print the server's reply as JSON\n"
    "  --help            show this help\n"
    CLI_USAGE_SERVER;

typedef struct seek_opts {
    const char *partition;
    const char *to;
    bool        to_end;
    bool        json;
} seek_opts;

static void seek_render(const json_doc *d)
{
    static const char *const headers[] = { "PARTITION", "PARTITION_ID", "COMMITTED_OFFSET" };
    static const char *const fields[] = { "partition", "partitionId", "committedOffset" };
    cli_print_rows(d, "partitions", 3, headers, fields, "(no partitions moved)");
}

static void seek_build(buf *path, buf *body, const cli_args *a, const seek_opts *o)
{
    buf_puts(path, "/api/v1/consumer-groups");
    cli_path_segment(path, a->pos[0]);
    buf_puts(path, "/queues");
    cli_path_segment(path, a->pos[1]);
    if (o->partition) {
        buf_puts(path, "/partitions");
        cli_path_segment(path, o->partition);
    }
    buf_puts(path, "/seek");
    if (o->to_end) buf_puts(body, "{\"toEnd\":true}");
    else {
        buf_puts(body, "{\"timestamp\":");
        json_put_cstr(body, o->to);
        buf_putc(body, '}');
    }
}

static int seek_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const seek_opts *o = opts;
    if (o->to_end == (o->to != NULL)) return cli_usage_error(cmd, "give exactly one of --to-end and --to");
    if (o->to && !*o->to) return cli_usage_error(cmd, "--to needs a timestamp");
    buf path, body;
    buf_init(&path);
    buf_init(&body);
    seek_build(&path, &body, a, o);
    int rc = cli_call("POST", path.data, &body, o->json, seek_render);
    buf_fini(&body);
    buf_fini(&path);
    return rc;
}

int cli_seek(int argc, char **argv)
{
    seek_opts o = { 0 };
    const cli_opt opts[] = {
        { "partition", CLI_OPT_STR,  &o.partition },
        { "to",        CLI_OPT_STR,  &o.to },
        { "to-end",    CLI_OPT_FLAG, &o.to_end },
        { "json",      CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { "seek", seek_usage, opts, sizeof opts / sizeof opts[0], 2, 2 };
    return cli_run(&cmd, argc, argv, seek_run, &o);
}

/* check_config: `silt check-config [FILE]`, silt.conf checked without a
 * server or a database. The report is the one `silt server` prints when it
 * refuses to start (base/conffile.h), so a deploy can run this first and
 * see every problem at once. */
#include <stdio.h>
#include <stdlib.h>
#include "base/conffile.h"
#include "cli/cli.h"
#include "cli/cli_common.h"

static const char check_config_usage[] =
    "usage: silt check-config [FILE]\n"
    "\n"
    "Reads and checks silt.conf: FILE, else the file SILT_CONFIG names. Every\n"
    "problem is reported together on standard error, each with its line\n"
    "(error[HRS-NNN]: ...), and the exit status is 1. A good file prints one\n"
    "line (\"silt.conf: ok (2 queues)\") and exits 0. Needs no server.\n"
    "docs/configuration.md describes every section, key and error code.\n";

static int check(const char *path)
{
    silt_conf c;
    buf report;
    buf_init(&report);
    int errors = conffile_load(path, &c, &report);
    if (errors) fputs(report.data, stderr);
    else printf("%s: ok (%zu queue%s)\n", path, c.nqueues, c.nqueues == 1 ? "" : "s");
    buf_fini(&report);
    conffile_free(&c);
    return errors ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

int cli_check_config(int argc, char **argv)
{
    const cli_cmd cmd = { "check-config", check_config_usage, NULL, 0, 0, 1 };
    cli_args args;
    int code;
    if (cli_parse(&cmd, argc, argv, &args, &code) < 0) { cli_args_fini(&args); return code; }
    const char *path = conffile_locate(args.npos ? args.pos[0] : NULL);
    code = path ? check(path) : cli_usage_error(&cmd, "no file to check (give FILE or set SILT_CONFIG)");
    cli_args_fini(&args);
    return code;
}

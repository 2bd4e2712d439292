/* schedules: `silt schedules`, the schedules of the server's silt.conf and
 * where each stands (GET /api/v1/schedules): its cron and timezone, the
 * task it sends, when it last fired and when it fires next. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>

static const char schedules_usage[] =
    "usage: silt schedules [--json]\n"
    "\n"
    "Lists the schedules of the server's silt.conf ([schedule.NAME] sections):\n"
    "NAME, CRON, TIMEZONE, TASK, QUEUE, LAST_FIRED_AT (\"-\" when it never fired)\n"
    "and NEXT_FIRE. --json also shows each one's catchUp, lastSlot (the last\n"
    "slot fired or passed over) and lastTaskId.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP
    CLI_USAGE_SERVER;

static void schedules_render(const json_doc *d)
{
    static const char *const headers[] = { "NAME", "CRON", "TIMEZONE", "TASK", "QUEUE", "LAST_FIRED_AT", "NEXT_FIRE" };
    static const char *const fields[] = { "name", "cron", "timezone", "task", "queue", "lastFiredAt", "nextFire" };
    cli_print_rows(d, "schedules", 7, headers, fields, "(no schedules)");
}

int cli_schedules(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "schedules", schedules_usage, "/api/v1/schedules", schedules_render);
}

/* schedules: `silt schedule list|show|create|set|pause|resume|delete` (and
 * `silt schedules`, the list): the schedules over /api/v1/schedules. Those
 * of silt.conf are listed with origin "config" and only read here; those
 * made with `create` (origin "api") are changed, paused, resumed and
 * deleted at run time. Options are checked here first (JSON args, numbers),
 * so a typo is a usage error; the server checks every rule again. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char schedules_usage[] =
    "usage: silt schedules [--json]\n"
    "\n"
    "Lists the schedules (the same as \"silt schedule list\"): NAME, ORIGIN\n"
    "(config: silt.conf's [schedule.NAME]; api: made with \"silt schedule\n"
    "create\"), PAUSED, CRON, TIMEZONE, TASK, QUEUE, LAST_FIRED_AT (\"-\" when\n"
    "it never fired) and NEXT_FIRE. --json also shows each one's args,\n"
    "catchUp, priority, lastSlot (the last slot fired or passed over) and\n"
    "lastTaskId.\n"
    "\n"
    "options:\n"
    CLI_USAGE_JSON_HELP
    CLI_USAGE_SERVER;

static const char schedule_usage[] =
    "usage: silt schedule <list | show | create | set | pause | resume | delete> [options]\n"
    "\n"
    "Schedules send a task at every slot of a cron expression:\n"
    "\n"
    "  list                              every schedule and where it stands\n"
    "  show <name>                       one schedule\n"
    "  create <name> --cron EXPR --task T --queue Q [options]\n"
    "                                    a schedule made at run time\n"
    "  set <name> [options]              change what the options give\n"
    "  pause <name>                      fire nothing until resumed\n"
    "  resume <name>                     fire again from the next slot\n"
    "  delete <name>                     stop it and forget it\n"
    "\n"
    "Only schedules made with create can be changed, paused or deleted; those\n"
    "of silt.conf are changed in the file. \"silt schedule <verb> --help\"\n"
    "describes each.\n"
    CLI_USAGE_SERVER;

#define DEFINITION_OPTIONS \
    "  --cron EXPR                  minute hour day-of-month month day-of-week\n" \
    "  --timezone TZ                the wall clock the cron reads (default UTC)\n" \
    "  --task T                     the name of the task it sends\n" \
    "  --queue Q                    the queue the task is sent to\n" \
    "  --args JSON                  the task's args, any JSON value (default null)\n" \
    "  --catch-up N                 slots missed while no server ran: skip (0,\n" \
    "                               default) or run up to the N most recent, 1-1000\n" \
    "  --priority N                 the task's priority, 1-100 (default: the queue's)\n" \
    "  --retention-class-key K      the tasks' retention class (default: the queue's)\n"

static const char create_usage[] =
    "usage: silt schedule create <name> --cron EXPR --task T --queue Q [options]\n"
    "\n"
    "Creates a schedule (admin). Its first slot is the first after now. The\n"
    "name is 1 to 48 characters of A-Z a-z 0-9 _ -, and no other schedule's.\n"
    "\n"
    "options:\n"
    DEFINITION_OPTIONS
    "  --paused                     create it paused\n"
    CLI_USAGE_JSON_HELP;

static const char set_usage[] =
    "usage: silt schedule set <name> [options]\n"
    "\n"
    "Changes what the options give of a schedule made with create (admin); the\n"
    "rest stays. A new cron or timezone takes effect from the first slot after\n"
    "now.\n"
    "\n"
    "options:\n"
    DEFINITION_OPTIONS
    CLI_USAGE_JSON_HELP;

static const char show_usage[] =
    "usage: silt schedule show <name> [--json]\n\nShows one schedule and where it stands.\n\noptions:\n"
    CLI_USAGE_JSON_HELP;
static const char pause_usage[] =
    "usage: silt schedule pause <name> [--json]\n\nPauses a schedule made with create (admin): it fires\n"
    "nothing until resumed, and the slots of the pause are skipped.\n\noptions:\n" CLI_USAGE_JSON_HELP;
static const char resume_usage[] =
    "usage: silt schedule resume <name> [--json]\n\nResumes a paused schedule (admin): it fires again from\n"
    "its first slot after now.\n\noptions:\n" CLI_USAGE_JSON_HELP;
static const char delete_usage[] =
    "usage: silt schedule delete <name> [--json]\n\nDeletes a schedule made with create (admin): no slot\n"
    "fires after the delete. Its tasks already sent stay.\n\noptions:\n" CLI_USAGE_JSON_HELP;

/* ---- list, show, pause, resume, delete ---- */

static void list_render(const json_doc *d)
{
    static const char *const headers[] = { "NAME", "ORIGIN", "PAUSED", "CRON", "TIMEZONE", "TASK", "QUEUE",
                                           "LAST_FIRED_AT", "NEXT_FIRE" };
    static const char *const fields[] = { "name", "origin", "paused", "cron", "timezone", "task", "queue",
                                          "lastFiredAt", "nextFire" };
    cli_print_rows(d, "schedules", 9, headers, fields, "(no schedules)");
}

int cli_schedules(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "schedules", schedules_usage, "/api/v1/schedules", list_render);
}

static int schedule_list(int argc, char **argv)
{
    return cli_get_verb(argc, argv, "schedule list", schedules_usage, "/api/v1/schedules", list_render);
}

static int schedule_show(int argc, char **argv)
{
    static const cli_item_verb verb = { "schedule show", show_usage, "GET", "/api/v1/schedules", NULL };
    return cli_item_call(&verb, argc, argv, cli_render_fields);
}

static int schedule_pause(int argc, char **argv)
{
    static const cli_item_verb verb = { "schedule pause", pause_usage, "POST", "/api/v1/schedules", "/pause" };
    return cli_item_call(&verb, argc, argv, cli_render_fields);
}

static int schedule_resume(int argc, char **argv)
{
    static const cli_item_verb verb = { "schedule resume", resume_usage, "POST", "/api/v1/schedules", "/resume" };
    return cli_item_call(&verb, argc, argv, cli_render_fields);
}

static void deleted_render(const json_doc *d)
{
    cli_print_member(d, "deleted schedule ", "name", "\n");
}

static int schedule_delete(int argc, char **argv)
{
    static const cli_item_verb verb = { "schedule delete", delete_usage, "DELETE", "/api/v1/schedules", NULL };
    return cli_item_call(&verb, argc, argv, deleted_render);
}

/* ---- create, set ---- */

typedef struct definition_opts {
    const char *cron, *timezone, *task, *queue, *args, *catch_up, *class_key;
    long priority;   /* -1: not given */
    bool paused, json;
} definition_opts;

/* --catch-up: "skip" is 0. */
static int put_catch_up(const cli_cmd *cmd, const char *text, buf *b)
{
    if (!text) return 0;
    char *end;
    long n = strcmp(text, "skip") == 0 ? 0 : strtol(text, &end, 10);
    if (strcmp(text, "skip") != 0 && (!*text || *end || n < 0 || n > 1000))
        return cli_usage_error(cmd, "--catch-up needs skip or a number from 0 to 1000, got \"%s\"", text);
    cli_put_long_member(b, "catchUp", n);
    return 0;
}

static int put_args(const cli_cmd *cmd, const char *text, buf *b)
{
    if (!text) return 0;
    json_doc d;
    json_doc_init(&d);
    int rc = json_parse(&d, text, strlen(text), 1u << 16);
    if (rc < 0) rc = cli_usage_error(cmd, "--args is not valid JSON: %s", d.error);
    else {
        cli_put_key(b, "args");
        buf_puts(b, text);
    }
    json_doc_fini(&d);
    return rc;
}

/* The members the options give, after "{" and those before them. */
static int put_definition(const cli_cmd *cmd, const definition_opts *o, buf *b)
{
    cli_put_str_member(b, "cron", o->cron);
    cli_put_str_member(b, "timezone", o->timezone);
    cli_put_str_member(b, "task", o->task);
    cli_put_str_member(b, "queue", o->queue);
    cli_put_long_member(b, "priority", o->priority);
    cli_put_str_member(b, "retentionClassKey", o->class_key);
    if (put_catch_up(cmd, o->catch_up, b) != 0) return CLI_EXIT_USAGE;
    return put_args(cmd, o->args, b);
}

/* The options both verbs take; paused only by create. */
#define DEFINITION_OPTS(o) \
    { "cron", CLI_OPT_STR, &(o).cron }, { "timezone", CLI_OPT_STR, &(o).timezone }, \
    { "task", CLI_OPT_STR, &(o).task }, { "queue", CLI_OPT_STR, &(o).queue }, \
    { "args", CLI_OPT_STR, &(o).args }, { "catch-up", CLI_OPT_STR, &(o).catch_up }, \
    { "priority", CLI_OPT_INT, &(o).priority }, { "retention-class-key", CLI_OPT_STR, &(o).class_key }, \
    { "json", CLI_OPT_FLAG, &(o).json }

static int create_run(const cli_cmd *cmd, const cli_args *a, void *arg)
{
    const definition_opts *o = arg;
    if (!o->cron || !o->task || !o->queue) return cli_usage_error(cmd, "--cron, --task and --queue are required");
    buf body;
    buf_init(&body);
    buf_puts(&body, "{\"name\":");
    json_put_cstr(&body, a->pos[0]);
    if (o->paused) buf_puts(&body, ",\"paused\":true");
    int rc = put_definition(cmd, o, &body);
    buf_putc(&body, '}');
    if (rc == 0) rc = cli_call("POST", "/api/v1/schedules", &body, o->json, cli_render_fields);
    buf_fini(&body);
    return rc;
}

static int schedule_create(int argc, char **argv)
{
    definition_opts o = { .priority = -1 };
    const cli_opt opts[] = { DEFINITION_OPTS(o), { "paused", CLI_OPT_FLAG, &o.paused } };
    const cli_cmd cmd = { "schedule create", create_usage, opts, sizeof opts / sizeof opts[0], 1, 1 };
    return cli_run(&cmd, argc, argv, create_run, &o);
}

static int set_run(const cli_cmd *cmd, const cli_args *a, void *arg)
{
    const definition_opts *o = arg;
    buf body, path;
    buf_init(&body);
    buf_init(&path);
    buf_putc(&body, '{');
    int rc = put_definition(cmd, o, &body);
    buf_putc(&body, '}');
    if (rc == 0 && body.len == 2) rc = cli_usage_error(cmd, "nothing to change: give at least one option");
    buf_puts(&path, "/api/v1/schedules");
    cli_path_segment(&path, a->pos[0]);
    if (rc == 0) rc = cli_call("PATCH", path.data, &body, o->json, cli_render_fields);
    buf_fini(&body);
    buf_fini(&path);
    return rc;
}

static int schedule_set(int argc, char **argv)
{
    definition_opts o = { .priority = -1 };
    const cli_opt opts[] = { DEFINITION_OPTS(o) };
    const cli_cmd cmd = { "schedule set", set_usage, opts, sizeof opts / sizeof opts[0], 1, 1 };
    return cli_run(&cmd, argc, argv, set_run, &o);
}

static int schedule_none(int argc, char **argv)
{
    return cli_no_verb("schedule", schedule_usage,
                       "which verb? list, show, create, set, pause, resume or delete", argc, argv);
}

int cli_schedule(int argc, char **argv)
{
    static const cli_verb verbs[] = {
        { "",       schedule_none },
        { "list",   schedule_list },
        { "show",   schedule_show },
        { "create", schedule_create },
        { "set",    schedule_set },
        { "pause",  schedule_pause },
        { "resume", schedule_resume },
        { "delete", schedule_delete },
    };
    return cli_dispatch("schedule", schedule_usage, verbs, sizeof verbs / sizeof verbs[0], argc, argv);
}

/* retention: `silt retention explain` (GET /api/v1/retention/explain) and
 * `silt retention run` (POST /api/v1/system/retention/run): why data is
 * still there, and a pass now. Task history's verbs (classes, leaves,
 * coverage) live in task_retention.c; this file dispatches to them. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <stdlib.h>

static const char retention_usage[] =
    "usage: silt retention explain <queue> [--partition P] [--json]\n"
    "       silt retention run [--dry-run] [--json]\n"
    "       silt retention classes [--json]\n"
    "       silt retention leaves [--class K] [--json]\n"
    "       silt retention coverage [--json]\n"
    "\n"
    "The message log:\n"
    "explain   per partition: the watermark, each rule's boundary, the consumer\n"
    "          group pinning the consumption cap, a segment straddling it, what\n"
    "          the next pass deletes, and why, in words\n"
    "run       runs a retention pass now and lists what it deleted by partition\n"
    "          and rule (--dry-run: only what it would delete)\n"
    "\n"
    "Task history:\n"
    "classes   each retention class: its duration, leaves, bytes and next drop\n"
    "leaves    each leaf (a class's day): its size, drop time and state\n"
    "coverage  whether partition coverage is healthy (exit 0) or red (exit 1),\n"
    "          the last pass and what is wrong\n"
    "\n"
    "\"silt retention <verb> --help\" describes classes, leaves and coverage.\n"
    "The server is SILT_URL (default " CLI_DEFAULT_URL ").\n";

/* The API's toOffset is exclusive (the watermark after the deletion); both
 * tables show the first and the last offset deleted, inclusive. */
static void add_last_offset(cli_table *t, const json_doc *d, int obj, const char *to_path)
{
    int tok = cli_lookup(d, obj, to_path);
    int64_t to;
    char cell[24] = "-";
    if (tok >= 0 && json_int64(d, (uint32_t)tok, &to) == 0) snprintf(cell, sizeof cell, "%lld", (long long)(to - 1));
    cli_table_add(t, cell);
}

static void explain_render(const json_doc *d)
{
    static const char *const headers[] = { "PARTITION", "WATERMARK", "LAST", "RETENTION", "COMPLETED", "MAX_WAIT",
                                           "CAP", "PINNED_BY", "NEXT_RULE", "NEXT_FIRST", "NEXT_LAST" };
    static const char *const fields[] = { "partition", "watermark", "lastOffset", "boundaries.retention",
                                          "boundaries.completedRetention", "boundaries.maxWaitTime",
                                          "consumptionCap.offset", "consumptionCap.pinnedBy",
                                          "nextPass.rule", "nextPass.fromOffset" };
    int list = json_get(d, 0, "partitions"), p;
    cli_table t;
    cli_table_init(&t, 11, headers);
    for (uint32_t i = 0; list >= 0 && (p = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        for (int f = 0; f < 10; f++) cli_table_add_field(&t, d, p, fields[f]);
        add_last_offset(&t, d, p, "nextPass.toOffset");
    }
    cli_table_print(&t, stdout);
    cli_table_fini(&t);
    for (uint32_t i = 0; list >= 0 && (p = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        char *name = cli_get_str(d, p, "partition");
        printf("%s:\n", name ? name : "?");
        cli_print_elements(d, json_get(d, (uint32_t)p, "notes"), "    - ");
        free(name);
    }
}

typedef struct explain_opts {
    const char *partition;
    bool        json;
} explain_opts;

static int explain_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const explain_opts *o = opts;
    (void)cmd;
    const cli_param params[] = { { "queue", a->pos[0] }, { "partition", o->partition } };
    return cli_get_query("/api/v1/retention/explain", params, 2, o->json, explain_render);
}

static int retention_explain(int argc, char **argv)
{
    explain_opts o = { 0 };
    const cli_opt opts[] = { { "partition", CLI_OPT_STR, &o.partition }, { "json", CLI_OPT_FLAG, &o.json } };
    const cli_cmd cmd = { "retention explain", retention_usage, opts, 2, 1, 1 };
    return cli_run(&cmd, argc, argv, explain_run, &o);
}

static void run_render(const json_doc *d)
{
    static const char *const headers[] = { "QUEUE", "PARTITION", "RULE", "FIRST", "LAST", "OFFSETS", "LEASED" };
    static const char *const fields[] = { "queue", "partition", "rule", "fromOffset" };
    int list = json_get(d, 0, "deleted"), p;
    cli_table t;
    cli_table_init(&t, 7, headers);
    for (uint32_t i = 0; list >= 0 && (p = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        for (int f = 0; f < 4; f++) cli_table_add_field(&t, d, p, fields[f]);
        add_last_offset(&t, d, p, "toOffset");
        cli_table_add_field(&t, d, p, "offsets");
        cli_table_add_field(&t, d, p, "leasedOffsets");
    }
    if (t.ncells == 7) puts(cli_is_true(d, 0, "busy") ? "(another server is running the pass)" : "(nothing to delete)");
    else cli_table_print(&t, stdout);
    cli_table_fini(&t);
    cli_table_init(&t, 2, (const char *const[]){ "FIELD", "VALUE" });
    const char *const totals[] = { "steps", "deletingSteps", "idleSteps", "sidecarSteps", "limited",
                                   "sidecarRowsPurged", "partitionsRemoved" };
    for (int f = 0; f < 7; f++) { cli_table_add(&t, totals[f]); cli_table_add_field(&t, d, 0, totals[f]); }
    cli_table_print(&t, stdout);
    cli_table_fini(&t);
}

static int retention_run(int argc, char **argv)
{
    bool dry = false, json = false;
    const cli_opt opts[] = { { "dry-run", CLI_OPT_FLAG, &dry }, { "json", CLI_OPT_FLAG, &json } };
    const cli_cmd cmd = { "retention run", retention_usage, opts, 2, 0, 0 };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0)
        rc = cli_call("POST", dry ? "/api/v1/system/retention/run?dryRun=true" : "/api/v1/system/retention/run",
                      NULL, json, run_render);
    cli_args_fini(&a);
    return rc;
}

int cli_retention(int argc, char **argv)
{
    static const cli_verb verbs[] = {
        { "explain",  retention_explain },
        { "run",      retention_run },
        { "classes",  cli_task_retention_classes },
        { "leaves",   cli_task_retention_leaves },
        { "coverage", cli_task_retention_coverage },
    };
    if (argc < 2) {   /* no verb is the default: each needs saying */
        fprintf(stderr, "silt retention: missing subcommand (explain or run), or for task history classes, "
                        "leaves or coverage\n%s", retention_usage);
        return CLI_EXIT_USAGE;
    }
    return cli_dispatch("retention", retention_usage, verbs, sizeof verbs / sizeof verbs[0], argc, argv);
}

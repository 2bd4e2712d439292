/* ack: `silt ack`, one POST /api/v1/ack naming a message by
 * (partitionId, transactionId), the order of the wire contract, of
 * `silt pop --wide` and of `silt dlq rm`; or, with --last, the message the
 * last `silt pop` recorded (cli/last_pop.h). The server answers 200 even
 * when it refuses the ack, so the exit status comes from the result
 * element's "success", not from the HTTP status. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/last_pop.h"
#include <stdlib.h>
#include <string.h>

static const char ack_usage[] =
    "usage: silt ack (<partitionId> <transactionId> | --last) [options]\n"
    "\n"
    "Acknowledges a popped message, moving the consumer group's cursor.\n"
    "Acking a batch's last message completed commits the batch up to it.\n"
    "\n"
    "options:\n"
    "  --last         the last message the last \"silt pop\" leased, popped by\n"
    "                 this user: its ids, lease and --group come from\n"
    "                 $XDG_STATE_HOME/silt/last-pop (~/.local/state/silt/last-pop\n"
    "                 when XDG_STATE_HOME is unset); --lease and --group given\n"
    "                 here win\n"
    "  --status S     completed (default) | failed | retry | dlq\n"
    "  --lease ID     the leaseId the message was popped under\n"
    "  --group G      consumer group (default: queue mode)\n"
    "  --error TEXT   reason, recorded with failed and dlq acks\n"
    CLI_USAGE_JSON_HELP
    "\n"
    "\"silt pop --wide\" prints the ids in the order ack takes them:\n"
    "PARTITION_ID, TRANSACTION_ID, then LEASE_ID.\n"
    CLI_USAGE_SERVER;

typedef struct ack_opts {
    const char *status;
    const char *lease;
    const char *group;
    const char *error;
    bool        last;
    bool        json;
} ack_opts;

static bool ack_status_ok(const char *s)
{
    static const char *const statuses[] = { "completed", "success", "failed", "retry", "dlq" };
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (strcmp(s, statuses[i]) == 0) return true;
    return false;
}

static void ack_build(buf *b, const char *partition_id, const char *txn, const ack_opts *o)
{
    buf_puts(b, "{\"partitionId\":");
    json_put_cstr(b, partition_id);
    cli_put_str_member(b, "transactionId", txn);
    cli_put_str_member(b, "status", o->status);
    cli_put_str_member(b, "leaseId", o->lease);
    cli_put_str_member(b, "consumerGroup", o->group);
    cli_put_str_member(b, "error", o->error);
    buf_putc(b, '}');
}

/* Exit status from the first result element; its error goes to stderr. */
static int ack_outcome(const json_doc *d, int result)
{
    if (cli_is_true(d, result, "success")) return CLI_EXIT_OK;
    char *err = cli_get_str(d, result, "error");
    cli_error("ack refused: %s", err ? err : "no reason given");
    free(err);
    return CLI_EXIT_FAILED;
}

static int ack_report(const void *opts, const http_response *r)
{
    const ack_opts *o = opts;
    json_doc d;
    if (cli_read_reply(r, &d) < 0) return CLI_EXIT_FAILED;
    int result = json_at(&d, 0, 0);
    if (o->json) cli_print_json(r->body.data, r->body.len);
    else cli_print_members(&d, result, "FIELD");
    int rc = ack_outcome(&d, result);
    json_doc_fini(&d);
    return rc;
}

static int ack_send(const char *partition_id, const char *txn, const ack_opts *o)
{
    buf body;
    buf_init(&body);
    ack_build(&body, partition_id, txn, o);
    int rc = cli_request_judged("POST", "/api/v1/ack", &body, 0, ack_report, o);
    buf_fini(&body);
    return rc;
}

/* --last: the recorded message, acked on the server it was popped from;
 * the options given on this command line win over the recorded ones. */
static int ack_last(const ack_opts *given)
{
    cli_last_pop lp;
    if (cli_last_pop_load(&lp) < 0) return CLI_EXIT_FAILED;
    int rc = CLI_EXIT_FAILED;
    if (strcmp(lp.url, cli_server_url()) != 0)
        cli_error("ack --last: the last pop was from %s, not %s (SILT_URL)", lp.url, cli_server_url());
    else {
        ack_opts o = *given;
        if (!o.lease) o.lease = lp.lease_id;
        if (!o.group) o.group = lp.group;
        rc = ack_send(lp.partition_id, lp.transaction_id, &o);
    }
    cli_last_pop_fini(&lp);
    return rc;
}

static int ack_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const ack_opts *o = opts;
    if (o->status && !ack_status_ok(o->status))
        return cli_usage_error(cmd, "--status must be completed, failed, retry or dlq");
    if (o->last && a->npos > 0)
        return cli_usage_error(cmd, "give either --last or <partitionId> <transactionId>, not both");
    if (o->last) return ack_last(o);
    if (a->npos < 2) return cli_usage_error(cmd, "missing arguments");
    return ack_send(a->pos[0], a->pos[1], o);
}

int cli_ack(int argc, char **argv)
{
    ack_opts o = { 0 };
    const cli_opt opts[] = {
        { "status", CLI_OPT_STR,  &o.status },
        { "lease",  CLI_OPT_STR,  &o.lease },
        { "group",  CLI_OPT_STR,  &o.group },
        { "error",  CLI_OPT_STR,  &o.error },
        { "last",   CLI_OPT_FLAG, &o.last },
        { "json",   CLI_OPT_FLAG, &o.json },
    };
    /* 0 to 2 positionals: --last stands for both (ack_run checks which). */
    const cli_cmd cmd = { "ack", ack_usage, opts, sizeof opts / sizeof opts[0], 0, 2 };
    return cli_run(&cmd, argc, argv, ack_run, &o);
}

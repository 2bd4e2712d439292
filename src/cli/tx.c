/* tx: `silt tx`, one POST /api/v1/transaction with a body read from a file
 * or stdin. The body is checked to be a JSON object here, so a typo is a
 * usage error instead of a 400, and is sent byte-for-byte. The server answers
 * 200 even when it rolls the transaction back, so the exit status comes from
 * the reply's "success", not from the HTTP status. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest body a server accepts (its MAX_BODY_BYTES bound). */
#define TX_MAX_BYTES (1u << 30)
#define TX_CHUNK     65536

static const char tx_usage[] =
    "usage: silt tx <file.json | -> [options]\n"
    "\n"
    "Runs a transaction: the pushes and acks of the file (\"-\" reads standard\n"
    "input) commit together or not at all. The file holds one JSON object:\n"
    "\n"
    "  {\"operations\": [\n"
    "     {\"type\": \"push\", \"items\": [{\"queue\": \"q\", \"payload\": {...}}]},\n"
    "     {\"type\": \"ack\", \"partitionId\": \"...\", \"transactionId\": \"...\",\n"
    "      \"status\": \"completed\"}],\n"
    "   \"requiredLeases\": [\"<leaseId>\", ...]}\n"
    "\n"
    "Exits 1 when the server rolls the transaction back.\n"
    "\n"
    "options:\n"
    "  --json          print the server's reply as JSON\n"
    "  --help          show this help\n"
    CLI_USAGE_SERVER;

/* Reads all of f into out, at most TX_MAX_BYTES; 0 ok, -1 too large or
 * a read error (errno set for the latter, 0 for the former). */
static int tx_read_all(FILE *f, buf *out)
{
    for (;;) {
        buf_reserve(out, TX_CHUNK);
        size_t n = fread(out->data + out->len, 1, TX_CHUNK, f);
        out->len += n;
        out->data[out->len] = '\0';
        if (out->len > TX_MAX_BYTES) { errno = 0; return -1; }
        if (n < TX_CHUNK) return ferror(f) ? -1 : 0;
    }
}

/* The body from file or stdin, checked to be a JSON object; 0 or 2. */
static int tx_load(const cli_cmd *cmd, const char *file, buf *body)
{
    bool from_stdin = strcmp(file, "-") == 0;
    const char *where = from_stdin ? "standard input" : file;
    FILE *f = from_stdin ? stdin : fopen(file, "rb");
    if (!f) return cli_usage_error(cmd, "cannot open \"%s\": %s", file, strerror(errno));
    int rc = tx_read_all(f, body);
    int err = errno;
    if (!from_stdin) fclose(f);
    if (rc < 0 && err == 0)
        return cli_usage_error(cmd, "%s is larger than %u bytes", where, TX_MAX_BYTES);
    if (rc < 0) return cli_usage_error(cmd, "cannot read %s: %s", where, strerror(err));
    return cli_check_json_object(cmd, where, body, "is not a JSON object");
}

static void tx_add_result(cli_table *t, const json_doc *d, int res)
{
    static const char *const fields[] = { "index", "type" };
    for (int f = 0; f < 2; f++) cli_table_add_field(t, d, res, fields[f]);
    int status = json_get(d, (uint32_t)res, "status");
    if (status >= 0) cli_table_add_value(t, d, status);
    else {
        bool acked = cli_is_true(d, res, "success"), dead = cli_is_true(d, res, "dlq");
        cli_table_add(t, !acked ? "failed" : dead ? "dead-lettered" : "acked");
    }
    cli_table_add_field(t, d, res, "queueName");
    int txn = json_get(d, (uint32_t)res, "transaction_id");
    cli_table_add_value(t, d, txn >= 0 ? txn : json_get(d, (uint32_t)res, "transactionId"));
    cli_table_add_field(t, d, res, "message_id");
}

static void tx_table(const json_doc *d)
{
    cli_print_member(d, "transaction ", "transactionId", " committed\n\n");
    static const char *const headers[] = {
        "INDEX", "TYPE", "STATUS", "QUEUE", "TRANSACTION_ID", "MESSAGE_ID",
    };
    int results = json_get(d, 0, "results"), res;
    cli_table t;
    cli_table_init(&t, 6, headers);
    for (uint32_t i = 0; results >= 0 && (res = json_at(d, (uint32_t)results, i)) >= 0; i++)
        tx_add_result(&t, d, res);
    cli_table_print(&t, stdout);
    cli_table_fini(&t);
}

/* ctx: the bool --json. */
static int tx_report(const void *json_flag, const http_response *r)
{
    bool json = *(const bool *)json_flag;
    json_doc d;
    if (cli_read_reply(r, &d) < 0) return CLI_EXIT_FAILED;
    bool ok = cli_is_true(&d, 0, "success");
    if (json) cli_print_json(r->body.data, r->body.len);
    else if (ok) tx_table(&d);
    if (!ok) {
        char *err = cli_get_str(&d, 0, "error");
        cli_error("transaction rolled back: %s", err ? err : "no reason given");
        free(err);
    }
    json_doc_fini(&d);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

static int tx_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const bool *json = opts;
    buf body;
    buf_init(&body);
    int rc = tx_load(cmd, a->pos[0], &body);
    if (rc == 0) rc = cli_request_judged("POST", "/api/v1/transaction", &body, 0, tx_report, json);
    buf_fini(&body);
    return rc;
}

int cli_tx(int argc, char **argv)
{
    return cli_run_json_only("tx", tx_usage, 1, 1, argc, argv, tx_run);
}

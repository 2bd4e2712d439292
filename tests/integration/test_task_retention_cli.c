/* Integration: `silt retention classes | leaves | coverage`, task history's
 * retention seen from the command line, run as the real binary against a
 * per-test server whose silt.conf maps a queue to a class of its own. Passes
 * are run over HTTP once the server's own first pass has ended (so the two
 * never meet), and a leaf goes missing the way an operator would lose it:
 * DROP TABLE behind silt's back. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"

#define DEADLINE_MS 30000   /* generous: two cores, other suites running */
#define CLI_OUT     65536

static const char CONF[] = "[queue.emails]\n[retention]\nqueue_retention.emails = 7d\n";

/* Runs `silt <args>` with SILT_URL=url, stdout and stderr into out; the
 * exit status. */
static int cli(const char *url, char *out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cli(const char *url, char *out, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return run_cmd(sfmt("SILT_URL='%s' '%s' %s 2>&1", url, silt_bin(), args), out, CLI_OUT);
}

/* A server with CONF, once its own first partition pass has ended. */
static void start_server(silt_server *s)
{
    srv_start(s, (const char *const[]){ sfmt("SILT_CONFIG=%s", test_file("silt.conf", CONF)), NULL });
    srv_await_metric(s, "silt_task_partition_passes_total", 1, DEADLINE_MS);
}

/* A partition pass now; its outcome. */
static const char *run_pass(silt_server *s)
{
    reply r;
    rq(s, "POST", "/api/v1/system/task-retention/run", NULL, &r);
    CHECK_INT(r.status, 200);
    CHECK(!jbool(&r, "yielded"));
    const char *outcome = sfmt("%s", jstr(&r, "outcome"));
    reply_fini(&r);
    return outcome;
}

/* Lines of out that start with prefix. */
static int count_lines_starting(const char *out, const char *prefix)
{
    int n = 0;
    for (const char *p = out; *p; ) {
        size_t len = strcspn(p, "\n");
        n += strncmp(p, prefix, strlen(prefix)) == 0;
        p += len + (p[len] == '\n');
    }
    return n;
}

/* The cell of row under the column header names (columns are aligned). */
static const char *cell_under(const char *header, const char *row, const char *name)
{
    const char *col = strstr(header, name);
    CHECK(col != NULL);
    size_t at = (size_t)(col - header);
    CHECK(strlen(row) > at);
    return sfmt("%.*s", (int)strcspn(row + at, " "), row + at);
}

/* The header line starting with first, kept. */
static void header_of(const char *out, const char *first, char header[512])
{
    const char *h = line_starting(out, first);
    if (!h) harness_failf(__FILE__, __LINE__, "no header \"%s\" in:\n%s", first, out);
    snprintf(header, 512, "%s", h);
}

/* The row starting with "key ", kept; fails the test when there is none. */
static void row_of(const char *out, const char *key, char row[4096])
{
    const char *r = line_starting(out, sfmt("%s ", key));
    if (!r) harness_failf(__FILE__, __LINE__, "no row \"%s\" in:\n%s", key, out);
    snprintf(row, 4096, "%s", r);
}

static bool all_digits(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

/* standard_30d and forever are silt's own; the queue_retention mapping
 * of emails makes q_emails_7d. A null duration reads "forever". */
TEST(cli_retention_classes_lists_standard_30d_forever_and_a_mapped_class_with_durations)
{
    silt_server s;
    start_server(&s);
    static char out[CLI_OUT];
    char header[512], row[4096];
    CHECK_INT(cli(s.url, out, "retention classes"), 0);
    header_of(out, "CLASS ", header);
    static const char *const columns[] = { "DURATION", "ORIGIN", "LEAVES", "BYTES", "RECORDS", "OLDEST_LEAF",
                                           "NEXT_DROP" };
    for (size_t i = 0; i < sizeof columns / sizeof columns[0]; i++) CHECK(strstr(header, columns[i]) != NULL);
    row_of(out, "standard_30d", row);
    CHECK_STR(cell_under(header, row, "DURATION"), "30d");
    CHECK_STR(cell_under(header, row, "ORIGIN"), "silt");
    CHECK_STR(cell_under(header, row, "LEAVES"),
              sql("SELECT count(*) FROM horsies_task_history_leaf_catalog WHERE class_key = 'standard_30d'"));
    CHECK(all_digits(cell_under(header, row, "BYTES")));
    CHECK(strcmp(cell_under(header, row, "NEXT_DROP"), "-") != 0);
    row_of(out, "forever", row);
    CHECK_STR(cell_under(header, row, "DURATION"), "forever");
    CHECK_STR(cell_under(header, row, "NEXT_DROP"), "-");   /* never */
    row_of(out, "q_emails_7d", row);
    CHECK_STR(cell_under(header, row, "DURATION"), "7d");
    CHECK_STR(cell_under(header, row, "ORIGIN"), "mapping");
    CHECK_INT(count_lines_starting(out, ""), 1 + atoi(sql("SELECT count(*) FROM horsies_retention_classes")));
    /* --json: the server's reply */
    CHECK_INT(cli(s.url, out, "retention classes --json"), 0);
    CHECK(strstr(out, "\"classKey\": \"q_emails_7d\"") != NULL);
    CHECK(strstr(out, "\"duration\": null") != NULL);
    CHECK(strstr(out, "\"registeredAt\": ") != NULL);
    srv_stop(&s);
}

/* One row per cataloged leaf: today's standard_30d leaf is attached and
 * reads today's day; the forever class's one leaf has no day and no drop. */
TEST(cli_retention_leaves_lists_a_class_leaves_with_day_and_state)
{
    silt_server s;
    start_server(&s);
    static char out[CLI_OUT];
    char header[512], row[4096], leaf[96], day[96], forever[96];
    keep_str(leaf, sql("SELECT tasks.history_leaf_name('standard_30d', (now() AT TIME ZONE 'UTC')::date)"));
    keep_str(day, sql("SELECT to_char((now() AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD')"));
    CHECK_INT(cli(s.url, out, "retention leaves --class standard_30d"), 0);
    header_of(out, "LEAF ", header);
    static const char *const columns[] = { "CLASS", "DAY", "BYTES", "DROPS_AT", "STATE" };
    for (size_t i = 0; i < sizeof columns / sizeof columns[0]; i++) CHECK(strstr(header, columns[i]) != NULL);
    row_of(out, leaf, row);
    CHECK_STR(cell_under(header, row, "CLASS"), "standard_30d");
    CHECK_STR(cell_under(header, row, "DAY"), day);
    CHECK(all_digits(cell_under(header, row, "BYTES")));
    const char *drop_day = sql("SELECT to_char((now() AT TIME ZONE 'UTC')::date + 31, 'YYYY-MM-DD')");
    CHECK(strncmp(cell_under(header, row, "DROPS_AT"), drop_day, 10) == 0);   /* its day's end, 30 days on */
    CHECK_STR(cell_under(header, row, "STATE"), "attached");
    /* that class's leaves, and only them */
    const char *n = sql("SELECT count(*) FROM horsies_task_history_leaf_catalog WHERE class_key = 'standard_30d'");
    CHECK(atoi(n) >= 3);   /* today and the days ahead */
    CHECK_INT(count_lines_starting(out, "horsies_task_history_standard_30d_"), atoi(n));
    CHECK_INT(count_lines_starting(out, ""), 1 + atoi(n));
    /* every class's, forever's among them */
    keep_str(forever, sql("SELECT leaf_name FROM horsies_task_history_leaf_catalog WHERE class_key = 'forever'"));
    CHECK(forever[0] != '\0');
    CHECK_INT(cli(s.url, out, "retention leaves"), 0);
    header_of(out, "LEAF ", header);
    row_of(out, forever, row);
    CHECK_STR(cell_under(header, row, "DAY"), "-");
    CHECK_STR(cell_under(header, row, "DROPS_AT"), "-");
    CHECK_STR(cell_under(header, row, "STATE"), "attached");
    CHECK(line_starting(out, sql("SELECT tasks.history_leaf_name('q_emails_7d', (now() AT TIME ZONE 'UTC')::date)"))
          != NULL);
    /* the class is sent percent-encoded: a key no class has lists nothing */
    CHECK_INT(cli(s.url, out, "retention leaves --class 'no such/class&x=1'"), 0);
    CHECK_STR(out, "(no leaves)\n");
    CHECK_INT(cli(s.url, out, "retention leaves --class q_emails_7d --json"), 0);
    CHECK(strstr(out, "\"classKey\": \"q_emails_7d\"") != NULL);
    CHECK(strstr(out, "\"classKey\": \"standard_30d\"") == NULL);
    CHECK(strstr(out, "\"from\": ") != NULL && strstr(out, "\"state\": \"attached\"") != NULL);
    srv_stop(&s);
}

TEST(cli_retention_coverage_exits_0_when_healthy)
{
    silt_server s;
    start_server(&s);
    static char out[CLI_OUT];
    CHECK_STR(run_pass(&s), "ok");
    CHECK_INT(cli(s.url, out, "retention coverage"), 0);
    CHECK(strncmp(out, "coverage: healthy\n", 18) == 0);
    const char *last = line_starting(out, "last pass: ");
    CHECK(last != NULL);
    CHECK(strstr(last, ", outcome ok") != NULL);
    const char *through = line_starting(out, "history covered through: ");
    CHECK(through != NULL && strstr(through, ": -") == NULL);
    CHECK(line_starting(out, "heartbeats covered through: ") != NULL);
    CHECK(strstr(out, "absent leaves") == NULL && strstr(out, "message: ") == NULL);
    CHECK_INT(cli(s.url, out, "retention coverage --json"), 0);
    CHECK(strstr(out, "\"healthy\": true") != NULL);
    CHECK(strstr(out, "\"lastPass\": {") != NULL);
    srv_stop(&s);
}

/* A leaf dropped outside silt: the next pass reports it, the surface
 * answers 503, and the command renders that answer and exits 1. */
TEST(cli_retention_coverage_exits_1_and_names_an_absent_leaf)
{
    silt_server s;
    start_server(&s);
    static char out[CLI_OUT];
    char leaf[96], header[512], row[4096];
    CHECK_STR(run_pass(&s), "ok");
    keep_str(leaf, sql("SELECT 'horsies_task_history_standard_30d_' || "
                       "to_char((now() AT TIME ZONE 'UTC')::date + 2, 'YYYY_MM_DD')"));
    CHECK_STR(sql("SELECT count(*) FROM horsies_task_history_leaf_catalog WHERE leaf_name = '%s'", leaf), "1");
    sql("DROP TABLE %s", leaf);
    CHECK_STR(run_pass(&s), "incomplete");
    CHECK_INT(cli(s.url, out, "retention coverage"), 1);
    CHECK(strncmp(out, "coverage: RED\n", 14) == 0);
    CHECK(strstr(line_starting(out, "last pass: "), ", outcome incomplete") != NULL);
    CHECK(line_starting(out, "absent leaves") != NULL);
    CHECK(line_starting(out, sfmt("  %s", leaf)) != NULL);
    const char *message = line_starting(out, "message: ");
    CHECK(message != NULL);
    CHECK(strstr(message, "cataloged leaves have no relation") != NULL && strstr(message, leaf) != NULL);
    CHECK(strstr(out, "silt: ") == NULL);   /* an answer, not an error */
    CHECK_INT(cli(s.url, out, "retention coverage --json"), 1);
    CHECK(strstr(out, "\"healthy\": false") != NULL);
    CHECK(strstr(out, sfmt("\"%s\"", leaf)) != NULL);
    /* the leaf reads absent */
    CHECK_INT(cli(s.url, out, "retention leaves --class standard_30d"), 0);
    header_of(out, "LEAF ", header);
    row_of(out, leaf, row);
    CHECK_STR(cell_under(header, row, "STATE"), "absent");
    srv_stop(&s);
}

/* Refused before any request: the URL points nowhere on purpose. */
TEST(cli_retention_leaves_refuses_an_unknown_option)
{
    static char out[CLI_OUT];
    const char *url = "http://127.0.0.1:1";
    CHECK_INT(cli(url, out, "retention leaves --bogus"), 2);
    CHECK(strstr(out, "silt retention leaves: unknown option \"--bogus\"") != NULL);
    CHECK(strstr(out, "usage: silt retention leaves [--class K] [--json]") != NULL);
    CHECK_INT(cli(url, out, "retention leaves --class"), 2);
    CHECK(strstr(out, "--class needs a value") != NULL);
    CHECK_INT(cli(url, out, "retention leaves extra"), 2);
    CHECK(strstr(out, "unexpected argument \"extra\"") != NULL);
    CHECK_INT(cli(url, out, "retention classes --class x"), 2);
    CHECK_INT(cli(url, out, "retention coverage extra"), 2);
    /* a server that cannot be reached is a failure, not a red answer */
    CHECK_INT(cli(url, out, "retention coverage"), 1);
    CHECK(strncmp(out, "silt: ", 6) == 0);
}

TEST(cli_retention_help_lists_every_verb_and_each_describes_itself)
{
    static char out[CLI_OUT];
    const char *url = "http://127.0.0.1:1";
    CHECK_INT(cli(url, out, "retention --help"), 0);
    static const char *const verbs[][2] = {
        { "classes", "usage: silt retention classes [--json]\n" },
        { "leaves", "usage: silt retention leaves [--class K] [--json]\n" },
        { "coverage", "usage: silt retention coverage [--json]\n" },
    };
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        CHECK(strstr(out, sfmt("       silt retention %s", verbs[i][0])) != NULL);   /* the synopsis */
        CHECK(line_starting(out, sfmt("%s ", verbs[i][0])) != NULL);                  /* its line */
    }
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        CHECK_INT(cli(url, out, "retention %s --help", verbs[i][0]), 0);
        if (strncmp(out, verbs[i][1], strlen(verbs[i][1])) != 0)
            harness_failf(__FILE__, __LINE__, "retention %s --help: %s", verbs[i][0], out);
    }
    CHECK_INT(cli(url, out, "retention"), 2);   /* no verb: each named */
    CHECK(strstr(out, "classes, leaves or coverage") != NULL);
}

/* Integration: silt.conf as an operator meets it — `silt check-config`'s
 * exit statuses and output, and `silt server` reading the file from
 * --config or SILT_CONFIG, refusing to start on any error with the same
 * report before it touches the database (docs/configuration.md). */
#include "harness.h"
#include "support.h"
#include "base/buf.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define OUT_BYTES 16384

static const char good_conf[] =
    "# two queues and recovery\n"
    "[queue.emails]\n"
    "priority = 10\n"
    "max_concurrency = 4\n"
    "[queue.reports]\n"
    "[recovery]\n"
    "claimer_heartbeat_interval_ms = 10000\n"
    "claimed_stale_after_ms = 20000\n";

static const char bad_conf[] =
    "[queue.emails]\n"
    "colour = blue\n"
    "[recovery]\n"
    "claimer_heartbeat_interval_ms = 30000\n"
    "claimed_stale_after_ms = 50000\n";

static const char bad_report[] =
    "error[HRS-203]: unknown key `colour` in [queue.emails]\n"
    "  --> %s:2\n"
    "   = help: the keys of [queue.NAME] are priority, max_concurrency, rate_limit, rate_limit_per_key\n"
    "error[HRS-204]: claimed_stale_after_ms must be at least twice the claimer heartbeat interval\n"
    "  --> %s:5\n"
    "   = note: claimed_stale_after_ms = 50000, claimer_heartbeat_interval_ms = 30000\n"
    "   = help: set claimed_stale_after_ms to at least 60000, or lower the interval\n"
    "error: aborting due to 2 previous errors\n";

/* [retention] as the Retention Config document's first example writes it. */
static const char good_retention_conf[] =
    "[queue.emails]\n"
    "[queue.audit]\n"
    "[retention]\n"
    "queue_retention.emails = 7d\n"
    "queue_retention.audit = None\n"
    "terminal_record_retention_hours = 2160\n"
    "retention_classes.audit_1y = 365d\n";

static const char bad_retention_conf[] =
    "[queue.emails]\n"
    "[retention]\n"
    "queue_retention.emails = 1.5d\n"
    "retention_classes.standard_30d = 30d\n"
    "[recovery]\n"
    "terminal_record_retention_hours = 720\n";

static const char bad_retention_report[] =
    "error[HRS-216]: queue_retention.emails in [retention] must be a positive duration such as 7d, 36h, 90m or 45s, or None\n"
    "  --> %s:3\n"
    "   = note: found queue_retention.emails = 1.5d\n"
    "   = help: write 36h: a duration is a whole number and one unit, s, m, h or d\n"
    "error[HRS-216]: retention class key `standard_30d` is reserved\n"
    "  --> %s:4\n"
    "   = note: standard_30d, forever and heartbeats are silt's own classes\n"
    "   = help: declare the class under another key\n"
    "error[HRS-204]: terminal_record_retention_hours moved to [retention]\n"
    "  --> %s:6\n"
    "   = note: it governs how long records live, not how stalled work is detected\n"
    "   = help: set terminal_record_retention_hours in [retention]\n"
    "error: aborting due to 3 previous errors\n";

/* ---- silt check-config --------------------------------------------------- */

TEST(check_config_good_file_prints_one_line_on_stdout_and_exits_0)
{
    static char out[OUT_BYTES];
    const char *good = test_file("good.conf", good_conf);
    CHECK_INT(run_cmd(sfmt("%s check-config %s 2>&1", silt_bin(), good), out, sizeof out), 0);
    CHECK_STR(out, sfmt("%s: ok (2 queues)\n", good));
}

TEST(check_config_bad_file_reports_every_problem_on_stderr_and_exits_1)
{
    static char out[OUT_BYTES];
    const char *bad = test_file("bad.conf", bad_conf);
    CHECK_INT(run_cmd(sfmt("%s check-config %s 2>/dev/null", silt_bin(), bad), out, sizeof out), 1);
    CHECK_STR(out, "");   /* nothing on stdout */
    CHECK_INT(run_cmd(sfmt("%s check-config %s 2>&1 >/dev/null", silt_bin(), bad), out, sizeof out), 1);
    CHECK_STR(out, sfmt(bad_report, bad, bad));
}

TEST(check_config_reads_silt_config_when_no_file_is_given_and_a_file_wins_over_it)
{
    static char out[OUT_BYTES];
    const char *good = test_file("good.conf", good_conf);
    char bad[96];
    keep_str(bad, test_file("bad.conf", bad_conf));
    CHECK_INT(run_cmd(sfmt("SILT_CONFIG=%s %s check-config 2>&1", good, silt_bin()), out, sizeof out), 0);
    CHECK_STR(out, sfmt("%s: ok (2 queues)\n", good));
    CHECK_INT(run_cmd(sfmt("SILT_CONFIG=%s %s check-config %s 2>&1", good, silt_bin(), bad), out, sizeof out), 1);
    CHECK(strstr(out, "error: aborting due to 2 previous errors\n") != NULL);
}

TEST(check_config_accepts_a_good_retention_section)
{
    static char out[OUT_BYTES];
    const char *good = test_file("retention.conf", good_retention_conf);
    CHECK_INT(run_cmd(sfmt("%s check-config %s 2>&1", silt_bin(), good), out, sizeof out), 0);
    CHECK_STR(out, sfmt("%s: ok (2 queues)\n", good));
}

TEST(check_config_reports_retention_problems_as_hrs_216_and_hrs_204_and_exits_1)
{
    static char out[OUT_BYTES];
    const char *bad = test_file("bad-retention.conf", bad_retention_conf);
    CHECK_INT(run_cmd(sfmt("%s check-config %s 2>&1 >/dev/null", silt_bin(), bad), out, sizeof out), 1);
    CHECK_STR(out, sfmt(bad_retention_report, bad, bad, bad));
}

TEST(check_config_without_a_file_or_silt_config_says_so_and_exits_2)
{
    static char out[OUT_BYTES];
    CHECK_INT(run_cmd(sfmt("env -u SILT_CONFIG %s check-config 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "silt check-config: no file to check (give FILE or set SILT_CONFIG)") != NULL);
    CHECK_INT(run_cmd(sfmt("SILT_CONFIG= %s check-config 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK_INT(run_cmd(sfmt("%s check-config a.conf b.conf 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "unexpected argument \"b.conf\"") != NULL);
    CHECK_INT(run_cmd(sfmt("%s check-config --help", silt_bin()), out, sizeof out), 0);
    CHECK(strncmp(out, "usage: silt check-config [FILE]", 31) == 0);
    CHECK_INT(run_cmd(sfmt("%s --help", silt_bin()), out, sizeof out), 0);
    CHECK(strstr(out, "\n  check-config ") != NULL);   /* listed with the other commands */
}

TEST(check_config_unreadable_file_is_hrs_200_and_exits_1)
{
    static char out[OUT_BYTES];
    CHECK_INT(run_cmd(sfmt("%s check-config /nonexistent/silt.conf 2>&1", silt_bin()), out, sizeof out), 1);
    CHECK_STR(out, "error[HRS-200]: cannot read /nonexistent/silt.conf: No such file or directory\n"
                   "  --> /nonexistent/silt.conf\n"
                   "error: aborting due to 1 previous error\n");
}

/* ---- silt server ----------------------------------------------------------- */

/* A port nothing listens on now: a server that wrongly started would take
 * it and keep running, and the test would time out. */
static int unused_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        harness_fail(__FILE__, __LINE__, "no free port");
    close(fd);
    return ntohs(a.sin_port);
}

/* Runs `silt server` with the given arguments and environment against a
 * fresh, empty database on a free port; it must stop by itself. Its exit
 * status, its output in out; fails the test if the database was touched. */
static int server_refusing(const char *env, const char *args, char *out, size_t cap)
{
    static int calls;   /* a database per call: sql_in keeps its connection */
    char db[64];
    snprintf(db, sizeof db, "silt_conf%d_%d", ++calls, (int)getpid());
    db_create(db);
    int64_t started = now_ms();
    int rc = run_cmd(sfmt("env -u SILT_CONFIG %s PG_HOST=127.0.0.1 PG_PORT=%s PG_USER=postgres PG_DB=%s "
                          "STARTUP_DB_WAIT_MS=60000 PORT=%d %s server %s 2>&1",
                          env, pg_port(), db, unused_port(), silt_bin(), args), out, cap);
    CHECK(now_ms() - started < 10000);
    CHECK(strstr(out, "listening on") == NULL);
    /* refused before the schema was applied: the database is as created */
    CHECK_STR(sql_in(db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'queen'"), "0");
    return rc;
}

TEST(server_with_a_bad_config_refuses_to_start_with_the_report_before_touching_the_database)
{
    static char out[OUT_BYTES];
    const char *bad = test_file("bad.conf", bad_conf);
    CHECK_INT(server_refusing("", sfmt("--config %s", bad), out, sizeof out), 2);
    CHECK_STR(out, sfmt(bad_report, bad, bad));
}

/* "Setting one there now fails at construction": a moved field or a bad
 * [retention] stops the server before the database, and is never honoured. */
TEST(server_with_a_bad_retention_config_refuses_to_start_with_hrs_216)
{
    static char out[OUT_BYTES];
    const char *bad = test_file("bad-retention.conf", bad_retention_conf);
    CHECK_INT(server_refusing("", sfmt("--config %s", bad), out, sizeof out), 2);
    CHECK_STR(out, sfmt(bad_retention_report, bad, bad, bad));
}

/* A server given the file (SILT_CONFIG) starts, answers /health and stops cleanly. */
static void starts_and_serves(const char *name, const char *text)
{
    const char *good = test_file(name, text);
    silt_server s;
    const char *env[] = { sfmt("SILT_CONFIG=%s", good), NULL };
    srv_start(&s, env);
    reply r;
    rq(&s, "GET", "/health", NULL, &r);
    CHECK_INT(r.status, 200);
    reply_fini(&r);
    CHECK_INT(srv_stop(&s), 0);
}

TEST(server_with_a_good_retention_config_starts_and_serves)
{
    starts_and_serves("retention.conf", good_retention_conf);
}

TEST(server_reads_silt_config_and_config_wins_over_it)
{
    static char out[OUT_BYTES];
    char good[96], bad[96];
    keep_str(good, test_file("good.conf", good_conf));
    keep_str(bad, test_file("bad.conf", bad_conf));
    CHECK_INT(server_refusing(sfmt("SILT_CONFIG=%s", bad), "", out, sizeof out), 2);
    CHECK(strstr(out, sfmt("  --> %s:5\n", bad)) != NULL);
    CHECK_INT(server_refusing(sfmt("SILT_CONFIG=%s", good), sfmt("--config=%s", bad), out, sizeof out), 2);
    CHECK(strstr(out, "error: aborting due to 2 previous errors\n") != NULL);
    CHECK_INT(server_refusing("", "--config /nonexistent/silt.conf", out, sizeof out), 2);
    CHECK(strstr(out, "error[HRS-200]: cannot read /nonexistent/silt.conf: No such file or directory\n") != NULL);
}

TEST(server_with_a_good_config_starts_and_serves)
{
    starts_and_serves("good.conf", good_conf);
}

TEST(server_config_option_needs_a_value)
{
    static char out[OUT_BYTES];
    CHECK_INT(run_cmd(sfmt("%s server --config 2>&1", silt_bin()), out, sizeof out), 2);
    CHECK(strstr(out, "--config needs a value") != NULL);
    CHECK_INT(run_cmd(sfmt("%s server --help", silt_bin()), out, sizeof out), 0);
    CHECK(strstr(out, "usage: silt server [--config FILE]") != NULL);
}

/* ---- the documentation ----------------------------------------------------- */

/* docs/configuration.md's example file, as written, is a good file. */
TEST(check_config_accepts_the_example_of_docs_configuration)
{
    static char out[OUT_BYTES];
    char *example = doc_block("docs/configuration.md", "```ini");
    const char *path = test_file("good.conf", example);
    CHECK_INT(run_cmd(sfmt("%s check-config %s 2>&1", silt_bin(), path), out, sizeof out), 0);
    CHECK_STR(out, sfmt("%s: ok (4 queues)\n", path));
    free(example);
}

/* The section's own example, as written, is a good file. */
TEST(check_config_accepts_the_retention_example_of_docs_configuration)
{
    static char out[OUT_BYTES];
    char *example = doc_block("docs/configuration.md", "## `[retention]`");
    CHECK(strncmp(example, "[retention]\n", 12) == 0);
    const char *path = test_file("retention.conf", example);
    CHECK_INT(run_cmd(sfmt("%s check-config %s 2>&1", silt_bin(), path), out, sizeof out), 0);
    free(example);
}

/* "Retention reports" shows what silt prints, word for word, for this file. */
TEST(check_config_prints_the_retention_report_of_docs_configuration)
{
    static char out[OUT_BYTES];
    char *want = doc_block("docs/configuration.md", "### Retention reports");
    char cwd[256];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    test_file("silt.conf", "[queue.emails]\n[queue.reports]\n[queue.bulk-mail]\n#\n#\n#\n#\n#\n#\n#\n"
              "[retention]\n"
              "queue_retention.notificationsx = 7d\n"                     /* 12 */
              "retention_classes.standard_30d = 30d\n"
              "retention_classes.q_audit = 1d\n"
              "retention_classes.audit_1y = 365d\n"
              "retention_classes.audit_1y = 180d\n"                       /* 16 */
              "queue_retention.emails = 1.5d\n"
              "history_leaf_horizon_days = 30\n"
              "queue_retention.bulk-mail = 7d\n"
              "queue_retention.emial = 7d\n"                              /* 20 */
              "queue_terminal_record_retention_hours.emails = 168\n");
    const char *bin = silt_bin()[0] == '/' ? silt_bin() : sfmt("%s/%s", cwd, silt_bin());
    CHECK_INT(run_cmd(sfmt("cd %s && %s check-config silt.conf 2>&1", harness_scratch_dir(), bin), out, sizeof out), 1);
    CHECK_STR(out, want);
    free(want);
}

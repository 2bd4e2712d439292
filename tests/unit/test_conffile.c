/* test_conffile: silt.conf (base/conffile.h). Each rule of
 * docs/configuration.md has a test here that fails when the rule breaks:
 * the defaults and bounds of every key, comments, each error code with its
 * line, and every problem of a file reported together with the count.
 *
 * Files are written as "silt.conf" in a fresh directory the test moves into
 * (each test is a process of its own), so reports read "--> silt.conf:N"
 * exactly as an operator sees them. */
#include "harness.h"
#include "base/conffile.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct loaded {
    int       errors;
    silt_conf conf;
    buf       report;   /* "" when there is none */
} loaded;

/* Into the test's scratch directory, where a file's name as given is
 * the one its report names. */
static void enter_temp_dir(void)
{
    if (chdir(harness_scratch_dir()) < 0) harness_fail(__FILE__, __LINE__, "cannot enter the scratch directory");
}

static void write_file(const char *name, const char *text, size_t len)
{
    FILE *f = fopen(name, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
        harness_failf(__FILE__, __LINE__, "cannot write %s", name);
}

/* Loads text as silt.conf; the file is gone again when this returns. */
static void load_bytes(const char *text, size_t len, loaded *l)
{
    enter_temp_dir();
    write_file("silt.conf", text, len);
    buf_init(&l->report);
    l->errors = conffile_load("silt.conf", &l->conf, &l->report);
    if (!l->report.data) buf_puts(&l->report, "");
    unlink("silt.conf");
}

static void load(const char *text, loaded *l)
{
    load_bytes(text, strlen(text), l);
}

static void loaded_fini(loaded *l)
{
    conffile_free(&l->conf);
    buf_fini(&l->report);
}

static int occurrences(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* The report holds exactly this error block (header through its last = line). */
#define CHECK_REPORTS(l, block) \
    do { if (!strstr((l).report.data, (block))) \
             harness_failf(__FILE__, __LINE__, "report lacks:\n%s\nreport:\n%s", (block), (l).report.data); } while (0)

/* The file has exactly one error, this one, and the count says so. */
static void check_only_error(const loaded *l, const char *block)
{
    CHECK_INT(l->errors, 1);
    char want[2048];
    snprintf(want, sizeof want, "%serror: aborting due to 1 previous error\n", block);
    CHECK_STR(l->report.data, want);
}

/* ---- defaults and good files ------------------------------------------- */

TEST(conffile_no_file_means_no_queues_and_every_recovery_default)
{
    silt_conf c;
    conffile_defaults(&c);
    CHECK(c.path == NULL);
    CHECK_INT(c.nqueues, 0);
    CHECK_INT(c.recovery.claimer_heartbeat_interval_ms, 30000);
    CHECK_INT(c.recovery.runner_heartbeat_interval_ms, 30000);
    CHECK_INT(c.recovery.claimed_stale_after_ms, 120000);
    CHECK_INT(c.recovery.running_stale_after_ms, 300000);
    CHECK_INT(c.recovery.check_interval_ms, 30000);
    CHECK(conffile_queue(&c, "emails") == NULL);
    conffile_free(&c);
}

TEST(conffile_empty_file_is_valid_and_keeps_the_defaults)
{
    loaded l;
    load("", &l);
    CHECK_INT(l.errors, 0);
    CHECK_STR(l.report.data, "");
    CHECK_STR(l.conf.path, "silt.conf");
    CHECK_INT(l.conf.nqueues, 0);
    CHECK_INT(l.conf.recovery.claimed_stale_after_ms, 120000);
    loaded_fini(&l);
}

TEST(conffile_queues_come_in_file_order_with_their_section_line_and_defaults)
{
    loaded l;
    load("[queue.emails]\n"
         "priority = 10\n"
         "max_concurrency = 5\n"
         "\n"
         "[queue.reports]\n"
         "[queue.Audit_log-2]\n"
         "max_concurrency = 100000\n", &l);
    CHECK_INT(l.errors, 0);
    CHECK_INT(l.conf.nqueues, 3);
    CHECK_STR(l.conf.queues[0].name, "emails");
    CHECK_INT(l.conf.queues[0].priority, 10);
    CHECK_INT(l.conf.queues[0].max_concurrency, 5);
    CHECK_INT(l.conf.queues[0].line, 1);
    CHECK_STR(l.conf.queues[1].name, "reports");   /* declared with nothing: every default */
    CHECK_INT(l.conf.queues[1].priority, 100);
    CHECK_INT(l.conf.queues[1].max_concurrency, 0);
    CHECK_INT(l.conf.queues[1].line, 5);
    CHECK_STR(l.conf.queues[2].name, "Audit_log-2");
    CHECK_INT(l.conf.queues[2].priority, 100);
    CHECK_INT(l.conf.queues[2].max_concurrency, 100000);
    CHECK_INT(l.conf.queues[2].line, 6);
    CHECK(conffile_queue(&l.conf, "reports") == &l.conf.queues[1]);
    CHECK(conffile_queue(&l.conf, "audit_log-2") == NULL);   /* names are case-sensitive */
    CHECK(conffile_queue(&l.conf, "nope") == NULL);
    loaded_fini(&l);
}

TEST(conffile_reads_every_recovery_key)
{
    loaded l;
    load("[recovery]\n"
         "claimer_heartbeat_interval_ms = 1000\n"
         "runner_heartbeat_interval_ms = 600000\n"
         "claimed_stale_after_ms = 2000\n"
         "running_stale_after_ms = 1200000\n"
         "check_interval_ms = 5000\n", &l);
    CHECK_STR(l.report.data, "");
    CHECK_INT(l.errors, 0);
    CHECK_INT(l.conf.recovery.claimer_heartbeat_interval_ms, 1000);
    CHECK_INT(l.conf.recovery.runner_heartbeat_interval_ms, 600000);
    CHECK_INT(l.conf.recovery.claimed_stale_after_ms, 2000);
    CHECK_INT(l.conf.recovery.running_stale_after_ms, 1200000);
    CHECK_INT(l.conf.recovery.check_interval_ms, 5000);
    CHECK_INT(l.conf.nqueues, 0);
    loaded_fini(&l);
}

TEST(conffile_comments_blank_lines_and_indentation_are_allowed)
{
    loaded l;
    load("# silt.conf\n"
         "; a comment in the other style\n"
         "\n"
         "   \t\n"
         "  # an indented comment\n"
         "[queue.emails]   # the mail queue\n"
         "priority = 5   # most urgent of the two\n"
         "  max_concurrency = 3 ; indented, with a ; comment\n"
         "[ queue.reports ] ; blanks inside the brackets\n"
         "priority=7\n", &l);
    CHECK_STR(l.report.data, "");
    CHECK_INT(l.conf.nqueues, 2);
    CHECK_INT(l.conf.queues[0].priority, 5);
    CHECK_INT(l.conf.queues[0].max_concurrency, 3);   /* indented: a key, not a continued value */
    CHECK_STR(l.conf.queues[1].name, "reports");
    CHECK_INT(l.conf.queues[1].priority, 7);
    loaded_fini(&l);
}

/* A file saved by a Windows editor: a byte-order mark and CRLF line ends
 * change neither the values nor the line numbers. */
TEST(conffile_bom_and_crlf_keep_values_and_lines)
{
    loaded l;
    load("\xEF\xBB\xBF[queue.a]\r\npriority = 3\r\n\r\ncolour = red\r\n", &l);
    check_only_error(&l, "error[HRS-203]: unknown key `colour` in [queue.a]\n"
                         "  --> silt.conf:4\n"
                         "   = help: the keys of [queue.NAME] are priority, max_concurrency, rate_limit, rate_limit_per_key\n");
    CHECK_INT(l.conf.queues[0].priority, 3);
    CHECK_INT(l.conf.queues[0].line, 1);
    loaded_fini(&l);
}

/* ---- each error code ----------------------------------------------------- */

TEST(conffile_hrs_200_a_missing_file_names_the_os_reason)
{
    enter_temp_dir();
    silt_conf c;
    buf report;
    buf_init(&report);
    CHECK_INT(conffile_load("no-such.conf", &c, &report), 1);
    CHECK_STR(report.data, "error[HRS-200]: cannot read no-such.conf: No such file or directory\n"
                           "  --> no-such.conf\n"
                           "error: aborting due to 1 previous error\n");
    CHECK_INT(c.nqueues, 0);
    conffile_free(&c);
    buf_reset(&report);
    CHECK_INT(conffile_load(".", &c, &report), 1);   /* a directory opens, but cannot be read */
    CHECK(strstr(report.data, "error[HRS-200]: cannot read .: Is a directory\n") != NULL);
    conffile_free(&c);
    buf_fini(&report);
}

TEST(conffile_hrs_200_a_file_over_1_mib_is_refused_unread)
{
    size_t len = CONFFILE_MAX_BYTES + 1;
    char *text = malloc(len);
    memset(text, '\n', len);
    loaded l;
    load_bytes(text, len, &l);
    free(text);
    check_only_error(&l, "error[HRS-200]: cannot read silt.conf: larger than 1 MiB\n"
                         "  --> silt.conf\n");
    loaded_fini(&l);
}

TEST(conffile_hrs_201_each_syntax_error_with_its_line)
{
    loaded l;
    load("[queue.a]\n"
         "priority 5\n"                 /* 2: no = */
         "[queue.b\n"                   /* 3: no ] */
         "= 4\n"                        /* 4: no key */
         "[queue.c] priority = 1\n"     /* 5: text after the header */
         "priority = 2\n", &l);
    CHECK_INT(l.errors, 4);
    CHECK_REPORTS(l, "error[HRS-201]: expected `key = value`, a [section] or a comment\n"
                     "  --> silt.conf:2\n"
                     "   = note: found `priority 5`\n");
    CHECK_REPORTS(l, "error[HRS-201]: section header without a closing `]`\n"
                     "  --> silt.conf:3\n"
                     "   = note: found `[queue.b`\n");
    CHECK_REPORTS(l, "error[HRS-201]: missing key before `=`\n"
                     "  --> silt.conf:4\n");
    CHECK_REPORTS(l, "error[HRS-201]: unexpected text after the section header\n"
                     "  --> silt.conf:5\n"
                     "   = note: found `priority = 1`\n");
    CHECK_INT(l.conf.nqueues, 2);   /* [queue.b] was never opened; [queue.c] was */
    CHECK_STR(l.conf.queues[1].name, "c");
    CHECK_INT(l.conf.queues[1].priority, 2);
    loaded_fini(&l);
}

/* Lines inih could not take whole are errors of their own line, and the
 * lines after them keep their numbers. */
TEST(conffile_hrs_201_an_overlong_line_or_a_nul_byte_keeps_later_lines_right)
{
    char text[1024];
    int n = snprintf(text, sizeof text, "[queue.a]\n# %0300d\n", 0);
    memcpy(text + n, "x\0y = 1\ncolour = 1\n", 19);
    loaded l;
    load_bytes(text, (size_t)n + 19, &l);
    CHECK_INT(l.errors, 3);
    CHECK(strstr(l.report.data, "error[HRS-201]: the line is longer than ") != NULL);
    CHECK_REPORTS(l, "  --> silt.conf:2\n");
    CHECK_REPORTS(l, "error[HRS-201]: the line holds a NUL byte\n  --> silt.conf:3\n");
    CHECK_REPORTS(l, "error[HRS-203]: unknown key `colour` in [queue.a]\n  --> silt.conf:4\n");
    loaded_fini(&l);
}

TEST(conffile_hrs_202_an_unknown_section_is_an_error_and_its_keys_are_not_reported_again)
{
    loaded l;
    load("[retentions]\n"
         "queue_retention = 7d\n"
         "[Recovery]\n"
         "[schedules.nightly]\n"
         "[queue]\n"
         "[schedule]\n", &l);
    CHECK_INT(l.errors, 5);
    CHECK_REPORTS(l, "error[HRS-202]: unknown section [retentions]\n"
                     "  --> silt.conf:1\n"
                     "   = help: the sections are [recovery], [retention], [queue.NAME] and [schedule.NAME]\n");
    CHECK_REPORTS(l, "error[HRS-202]: unknown section [Recovery]\n  --> silt.conf:3\n");   /* names are exact */
    CHECK_REPORTS(l, "error[HRS-202]: unknown section [schedules.nightly]\n"
                     "  --> silt.conf:4\n"
                     "   = help: the sections are [recovery], [retention], [queue.NAME] and [schedule.NAME]\n");
    CHECK_REPORTS(l, "error[HRS-202]: unknown section [queue]\n  --> silt.conf:5\n");
    CHECK_REPORTS(l, "error[HRS-202]: unknown section [schedule]\n  --> silt.conf:6\n");
    CHECK_INT(occurrences(l.report.data, "queue_retention"), 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_203_an_unknown_key_names_its_section_and_the_known_keys)
{
    loaded l;
    load("stray = 1\n"
         "[recovery]\n"
         "check_interval = 5000\n", &l);
    CHECK_INT(l.errors, 2);
    CHECK_REPORTS(l, "error[HRS-203]: key `stray` outside any section\n"
                     "  --> silt.conf:1\n"
                     "   = help: put it under [recovery], [retention], a [queue.NAME] or a [schedule.NAME] section\n");
    CHECK_REPORTS(l, "error[HRS-203]: unknown key `check_interval` in [recovery]\n"
                     "  --> silt.conf:3\n"
                     "   = help: the keys of [recovery] are claimer_heartbeat_interval_ms, "
                     "runner_heartbeat_interval_ms, claimed_stale_after_ms, running_stale_after_ms, "
                     "check_interval_ms\n");
    CHECK_INT(l.conf.recovery.check_interval_ms, 30000);
    loaded_fini(&l);
}

TEST(conffile_hrs_204_claimed_stale_below_twice_the_claimer_heartbeat)
{
    loaded l;
    load("[recovery]\n"
         "claimer_heartbeat_interval_ms = 30000\n"
         "claimed_stale_after_ms = 50000\n", &l);
    check_only_error(&l, "error[HRS-204]: claimed_stale_after_ms must be at least twice the claimer heartbeat interval\n"
                         "  --> silt.conf:3\n"
                         "   = note: claimed_stale_after_ms = 50000, claimer_heartbeat_interval_ms = 30000\n"
                         "   = help: set claimed_stale_after_ms to at least 60000, or lower the interval\n");
    loaded_fini(&l);
    load("[recovery]\nclaimed_stale_after_ms = 60000\n", &l);   /* exactly twice is enough */
    CHECK_INT(l.errors, 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_204_running_stale_below_twice_the_runner_heartbeat)
{
    loaded l;
    load("[recovery]\n"
         "running_stale_after_ms = 59999\n", &l);
    check_only_error(&l, "error[HRS-204]: running_stale_after_ms must be at least twice the runner heartbeat interval\n"
                         "  --> silt.conf:2\n"
                         "   = note: running_stale_after_ms = 59999, runner_heartbeat_interval_ms = 30000 (the default)\n"
                         "   = help: set running_stale_after_ms to at least 60000, or lower the interval\n");
    loaded_fini(&l);
}

/* Raising an interval past what a default threshold allows is caught too,
 * at the interval's line. */
TEST(conffile_hrs_204_an_interval_raised_past_the_default_threshold)
{
    loaded l;
    load("[recovery]\n"
         "check_interval_ms = 1000\n"
         "claimer_heartbeat_interval_ms = 90000\n", &l);
    check_only_error(&l, "error[HRS-204]: claimed_stale_after_ms must be at least twice the claimer heartbeat interval\n"
                         "  --> silt.conf:3\n"
                         "   = note: claimed_stale_after_ms = 120000 (the default), claimer_heartbeat_interval_ms = 90000\n"
                         "   = help: set claimed_stale_after_ms to at least 180000, or lower the interval\n");
    loaded_fini(&l);
}

/* A value refused on its own is not compared: the report would argue with
 * a number the file does not hold. */
TEST(conffile_hrs_204_is_not_checked_against_a_refused_value)
{
    loaded l;
    load("[recovery]\n"
         "claimer_heartbeat_interval_ms = 999999999\n"
         "claimed_stale_after_ms = 50000\n", &l);
    CHECK_INT(l.errors, 1);
    CHECK_INT(occurrences(l.report.data, "error[HRS-205]"), 1);
    loaded_fini(&l);
}

/* The document's report, its home translated from AppConfig.retention to
 * [retention]: the message's shape and the note word for word. */
TEST(conffile_hrs_204_the_moved_field_report_is_the_documented_one)
{
    loaded l;
    load("[recovery]\n"
         "terminal_record_retention_hours = 720\n", &l);
    check_only_error(&l, "error[HRS-204]: terminal_record_retention_hours moved to [retention]\n"
                         "  --> silt.conf:2\n"
                         "   = note: it governs how long records live, not how stalled work is detected\n"
                         "   = help: set terminal_record_retention_hours in [retention]\n");
    CHECK_INT(l.conf.retention.terminal_record_retention_hours, 720);   /* the default: never honoured */
    loaded_fini(&l);
    load("[recovery]\nterminal_record_retention_hours = 24\n", &l);
    CHECK_INT(l.conf.retention.terminal_record_retention_hours, 720);
    loaded_fini(&l);
    load("[queue.a]\nterminal_record_retention_hours = 720\n", &l);   /* elsewhere it is merely unknown */
    CHECK_INT(occurrences(l.report.data, "error[HRS-203]"), 1);
    loaded_fini(&l);
}

/* Every [retention] setting, its mappings' entries and the predecessor of
 * queue_retention: each refused at its line, all in one report, whatever
 * its value. */
TEST(conffile_hrs_204_every_retention_key_under_recovery_is_refused_at_once)
{
    static const char *const moved[] = {
        "queue_retention.emails = 7d", "retention_classes.audit_1y = 365d", "terminal_record_retention_hours = 2160",
        "worker_state_retention_hours = None", "retention_sweep_interval_s = 300", "retention_delete_batch_size = 500",
        "paused_workflow_auto_cancel_after = 7d", "history_leaf_horizon_days = 3", "heartbeat_leaf_horizon_hours = 6",
        "partition_maintenance_interval_s = 900", "queue_retention = x", "retention_classes = x",
    };
    static const char *const field[] = {
        "queue_retention", "retention_classes", "terminal_record_retention_hours", "worker_state_retention_hours",
        "retention_sweep_interval_s", "retention_delete_batch_size", "paused_workflow_auto_cancel_after",
        "history_leaf_horizon_days", "heartbeat_leaf_horizon_hours", "partition_maintenance_interval_s",
        "queue_retention", "retention_classes",
    };
    size_t n = sizeof moved / sizeof moved[0];
    buf text;
    buf_init(&text);
    buf_puts(&text, "[recovery]\ncheck_interval_ms = 5000\n");
    for (size_t i = 0; i < n; i++) buf_printf(&text, "%s\n", moved[i]);
    loaded l;
    load(text.data, &l);
    CHECK_INT(l.errors, n);
    CHECK_INT(occurrences(l.report.data, "error[HRS-204]"), n);
    for (size_t i = 0; i < n; i++) {
        char want[256];
        snprintf(want, sizeof want, "error[HRS-204]: %s moved to [retention]\n  --> silt.conf:%zu\n"
                 "   = note: it governs how long records live, not how stalled work is detected\n", field[i], i + 3);
        CHECK_REPORTS(l, want);
    }
    CHECK_REPORTS(l, "   = help: set queue_retention.emails in [retention]\n");
    CHECK_REPORTS(l, "   = help: set retention_classes.audit_1y in [retention]\n");
    CHECK_INT(l.conf.recovery.check_interval_ms, 5000);   /* the rest of [recovery] is read */
    CHECK_INT(l.conf.retention.nqueues, 0);
    CHECK_INT(l.conf.retention.nclasses, 0);
    loaded_fini(&l);
    buf_fini(&text);
}

TEST(conffile_hrs_204_queue_terminal_record_retention_hours_under_recovery_names_queue_retention)
{
    loaded l;
    load("[recovery]\n"
         "queue_terminal_record_retention_hours = 168\n", &l);
    check_only_error(&l, "error[HRS-204]: queue_terminal_record_retention_hours moved to [retention]\n"
                         "  --> silt.conf:2\n"
                         "   = note: it governs how long records live, not how stalled work is detected\n"
                         "   = help: set queue_retention in [retention], its successor: one line per queue, "
                         "e.g. queue_retention.emails = 7d for emails: 168\n");
    loaded_fini(&l);
    load("[recovery]\nqueue_terminal_record_retention_hours.emails = 168\n", &l);
    CHECK_INT(occurrences(l.report.data, "error[HRS-204]: queue_terminal_record_retention_hours moved to [retention]"), 1);
    loaded_fini(&l);
}

typedef struct bound_case {
    const char *section, *key;
    long long   lo, hi;
} bound_case;

static const bound_case bounds[] = {
    { "queue.q", "priority", 1, 100 },
    { "queue.q", "max_concurrency", 0, 100000 },
    { "recovery", "claimer_heartbeat_interval_ms", 1000, 600000 },
    { "recovery", "runner_heartbeat_interval_ms", 1000, 600000 },
    { "recovery", "claimed_stale_after_ms", 2000, 86400000 },
    { "recovery", "running_stale_after_ms", 2000, 86400000 },
    { "recovery", "check_interval_ms", 1000, 600000 },
    { "schedule.s", "priority", 1, 100 },
};

/* Keys the bounds of one key are tried beside, so that no check across
 * keys (HRS-204) speaks up: the smallest intervals beside a threshold, the
 * largest thresholds beside an interval. */
static const char *beside(const bound_case *b)
{
    const char *key = b->key;
    if (strncmp(b->section, "schedule.", 9) == 0)   /* what a schedule requires */
        return "cron = * * * * *\ntask = t\nqueue = q\n";
    if (strstr(key, "_stale_after_ms"))
        return "claimer_heartbeat_interval_ms = 1000\nrunner_heartbeat_interval_ms = 1000\n";
    if (strstr(key, "_heartbeat_interval_ms"))
        return "claimed_stale_after_ms = 86400000\nrunning_stale_after_ms = 86400000\n";
    return "";
}

static int errors_for(const bound_case *b, long long value, loaded *l)
{
    char text[512];
    snprintf(text, sizeof text, "[%s]\n%s%s = %lld\n", b->section, beside(b), b->key, value);
    load(text, l);
    return l->errors;
}

TEST(conffile_hrs_205_every_key_takes_its_bounds_and_refuses_one_past_them)
{
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        const bound_case *b = &bounds[i];
        loaded l;
        CHECK_INT(errors_for(b, b->lo, &l), 0);
        loaded_fini(&l);
        CHECK_INT(errors_for(b, b->hi, &l), 0);
        loaded_fini(&l);
        CHECK_INT(errors_for(b, b->lo - 1, &l), 1);
        char want[256];
        snprintf(want, sizeof want, "error[HRS-205]: %s in [%s] must be an integer from %lld to %lld\n",
                 b->key, b->section, b->lo, b->hi);
        CHECK_REPORTS(l, want);
        loaded_fini(&l);
        CHECK_INT(errors_for(b, b->hi + 1, &l), 1);
        CHECK_REPORTS(l, want);
        loaded_fini(&l);
    }
}

TEST(conffile_hrs_205_a_value_must_be_a_whole_decimal_integer)
{
    const char *bad[] = { "abc", "", "1.5", "10ms", "0x10", "5 5", "99999999999999999999999" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "[queue.q]\nmax_concurrency = %s\n", bad[i]);
        loaded l;
        load(text, &l);
        char want[512];
        snprintf(want, sizeof want, "error[HRS-205]: max_concurrency in [queue.q] must be an integer from 0 to 100000\n"
                 "  --> silt.conf:2\n"
                 "   = note: found max_concurrency = %s\n", *bad[i] ? bad[i] : "(nothing)");
        check_only_error(&l, want);
        CHECK_INT(l.conf.queues[0].max_concurrency, 0);   /* the default stays */
        loaded_fini(&l);
    }
}

TEST(conffile_hrs_206_queue_names_are_1_to_48_of_letters_digits_underscore_dash)
{
    char longest[CONFFILE_QUEUE_NAME_MAX + 2];
    memset(longest, 'q', sizeof longest - 2);
    longest[sizeof longest - 2] = '\0';
    char text[256];
    snprintf(text, sizeof text, "[queue.%s]\n[queue.A-z_09]\n", longest);
    loaded l;
    load(text, &l);
    CHECK_INT(l.errors, 0);
    CHECK_INT(l.conf.nqueues, 2);
    loaded_fini(&l);
    strcat(longest, "q");   /* 49 */
    snprintf(text, sizeof text, "[queue.%s]\n[queue.]\n[queue.a.b]\n[queue.has space]\n[queue.é]\n"
             "priority = 0\n", longest);
    load(text, &l);
    CHECK_INT(l.errors, 6);
    CHECK_INT(occurrences(l.report.data, "error[HRS-206]"), 5);
    CHECK_REPORTS(l, "error[HRS-206]: invalid queue name `a.b`\n"
                     "  --> silt.conf:3\n"
                     "   = note: a queue name is 1 to 48 characters of A-Z, a-z, 0-9, `_` and `-` (this one has 3)\n");
    CHECK(strstr(l.report.data, "(this one has 49)") != NULL);
    CHECK_REPORTS(l, "error[HRS-206]: invalid queue name ``\n  --> silt.conf:2\n");
    /* the keys of a refused section are still checked */
    CHECK_REPORTS(l, "error[HRS-205]: priority in [queue.é] must be an integer from 1 to 100\n  --> silt.conf:6\n");
    CHECK_INT(l.conf.nqueues, 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_207_a_section_or_key_given_twice_names_the_first)
{
    loaded l;
    load("[queue.a]\n"
         "priority = 1\n"
         "priority = 2\n"
         "[recovery]\n"
         "[queue.a]\n"
         "priority = 3\n"
         "colour = 1\n"
         "[recovery]\n", &l);
    CHECK_INT(l.errors, 4);
    CHECK_REPORTS(l, "error[HRS-207]: key `priority` given twice in [queue.a]\n"
                     "  --> silt.conf:3\n"
                     "   = note: first given at silt.conf:2\n"
                     "   = help: keep one of them\n");
    CHECK_REPORTS(l, "error[HRS-207]: section [queue.a] given twice\n"
                     "  --> silt.conf:5\n"
                     "   = note: first given at silt.conf:1\n"
                     "   = help: merge the two into one [queue.a] section\n");
    CHECK_REPORTS(l, "error[HRS-203]: unknown key `colour` in [queue.a]\n  --> silt.conf:7\n");
    CHECK_REPORTS(l, "error[HRS-207]: section [recovery] given twice\n"
                     "  --> silt.conf:8\n"
                     "   = note: first given at silt.conf:4\n");
    CHECK_INT(l.conf.nqueues, 1);   /* the repeat is checked, not kept */
    CHECK_INT(l.conf.queues[0].priority, 2);
    loaded_fini(&l);
}

/* ---- [schedule.NAME] ------------------------------------------------------ */

/* Every key read as written (blanks around a value and a trailing comment
 * dropped, the spaces between cron fields kept), and a schedule given only
 * what it requires takes every default. */
TEST(conffile_schedules_read_every_key_and_take_the_defaults)
{
    loaded l;
    load("[queue.reports]\n"
         "[schedule.nightly-report]\n"
         "cron =   30 3 * * 1-5     # weekdays\n"
         "timezone = Europe/Paris\n"
         "task = build_report\n"
         "queue = reports\n"
         "args = {\"kind\": \"daily\", \"pages\": [1, 2]}\n"
         "catch_up = 3\n"
         "priority = 7\n"
         "\n"
         "[schedule.cleanup]\n"
         "cron = */15 * * * *\n"
         "task = cleanup\n"
         "queue = reports\n", &l);
    CHECK_STR(l.report.data, "");
    CHECK_INT(l.errors, 0);
    CHECK_INT(l.conf.nschedules, 2);
    const conf_schedule *s = &l.conf.schedules[0];
    CHECK_STR(s->name, "nightly-report");
    CHECK_STR(s->cron, "30 3 * * 1-5");
    CHECK_STR(s->timezone, "Europe/Paris");
    CHECK_STR(s->task, "build_report");
    CHECK_STR(s->queue, "reports");
    CHECK_STR(s->args, "{\"kind\": \"daily\", \"pages\": [1, 2]}");
    CHECK_INT(s->catch_up, 3);
    CHECK_INT(s->priority, 7);
    CHECK_INT(s->line, 2);
    s = &l.conf.schedules[1];
    CHECK_STR(s->name, "cleanup");
    CHECK_STR(s->cron, "*/15 * * * *");
    CHECK_STR(s->timezone, "UTC");
    CHECK_STR(s->args, "null");
    CHECK_INT(s->catch_up, 0);    /* skip */
    CHECK_INT(s->priority, 0);    /* the queue's */
    CHECK_INT(s->line, 11);
    CHECK(conffile_schedule(&l.conf, "cleanup") == &l.conf.schedules[1]);
    CHECK(conffile_schedule(&l.conf, "Cleanup") == NULL);
    CHECK(conffile_schedule(&l.conf, "reports") == NULL);   /* queues and schedules are apart */
    CHECK(conffile_queue(&l.conf, "cleanup") == NULL);
    loaded_fini(&l);
}

TEST(conffile_no_file_declares_no_schedule)
{
    silt_conf c;
    conffile_defaults(&c);
    CHECK_INT(c.nschedules, 0);
    CHECK(c.schedules == NULL);
    CHECK(conffile_schedule(&c, "nightly") == NULL);
    conffile_free(&c);
}

/* Without [queue.*] sections every queue is open, so a schedule may name
 * any valid queue; args takes any JSON value, not only objects. */
TEST(conffile_schedule_queue_is_free_when_the_file_declares_no_queue)
{
    loaded l;
    load("[schedule.a]\ncron = 0 0 29 2 *\ntask = leap\nqueue = anything\nargs = \"text\"\n"   /* 29 February exists */
         "[schedule.b]\ncron = 0 0 * * *\ntask = t\nqueue = q\nargs = [1, {\"b\": null}]\ncatch_up = skip\n"
         "[schedule.c]\ncron = 0 0 * * *\ntask = t\nqueue = q\nargs = -4.5e2\ncatch_up = 1000\n", &l);
    CHECK_STR(l.report.data, "");
    CHECK_INT(l.conf.nschedules, 3);
    CHECK_STR(l.conf.schedules[0].queue, "anything");
    CHECK_STR(l.conf.schedules[0].args, "\"text\"");
    CHECK_STR(l.conf.schedules[1].args, "[1, {\"b\": null}]");
    CHECK_INT(l.conf.schedules[1].catch_up, 0);
    CHECK_STR(l.conf.schedules[2].args, "-4.5e2");
    CHECK_INT(l.conf.schedules[2].catch_up, 1000);
    loaded_fini(&l);
}

/* A schedule may name its tasks' retention class: one the file knows (a
 * declared class, a key derived from a mapping, standard_30d, forever);
 * any other is HRS-208 at its line, whatever order the sections come in. */
TEST(conffile_hrs_208_a_schedules_retention_class_key_is_one_the_file_knows)
{
    loaded l;
    load("[schedule.keep]\ncron = 0 * * * *\ntask = t\nqueue = emails\nretention_class_key = audit_1y\n"
         "[schedule.lost]\ncron = 0 * * * *\ntask = t\nqueue = emails\nretention_class_key = audit_2y\n"
         "[schedule.mapped]\ncron = 0 * * * *\ntask = t\nqueue = x\nretention_class_key = q_emails_7d\n"
         "[retention]\nqueue_retention.emails = 7d\nretention_classes.audit_1y = 365d\n", &l);
    CHECK_INT(l.errors, 1);
    CHECK_STR(l.report.data,
              "error[HRS-208]: retention_class_key of [schedule.lost] cannot be used\n"
              "  --> silt.conf:10\n"
              "   = note: unknown retention class audit_2y: this server's silt.conf knows standard_30d, forever, "
              "audit_1y, q_emails_7d\n"
              "   = help: declare it under [retention] as retention_classes.audit_2y = DURATION, or name one of those\n"
              "error: aborting due to 1 previous error\n");
    CHECK_STR(l.conf.schedules[0].retention_class_key, "audit_1y");
    CHECK(l.conf.schedules[2].retention_class_key != NULL);
    loaded_fini(&l);
}

TEST(conffile_hrs_208_cron_task_and_queue_are_required_at_the_section_line)
{
    loaded l;
    load("# schedules\n"
         "[schedule.empty]\n"
         "timezone = UTC\n"
         "[schedule.half]\n"
         "cron = 0 * * * *\n", &l);
    CHECK_INT(l.errors, 5);
    CHECK_STR(l.report.data,
              "error[HRS-208]: missing key `cron` in [schedule.empty]\n"
              "  --> silt.conf:2\n"
              "   = help: every schedule sets cron, task and queue; add cron = 30 3 * * *   "
              "(minute hour day-of-month month day-of-week)\n"
              "error[HRS-208]: missing key `task` in [schedule.empty]\n"
              "  --> silt.conf:2\n"
              "   = help: every schedule sets cron, task and queue; add task = NAME, the task each slot sends\n"
              "error[HRS-208]: missing key `queue` in [schedule.empty]\n"
              "  --> silt.conf:2\n"
              "   = help: every schedule sets cron, task and queue; add queue = NAME, the queue the task is sent to\n"
              "error[HRS-208]: missing key `task` in [schedule.half]\n"
              "  --> silt.conf:4\n"
              "   = help: every schedule sets cron, task and queue; add task = NAME, the task each slot sends\n"
              "error[HRS-208]: missing key `queue` in [schedule.half]\n"
              "  --> silt.conf:4\n"
              "   = help: every schedule sets cron, task and queue; add queue = NAME, the queue the task is sent to\n"
              "error: aborting due to 5 previous errors\n");
    CHECK(l.conf.schedules[0].cron == NULL);
    loaded_fini(&l);
    /* the last section of the file is checked too, and a key given but
     * refused is reported at its own line only */
    load("[schedule.last]\ncron = 0 0 30 2 *\ntask =\n", &l);
    CHECK_INT(l.errors, 3);
    CHECK_INT(occurrences(l.report.data, "missing key"), 1);
    CHECK_REPORTS(l, "error[HRS-208]: missing key `queue` in [schedule.last]\n  --> silt.conf:1\n");
    loaded_fini(&l);
}

TEST(conffile_hrs_208_an_invalid_cron_expression_gives_the_cron_message)
{
    loaded l;
    load("[schedule.s]\ncron = 0 0 32 * *\ntask = t\nqueue = q\n", &l);
    check_only_error(&l, "error[HRS-208]: invalid cron expression `0 0 32 * *` in [schedule.s]\n"
                         "  --> silt.conf:2\n"
                         "   = note: field 3 (day of month): 32 is out of range 1-31\n"
                         "   = help: five fields: minute hour day-of-month month day-of-week, e.g. cron = 30 3 * * *\n");
    CHECK(l.conf.schedules[0].cron == NULL);
    loaded_fini(&l);
    const char *bad[] = { "0 0 * *", "0 0 * * * *", "@daily", "", "5/10 * * * *" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "[schedule.s]\ntask = t\nqueue = q\ncron = %s\n", bad[i]);
        load(text, &l);
        CHECK_INT(l.errors, 1);
        char want[128];
        snprintf(want, sizeof want, "error[HRS-208]: invalid cron expression `%s` in [schedule.s]\n  --> silt.conf:4\n"
                 "   = note: ", bad[i]);
        CHECK_REPORTS(l, want);
        loaded_fini(&l);
    }
}

TEST(conffile_hrs_208_a_cron_expression_that_can_never_fire)
{
    loaded l;
    load("[schedule.s]\ntask = t\nqueue = q\ncron = 0 0 30 2 *\n", &l);
    check_only_error(&l, "error[HRS-208]: `0 0 30 2 *` can never fire: no date matches it\n"
                         "  --> silt.conf:4\n"
                         "   = note: in [schedule.s]; no date in the next 30 years has the day of month, month and "
                         "day of week it asks for\n"
                         "   = help: 30 and 31 February, and the 31st of April, June, September and November, never come\n");
    CHECK(l.conf.schedules[0].cron == NULL);
    loaded_fini(&l);
    load("[schedule.s]\ntask = t\nqueue = q\ncron = 0 12 31 apr,jun,sep,nov *\n", &l);
    CHECK_INT(l.errors, 1);
    CHECK_REPORTS(l, "error[HRS-208]: `0 12 31 apr,jun,sep,nov *` can never fire: no date matches it\n");
    loaded_fini(&l);
    /* a weekday makes it fire (either field matches, as in Vixie cron) */
    load("[schedule.s]\ntask = t\nqueue = q\ncron = 0 0 30 2 mon\n", &l);
    CHECK_INT(l.errors, 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_208_an_unknown_timezone)
{
    const char *bad[] = { "Mars/Olympus", "europe/paris", "../../etc/passwd", "zone.tab", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256], want[512];
        snprintf(text, sizeof text, "[schedule.s]\ncron = * * * * *\ntask = t\nqueue = q\ntimezone = %s\n", bad[i]);
        loaded l;
        load(text, &l);
        snprintf(want, sizeof want, "error[HRS-208]: unknown timezone `%s` in [schedule.s]\n"
                 "  --> silt.conf:5\n"
                 "   = note: a timezone is a zone name of /usr/share/zoneinfo, case-sensitive: "
                 "UTC, Europe/Paris, America/New_York\n", bad[i]);
        check_only_error(&l, want);
        CHECK_STR(l.conf.schedules[0].timezone, "UTC");   /* the default stays */
        loaded_fini(&l);
    }
}

TEST(conffile_hrs_208_args_must_be_one_json_value_on_its_line)
{
    loaded l;
    load("[schedule.s]\ncron = * * * * *\ntask = t\nqueue = q\nargs = {\"a\": 1,}\n", &l);
    check_only_error(&l, "error[HRS-208]: args in [schedule.s] is not valid JSON\n"
                         "  --> silt.conf:5\n"
                         "   = note: invalid json at byte 8: expected string as object key; found args = {\"a\": 1,}\n"
                         "   = help: one JSON value, whole on this line, e.g. args = {\"report\": \"daily\"}; "
                         "`#` or `;` after a blank starts a comment\n");
    CHECK_STR(l.conf.schedules[0].args, "null");
    loaded_fini(&l);
    /* a value over two lines, two values, a bare word, nothing, and a
     * string cut by a comment */
    const char *bad[] = { "{\"a\":", "1 2", "daily", "", "{\"note\": \"a # b\"}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "[schedule.s]\ncron = * * * * *\ntask = t\nqueue = q\nargs = %s\n}\n", bad[i]);
        load(text, &l);
        CHECK_REPORTS(l, "error[HRS-208]: args in [schedule.s] is not valid JSON\n  --> silt.conf:5\n");
        CHECK_REPORTS(l, "error[HRS-201]: expected `key = value`, a [section] or a comment\n  --> silt.conf:6\n");
        CHECK_INT(l.errors, 2);
        loaded_fini(&l);
    }
}

TEST(conffile_hrs_208_catch_up_is_skip_or_1_to_1000)
{
    const char *bad[] = { "0", "1001", "-1", "Skip", "run 3", "3 slots", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256], want[512];
        snprintf(text, sizeof text, "[schedule.s]\ncron = * * * * *\ntask = t\nqueue = q\ncatch_up = %s\n", bad[i]);
        loaded l;
        load(text, &l);
        snprintf(want, sizeof want, "error[HRS-208]: catch_up in [schedule.s] must be `skip` or an integer from 1 to 1000\n"
                 "  --> silt.conf:5\n"
                 "   = note: found catch_up = %s\n"
                 "   = help: `skip` runs no missed slot; N runs up to the N most recent ones, oldest first\n",
                 *bad[i] ? bad[i] : "(nothing)");
        check_only_error(&l, want);
        CHECK_INT(l.conf.schedules[0].catch_up, 0);
        loaded_fini(&l);
    }
    loaded l;
    load("[schedule.s]\ncron = * * * * *\ntask = t\nqueue = q\ncatch_up = 1\n", &l);
    CHECK_INT(l.errors, 0);
    CHECK_INT(l.conf.schedules[0].catch_up, 1);
    loaded_fini(&l);
}

TEST(conffile_hrs_208_task_is_1_to_255_bytes_of_utf8)
{
    loaded l;
    load("[schedule.s]\ncron = * * * * *\nqueue = q\ntask =\n", &l);
    check_only_error(&l, "error[HRS-208]: task in [schedule.s] must be 1 to 255 bytes of UTF-8\n"
                         "  --> silt.conf:4\n"
                         "   = note: found task = (nothing)\n");
    loaded_fini(&l);
    load("[schedule.s]\ncron = * * * * *\nqueue = q\ntask = \xff\xfe\n", &l);
    CHECK_INT(l.errors, 1);
    CHECK_REPORTS(l, "error[HRS-208]: task in [schedule.s] must be 1 to 255 bytes of UTF-8\n  --> silt.conf:4\n");
    loaded_fini(&l);
    /* as long as a line allows, blanks inside kept */
    char text[512], task[200];
    memset(task, 'x', 192);
    task[192] = '\0';
    task[3] = ' ';
    snprintf(text, sizeof text, "[schedule.s]\ncron = * * * * *\nqueue = q\ntask = %s\n", task);
    load(text, &l);
    CHECK_STR(l.report.data, "");
    CHECK_STR(l.conf.schedules[0].task, task);
    loaded_fini(&l);
}

TEST(conffile_hrs_208_queue_must_be_a_queue_name)
{
    loaded l;
    load("[schedule.s]\ncron = * * * * *\ntask = t\nqueue = mail queue\n", &l);
    check_only_error(&l, "error[HRS-208]: queue in [schedule.s] must be a queue name\n"
                         "  --> silt.conf:4\n"
                         "   = note: a queue name is 1 to 48 characters of A-Z, a-z, 0-9, `_` and `-`; "
                         "found queue = mail queue\n");
    CHECK(l.conf.schedules[0].queue == NULL);
    loaded_fini(&l);
}

/* Checked once the whole file is read: the queue may be declared after the
 * schedule, and the error sits at the schedule's queue line. */
TEST(conffile_hrs_208_a_queue_not_declared_when_the_file_declares_queues)
{
    loaded l;
    load("[schedule.early]\n"
         "cron = * * * * *\n"
         "task = t\n"
         "queue = emails\n"        /* declared below: fine */
         "[schedule.typo]\n"
         "cron = * * * * *\n"
         "queue = email\n"         /* 7 */
         "task = t\n"
         "[queue.emails]\n"
         "[queue.reports]\n", &l);
    check_only_error(&l, "error[HRS-208]: queue `email` of [schedule.typo] is not declared\n"
                         "  --> silt.conf:7\n"
                         "   = note: the file declares [queue.emails], [queue.reports]\n"
                         "   = help: declare [queue.email], or send to one of those\n");
    loaded_fini(&l);
}

TEST(conffile_schedule_keys_names_and_repeats_follow_the_other_sections)
{
    loaded l;
    load("[schedule.s]\n"
         "cron = * * * * *\n"
         "task = t\n"
         "queue = q\n"
         "colour = red\n"               /* 5 */
         "cron = 0 * * * *\n"           /* 6: given twice; the later value stands */
         "priority = 0\n"               /* 7 */
         "[schedule.s]\n"               /* 8 */
         "timezone = Nowhere/Land\n"    /* 9: a refused section's keys are still checked */
         "[schedule.bad.name]\n", &l);  /* 10 */
    CHECK_INT(l.errors, 6);
    CHECK_REPORTS(l, "error[HRS-203]: unknown key `colour` in [schedule.s]\n"
                     "  --> silt.conf:5\n"
                     "   = help: the keys of [schedule.NAME] are cron, timezone, task, queue, args, catch_up, priority, retention_class_key\n");
    CHECK_REPORTS(l, "error[HRS-207]: key `cron` given twice in [schedule.s]\n"
                     "  --> silt.conf:6\n"
                     "   = note: first given at silt.conf:2\n");
    CHECK_REPORTS(l, "error[HRS-205]: priority in [schedule.s] must be an integer from 1 to 100\n  --> silt.conf:7\n");
    CHECK_REPORTS(l, "error[HRS-207]: section [schedule.s] given twice\n"
                     "  --> silt.conf:8\n"
                     "   = note: first given at silt.conf:1\n"
                     "   = help: merge the two into one [schedule.s] section, or rename one\n");
    CHECK_REPORTS(l, "error[HRS-208]: unknown timezone `Nowhere/Land` in [schedule.s]\n  --> silt.conf:9\n");
    CHECK_REPORTS(l, "error[HRS-206]: invalid schedule name `bad.name`\n"
                     "  --> silt.conf:10\n"
                     "   = note: a schedule name is 1 to 48 characters of A-Z, a-z, 0-9, `_` and `-` (this one has 8)\n");
    CHECK_INT(occurrences(l.report.data, "missing key"), 0);   /* refused sections are not asked for keys */
    CHECK_INT(l.conf.nschedules, 1);
    CHECK_STR(l.conf.schedules[0].cron, "0 * * * *");
    CHECK_STR(l.conf.schedules[0].timezone, "UTC");
    CHECK_INT(l.conf.schedules[0].priority, 0);
    loaded_fini(&l);
}

/* Schedule problems beside the others: each at its line, in line order
 * (the missing keys at their section's line, the undeclared queue found at
 * the end of the file but shown at its own line), and the count. */
TEST(conffile_schedule_problems_are_reported_with_the_others_in_line_order)
{
    loaded l;
    load("[queue.emails]\n"
         "priority = 0\n"                  /* 2 */
         "[schedule.digest]\n"             /* 3: no task */
         "cron = 0 0 30 2 *\n"             /* 4 */
         "queue = mail\n"                  /* 5: not declared */
         "args = {oops}\n"                 /* 6 */
         "[schedule.ok]\n"
         "cron = 0 8 * * *\n"
         "task = ping\n"
         "queue = emails\n"
         "timezone = Europe/Pariss\n"      /* 11 */
         "catch_up = all\n", &l);          /* 12 */
    CHECK_INT(l.errors, 7);
    CHECK_STR(l.report.data,
              "error[HRS-205]: priority in [queue.emails] must be an integer from 1 to 100\n"
              "  --> silt.conf:2\n"
              "   = note: found priority = 0\n"
              "error[HRS-208]: missing key `task` in [schedule.digest]\n"
              "  --> silt.conf:3\n"
              "   = help: every schedule sets cron, task and queue; add task = NAME, the task each slot sends\n"
              "error[HRS-208]: `0 0 30 2 *` can never fire: no date matches it\n"
              "  --> silt.conf:4\n"
              "   = note: in [schedule.digest]; no date in the next 30 years has the day of month, month and "
              "day of week it asks for\n"
              "   = help: 30 and 31 February, and the 31st of April, June, September and November, never come\n"
              "error[HRS-208]: queue `mail` of [schedule.digest] is not declared\n"
              "  --> silt.conf:5\n"
              "   = note: the file declares [queue.emails]\n"
              "   = help: declare [queue.mail], or send to one of those\n"
              "error[HRS-208]: args in [schedule.digest] is not valid JSON\n"
              "  --> silt.conf:6\n"
              "   = note: invalid json at byte 1: expected string as object key; found args = {oops}\n"
              "   = help: one JSON value, whole on this line, e.g. args = {\"report\": \"daily\"}; "
              "`#` or `;` after a blank starts a comment\n"
              "error[HRS-208]: unknown timezone `Europe/Pariss` in [schedule.ok]\n"
              "  --> silt.conf:11\n"
              "   = note: a timezone is a zone name of /usr/share/zoneinfo, case-sensitive: "
              "UTC, Europe/Paris, America/New_York\n"
              "error[HRS-208]: catch_up in [schedule.ok] must be `skip` or an integer from 1 to 1000\n"
              "  --> silt.conf:12\n"
              "   = note: found catch_up = all\n"
              "   = help: `skip` runs no missed slot; N runs up to the N most recent ones, oldest first\n"
              "error: aborting due to 7 previous errors\n");
    loaded_fini(&l);
}

/* ---- [retention] ------------------------------------------------------------ */

static void check_retention_defaults(const conf_retention *r)
{
    CHECK_INT(r->nqueues, 0);
    CHECK_INT(r->nclasses, 0);
    CHECK_INT(r->terminal_record_retention_hours, 720);
    CHECK_INT(r->worker_state_retention_hours, 168);
    CHECK_INT(r->retention_sweep_interval_s, 300);
    CHECK_INT(r->retention_delete_batch_size, 500);
    CHECK_INT(r->paused_workflow_auto_cancel_after_s, CONF_NONE);
    CHECK_INT(r->history_leaf_horizon_days, 3);
    CHECK_INT(r->heartbeat_leaf_horizon_hours, 6);
    CHECK_INT(r->partition_maintenance_interval_s, 900);
}

/* "Nothing about existing deployments moves until a queue is named." */
TEST(conffile_retention_no_file_no_section_or_an_empty_one_takes_every_default)
{
    silt_conf c;
    conffile_defaults(&c);
    check_retention_defaults(&c.retention);
    conffile_free(&c);
    loaded l;
    load("[queue.emails]\n", &l);
    CHECK_INT(l.errors, 0);
    check_retention_defaults(&l.conf.retention);
    loaded_fini(&l);
    load("[retention]\n", &l);
    CHECK_INT(l.errors, 0);
    check_retention_defaults(&l.conf.retention);
    loaded_fini(&l);
}

TEST(conffile_retention_reads_every_key)
{
    loaded l;
    load("[retention]\n"
         "queue_retention.emails = 7d        # q_emails_7d\n"
         "queue_retention.reports = 90d\n"
         "queue_retention.audit = None       # forever\n"
         "retention_classes.audit_1y = 365d\n"
         "retention_classes.transient_2d = 2d\n"
         "terminal_record_retention_hours = 2160\n"
         "worker_state_retention_hours = 24\n"
         "paused_workflow_auto_cancel_after = 36h\n"
         "history_leaf_horizon_days = 14\n"
         "heartbeat_leaf_horizon_hours = 2\n"
         "partition_maintenance_interval_s = 60\n"
         "retention_sweep_interval_s = 86400\n"
         "retention_delete_batch_size = 50\n", &l);
    CHECK_STR(l.report.data, "");
    const conf_retention *r = &l.conf.retention;
    CHECK_INT(r->nqueues, 3);
    CHECK_STR(r->queues[0].queue, "emails");
    CHECK_INT(r->queues[0].seconds, 7 * 86400);
    CHECK_STR(r->queues[0].class_key, "q_emails_7d");
    CHECK_INT(r->queues[0].line, 2);
    CHECK_STR(r->queues[1].class_key, "q_reports_90d");
    CHECK_INT(r->queues[1].seconds, 90 * 86400);
    CHECK_STR(r->queues[2].queue, "audit");
    CHECK_INT(r->queues[2].seconds, CONF_NONE);
    CHECK_STR(r->queues[2].class_key, "forever");
    CHECK_INT(r->queues[2].line, 4);
    CHECK_INT(r->nclasses, 2);
    CHECK_STR(r->classes[0].key, "audit_1y");
    CHECK_INT(r->classes[0].seconds, 365 * 86400);
    CHECK_INT(r->classes[0].line, 5);
    CHECK_STR(r->classes[1].key, "transient_2d");
    CHECK_INT(r->classes[1].seconds, 2 * 86400);
    CHECK_INT(r->classes[1].line, 6);
    CHECK_INT(r->terminal_record_retention_hours, 2160);
    CHECK_INT(r->worker_state_retention_hours, 24);
    CHECK_INT(r->paused_workflow_auto_cancel_after_s, 36 * 3600);
    CHECK_INT(r->history_leaf_horizon_days, 14);
    CHECK_INT(r->heartbeat_leaf_horizon_hours, 2);
    CHECK_INT(r->partition_maintenance_interval_s, 60);
    CHECK_INT(r->retention_sweep_interval_s, 86400);
    CHECK_INT(r->retention_delete_batch_size, 50);
    loaded_fini(&l);
}

/* The document's first example, in silt.conf's words, beside the queues it
 * names. */
TEST(conffile_retention_the_documented_example_is_accepted)
{
    loaded l;
    load("[queue.emails]\n"
         "[queue.audit]\n"
         "[retention]\n"
         "queue_retention.emails = 7d\n"
         "queue_retention.audit = None\n"
         "terminal_record_retention_hours = 2160   # 24 * 90\n"
         "retention_classes.audit_1y = 365d\n", &l);
    CHECK_STR(l.report.data, "");
    CHECK_STR(l.conf.retention.queues[0].class_key, "q_emails_7d");
    CHECK_STR(l.conf.retention.queues[1].class_key, "forever");
    CHECK_INT(l.conf.retention.terminal_record_retention_hours, 2160);
    CHECK_STR(l.conf.retention.classes[0].key, "audit_1y");
    loaded_fini(&l);
}

/* The key carries the duration in its largest exact unit, so the 0.4.x
 * 168 hours and 7d are one class; two queues on one duration, two classes. */
TEST(conffile_retention_queue_mappings_derive_their_class_keys)
{
    loaded l;
    load("[retention]\n"
         "queue_retention.ingest = 36h\n"
         "queue_retention.emails = 168h\n"
         "queue_retention.a = 7d\n"
         "queue_retention.b = 7d\n"
         "queue_retention.c = 1440m\n"
         "queue_retention.d = 45s\n", &l);
    CHECK_STR(l.report.data, "");
    const char *want[] = { "q_ingest_36h", "q_emails_7d", "q_a_7d", "q_b_7d", "q_c_1d", "q_d_45s" };
    CHECK_INT(l.conf.retention.nqueues, 6);
    for (size_t i = 0; i < 6; i++) CHECK_STR(l.conf.retention.queues[i].class_key, want[i]);
    CHECK_INT(l.conf.retention.queues[1].seconds, 7 * 86400);
    loaded_fini(&l);
}

typedef struct retention_bound {
    const char *key;
    long long   lo, hi;
    bool        none;
} retention_bound;

static const retention_bound retention_bounds[] = {
    { "terminal_record_retention_hours", 1, 43800, true },
    { "worker_state_retention_hours", 1, 8760, true },
    { "retention_sweep_interval_s", 30, 86400, false },
    { "retention_delete_batch_size", 50, 10000, false },
    { "history_leaf_horizon_days", 2, 14, false },
    { "heartbeat_leaf_horizon_hours", 2, 48, false },
    { "partition_maintenance_interval_s", 60, 3600, false },
};

static int retention_errors(const char *key, const char *value, loaded *l)
{
    char text[256];
    snprintf(text, sizeof text, "[retention]\n%s = %s\n", key, value);
    load(text, l);
    return l->errors;
}

static int64_t retention_field(const conf_retention *r, const char *key)
{
    if (!strcmp(key, "terminal_record_retention_hours")) return r->terminal_record_retention_hours;
    if (!strcmp(key, "worker_state_retention_hours")) return r->worker_state_retention_hours;
    if (!strcmp(key, "retention_sweep_interval_s")) return r->retention_sweep_interval_s;
    if (!strcmp(key, "retention_delete_batch_size")) return r->retention_delete_batch_size;
    if (!strcmp(key, "history_leaf_horizon_days")) return r->history_leaf_horizon_days;
    if (!strcmp(key, "heartbeat_leaf_horizon_hours")) return r->heartbeat_leaf_horizon_hours;
    return r->partition_maintenance_interval_s;
}

TEST(conffile_hrs_216_every_retention_key_takes_its_bounds_and_refuses_one_past_them)
{
    for (size_t i = 0; i < sizeof retention_bounds / sizeof retention_bounds[0]; i++) {
        const retention_bound *b = &retention_bounds[i];
        char lo[32], hi[32], below[32], above[32], want[256];
        snprintf(lo, sizeof lo, "%lld", b->lo);
        snprintf(hi, sizeof hi, "%lld", b->hi);
        snprintf(below, sizeof below, "%lld", b->lo - 1);
        snprintf(above, sizeof above, "%lld", b->hi + 1);
        snprintf(want, sizeof want, "error[HRS-216]: %s in [retention] must be an integer from %lld to %lld%s\n"
                 "  --> silt.conf:2\n", b->key, b->lo, b->hi, b->none ? ", or None" : "");
        loaded l;
        CHECK_INT(retention_errors(b->key, lo, &l), 0);
        CHECK_INT(retention_field(&l.conf.retention, b->key), b->lo);
        loaded_fini(&l);
        CHECK_INT(retention_errors(b->key, hi, &l), 0);
        CHECK_INT(retention_field(&l.conf.retention, b->key), b->hi);
        loaded_fini(&l);
        CHECK_INT(retention_errors(b->key, below, &l), 1);
        CHECK_REPORTS(l, want);
        loaded_fini(&l);
        CHECK_INT(retention_errors(b->key, above, &l), 1);
        CHECK_REPORTS(l, want);
        loaded_fini(&l);
        CHECK_INT(retention_errors(b->key, "None", &l), b->none ? 0 : 1);   /* None only where the document allows it */
        if (b->none) CHECK_INT(retention_field(&l.conf.retention, b->key), CONF_NONE);
        else CHECK_REPORTS(l, want);
        loaded_fini(&l);
    }
}

TEST(conffile_hrs_216_a_retention_number_is_a_whole_decimal_integer_and_a_refused_one_keeps_the_default)
{
    const char *bad[] = { "abc", "", "1.5", "30d", "1e3", "NULL", "99999999999999999999999" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        loaded l;
        retention_errors("retention_delete_batch_size", bad[i], &l);
        char want[512];
        snprintf(want, sizeof want, "error[HRS-216]: retention_delete_batch_size in [retention] must be an integer "
                 "from 50 to 10000\n"
                 "  --> silt.conf:2\n"
                 "   = note: found retention_delete_batch_size = %s\n", *bad[i] ? bad[i] : "(nothing)");
        check_only_error(&l, want);
        CHECK_INT(l.conf.retention.retention_delete_batch_size, 500);
        loaded_fini(&l);
    }
    loaded l;
    CHECK_INT(retention_errors("worker_state_retention_hours", "none", &l), 0);   /* None in either case */
    CHECK_INT(l.conf.retention.worker_state_retention_hours, CONF_NONE);
    loaded_fini(&l);
}

TEST(conffile_hrs_216_paused_workflow_auto_cancel_after_is_a_duration_or_none)
{
    loaded l;
    CHECK_INT(retention_errors("paused_workflow_auto_cancel_after", "7d", &l), 0);
    CHECK_INT(l.conf.retention.paused_workflow_auto_cancel_after_s, 604800);
    loaded_fini(&l);
    CHECK_INT(retention_errors("paused_workflow_auto_cancel_after", "None", &l), 0);
    CHECK_INT(l.conf.retention.paused_workflow_auto_cancel_after_s, CONF_NONE);
    loaded_fini(&l);
    retention_errors("paused_workflow_auto_cancel_after", "3600", &l);   /* the old seconds are not a duration */
    check_only_error(&l, "error[HRS-216]: paused_workflow_auto_cancel_after in [retention] must be a positive duration "
                         "such as 7d, 36h, 90m or 45s, or None\n"
                         "  --> silt.conf:2\n"
                         "   = note: found paused_workflow_auto_cancel_after = 3600\n"
                         "   = help: a duration is a whole number and one unit, s, m, h or d, with nothing between them; "
                         "compound forms such as 1d12h are written in the smaller unit, 36h\n");
    CHECK_INT(l.conf.retention.paused_workflow_auto_cancel_after_s, CONF_NONE);
    loaded_fini(&l);
}

/* Whole numbers and one unit: a fraction is refused with the whole form to
 * write, a compound, zero and past 100 years each with their reason. */
TEST(conffile_hrs_216_a_duration_is_a_whole_positive_number_and_one_unit)
{
    loaded l;
    retention_errors("queue_retention.emails", "1.5d", &l);
    check_only_error(&l, "error[HRS-216]: queue_retention.emails in [retention] must be a positive duration "
                         "such as 7d, 36h, 90m or 45s, or None\n"
                         "  --> silt.conf:2\n"
                         "   = note: found queue_retention.emails = 1.5d\n"
                         "   = help: write 36h: a duration is a whole number and one unit, s, m, h or d\n");
    CHECK_INT(l.conf.retention.nqueues, 0);
    loaded_fini(&l);
    retention_errors("queue_retention.emails", "0d", &l);
    CHECK_REPORTS(l, "   = help: a duration is positive; None means forever\n");
    loaded_fini(&l);
    retention_errors("queue_retention.emails", "36501d", &l);
    CHECK_REPORTS(l, "   = help: the longest duration is 36500d (100 years)\n");
    loaded_fini(&l);
    const char *bad[] = { "1d12h", "7", "7 d", "-7d", "7D", "7w", "forever", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(retention_errors("queue_retention.emails", bad[i], &l), 1);
        CHECK_REPORTS(l, "error[HRS-216]: queue_retention.emails in [retention] must be a positive duration ");
        CHECK_INT(l.conf.retention.nqueues, 0);
        loaded_fini(&l);
    }
}

TEST(conffile_hrs_216_a_declared_class_key_must_be_a_usable_identifier)
{
    loaded l;
    load("[retention]\nretention_classes.Audit-1y = 365d\n", &l);
    check_only_error(&l, "error[HRS-216]: retention class key `Audit-1y` is not a usable identifier\n"
                         "  --> silt.conf:2\n"
                         "   = note: a class key is 1 to 18 characters of a-z, 0-9 and _, starting with a letter\n");
    CHECK_INT(l.conf.retention.nclasses, 0);
    loaded_fini(&l);
    const char *bad[] = { "1y", "_x", "a.b", "a b", "", "audit$" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128], want[128];
        snprintf(text, sizeof text, "[retention]\nretention_classes.%s = 1d\n", bad[i]);
        snprintf(want, sizeof want, "error[HRS-216]: retention class key `%s` is not a usable identifier\n", bad[i]);
        load(text, &l);
        CHECK_INT(l.errors, 1);
        CHECK_REPORTS(l, want);
        loaded_fini(&l);
    }
}

TEST(conffile_hrs_216_reserved_class_keys_are_refused)
{
    loaded l;
    load("[retention]\n"
         "retention_classes.standard_30d = 30d\n"
         "retention_classes.forever = 36500d\n"
         "retention_classes.heartbeats = 1d\n", &l);
    CHECK_INT(l.errors, 3);
    CHECK_REPORTS(l, "error[HRS-216]: retention class key `standard_30d` is reserved\n"
                     "  --> silt.conf:2\n"
                     "   = note: standard_30d, forever and heartbeats are silt's own classes\n"
                     "   = help: declare the class under another key\n");
    CHECK_REPORTS(l, "error[HRS-216]: retention class key `forever` is reserved\n  --> silt.conf:3\n");
    CHECK_REPORTS(l, "error[HRS-216]: retention class key `heartbeats` is reserved\n  --> silt.conf:4\n");
    CHECK_INT(l.conf.retention.nclasses, 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_216_a_declared_key_may_not_name_another_relation)
{
    loaded l;
    load("[retention]\nretention_classes.audit_2026_08_11 = 365d\nretention_classes.leaf_catalog = 1d\n", &l);
    CHECK_INT(l.errors, 2);
    CHECK_REPORTS(l, "error[HRS-216]: retention class key `audit_2026_08_11` names another relation\n"
                     "  --> silt.conf:2\n"
                     "   = note: horsies_task_history_audit_2026_08_11 would be the name of another class's daily "
                     "partition\n"
                     "   = help: declare the class under a key that does not end like a day (_YYYY_MM_DD)\n");
    CHECK_REPORTS(l, "error[HRS-216]: retention class key `leaf_catalog` names another relation\n"
                     "  --> silt.conf:3\n"
                     "   = note: horsies_task_history_leaf_catalog would be the leaf catalog\n");
    CHECK_INT(l.conf.retention.nclasses, 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_216_a_declared_class_may_not_use_the_q_prefix)
{
    loaded l;
    load("[retention]\nretention_classes.q_audit = 365d\n", &l);
    check_only_error(&l, "error[HRS-216]: retention class key `q_audit` uses the reserved prefix q_\n"
                         "  --> silt.conf:2\n"
                         "   = note: q_ keys are derived from queue_retention, which gives them their duration\n"
                         "   = help: declare the class without the q_ prefix, or map the queue in queue_retention\n");
    CHECK_INT(l.conf.retention.nclasses, 0);
    loaded_fini(&l);
    load("[retention]\nretention_classes.qq_audit = 365d\n", &l);
    CHECK_INT(l.errors, 0);
    loaded_fini(&l);
}

/* "The bound is 18 characters for a class key", and configuration states
 * the arithmetic. */
TEST(conffile_hrs_216_a_class_key_of_18_characters_is_accepted_and_19_refused)
{
    loaded l;
    load("[retention]\nretention_classes.audit_eighteen_chr = 365d\n", &l);   /* 18 */
    CHECK_STR(l.report.data, "");
    CHECK_STR(l.conf.retention.classes[0].key, "audit_eighteen_chr");
    loaded_fini(&l);
    load("[retention]\nretention_classes.audit_nineteen_char = 365d\n", &l);   /* 19 */
    check_only_error(&l, "error[HRS-216]: retention class key `audit_nineteen_char` is 19 characters, over the bound of 18\n"
                         "  --> silt.conf:2\n"
                         "   = note: its longest relation is horsies_task_history_audit_nineteen_char_YYYY_MM_DD_enqueued_idx: "
                         "21 + 19 + 11 + 13 = 64 bytes, and PostgreSQL truncates names past 63\n"
                         "   = help: declare the class under a key of at most 18 characters\n");
    CHECK_INT(l.conf.retention.nclasses, 0);
    loaded_fini(&l);
}

/* "roughly 13 characters for a mapped queue name": 18 - q_ - _ - 7d. */
TEST(conffile_hrs_216_a_13_character_queue_mapped_to_7d_fits_and_14_does_not)
{
    loaded l;
    load("[retention]\nqueue_retention.notifications = 7d\n", &l);
    CHECK_STR(l.report.data, "");
    CHECK_STR(l.conf.retention.queues[0].class_key, "q_notifications_7d");
    loaded_fini(&l);
    load("[retention]\nqueue_retention.notificationsx = 7d\n", &l);
    check_only_error(&l, "error[HRS-216]: retention class key `q_notificationsx_7d` is 19 characters, over the bound of 18\n"
                         "  --> silt.conf:2\n"
                         "   = note: its longest relation is horsies_task_history_q_notificationsx_7d_YYYY_MM_DD_enqueued_idx: "
                         "21 + 19 + 11 + 13 = 64 bytes, and PostgreSQL truncates names past 63\n"
                         "   = help: a queue mapped to 7d may have 13 characters; map a shorter queue name, or declare a "
                         "short class in retention_classes and name it at the send\n");
    CHECK_INT(l.conf.retention.nqueues, 0);
    loaded_fini(&l);
    load("[retention]\nqueue_retention.notifications = 90d\n", &l);   /* a longer duration leaves less */
    CHECK_INT(l.errors, 1);
    CHECK_REPORTS(l, "   = help: a queue mapped to 90d may have 12 characters;");
    loaded_fini(&l);
    load("[retention]\nqueue_retention.notificationsxyz = None\n", &l);   /* forever derives no key */
    CHECK_INT(l.errors, 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_216_a_class_declared_twice_names_the_first)
{
    loaded l;
    load("[retention]\n"
         "retention_classes.audit_1y = 365d\n"
         "queue_retention.emails = 7d\n"
         "retention_classes.audit_1y = 180d\n", &l);
    check_only_error(&l, "error[HRS-216]: retention class `audit_1y` declared twice\n"
                         "  --> silt.conf:4\n"
                         "   = note: first declared at silt.conf:2\n"
                         "   = help: keep one of them: a class has exactly one duration\n");
    CHECK_INT(l.conf.retention.nclasses, 1);
    CHECK_INT(l.conf.retention.classes[0].seconds, 365 * 86400);   /* the first stands */
    loaded_fini(&l);
    load("[retention]\nretention_classes.audit_1y = 0d\nretention_classes.audit_1y = 1d\n", &l);   /* a refused one counts */
    CHECK_INT(occurrences(l.report.data, "declared twice"), 1);
    loaded_fini(&l);
}

TEST(conffile_hrs_216_a_declared_duration_must_be_positive_and_finite)
{
    loaded l;
    load("[retention]\nretention_classes.audit_1y = 0d\n", &l);
    check_only_error(&l, "error[HRS-216]: retention_classes.audit_1y in [retention] must be a positive duration "
                         "such as 7d, 36h, 90m or 45s\n"
                         "  --> silt.conf:2\n"
                         "   = note: found retention_classes.audit_1y = 0d\n"
                         "   = help: a duration is positive\n");
    loaded_fini(&l);
    load("[retention]\nretention_classes.audit_1y = None\n", &l);
    check_only_error(&l, "error[HRS-216]: retention_classes.audit_1y in [retention] must be a positive duration "
                         "such as 7d, 36h, 90m or 45s\n"
                         "  --> silt.conf:2\n"
                         "   = note: found retention_classes.audit_1y = None\n"
                         "   = help: a declared class is finite: to keep records forever, map their queue to None "
                         "in queue_retention (the class forever)\n");
    loaded_fini(&l);
    load("[retention]\nretention_classes.audit_1y = -1d\n", &l);
    CHECK_INT(l.errors, 1);
    CHECK_INT(l.conf.retention.nclasses, 0);
    loaded_fini(&l);
}

/* silt's queue names allow what a class key cannot carry; the mapping is
 * refused rather than the name folded, since Emails and emails would meet. */
TEST(conffile_hrs_216_a_queue_whose_name_cannot_form_a_class_key)
{
    loaded l;
    load("[retention]\n"
         "queue_retention.bulk-mail = 7d\n"
         "queue_retention.Emails = 7d\n", &l);
    CHECK_INT(l.errors, 2);
    CHECK_REPORTS(l, "error[HRS-216]: queue `bulk-mail` cannot be mapped: its class key q_bulk-mail_7d is not a usable identifier\n"
                     "  --> silt.conf:2\n"
                     "   = note: a class key is 1 to 18 characters of a-z, 0-9 and _, starting with a letter\n"
                     "   = help: map a queue named in a-z, 0-9 and _, or declare a class in retention_classes "
                     "and name it at the send\n");
    CHECK_REPORTS(l, "error[HRS-216]: queue `Emails` cannot be mapped: its class key q_Emails_7d is not a usable identifier\n"
                     "  --> silt.conf:3\n");
    CHECK_INT(l.conf.retention.nqueues, 0);
    loaded_fini(&l);
    load("[retention]\nqueue_retention.a.b = 7d\nqueue_retention. = 7d\n", &l);   /* not even a queue name */
    CHECK_INT(l.errors, 2);
    CHECK_REPORTS(l, "error[HRS-216]: invalid queue name `a.b` in queue_retention.a.b\n"
                     "  --> silt.conf:2\n"
                     "   = note: a queue name is 1 to 48 characters of A-Z, a-z, 0-9, `_` and `-`\n");
    CHECK_REPORTS(l, "error[HRS-216]: invalid queue name `` in queue_retention.\n  --> silt.conf:3\n");
    loaded_fini(&l);
}

/* When the file declares its queues, a mapping names one of them, checked
 * once the whole file is read; without [queue.*] any name is accepted, as
 * for sends and schedules. */
TEST(conffile_hrs_216_queue_retention_names_a_queue_the_file_does_not_declare)
{
    loaded l;
    load("[queue.emails]\n"
         "[retention]\n"
         "queue_retention.emial = 7d\n"
         "queue_retention.reports = None\n"
         "queue_retention.emails = 7d\n"
         "[queue.reports]\n", &l);
    check_only_error(&l, "error[HRS-216]: queue_retention names queue `emial`, which silt.conf does not declare\n"
                         "  --> silt.conf:3\n"
                         "   = note: the file declares [queue.emails], [queue.reports]\n"
                         "   = help: declare [queue.emial], or map one of those\n");
    loaded_fini(&l);
    load("[retention]\nqueue_retention.emial = 7d\n", &l);
    CHECK_INT(l.errors, 0);
    loaded_fini(&l);
}

/* "queue_retention is the direct successor": the old key is refused in
 * [retention] too, and the help writes the new line when it can. */
TEST(conffile_queue_terminal_record_retention_hours_is_refused_naming_queue_retention)
{
    loaded l;
    load("[retention]\nqueue_terminal_record_retention_hours.emails = 168\n", &l);
    check_only_error(&l, "error[HRS-216]: queue_terminal_record_retention_hours was replaced by queue_retention\n"
                         "  --> silt.conf:2\n"
                         "   = note: queue_retention is its direct successor: a duration instead of an hour count, "
                         "and whole partitions dropped rather than rows deleted\n"
                         "   = help: write queue_retention.emails = 7d for emails: 168\n");
    loaded_fini(&l);
    load("[retention]\nqueue_terminal_record_retention_hours.audit = None\n", &l);
    CHECK_REPORTS(l, "   = help: write queue_retention.audit = None (kept forever)\n");
    loaded_fini(&l);
    load("[retention]\nqueue_terminal_record_retention_hours = {'emails': 168}\n", &l);
    CHECK_REPORTS(l, "error[HRS-216]: queue_terminal_record_retention_hours was replaced by queue_retention\n");
    CHECK_REPORTS(l, "   = help: write one line per queue, queue_retention.<queue> = <duration> or None, "
                     "e.g. queue_retention.emails = 7d for emails: 168\n");
    CHECK_INT(l.conf.retention.nqueues, 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_216_a_mapping_is_written_one_line_per_entry)
{
    loaded l;
    load("[retention]\n"
         "queue_retention = {'emails': 7d}\n"
         "retention_classes = audit_1y\n", &l);
    CHECK_INT(l.errors, 2);
    CHECK_REPORTS(l, "error[HRS-216]: queue_retention takes one line per queue\n"
                     "  --> silt.conf:2\n"
                     "   = help: write queue_retention.<queue> = <duration> or None, e.g. queue_retention.emails = 7d\n");
    CHECK_REPORTS(l, "error[HRS-216]: retention_classes takes one line per class\n"
                     "  --> silt.conf:3\n"
                     "   = help: write retention_classes.<key> = <duration>, e.g. retention_classes.audit_1y = 365d\n");
    loaded_fini(&l);
}

TEST(conffile_hrs_203_an_unknown_key_in_retention_lists_its_keys)
{
    loaded l;
    load("[retention]\nhistory_leaf_horizon = 3\n", &l);
    check_only_error(&l, "error[HRS-203]: unknown key `history_leaf_horizon` in [retention]\n"
                         "  --> silt.conf:2\n"
                         "   = help: the keys of [retention] are queue_retention.<queue>, retention_classes.<key>, "
                         "terminal_record_retention_hours, worker_state_retention_hours, retention_sweep_interval_s, "
                         "retention_delete_batch_size, paused_workflow_auto_cancel_after, history_leaf_horizon_days, "
                         "heartbeat_leaf_horizon_hours, partition_maintenance_interval_s\n");
    loaded_fini(&l);
}

/* The file-level rules of every section: a repeated key or section is
 * HRS-207, and a repeated section's lines are still checked, not kept. */
TEST(conffile_hrs_207_retention_keys_and_the_section_given_twice)
{
    loaded l;
    load("[retention]\n"
         "history_leaf_horizon_days = 5\n"
         "history_leaf_horizon_days = 6\n"
         "queue_retention.emails = 7d\n"
         "queue_retention.emails = 14d\n"
         "[retention]\n"
         "history_leaf_horizon_days = 99\n"
         "queue_retention.reports = 1d\n", &l);
    CHECK_INT(l.errors, 4);
    CHECK_REPORTS(l, "error[HRS-207]: key `history_leaf_horizon_days` given twice in [retention]\n"
                     "  --> silt.conf:3\n"
                     "   = note: first given at silt.conf:2\n"
                     "   = help: keep one of them\n");
    CHECK_REPORTS(l, "error[HRS-207]: key `queue_retention.emails` given twice in [retention]\n"
                     "  --> silt.conf:5\n"
                     "   = note: first given at silt.conf:4\n");
    CHECK_REPORTS(l, "error[HRS-207]: section [retention] given twice\n"
                     "  --> silt.conf:6\n"
                     "   = note: first given at silt.conf:1\n"
                     "   = help: merge the two into one [retention] section\n");
    CHECK_REPORTS(l, "error[HRS-216]: history_leaf_horizon_days in [retention] must be an integer from 2 to 14\n"
                     "  --> silt.conf:7\n");
    const conf_retention *r = &l.conf.retention;
    CHECK_INT(r->history_leaf_horizon_days, 6);   /* as for every key: the last value read stands */
    CHECK_INT(r->nqueues, 1);                     /* the repeat and the second section are not kept */
    CHECK_INT(r->queues[0].seconds, 7 * 86400);
    loaded_fini(&l);
}

/* "Every problem in a config is reported together": [retention]'s beside
 * the other sections', each at its line, the cross-check too, in line order. */
TEST(conffile_every_retention_problem_is_reported_together_in_line_order)
{
    loaded l;
    load("[queue.emails]\n"
         "priority = 0\n"                                        /* 2 */
         "[retention]\n"
         "queue_retention.emial = 7d\n"                          /* 4: not declared (found at the end) */
         "retention_classes.forever = 1d\n"                      /* 5 */
         "history_leaf_horizon_days = 1\n"                       /* 6 */
         "retention_classes.q_x = 1.5d\n"                        /* 7: two problems */
         "[recovery]\n"
         "worker_state_retention_hours = 168\n", &l);            /* 9 */
    CHECK_STR(l.report.data,
              "error[HRS-205]: priority in [queue.emails] must be an integer from 1 to 100\n"
              "  --> silt.conf:2\n"
              "   = note: found priority = 0\n"
              "error[HRS-216]: queue_retention names queue `emial`, which silt.conf does not declare\n"
              "  --> silt.conf:4\n"
              "   = note: the file declares [queue.emails]\n"
              "   = help: declare [queue.emial], or map one of those\n"
              "error[HRS-216]: retention class key `forever` is reserved\n"
              "  --> silt.conf:5\n"
              "   = note: standard_30d, forever and heartbeats are silt's own classes\n"
              "   = help: declare the class under another key\n"
              "error[HRS-216]: history_leaf_horizon_days in [retention] must be an integer from 2 to 14\n"
              "  --> silt.conf:6\n"
              "   = note: found history_leaf_horizon_days = 1\n"
              "error[HRS-216]: retention class key `q_x` uses the reserved prefix q_\n"
              "  --> silt.conf:7\n"
              "   = note: q_ keys are derived from queue_retention, which gives them their duration\n"
              "   = help: declare the class without the q_ prefix, or map the queue in queue_retention\n"
              "error[HRS-216]: retention_classes.q_x in [retention] must be a positive duration such as 7d, 36h, 90m or 45s\n"
              "  --> silt.conf:7\n"
              "   = note: found retention_classes.q_x = 1.5d\n"
              "   = help: write 36h: a duration is a whole number and one unit, s, m, h or d\n"
              "error[HRS-204]: worker_state_retention_hours moved to [retention]\n"
              "  --> silt.conf:9\n"
              "   = note: it governs how long records live, not how stalled work is detected\n"
              "   = help: set worker_state_retention_hours in [retention]\n"
              "error: aborting due to 7 previous errors\n");
    CHECK_INT(l.errors, 7);
    loaded_fini(&l);
}

/* ---- the whole report ---------------------------------------------------- */

/* One file, several problems: all of them, each at its line, in line order
 * (the cross-check too), and the count. */
TEST(conffile_every_problem_is_reported_together_in_line_order_with_the_count)
{
    loaded l;
    load("# silt.conf\n"
         "[queue.emails]\n"
         "colour = blue\n"
         "priority = 500\n"
         "\n"
         "[recovery]\n"
         "claimer_heartbeat_interval_ms = 30000\n"
         "claimed_stale_after_ms = 50000\n"
         "[retentions]\n"
         "[queue.bad!]\n", &l);
    CHECK_INT(l.errors, 5);
    CHECK_STR(l.report.data,
              "error[HRS-203]: unknown key `colour` in [queue.emails]\n"
              "  --> silt.conf:3\n"
              "   = help: the keys of [queue.NAME] are priority, max_concurrency, rate_limit, rate_limit_per_key\n"
              "error[HRS-205]: priority in [queue.emails] must be an integer from 1 to 100\n"
              "  --> silt.conf:4\n"
              "   = note: found priority = 500\n"
              "error[HRS-204]: claimed_stale_after_ms must be at least twice the claimer heartbeat interval\n"
              "  --> silt.conf:8\n"
              "   = note: claimed_stale_after_ms = 50000, claimer_heartbeat_interval_ms = 30000\n"
              "   = help: set claimed_stale_after_ms to at least 60000, or lower the interval\n"
              "error[HRS-202]: unknown section [retentions]\n"
              "  --> silt.conf:9\n"
              "   = help: the sections are [recovery], [retention], [queue.NAME] and [schedule.NAME]\n"
              "error[HRS-206]: invalid queue name `bad!`\n"
              "  --> silt.conf:10\n"
              "   = note: a queue name is 1 to 48 characters of A-Z, a-z, 0-9, `_` and `-` (this one has 4)\n"
              "error: aborting due to 5 previous errors\n");
    loaded_fini(&l);
}

TEST(conffile_report_names_the_file_as_given)
{
    enter_temp_dir();
    mkdir("etc", 0700);
    write_file("etc/silt.conf", "[nope]\n", 7);
    silt_conf c;
    buf report;
    buf_init(&report);
    CHECK_INT(conffile_load("./etc/silt.conf", &c, &report), 1);
    CHECK(strstr(report.data, "  --> ./etc/silt.conf:1\n") != NULL);
    CHECK_STR(c.path, "./etc/silt.conf");
    conffile_free(&c);
    buf_fini(&report);
    unlink("etc/silt.conf");
    rmdir("etc");
}

TEST(conffile_locate_prefers_the_argument_then_silt_config)
{
    unsetenv("SILT_CONFIG");
    CHECK(conffile_locate(NULL) == NULL);
    setenv("SILT_CONFIG", "", 1);
    CHECK(conffile_locate(NULL) == NULL);   /* empty is unset */
    setenv("SILT_CONFIG", "/etc/silt.conf", 1);
    CHECK_STR(conffile_locate(NULL), "/etc/silt.conf");
    CHECK_STR(conffile_locate("mine.conf"), "mine.conf");
}

/* Whatever the bytes, the parser neither crashes nor loses count: the
 * number it returns is the number of errors in the report, and the last
 * line says it. Pieces of real syntax make the noise reach every branch. */
TEST(conffile_random_files_never_crash_and_the_count_matches_the_report)
{
    static const char *const pieces[] = {
        "[", "]", "=", ":", ";", "#", "\n", "\r\n", " ", "\t", "queue.", "recovery", "retention",
        "priority", "max_concurrency", "claimed_stale_after_ms", "claimer_heartbeat_interval_ms",
        "1", "30000", "-5", "abc", "\xEF\xBB\xBF", "é", "emails", "\n[queue.a]\n", "\n[recovery]\n",
        "\n[schedule.s]\n", "schedule.", "cron", "0 0 30 2 *", "*/5 * * * *", "timezone", "Europe/Paris",
        "task", "queue", "a", "args", "{\"k\": [1, null]}", "catch_up", "skip", "1000",
        "\n[retention]\n", "queue_retention.", "retention_classes.", "7d", "1.5d", "None", "q_", "forever",
        "history_leaf_horizon_days", "queue_terminal_record_retention_hours",
    };
    unsigned seed = 12345;
    for (int round = 0; round < 300; round++) {
        char text[2048];
        size_t len = 0;
        int npieces = (int)(rand_r(&seed) % 120);
        for (int i = 0; i < npieces; i++) {
            const char *p = pieces[rand_r(&seed) % (sizeof pieces / sizeof pieces[0])];
            size_t n = strlen(p);
            if (len + n + 1 >= sizeof text) break;
            memcpy(text + len, p, n);
            len += n;
        }
        if (rand_r(&seed) % 10 == 0 && len) text[rand_r(&seed) % len] = '\0';   /* a NUL somewhere */
        loaded l;
        load_bytes(text, len, &l);
        CHECK_INT(occurrences(l.report.data, "error[HRS-"), l.errors);
        if (l.errors) {
            char last[64];
            snprintf(last, sizeof last, "error: aborting due to %d previous error%s\n", l.errors, l.errors == 1 ? "" : "s");
            size_t ll = strlen(last);
            CHECK(l.report.len >= ll && strcmp(l.report.data + l.report.len - ll, last) == 0);
        }
        loaded_fini(&l);
    }
}

/* rate_limit and rate_limit_per_key: N/PERIOD, the period's number 1 when
 * left out; none by default. */
TEST(conffile_rate_limits_are_n_per_period_in_ms_s_m_or_h)
{
    loaded l;
    load("[queue.a]\n"
         "rate_limit = 100/1s\n"
         "rate_limit_per_key = 5/500ms\n"
         "[queue.b]\n"
         "rate_limit = 20/m\n"
         "rate_limit_per_key = 1000000/24h\n"
         "[queue.c]\n", &l);
    CHECK_INT(l.errors, 0);
    CHECK_INT(l.conf.queues[0].rate.limit, 100);
    CHECK_INT(l.conf.queues[0].rate.period_ms, 1000);
    CHECK_INT(l.conf.queues[0].rate_per_key.limit, 5);
    CHECK_INT(l.conf.queues[0].rate_per_key.period_ms, 500);
    CHECK_INT(l.conf.queues[1].rate.limit, 20);
    CHECK_INT(l.conf.queues[1].rate.period_ms, 60000);
    CHECK_INT(l.conf.queues[1].rate_per_key.limit, 1000000);
    CHECK_INT(l.conf.queues[1].rate_per_key.period_ms, 86400000);
    CHECK_INT(l.conf.queues[2].rate.limit, 0);   /* none */
    CHECK_INT(l.conf.queues[2].rate_per_key.limit, 0);
    loaded_fini(&l);
}

TEST(conffile_hrs_205_a_bad_rate_limit_says_which_part_is_wrong)
{
    static const struct { const char *value, *why; } bad[] = {
        { "100", "not N/PERIOD" }, { "100/", "not N/PERIOD" }, { "1.5/s", "not N/PERIOD" },
        { "100/1 s", "not N/PERIOD" }, { "100/1d", "not N/PERIOD" }, { "-1/s", "not N/PERIOD" },
        { "", "not N/PERIOD" }, { "10/1S", "not N/PERIOD" },
        { "0/1s", "N must be from 1 to 1000000" }, { "1000001/1s", "N must be from 1 to 1000000" },
        { "5/0ms", "PERIOD must be from 1ms to 24h" }, { "5/25h", "PERIOD must be from 1ms to 24h" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "[queue.q]\nmax_concurrency = 2\nrate_limit_per_key = %s\n", bad[i].value);
        loaded l;
        load(text, &l);
        char want[768];
        snprintf(want, sizeof want, "error[HRS-205]: rate_limit_per_key in [queue.q] must be N/PERIOD, at most N "
                 "claims in any window of PERIOD\n"
                 "  --> silt.conf:3\n"
                 "   = note: found rate_limit_per_key = %s: %s\n"
                 "   = help: N from 1 to 1000000, PERIOD a whole number and ms, s, m or h, from 1ms to 24h: "
                 "e.g. rate_limit_per_key = 100/1s, 20/1m or 5/500ms\n",
                 *bad[i].value ? bad[i].value : "(nothing)", bad[i].why);
        check_only_error(&l, want);
        CHECK_INT(l.conf.queues[0].rate_per_key.limit, 0);   /* none: the default stays */
        loaded_fini(&l);
    }
}

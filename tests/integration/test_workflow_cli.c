/* Integration: `silt workflow start|get|list|pause|resume|cancel` and `silt
 * schedules` run as the real binary against a per-test server. Node tasks
 * are ended by the test over HTTP (claim with start, then complete or fail
 * by task name: "bad" fails with BOOM, anything else completes); a get that
 * waits is answered by a child that ends the nodes once the get is parked,
 * so nothing sleeps through a fixed time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#include "support.h"
#include "task_support.h"

#define DEADLINE_MS 30000   /* generous: two cores, other suites running */
#define CLI_OUT     65536

static int cli(const silt_server *s, char *out, const char *args)
{
    return run_cmd(sfmt("SILT_URL='%s' '%s' %s 2>&1", s->url, silt_bin(), args), out, CLI_OUT);
}

/* The id a start printed: its one line. */
static void start_cli(const silt_server *s, const char *definition, char id[96])
{
    static char out[CLI_OUT];
    const char *path = test_file("def.json", definition);
    int rc = cli(s, out, sfmt("workflow start %s", path));
    if (rc != 0) harness_failf(__FILE__, __LINE__, "workflow start: exit %d, %s", rc, out);
    CHECK_INT(strlen(out), 37);
    CHECK(out[36] == '\n');
    keep_str(id, sfmt("%.36s", out));
}

/* Claims what queue q holds and ends each task by its name; result is the
 * completed tasks' result (JSON). How many were claimed. */
static int end_nodes(silt_server *s, const char *q, const char *result)
{
    reply r;
    rq(s, "POST", "/api/v1/workers/w/claim", sfmt("{\"queues\":[\"%s\"],\"max\":100,\"start\":true}", q), &r);
    CHECK_INT(r.status, 200);
    int n = 0;
    for (; jpath(&r, sfmt("tasks.%d", n)) >= 0; n++) {
        task_claimed c;
        keep_str(c.id, jstr(&r, sfmt("tasks.%d.id", n)));
        keep_str(c.claim, jstr(&r, sfmt("tasks.%d.claimId", n)));
        if (strcmp(jstr(&r, sfmt("tasks.%d.name", n)), "bad") == 0)
            CHECK_INT(task_call(s, "fail", &c, "\"errorCode\":\"BOOM\",\"errorMessage\":\"it broke\""), 200);
        else CHECK_INT(task_call(s, "complete", &c, sfmt("\"result\":%s", result)), 200);
    }
    reply_fini(&r);
    return n;
}

/* Lines of out that contain needle. */
static int count_lines_with(const char *out, const char *needle)
{
    int n = 0;
    for (const char *line = out; *line; ) {
        size_t len = strcspn(line, "\n");
        const char *hit = strstr(line, needle);
        if (hit && hit < line + len) n++;
        line += len + (line[len] == '\n');
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

/* Characters (UTF-8 code points) in the longest line of text. */
static size_t widest_line(const char *text)
{
    size_t widest = 0, n = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') { if (n > widest) widest = n; n = 0; continue; }
        n += ((unsigned char)*p & 0xC0) != 0x80;
    }
    return n > widest ? n : widest;
}

static const char DIAMOND[] =
    "{\"name\": \"diamond\", \"output\": \"d\", \"nodes\": [\n"
    "  {\"id\": \"a\", \"task\": \"ok\", \"queue\": \"q\", \"args\": {\"x\": 1}},\n"
    "  {\"id\": \"b\", \"task\": \"ok\", \"queue\": \"q\", \"waitsFor\": [\"a\"]},\n"
    "  {\"id\": \"c\", \"task\": \"ok\", \"queue\": \"q\", \"waitsFor\": [\"a\"]},\n"
    "  {\"id\": \"d\", \"task\": \"ok\", \"queue\": \"q\", \"waitsFor\": [\"b\", \"c\"]}]}\n";

TEST(workflow_cli_start_sends_the_file_and_prints_the_id)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char id[96];
    start_cli(&s, DIAMOND, id);
    CHECK_STR(sql("SELECT name || ' ' || status || ' ' || output_node FROM horsies_workflows WHERE id = '%s'", id),
              "diamond RUNNING d");
    CHECK_STR(sql("SELECT string_agg(node_id || ':' || status, ' ' ORDER BY node_id) FROM horsies_workflow_tasks"
                  " WHERE workflow_id = '%s'", id), "a:ENQUEUED b:PENDING c:PENDING d:PENDING");
    /* from stdin, with --json */
    CHECK_INT(run_cmd(sfmt("printf '%%s' '{\"name\":\"one\",\"nodes\":[{\"id\":\"x\",\"task\":\"ok\",\"queue\":\"q\"}]}'"
                           " | SILT_URL='%s' '%s' workflow start - --json", s.url, silt_bin()), out, CLI_OUT), 0);
    CHECK(strstr(out, "\"status\": \"RUNNING\"") != NULL);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows WHERE name = 'one'"), "1");
    srv_stop(&s);
}

TEST(workflow_cli_start_refuses_a_bad_definition_printing_every_problem)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    static const char bad[] =
        "{\"name\":\"bad\",\"output\":\"zz\",\"onError\":\"SHRUG\",\"nodes\":["
        "{\"id\":\"a\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"b\"]},"
        "{\"id\":\"b\",\"task\":\"ok\",\"queue\":\"q\",\"waitsFor\":[\"a\"]},"
        "{\"id\":\"c\",\"task\":\"ok\",\"queue\":\"q\",\"join\":\"quorum\",\"minSuccess\":3,\"waitsFor\":[\"a\"]},"
        "{\"id\":\"c\",\"task\":\"ok\",\"queue\":\"q\"}]}";
    reply r;   /* what the server finds, to compare with what the command printed */
    rq(&s, "POST", "/api/v1/workflows", bad, &r);
    CHECK_INT(r.status, 400);
    const char *path = test_file("bad.json", bad);
    /* stderr alone: every problem, one a line; nothing on stdout */
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' workflow start %s 2>&1 >/dev/null", s.url, silt_bin(), path), out,
                      CLI_OUT), 1);
    int n = 0;
    for (; jpath(&r, sfmt("problems.%d", n)) >= 0; n++) {
        const char *line = sfmt("silt: %s\n", jstr(&r, sfmt("problems.%d", n)));
        if (!strstr(out, line)) harness_failf(__FILE__, __LINE__, "\"%s\" not printed in:\n%s", line, out);
    }
    CHECK(n >= 5);   /* onError, output, duplicate, quorum, cycle */
    CHECK_INT(count_lines_with(out, "silt: "), n);
    CHECK(strstr(out, "see problems") == NULL);   /* the problems, not the summary */
    reply_fini(&r);
    CHECK_INT(run_cmd(sfmt("SILT_URL='%s' '%s' workflow start %s 2>/dev/null", s.url, silt_bin(), path), out,
                      CLI_OUT), 1);
    CHECK_STR(out, "");
    /* a node the server cannot read: its one error */
    test_file("bad.json", "{\"name\":\"bad\",\"nodes\":[{\"id\":\"a\",\"queue\":\"q\"}]}");
    CHECK_INT(cli(&s, out, sfmt("workflow start %s", path)), 1);
    CHECK(strstr(out, "silt: nodes[0]: task is required") != NULL);
    /* what is not a definition never reaches the server: usage errors */
    test_file("bad.json", "{\"name\":");
    CHECK_INT(cli(&s, out, sfmt("workflow start %s", path)), 2);
    CHECK(strstr(out, "not valid JSON") != NULL);
    test_file("bad.json", "[1]");
    CHECK_INT(cli(&s, out, sfmt("workflow start %s", path)), 2);
    CHECK(strstr(out, "one JSON object") != NULL);
    unlink(path);
    CHECK_INT(cli(&s, out, sfmt("workflow start %s", path)), 2);
    CHECK(strstr(out, "cannot read") != NULL);
    CHECK_INT(cli(&s, out, "workflow start"), 2);
    CHECK(strstr(out, "missing arguments") != NULL);
    CHECK_STR(sql("SELECT count(*) FROM horsies_workflows"), "0");
    CHECK_STR(sql("SELECT count(*) FROM horsies_tasks"), "0");
    srv_stop(&s);
}

TEST(workflow_cli_get_shows_the_fields_and_a_table_of_nodes)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char id[96];
    start_cli(&s, DIAMOND, id);
    CHECK_INT(cli(&s, out, sfmt("workflow get %s", id)), 0);
    CHECK(strncmp(out, "FIELD ", 6) == 0);
    CHECK(line_starting(out, "id ") && strstr(line_starting(out, "id "), id));
    CHECK(line_starting(out, "status ") && strstr(line_starting(out, "status "), "RUNNING"));
    CHECK(line_starting(out, "onError ") && strstr(line_starting(out, "onError "), "FAIL"));
    const char *h = line_starting(out, "ID ");
    CHECK(h != NULL);
    char header[256];
    snprintf(header, sizeof header, "%s", h);
    CHECK(strstr(header, "TASK") && strstr(header, "QUEUE") && strstr(header, "STATUS") && strstr(header, "WAITS_FOR")
          && strstr(header, "RESULT"));
    const char *d = line_starting(out, "d ");
    CHECK(d != NULL);
    CHECK_STR(cell_under(header, d, "STATUS"), "PENDING");
    CHECK_STR(cell_under(header, d, "WAITS_FOR"), "b,c");
    CHECK_STR(cell_under(header, line_starting(out, "a "), "WAITS_FOR"), "-");
    CHECK_STR(cell_under(header, line_starting(out, "a "), "STATUS"), "ENQUEUED");
    CHECK_INT(cli(&s, out, sfmt("workflow get %s --json", id)), 0);
    CHECK(strstr(out, "\"nodes\": [") != NULL);
    CHECK_INT(cli(&s, out, "workflow get 01a233f6-7074-706c-a9b9-8691edad8860"), 1);
    CHECK(strstr(out, "no workflow") != NULL);
    CHECK_INT(cli(&s, out, sfmt("workflow get %s --wait 60001", id)), 2);
    srv_stop(&s);
}

/* The child's part: once the get is parked, end both nodes in turn (a long
 * result for the first, BOOM for the one that waits for it). */
static void end_nodes_once_parked(const silt_server *s, const char *result)
{
    silt_server again = *s;
    again.http = http_client_new(s->url);
    srv_await_metric(&again, "silt_task_waits_parked", 1, DEADLINE_MS);
    int first = end_nodes(&again, "q", result);   /* "long" */
    int second = end_nodes(&again, "q", result);  /* "broken", enqueued as long completed */
    _exit(first == 1 && second == 1 ? 0 : 1);
}

TEST(workflow_cli_get_waits_for_the_end_and_cuts_results_to_fit)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char id[96];
    start_cli(&s, "{\"name\":\"w\",\"nodes\":[{\"id\":\"long\",\"task\":\"ok\",\"queue\":\"q\"},"
                  "{\"id\":\"broken\",\"task\":\"bad\",\"queue\":\"q\",\"waitsFor\":[\"long\"]}]}", id);
    char result[400];
    snprintf(result, sizeof result, "{\"text\":\"%0300d\"}", 7);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) end_nodes_once_parked(&s, result);
    CHECK_INT(cli(&s, out, sfmt("workflow get %s --wait 30000", id)), 0);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strstr(line_starting(out, "status "), "FAILED") != NULL);
    /* the node table (after the blank line) fits 100 columns; the long result is cut */
    const char *nodes = strstr(out, "\n\n");
    CHECK(nodes != NULL);
    CHECK(widest_line(nodes + 2) <= 100);
    const char *row = line_starting(nodes + 2, "long ");
    CHECK(row != NULL && strstr(row, "COMPLETED") && strstr(row, "{\"text\":\"0000") && strstr(row, "\xe2\x80\xa6"));
    row = line_starting(nodes + 2, "broken ");
    CHECK(row != NULL && strstr(row, "FAILED") && strstr(row, "BOOM: it broke"));
    srv_stop(&s);
}

TEST(workflow_cli_list_filters_and_pages_with_the_cursor_it_prints)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char id[96];
    for (int i = 0; i < 3; i++) start_cli(&s, "{\"name\":\"a\",\"nodes\":[{\"id\":\"x\",\"task\":\"ok\",\"queue\":\"q\"}]}", id);
    start_cli(&s, "{\"name\":\"b\",\"nodes\":[{\"id\":\"x\",\"task\":\"ok\",\"queue\":\"q\"}]}", id);
    CHECK_INT(cli(&s, out, "workflow list --name a --status running --limit 2"), 0);
    const char *header = line_starting(out, "ID ");
    CHECK(header && strstr(header, "NAME") && strstr(header, "STATUS") && strstr(header, "CREATED_AT")
          && strstr(header, "FINISHED_AT"));
    CHECK_INT(count_lines_with(out, " RUNNING "), 2);
    const char *next = strstr(out, "next cursor: ");
    CHECK(next != NULL);
    char cursor[96];
    keep_str(cursor, sfmt("%.36s", next + strlen("next cursor: ")));
    CHECK_INT(cli(&s, out, sfmt("workflow list --name a --limit 2 --cursor %s", cursor)), 0);
    CHECK_INT(count_lines_with(out, " RUNNING "), 1);
    CHECK(strstr(out, "next cursor") == NULL);
    /* the cancelled one is FINISHED_AT something, and the only one in its status */
    CHECK_INT(cli(&s, out, sfmt("workflow cancel %s", id)), 0);
    CHECK_INT(cli(&s, out, "workflow list --status CANCELLED"), 0);
    CHECK_INT(count_lines_with(out, id), 1);
    CHECK_INT(count_lines_with(out, " - "), 0);
    CHECK(strstr(line_starting(out, id), " b ") != NULL);
    CHECK_INT(cli(&s, out, "workflow list --name nothing-here"), 0);
    CHECK_STR(out, "(no workflows)\n");
    CHECK_INT(cli(&s, out, "workflow list --status DONE"), 2);   /* the server would list nothing */
    CHECK(strstr(out, "--status must be a workflow status") != NULL);
    CHECK_INT(cli(&s, out, "workflow list --limit 1001"), 1);      /* what only the server bounds: its 400 */
    CHECK(strstr(out, "limit") != NULL);
    CHECK_INT(cli(&s, out, "workflow list --json --name b"), 0);
    CHECK(strstr(out, "\"nextCursor\": null") != NULL);
    srv_stop(&s);
}

TEST(workflow_cli_pause_resume_and_cancel_print_the_status)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char id[96];
    start_cli(&s, DIAMOND, id);
    CHECK_INT(cli(&s, out, sfmt("workflow pause %s", id)), 0);
    CHECK_STR(out, "PAUSED\n");
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", id), "PAUSED");
    CHECK_INT(cli(&s, out, sfmt("workflow resume %s", id)), 0);
    CHECK_STR(out, "RUNNING\n");
    CHECK_INT(cli(&s, out, sfmt("workflow cancel %s --json", id)), 0);
    CHECK(strstr(out, "\"status\": \"CANCELLED\"") != NULL);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", id), "CANCELLED");
    /* an ended workflow: its status, and exit 1 for what cannot be done */
    CHECK_INT(cli(&s, out, sfmt("workflow pause %s", id)), 1);
    CHECK(strncmp(out, "CANCELLED\n", 10) == 0 || strstr(out, "\nCANCELLED\n"));
    CHECK(strstr(out, sfmt("workflow %s already ended CANCELLED: nothing to pause", id)) != NULL);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", id), "CANCELLED");
    CHECK_INT(cli(&s, out, sfmt("workflow cancel %s", id)), 1);   /* cancelled already: not by this cancel */
    CHECK(strstr(out, sfmt("workflow %s already ended CANCELLED: nothing to cancel", id)) != NULL);
    CHECK_INT(cli(&s, out, "workflow pause 01a233f6-7074-706c-a9b9-8691edad8860"), 1);
    CHECK(strstr(out, "no workflow") != NULL);
    CHECK_INT(cli(&s, out, "workflow resume"), 2);
    CHECK_INT(cli(&s, out, "workflow"), 2);
    CHECK(strstr(out, "which verb?") != NULL);
    CHECK_INT(cli(&s, out, "workflow frobnicate"), 2);
    srv_stop(&s);
}

static const char ONE_NODE[] = "{\"name\":\"one\",\"nodes\":[{\"id\":\"x\",\"task\":\"ok\",\"queue\":\"q\"}]}";

/* out (stdout and stderr, in either order) has the line line. */
static bool has_line(const char *out, const char *line)
{
    size_t n = strlen(line);
    return (strncmp(out, line, n) == 0 && (out[n] == '\n' || !out[n])) || strstr(out, sfmt("\n%s\n", line));
}

TEST(workflow_resume_of_an_ended_workflow_exits_1_saying_it_has_ended)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char id[96];
    start_cli(&s, ONE_NODE, id);
    CHECK_INT(end_nodes(&s, "q", "1"), 1);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", id), "COMPLETED");
    CHECK_INT(cli(&s, out, sfmt("workflow resume %s", id)), 1);
    CHECK(has_line(out, "COMPLETED"));
    CHECK(strstr(out, sfmt("silt: workflow %s already ended COMPLETED: nothing to resume", id)) != NULL);
    CHECK_INT(cli(&s, out, sfmt("workflow resume %s --json", id)), 1);   /* the reply still printed */
    CHECK(strstr(out, "\"status\": \"COMPLETED\"") != NULL);
    CHECK(strstr(out, "nothing to resume") != NULL);
    /* pause and cancel alike, and nothing changes */
    CHECK_INT(cli(&s, out, sfmt("workflow pause %s", id)), 1);
    CHECK(strstr(out, sfmt("workflow %s already ended COMPLETED: nothing to pause", id)) != NULL);
    CHECK_INT(cli(&s, out, sfmt("workflow cancel %s --json", id)), 1);
    CHECK(strstr(out, "\"status\": \"COMPLETED\"") != NULL);
    CHECK(strstr(out, sfmt("workflow %s already ended COMPLETED: nothing to cancel", id)) != NULL);
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", id), "COMPLETED");
    CHECK_INT(cli(&s, out, "workflow resume 01a233f6-7074-706c-a9b9-8691edad8860"), 1);
    CHECK(strstr(out, "no workflow") != NULL);
    srv_stop(&s);
}

/* The answer alone would read like the one above: what tells them apart is
 * that this workflow had not ended when the resume came. */
TEST(workflow_resume_that_finishes_a_paused_workflow_exits_0_printing_how_it_ended)
{
    silt_server s;
    srv_start(&s, NULL);
    static char out[CLI_OUT];
    char id[96];
    start_cli(&s, ONE_NODE, id);
    CHECK_INT(cli(&s, out, sfmt("workflow pause %s", id)), 0);
    CHECK_INT(end_nodes(&s, "q", "1"), 1);   /* its node ends while it is paused */
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", id), "PAUSED");
    CHECK_INT(cli(&s, out, sfmt("workflow resume %s", id)), 0);
    CHECK_STR(out, "COMPLETED\n");
    CHECK_STR(sql("SELECT status FROM horsies_workflows WHERE id = '%s'", id), "COMPLETED");
    srv_stop(&s);
}

TEST(workflow_cli_help_describes_every_verb)
{
    static char out[CLI_OUT];
    static const char *const verbs[][2] = {
        { "", "usage: silt workflow <start | get | list | pause | resume | cancel>" },
        { "start", "usage: silt workflow start FILE" },
        { "get", "usage: silt workflow get <id> [--wait MS]" },
        { "list", "usage: silt workflow list [--status S] [--name N]" },
        { "pause", "usage: silt workflow pause <id>" },
        { "resume", "usage: silt workflow resume <id>" },
        { "cancel", "usage: silt workflow cancel <id>" },
    };
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        CHECK_INT(run_cmd(sfmt("'%s' workflow %s --help", silt_bin(), verbs[i][0]), out, CLI_OUT), 0);
        if (strncmp(out, verbs[i][1], strlen(verbs[i][1])) != 0)
            harness_failf(__FILE__, __LINE__, "workflow %s --help: %s", verbs[i][0], out);
    }
    CHECK_INT(run_cmd(sfmt("'%s' schedules --help", silt_bin()), out, CLI_OUT), 0);
    CHECK(strncmp(out, "usage: silt schedules [--json]", 30) == 0);
    CHECK_INT(run_cmd(sfmt("'%s' --help", silt_bin()), out, CLI_OUT), 0);
    CHECK(strstr(out, "  workflow ") && strstr(out, "  schedules "));
}

TEST(schedules_cli_lists_the_schedules_of_silt_conf)
{
    const char *conf = test_file("silt.conf", "[schedule.tick]\ncron = * * * * *\ntask = tick\nqueue = q\n");
    silt_server s;
    srv_start(&s, (const char *const[]){ sfmt("SILT_CONFIG=%s", conf), NULL });
    static char out[CLI_OUT];
    CHECK_INT(cli(&s, out, "schedules"), 0);
    const char *h = line_starting(out, "NAME ");
    CHECK(h != NULL);
    char header[256];
    snprintf(header, sizeof header, "%s", h);
    CHECK(strstr(header, "TIMEZONE") && strstr(header, "TASK") && strstr(header, "QUEUE") &&
          strstr(header, "LAST_FIRED_AT") && strstr(header, "NEXT_FIRE"));
    const char *row = line_starting(out, "tick ");
    CHECK(row != NULL);
    CHECK_STR(cell_under(header, row, "NAME"), "tick");
    const char *cron = strstr(header, "CRON");
    CHECK(strncmp(row + (cron - header), "* * * * *  ", 11) == 0);   /* the whole expression, one column */
    CHECK_STR(cell_under(header, row, "TIMEZONE"), "UTC");
    CHECK_STR(cell_under(header, row, "TASK"), "tick");
    CHECK_STR(cell_under(header, row, "QUEUE"), "q");
    CHECK(strlen(cell_under(header, row, "NEXT_FIRE")) >= 20);   /* a time */
    CHECK_INT(cli(&s, out, "schedules --json"), 0);
    CHECK(strstr(out, "\"cron\": \"* * * * *\"") != NULL);
    CHECK(strstr(out, "\"catchUp\"") != NULL);
    srv_stop(&s);
    /* a server whose file declares no schedule */
    srv_start(&s, NULL);
    CHECK_INT(cli(&s, out, "schedules"), 0);
    CHECK_STR(out, "(no schedules)\n");
    CHECK_INT(cli(&s, out, "schedules extra"), 2);
    srv_stop(&s);
}

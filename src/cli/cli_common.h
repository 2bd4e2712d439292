/* cli_common: what the client subcommands share — option parsing from a
 * table, the server URL, one request with error reporting, and the two output
 * modes (a readable table by default, the server's JSON pretty-printed with
 * --json). Exit statuses are those of cli.h. */
#ifndef SILT_CLI_COMMON_H
#define SILT_CLI_COMMON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "base/buf.h"
#include "base/json.h"
#include "net/http_client.h"

#define CLI_EXIT_OK     0
#define CLI_EXIT_FAILED 1
#define CLI_EXIT_USAGE  2

#define CLI_DEFAULT_URL "http://localhost:6632"
#define CLI_MAX_TOKENS  (1u << 22)   /* JSON tokens accepted in a payload or a reply */
#define CLI_WAIT_SLACK_MS 30000      /* a held request's client timeout beyond its wait */

/* The lines that end most usage texts, written once so every command
 * words them alike: the two options every client command takes, and where
 * the server is. */
#define CLI_USAGE_JSON_HELP \
    "  --json         print the server's reply as JSON\n" \
    "  --help         show this help\n"
#define CLI_USAGE_SERVER \
    "\n" \
    "The server is SILT_URL (default " CLI_DEFAULT_URL ").\n"

typedef enum cli_opt_kind {
    CLI_OPT_FLAG,   /* dest is bool *: set true */
    CLI_OPT_STR,    /* dest is const char **: the argument (last one wins) */
    CLI_OPT_INT,    /* dest is long *: a non-negative decimal argument */
    CLI_OPT_LIST,   /* dest is cli_list *: every argument, in order */
} cli_opt_kind;

typedef struct cli_list {
    const char **items;   /* point into argv */
    int          n;
} cli_list;

typedef struct cli_opt {
    const char  *name;    /* long name without the dashes, e.g. "partition" */
    cli_opt_kind kind;
    void        *dest;
} cli_opt;

typedef struct cli_cmd {
    const char    *name;     /* subcommand, for messages: "push" */
    const char    *usage;    /* full help text */
    const cli_opt *opts;
    size_t         nopts;
    int            min_pos;  /* positional arguments required */
    int            max_pos;  /* positional arguments allowed, -1 for any */
} cli_cmd;

typedef struct cli_args {
    char **pos;   /* positional arguments, in order (owned array, argv strings) */
    int    npos;
} cli_args;

/* Parses argv[1..] ("--name value", "--name=value", "--" ends options;
 * "--help"/"-h" prints the usage to stdout). 0: carry on. -1: the command is
 * done and returns *exit_code (0 after --help, 2 after a usage error; both
 * already printed). Free args and any cli_list with the _fini functions. */
int  cli_parse(const cli_cmd *cmd, int argc, char **argv, cli_args *args, int *exit_code)
     __attribute__((warn_unused_result));
void cli_args_fini(cli_args *args);
void cli_list_fini(cli_list *l);

/* What a command does once its arguments parsed: opts is the record its
 * option table writes into (the options are in it). The exit status. */
typedef int (*cli_run_fn)(const cli_cmd *cmd, const cli_args *args, void *opts);
/* A command's whole life: cli_parse, then run when that says carry on,
 * then the arguments freed (a cli_list in opts stays the caller's). The
 * exit status. */
int  cli_run(const cli_cmd *cmd, int argc, char **argv, cli_run_fn run, void *opts);
/* The same for a command whose only option is --json, taking min_pos to
 * max_pos positional arguments: run's opts is a bool *, the flag. */
int  cli_run_json_only(const char *name, const char *usage, int min_pos, int max_pos, int argc, char **argv,
                       cli_run_fn run);

/* Prints "silt <cmd>: <message>" and the synopsis to stderr; returns 2. */
int  cli_usage_error(const cli_cmd *cmd, const char *fmt, ...)
     __attribute__((format(printf, 2, 3)));
/* Prints "silt: <message>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SILT_URL, or the default when unset or empty. */
const char *cli_server_url(void);
/* A client of url that sends SILT_TOKEN, when set, as its bearer token
 * (servers with JWT_ENABLED need one). NULL on a bad url. */
http_client *cli_http_client(const char *url);
/* Appends s percent-encoded for a path segment or a query value. */
void cli_url_encode(buf *out, const char *s);

/* One request to the server (body may be NULL; timeout_ms 0 keeps the
 * client's default). 0 with the response in r for a status below 400.
 * Otherwise prints "silt: <error>" (the server's {"error"} when it sent one)
 * and returns -1. */
int  cli_request(const char *method, const char *path, const buf *body, int timeout_ms,
                 http_response *r) __attribute__((warn_unused_result));
/* The same for a surface whose error status carries the answer (a health
 * check's 503): 0 with the response in r whatever its status, -1 when the
 * request failed (printed). cli_report_status prints an error reply as
 * cli_request does: the server's {"error"} when it sent one. */
int  cli_request_any(const char *method, const char *path, const buf *body, int timeout_ms,
                     http_response *r) __attribute__((warn_unused_result));
void cli_report_status(const http_response *r);
/* Judges a reply below 400 (printing what it says) for the command whose
 * ctx it is given; the exit status. */
typedef int (*cli_judge_fn)(const void *ctx, const http_response *r);
/* One request, as cli_request sends it, whose reply the command judges
 * itself: judge's exit status, or CLI_EXIT_FAILED when the request failed
 * (printed). */
int  cli_request_judged(const char *method, const char *path, const buf *body, int timeout_ms, cli_judge_fn judge,
                        const void *ctx);
/* Parses a reply body into d; on malformed JSON prints an error and returns -1. */
int  cli_parse_reply(const http_response *r, json_doc *d) __attribute__((warn_unused_result));
/* The same into a doc it initialises: on -1 (printed) d is already
 * finished, so the caller just returns; on 0 the caller finishes it. */
int  cli_read_reply(const http_response *r, json_doc *d) __attribute__((warn_unused_result));
/* Appends the whole file at path ("-": standard input) to out, as
 * --args-file and a workflow's definition are read; -1 when it cannot be
 * opened or read. */
int  cli_read_file(const char *path, buf *out) __attribute__((warn_unused_result));
/* text, read from where, checked to be one JSON object (a transaction, a
 * workflow's definition): 0, or a usage error of cmd, "<where> <not_object>"
 * when it is JSON of another kind. */
int  cli_check_json_object(const cli_cmd *cmd, const char *where, const buf *text, const char *not_object);
/* Member key of obj is true (false when obj is -1 or the member is
 * absent or anything else). */
bool cli_is_true(const json_doc *d, int obj, const char *key);

/* Writes a JSON text pretty-printed to stdout, newline-terminated. */
void cli_print_json(const char *text, size_t len);
/* Appends a valid JSON text with the whitespace between tokens removed. */
void cli_put_compact(buf *out, const char *text, size_t len);
/* A member of a JSON object being written into b: its key, after a comma
 * unless it is the object's first (b empty or ending in '{'), then ':'.
 * The value follows. */
void cli_put_key(buf *b, const char *key);
/* A string member; nothing when value is NULL (the option not given). */
void cli_put_str_member(buf *b, const char *key, const char *value);
/* An integer member; nothing when value is negative (not given). */
void cli_put_long_member(buf *b, const char *key, long value);
/* Appends a value as a table cell: strings decoded, other values compact JSON,
 * "-" for an absent value (tok < 0). */
void cli_put_cell(buf *out, const json_doc *d, int tok);
/* The decoded string at member key of obj, or NULL (caller frees). */
char *cli_get_str(const json_doc *d, int obj, const char *key);

/* Appends "/" and s percent-encoded: one path segment. */
void cli_path_segment(buf *path, const char *s);
/* Appends "?key=value" (or "&key=value" once path has a query), the value
 * percent-encoded; nothing when value is NULL. */
void cli_query_param(buf *path, const char *key, const char *value);
/* The token at a dotted member path ("messages.total") under obj, or -1. */
int  cli_lookup(const json_doc *d, int obj, const char *path);

/* A text table whose columns are as wide as their widest cell. */
typedef struct cli_table {
    int     ncols;
    char  **cells;    /* row-major, header row first */
    size_t  ncells;
    size_t  cap;
    size_t  fit;      /* 0 (the default), or the columns a row may take: longer
                       * cells of the last column are cut to fit, ending in "…" */
} cli_table;

#define CLI_TABLE_WIDTH   100   /* a fitted table's width: a terminal, with room */
#define CLI_TABLE_MIN_FIT 20    /* a cut last column keeps at least this much */

/* headers: ncols column titles. */
void cli_table_init(cli_table *t, int ncols, const char *const *headers);
void cli_table_add(cli_table *t, const char *cell);
void cli_table_add_value(cli_table *t, const json_doc *d, int tok);
/* An array's elements as one cell, "a,b,c"; "-" when arr is -1, not an
 * array, or shows nothing (a group's queues, a worker's, a node's waits). */
void cli_table_add_joined(cli_table *t, const json_doc *d, int arr);
/* One row per member of object obj: key, value. */
void cli_table_add_members(cli_table *t, const json_doc *d, int obj);
/* The value at a dotted member path under obj as a cell; "-" when it is
 * absent or null. */
void cli_table_add_field(cli_table *t, const json_doc *d, int obj, const char *path);
/* Prints the table. With t->fit set the last column's cells are cut to the
 * room the other columns leave (at least CLI_TABLE_MIN_FIT characters), at a
 * character boundary, so one long value does not wrap every row. */
void cli_table_print(const cli_table *t, FILE *f);
/* The table on stdout, or the line none ("(no queues)") when it has no
 * row but its headers. */
void cli_table_print_or(const cli_table *t, const char *none);
void cli_table_fini(cli_table *t);

/* The tables most replies are shown as, printed on stdout. */
/* One row per element of the array at member of the reply's object: each
 * of the ncols fields (dotted member paths) under its header; the line
 * none instead when the array is empty or absent. */
void cli_print_rows(const json_doc *d, const char *member, int ncols, const char *const *headers,
                    const char *const *fields, const char *none);
/* Prints before, the member of the reply's object as a table cell ("-"
 * when absent), then after: a line that reports one value. */
void cli_print_member(const json_doc *d, const char *before, const char *member, const char *after);
/* Each element of the array list (-1: none) as a table cell, on a line of
 * its own after indent: a list of notes or names under a heading. */
void cli_print_elements(const json_doc *d, int list, const char *indent);
/* The line "deleted N <noun>s" ("1 <noun>" alone), N the member of the
 * reply's object that counts what a delete removed. */
void cli_print_deleted(const json_doc *d, const char *member, const char *noun);
/* A two-column table of obj's members: key_header ("FIELD", "OPTION") and
 * VALUE. */
void cli_print_members(const json_doc *d, int obj, const char *key_header);
/* A FIELD/VALUE table of the named members of the reply's object, in the
 * order given ("-" for an absent one). */
void cli_print_named_fields(const json_doc *d, const char *const *fields, size_t nfields);

/* Commands with verbs ("silt queues show q"): one row per verb. */
typedef struct cli_verb {
    const char *name;                     /* "show" */
    int       (*run)(int argc, char **argv);   /* argv[0] is the verb */
} cli_verb;

/* Runs the verb argv[1] names with argv shifted past the command. With no
 * verb (no argument, or an option first) runs verbs[0], the default, with
 * argv as given. An unknown verb is a usage error (usage's first line
 * printed); returns the exit status. */
int  cli_dispatch(const char *cmd, const char *usage, const cli_verb *verbs, size_t nverbs,
                  int argc, char **argv);

/* A command with verbs and no default one, run without a verb ("silt
 * task"): the usage with --help, else a usage error asking question
 * ("which verb? ..."); the exit status. */
int  cli_no_verb(const char *cmd, const char *usage, const char *question, int argc, char **argv);

/* Renders a parsed reply on stdout (a table, a few lines). */
typedef void (*cli_render_fn)(const json_doc *d);
/* A read-only verb with no argument and only --json (silt queues, silt
 * schedules, ...): GET path, rendered by render; the exit status. */
int  cli_get_verb(int argc, char **argv, const char *name, const char *usage, const char *path,
                  cli_render_fn render);
/* Renders a reply object as a FIELD/VALUE table of its members. */
void cli_render_fields(const json_doc *d);
/* One request, then the reply printed as JSON when json, else by render.
 * Returns the exit status (errors already printed). */
int  cli_call(const char *method, const char *path, const buf *body, bool json,
              cli_render_fn render);
/* The same with the client's timeout (ms; 0: the default), for a request
 * the server holds (a ?wait). */
int  cli_call_within(const char *method, const char *path, const buf *body, int timeout_ms, bool json,
                     cli_render_fn render);
/* A verb reading one item its only argument names, with --wait MS and
 * --json ("silt task get id --wait 5000"): GET collection/<id>, held by the
 * server up to MS (?wait, none when 0; at most CLI_MAX_WAIT_MS) for the item
 * to end, and waited for that long plus a margin. The reply printed or
 * rendered as cli_call does; the exit status. */
#define CLI_MAX_WAIT_MS 60000   /* the server's bound on ?wait */
int  cli_get_item_waiting(const char *name, const char *usage, const char *collection, int argc, char **argv,
                          cli_render_fn render);

/* A verb on one item its only argument names, with --json as its only
 * option ("silt queues show q", "silt dlq replay id"): method on
 * collection/<argument><suffix>. */
typedef struct cli_item_verb {
    const char *name;         /* for messages: "queues show" */
    const char *usage;
    const char *method;       /* "GET" */
    const char *collection;   /* "/api/v1/resources/queues" */
    const char *suffix;       /* after the item's segment ("/replay"), or NULL */
} cli_item_verb;
/* Runs the verb with the reply printed as JSON or rendered, as cli_call
 * does; the exit status. */
int  cli_item_call(const cli_item_verb *v, int argc, char **argv, cli_render_fn render);
/* Judges a reply below 400 to a verb on item id (printing what it says);
 * the exit status. */
typedef int (*cli_report_fn)(const char *id, bool json, const http_response *r);
/* Runs the verb with a reply the command judges itself (a delete that found
 * nothing fails): errors printed as cli_request does, else report's status. */
int  cli_item_request(const cli_item_verb *v, int argc, char **argv, cli_report_fn report);

/* One query parameter; a NULL value is left out. */
typedef struct cli_param {
    const char *key;
    const char *value;
} cli_param;
/* GET path?key=value for each of the nparams parameters, the reply
 * printed or rendered as cli_call does; the exit status. */
int  cli_get_query(const char *path, const cli_param *params, size_t nparams, bool json, cli_render_fn render);
/* A page of a list read a cursor at a time (silt task list, silt workflow
 * list): GET path?key=value for each of the nfilters filters, then limit
 * (left out when 0: the server's default) and cursor (when not NULL). The
 * reply printed as JSON when json, else rendered by render followed by the
 * line "next cursor: C" when the reply has a nextCursor. The exit status. */
int  cli_get_page(const char *path, const cli_param *filters, size_t nfilters, long limit, const char *cursor,
                  bool json, cli_render_fn render);

#endif

/* cli_common: shared plumbing of the client subcommands (see cli_common.h).
 * Subcommands describe their options in a table and their output in terms of
 * cells; this file owns argv handling, talking to the server, reporting its
 * errors in one format ("silt: <error>") and laying out tables. */
#include "base/xalloc.h"
#include "cli/cli_common.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- argument parsing ------------------------------------------------- */

static const cli_opt *opt_find(const cli_cmd *cmd, const char *name, size_t n)
{
    for (size_t i = 0; i < cmd->nopts; i++)
        if (strlen(cmd->opts[i].name) == n && strncmp(cmd->opts[i].name, name, n) == 0)
            return &cmd->opts[i];
    return NULL;
}

static int opt_store_int(const cli_cmd *cmd, const cli_opt *o, const char *v)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno)
        return cli_usage_error(cmd, "--%s needs a non-negative integer, got \"%s\"", o->name, v);
    *(long *)o->dest = n;
    return 0;
}

static void list_push(cli_list *l, const char *v)
{
    const char **items = xrealloc(l->items, (size_t)(l->n + 1) * sizeof *items);
    items[l->n++] = v;
    l->items = items;
}

static int opt_store(const cli_cmd *cmd, const cli_opt *o, const char *v)
{
    switch (o->kind) {
    case CLI_OPT_FLAG: *(bool *)o->dest = true; return 0;
    case CLI_OPT_STR: *(const char **)o->dest = v; return 0;
    case CLI_OPT_INT: return opt_store_int(cmd, o, v);
    case CLI_OPT_LIST: list_push(o->dest, v); return 0;
    }
    return 0;
}

/* Handles argv[*i], an option; advances *i past a separate argument.
 * 0 ok, 2 usage error (printed). */
static int parse_option(const cli_cmd *cmd, int argc, char **argv, int *i)
{
    const char *name = argv[*i] + 2, *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    const cli_opt *o = opt_find(cmd, name, n);
    if (!o) return cli_usage_error(cmd, "unknown option \"%s\"", argv[*i]);
    if (o->kind == CLI_OPT_FLAG) {
        if (eq) return cli_usage_error(cmd, "--%s takes no value", o->name);
        return opt_store(cmd, o, NULL);
    }
    if (eq) return opt_store(cmd, o, eq + 1);
    if (*i + 1 >= argc) return cli_usage_error(cmd, "--%s needs a value", o->name);
    return opt_store(cmd, o, argv[++*i]);
}

static bool is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

static int parse_argv(const cli_cmd *cmd, int argc, char **argv, cli_args *args)
{
    bool options = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && strcmp(a, "--") == 0) options = false;
        else if (options && strncmp(a, "--", 2) == 0) {
            int rc = parse_option(cmd, argc, argv, &i);
            if (rc) return rc;
        } else args->pos[args->npos++] = argv[i];
    }
    if (args->npos < cmd->min_pos)
        return cli_usage_error(cmd, "missing arguments");
    if (cmd->max_pos >= 0 && args->npos > cmd->max_pos)
        return cli_usage_error(cmd, "unexpected argument \"%s\"", args->pos[cmd->max_pos]);
    return 0;
}

int cli_parse(const cli_cmd *cmd, int argc, char **argv, cli_args *args, int *exit_code)
{
    args->npos = 0;
    args->pos = xcalloc((size_t)argc + 1, sizeof *args->pos);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (is_help(argv[i])) {
            fputs(cmd->usage, stdout);
            *exit_code = CLI_EXIT_OK;
            return -1;
        }
    }
    *exit_code = parse_argv(cmd, argc, argv, args);
    return *exit_code ? -1 : 0;
}

void cli_args_fini(cli_args *args)
{
    free(args->pos);
    args->pos = NULL;
    args->npos = 0;
}

int cli_run(const cli_cmd *cmd, int argc, char **argv, cli_run_fn run, void *opts)
{
    cli_args a;
    int rc;
    if (cli_parse(cmd, argc, argv, &a, &rc) == 0) rc = run(cmd, &a, opts);
    cli_args_fini(&a);
    return rc;
}

int cli_run_json_only(const char *name, const char *usage, int min_pos, int max_pos, int argc, char **argv,
                      cli_run_fn run)
{
    bool json = false;
    const cli_opt opts[] = { { "json", CLI_OPT_FLAG, &json } };
    const cli_cmd cmd = { name, usage, opts, 1, min_pos, max_pos };
    return cli_run(&cmd, argc, argv, run, &json);
}

void cli_list_fini(cli_list *l)
{
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "silt %s: ", cmd->name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    /* The synopsis (first usage line) and a pointer to the rest. */
    int n = (int)strcspn(cmd->usage, "\n");
    fprintf(stderr, "\n%.*s\n(see \"silt %s --help\")\n", n, cmd->usage, cmd->name);
    return CLI_EXIT_USAGE;
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("silt: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- talking to the server -------------------------------------------- */

const char *cli_server_url(void)
{
    const char *url = getenv("SILT_URL");
    return url && *url ? url : CLI_DEFAULT_URL;
}

http_client *cli_http_client(const char *url)
{
    http_client *c = http_client_new(url);
    if (c) http_client_set_token(c, getenv("SILT_TOKEN"));
    return c;
}

void cli_url_encode(buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')
            || strchr("-._~", *p)) {
            buf_putc(out, (char)*p);
            continue;
        }
        buf_putc(out, '%');
        buf_putc(out, hex[*p >> 4]);
        buf_putc(out, hex[*p & 15]);
    }
}

int cli_request_judged(const char *method, const char *path, const buf *body, int timeout_ms, cli_judge_fn judge,
                       const void *ctx)
{
    http_response r;
    http_response_init(&r);
    int rc = cli_request(method, path, body, timeout_ms, &r) < 0 ? CLI_EXIT_FAILED : judge(ctx, &r);
    http_response_fini(&r);
    return rc;
}

int cli_parse_reply(const http_response *r, json_doc *d)
{
    if (json_parse(d, r->body.data, r->body.len, CLI_MAX_TOKENS) == 0) return 0;
    cli_error("malformed reply from server (HTTP %d): %s", r->status, d->error);
    return -1;
}

int cli_read_reply(const http_response *r, json_doc *d)
{
    json_doc_init(d);
    if (cli_parse_reply(r, d) == 0) return 0;
    json_doc_fini(d);
    return -1;
}

int cli_read_file(const char *path, buf *out)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return -1;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(out, chunk, n);
    int rc = ferror(f) ? -1 : 0;
    if (f != stdin) fclose(f);
    return rc;
}

int cli_check_json_object(const cli_cmd *cmd, const char *where, const buf *text, const char *not_object)
{
    json_doc d;
    json_doc_init(&d);
    int rc = 0;
    if (json_parse(&d, text->data, text->len, CLI_MAX_TOKENS) < 0)
        rc = cli_usage_error(cmd, "%s is not valid JSON: %s", where, d.error);
    else if (d.tokens[0].type != JSON_OBJECT)
        rc = cli_usage_error(cmd, "%s %s", where, not_object);
    json_doc_fini(&d);
    return rc;
}

bool cli_is_true(const json_doc *d, int obj, const char *key)
{
    int t = obj < 0 ? -1 : json_get(d, (uint32_t)obj, key);
    return t >= 0 && d->tokens[t].type == JSON_TRUE;
}

/* Reports an HTTP error status, preferring the server's own words. */
static void report_status(const http_response *r)
{
    json_doc d;
    json_doc_init(&d);
    char *error = NULL, *invalid = NULL;
    if (json_parse(&d, r->body.data, r->body.len, CLI_MAX_TOKENS) == 0) {
        error = cli_get_str(&d, 0, "error");
        invalid = cli_get_str(&d, 0, "invalid");
    }
    if (error && invalid) cli_error("%s (option \"%s\")", error, invalid);
    else if (error) cli_error("%s", error);
    else cli_error("server answered HTTP %d", r->status);
    free(error);
    free(invalid);
    json_doc_fini(&d);
}

int cli_request_any(const char *method, const char *path, const buf *body, int timeout_ms,
                    http_response *r)
{
    const char *url = cli_server_url();
    http_client *c = cli_http_client(url);
    if (!c) {
        cli_error("invalid server url \"%s\" (expected http://host[:port])", url);
        return -1;
    }
    if (timeout_ms > 0) http_client_set_timeout(c, timeout_ms);
    int rc = http_request(c, method, path, body ? body->data : NULL, body ? body->len : 0, r);
    if (rc < 0) cli_error("%s", http_client_error(c));
    http_client_free(c);
    return rc;
}

int cli_request(const char *method, const char *path, const buf *body, int timeout_ms,
                http_response *r)
{
    int rc = cli_request_any(method, path, body, timeout_ms, r);
    if (rc == 0 && r->status >= 400) { report_status(r); rc = -1; }
    return rc;
}

void cli_report_status(const http_response *r)
{
    report_status(r);
}

/* ---- output ----------------------------------------------------------- */

void cli_print_json(const char *text, size_t len)
{
    buf out;
    buf_init(&out);
    json_pretty(&out, text, len);
    buf_putc(&out, '\n');
    fwrite(out.data, 1, out.len, stdout);
    buf_fini(&out);
}

void cli_put_compact(buf *out, const char *text, size_t len)
{
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            buf_putc(out, c);
            if (c == '\\' && i + 1 < len) buf_putc(out, text[++i]);
            else if (c == '"') in_string = false;
        } else if (!strchr(" \t\r\n", c)) {
            buf_putc(out, c);
            in_string = c == '"';
        }
    }
}

static bool has_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20) return true;
    return false;
}

void cli_put_key(buf *b, const char *key)
{
    if (b->len > 0 && b->data[b->len - 1] != '{') buf_putc(b, ',');
    json_put_cstr(b, key);
    buf_putc(b, ':');
}

void cli_put_str_member(buf *b, const char *key, const char *value)
{
    if (!value) return;
    cli_put_key(b, key);
    json_put_cstr(b, value);
}

void cli_put_long_member(buf *b, const char *key, long value)
{
    if (value < 0) return;
    cli_put_key(b, key);
    buf_printf(b, "%ld", value);
}

void cli_put_cell(buf *out, const json_doc *d, int tok)
{
    if (tok < 0) { buf_putc(out, '-'); return; }
    size_t n;
    const char *span = json_span(d, (uint32_t)tok, &n);
    if (d->tokens[tok].type != JSON_STRING) { cli_put_compact(out, span, n); return; }
    size_t mark = out->len;
    json_str_decode(d, (uint32_t)tok, out);
    if (!has_control(out->data + mark, out->len - mark)) return;
    out->len = mark;   /* a newline or tab would break the row: show it escaped */
    buf_append(out, span, n);
}

char *cli_get_str(const json_doc *d, int obj, const char *key)
{
    int t = obj < 0 ? -1 : json_get(d, (uint32_t)obj, key);
    if (t < 0 || d->tokens[t].type != JSON_STRING) return NULL;
    return json_str_dup(d, (uint32_t)t);
}

/* ---- tables ----------------------------------------------------------- */

static void table_push(cli_table *t, char *cell)
{
    if (t->ncells == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **cells = xrealloc(t->cells, cap * sizeof *cells);
        t->cells = cells;
        t->cap = cap;
    }
    t->cells[t->ncells++] = cell;
}

void cli_table_init(cli_table *t, int ncols, const char *const *headers)
{
    t->ncols = ncols;
    t->cells = NULL;
    t->ncells = t->cap = 0;
    t->fit = 0;
    for (int i = 0; i < ncols; i++) cli_table_add(t, headers[i]);
}

void cli_table_add(cli_table *t, const char *cell)
{
    buf b;
    buf_init(&b);
    buf_puts(&b, cell);
    table_push(t, buf_steal(&b));
}

void cli_table_add_value(cli_table *t, const json_doc *d, int tok)
{
    buf b;
    buf_init(&b);
    buf_append(&b, "", 0);
    cli_put_cell(&b, d, tok);
    table_push(t, buf_steal(&b));
}

void cli_table_add_joined(cli_table *t, const json_doc *d, int arr)
{
    buf cell;
    buf_init(&cell);
    buf_append(&cell, "", 0);
    int e;
    for (uint32_t i = 0; arr >= 0 && (e = json_at(d, (uint32_t)arr, i)) >= 0; i++) {
        if (i) buf_putc(&cell, ',');
        cli_put_cell(&cell, d, e);
    }
    cli_table_add(t, cell.len ? cell.data : "-");
    buf_fini(&cell);
}

void cli_table_add_members(cli_table *t, const json_doc *d, int obj)
{
    if (obj < 0 || d->tokens[obj].type != JSON_OBJECT) return;
    uint32_t k = (uint32_t)obj + 1;
    for (uint32_t m = 0; m < d->tokens[obj].count; m++) {
        cli_table_add_value(t, d, (int)k);
        cli_table_add_value(t, d, (int)k + 1);
        k = d->tokens[k + 1].next;
    }
}

/* Characters (UTF-8 code points) in s: the columns it takes in the common case. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Prints cell cut to at most max characters, the last one "…" when cut. */
static void print_fitted(FILE *f, const char *cell, size_t max)
{
    if (utf8_chars(cell) <= max) { fprintf(f, "%s\n", cell); return; }
    const char *end = cell;
    for (size_t kept = 0; kept < max - 1; kept++)
        do end++; while (((unsigned char)*end & 0xC0) == 0x80);
    fprintf(f, "%.*s\xe2\x80\xa6\n", (int)(end - cell), cell);   /* "…" in UTF-8 */
}

/* The characters left for the last column once the others (and the two
 * spaces after each) take their width. */
static size_t table_room(const cli_table *t, const size_t *width, int ncols)
{
    size_t used = 0;
    for (int c = 0; c + 1 < ncols; c++) used += width[c] + 2;
    return t->fit > used + CLI_TABLE_MIN_FIT ? t->fit - used : CLI_TABLE_MIN_FIT;
}

void cli_table_print(const cli_table *t, FILE *f)
{
    size_t width[32] = { 0 };
    int ncols = t->ncols < 32 ? t->ncols : 32;
    for (size_t i = 0; i < t->ncells; i++) {
        size_t n = strlen(t->cells[i]), col = i % (size_t)t->ncols;
        if (col < (size_t)ncols && n > width[col]) width[col] = n;
    }
    size_t room = t->fit ? table_room(t, width, ncols) : SIZE_MAX;
    for (size_t i = 0; i < t->ncells; i++) {
        size_t col = i % (size_t)t->ncols;
        bool last = col + 1 == (size_t)t->ncols || i + 1 == t->ncells;
        if (last) print_fitted(f, t->cells[i], room);
        else fprintf(f, "%-*s  ", (int)(col < 32 ? width[col] : 0), t->cells[i]);
    }
}

void cli_table_print_or(const cli_table *t, const char *none)
{
    if (t->ncells == (size_t)t->ncols) puts(none);
    else cli_table_print(t, stdout);
}

void cli_table_fini(cli_table *t)
{
    for (size_t i = 0; i < t->ncells; i++) free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->ncells = t->cap = 0;
}

/* ---- paths, lookups, verbs and the request-render cycle --------------- */

void cli_path_segment(buf *path, const char *s)
{
    buf_putc(path, '/');
    cli_url_encode(path, s);
}

void cli_query_param(buf *path, const char *key, const char *value)
{
    if (!value) return;
    bool query = path->len > 0 && memchr(path->data, '?', path->len) != NULL;
    buf_putc(path, query ? '&' : '?');
    cli_url_encode(path, key);
    buf_putc(path, '=');
    cli_url_encode(path, value);
}

int cli_lookup(const json_doc *d, int obj, const char *path)
{
    char key[128];
    int t = obj;
    while (t >= 0 && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key || d->tokens[t].type != JSON_OBJECT) return -1;
        memcpy(key, path, n);
        key[n] = '\0';
        t = json_get(d, (uint32_t)t, key);
        path += path[n] ? n + 1 : n;
    }
    return t;
}

void cli_table_add_field(cli_table *t, const json_doc *d, int obj, const char *path)
{
    int tok = cli_lookup(d, obj, path);
    if (tok >= 0 && d->tokens[tok].type == JSON_NULL) tok = -1;
    cli_table_add_value(t, d, tok);
}

int cli_no_verb(const char *cmd_name, const char *usage, const char *question, int argc, char **argv)
{
    const cli_cmd cmd = { cmd_name, usage, NULL, 0, 0, 0 };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) rc = cli_usage_error(&cmd, "%s", question);
    cli_args_fini(&a);
    return rc;
}

int cli_dispatch(const char *cmd, const char *usage, const cli_verb *verbs, size_t nverbs,
                 int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') return verbs[0].run(argc, argv);
    for (size_t i = 0; i < nverbs; i++)
        if (strcmp(argv[1], verbs[i].name) == 0) return verbs[i].run(argc - 1, argv + 1);
    int n = (int)strcspn(usage, "\n");
    fprintf(stderr, "silt %s: unknown subcommand \"%s\"\n%.*s\n(see \"silt %s --help\")\n",
            cmd, argv[1], n, usage, cmd);
    return CLI_EXIT_USAGE;
}

int cli_get_verb(int argc, char **argv, const char *name, const char *usage, const char *path,
                 cli_render_fn render)
{
    bool json = false;
    const cli_opt opts[] = { { "json", CLI_OPT_FLAG, &json } };
    const cli_cmd cmd = { name, usage, opts, 1, 0, 0 };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) rc = cli_call("GET", path, NULL, json, render);
    cli_args_fini(&a);
    return rc;
}

int cli_call(const char *method, const char *path, const buf *body, bool json,
             cli_render_fn render)
{
    return cli_call_within(method, path, body, 0, json, render);
}

typedef struct waiting_opts {
    const char   *collection;
    cli_render_fn render;
    long          wait_ms;
    bool          json;
} waiting_opts;

static int waiting_run(const cli_cmd *cmd, const cli_args *a, void *opts)
{
    const waiting_opts *o = opts;
    if (o->wait_ms > CLI_MAX_WAIT_MS) return cli_usage_error(cmd, "--wait is at most %d ms", CLI_MAX_WAIT_MS);
    buf path;
    buf_init(&path);
    buf_puts(&path, o->collection);
    cli_path_segment(&path, a->pos[0]);
    char ms[24];
    snprintf(ms, sizeof ms, "%ld", o->wait_ms);
    if (o->wait_ms > 0) cli_query_param(&path, "wait", ms);
    int timeout_ms = o->wait_ms > 0 ? (int)o->wait_ms + CLI_WAIT_SLACK_MS : 0;
    int rc = cli_call_within("GET", path.data, NULL, timeout_ms, o->json, o->render);
    buf_fini(&path);
    return rc;
}

int cli_get_item_waiting(const char *name, const char *usage, const char *collection, int argc, char **argv,
                         cli_render_fn render)
{
    waiting_opts o = { collection, render, 0, false };
    const cli_opt opts[] = {
        { "wait", CLI_OPT_INT,  &o.wait_ms },
        { "json", CLI_OPT_FLAG, &o.json },
    };
    const cli_cmd cmd = { name, usage, opts, sizeof opts / sizeof opts[0], 1, 1 };
    return cli_run(&cmd, argc, argv, waiting_run, &o);
}

/* A page's last line: where the next one starts, when there may be one. */
static void render_next_cursor(const json_doc *d)
{
    char *next = cli_get_str(d, 0, "nextCursor");
    if (next) printf("next cursor: %s\n", next);
    free(next);
}

/* One request, then the reply printed as JSON when json, else by render
 * and, for a page, its next cursor. The exit status. */
static int call_render(const char *method, const char *path, const buf *body, int timeout_ms, bool json,
                       cli_render_fn render, bool page)
{
    http_response r;
    http_response_init(&r);
    json_doc d;
    json_doc_init(&d);
    int rc = CLI_EXIT_FAILED;
    if (cli_request(method, path, body, timeout_ms, &r) == 0 && cli_parse_reply(&r, &d) == 0) {
        if (json) cli_print_json(r.body.data, r.body.len);
        else render(&d);
        if (!json && page) render_next_cursor(&d);
        rc = CLI_EXIT_OK;
    }
    json_doc_fini(&d);
    http_response_fini(&r);
    return rc;
}

int cli_call_within(const char *method, const char *path, const buf *body, int timeout_ms, bool json,
                    cli_render_fn render)
{
    return call_render(method, path, body, timeout_ms, json, render, false);
}

/* The item's path, then either the rendered call or the judged request. */
static int item_verb_run(const cli_item_verb *v, int argc, char **argv, cli_render_fn render,
                         cli_report_fn report)
{
    bool json = false;
    const cli_opt opts[] = { { "json", CLI_OPT_FLAG, &json } };
    const cli_cmd cmd = { v->name, v->usage, opts, 1, 1, 1 };
    cli_args a;
    int rc;
    if (cli_parse(&cmd, argc, argv, &a, &rc) == 0) {
        buf path;
        buf_init(&path);
        buf_puts(&path, v->collection);
        cli_path_segment(&path, a.pos[0]);
        if (v->suffix) buf_puts(&path, v->suffix);
        if (render) {
            rc = cli_call(v->method, path.data, NULL, json, render);
        } else {
            http_response r;
            http_response_init(&r);
            rc = cli_request(v->method, path.data, NULL, 0, &r) < 0 ? CLI_EXIT_FAILED : report(a.pos[0], json, &r);
            http_response_fini(&r);
        }
        buf_fini(&path);
    }
    cli_args_fini(&a);
    return rc;
}

int cli_item_call(const cli_item_verb *v, int argc, char **argv, cli_render_fn render)
{
    return item_verb_run(v, argc, argv, render, NULL);
}

int cli_item_request(const cli_item_verb *v, int argc, char **argv, cli_report_fn report)
{
    return item_verb_run(v, argc, argv, NULL, report);
}

int cli_get_query(const char *path, const cli_param *params, size_t nparams, bool json, cli_render_fn render)
{
    buf p;
    buf_init(&p);
    buf_puts(&p, path);
    for (size_t i = 0; i < nparams; i++) cli_query_param(&p, params[i].key, params[i].value);
    int rc = cli_call("GET", p.data, NULL, json, render);
    buf_fini(&p);
    return rc;
}

int cli_get_page(const char *path, const cli_param *filters, size_t nfilters, long limit, const char *cursor,
                 bool json, cli_render_fn render)
{
    buf p;
    buf_init(&p);
    buf_puts(&p, path);
    for (size_t i = 0; i < nfilters; i++) cli_query_param(&p, filters[i].key, filters[i].value);
    char lim[24];
    snprintf(lim, sizeof lim, "%ld", limit);
    cli_query_param(&p, "limit", limit > 0 ? lim : NULL);
    cli_query_param(&p, "cursor", cursor);
    int rc = call_render("GET", p.data, NULL, 0, json, render, true);
    buf_fini(&p);
    return rc;
}

void cli_render_fields(const json_doc *d)
{
    cli_print_members(d, 0, "FIELD");
}

void cli_print_member(const json_doc *d, const char *before, const char *member, const char *after)
{
    buf cell;
    buf_init(&cell);
    cli_put_cell(&cell, d, json_get(d, 0, member));
    printf("%s%s%s", before, cell.data, after);
    buf_fini(&cell);
}

void cli_print_elements(const json_doc *d, int list, const char *indent)
{
    int e;
    for (uint32_t i = 0; list >= 0 && (e = json_at(d, (uint32_t)list, i)) >= 0; i++) {
        buf line;
        buf_init(&line);
        cli_put_cell(&line, d, e);
        printf("%s%s\n", indent, line.data);
        buf_fini(&line);
    }
}

void cli_print_deleted(const json_doc *d, const char *member, const char *noun)
{
    buf n;
    buf_init(&n);
    cli_put_cell(&n, d, json_get(d, 0, member));
    printf("deleted %s %s%s\n", n.data, noun, strcmp(n.data, "1") == 0 ? "" : "s");
    buf_fini(&n);
}

void cli_print_members(const json_doc *d, int obj, const char *key_header)
{
    const char *const headers[] = { key_header, "VALUE" };
    cli_table t;
    cli_table_init(&t, 2, headers);
    cli_table_add_members(&t, d, obj);
    cli_table_print(&t, stdout);
    cli_table_fini(&t);
}

void cli_print_named_fields(const json_doc *d, const char *const *fields, size_t nfields)
{
    static const char *const headers[] = { "FIELD", "VALUE" };
    cli_table t;
    cli_table_init(&t, 2, headers);
    for (size_t i = 0; i < nfields; i++) {
        cli_table_add(&t, fields[i]);
        cli_table_add_field(&t, d, 0, fields[i]);
    }
    cli_table_print(&t, stdout);
    cli_table_fini(&t);
}

void cli_print_rows(const json_doc *d, const char *member, int ncols, const char *const *headers,
                    const char *const *fields, const char *none)
{
    int list = json_get(d, 0, member), row;
    cli_table t;
    cli_table_init(&t, ncols, headers);
    for (uint32_t i = 0; list >= 0 && (row = json_at(d, (uint32_t)list, i)) >= 0; i++)
        for (int f = 0; f < ncols; f++) cli_table_add_field(&t, d, row, fields[f]);
    cli_table_print_or(&t, none);
    cli_table_fini(&t);
}

/* schedule_input: a schedule's definition from a request (see the header).
 * The rules are silt.conf's for [schedule.NAME] (docs/configuration.md):
 * the name of a silt.conf section, a cron expression that can fire, a zone
 * of this system, a task name, a queue (declared, when silt.conf declares
 * queues), any JSON args, catchUp 0 (skip) to 1000, priority 1 to 100, a
 * retention class this server knows. A field with a default takes it when
 * null; cron, task and queue cannot be null. */
#include "api/schedule_input.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/task_input.h"
#include "base/cron.h"
#include "base/names.h"
#include "base/retention_class.h"
#include "base/xalloc.h"
#include "tasks/hub.h"

typedef int (*field_fn)(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in);

/* 400 "<field> <what>" naming field. */
static int bad(httpd_req *req, const char *field, const char *what)
{
    httpd_error_field(req, 400, "field", field, "%s %s", field, what);
    return -1;
}

/* A string member: a heap copy in *out, or -1 after a 400. */
static int string_of(httpd_req *req, const json_doc *d, int tok, const char *field, char **out)
{
    if (d->tokens[tok].type != JSON_STRING) return bad(req, field, "must be a string");
    free(*out);
    *out = json_str_dup(d, (uint32_t)tok);
    return 0;
}

static int read_cron(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in)
{
    (void)srv;
    if (string_of(req, d, tok, "cron", &in->cron) < 0) return -1;
    cron_expr e;
    char err[160];
    if (cron_parse(in->cron, &e, err, sizeof err) < 0) {
        httpd_error_field(req, 400, "field", "cron", "cron is not a cron expression: %s", err);
        return -1;
    }
    if (!cron_can_fire(&e)) return bad(req, "cron", "can never fire: no date matches it");
    return 0;
}

static int read_timezone(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in)
{
    (void)srv;
    if (string_of(req, d, tok, "timezone", &in->timezone) < 0) return -1;
    if (cron_tz_valid(in->timezone)) return 0;
    httpd_error_field(req, 400, "field", "timezone", "timezone \"%s\" is not a time zone of this system "
                      "(UTC, Europe/Paris, ...)", in->timezone);
    return -1;
}

static int read_task(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in)
{
    (void)srv;
    if (string_of(req, d, tok, "task", &in->task) < 0) return -1;
    if (!*in->task) return bad(req, "task", "must not be empty");
    return api_check_name(req, "", "task", in->task);
}

static int read_queue(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in)
{
    if (string_of(req, d, tok, "queue", &in->queue) < 0) return -1;
    if (!*in->queue) return bad(req, "queue", "must not be empty");
    if (api_check_name(req, "", "queue", in->queue) < 0) return -1;
    bool known;
    task_hub_queue(srv->tasks, in->queue, &known);
    if (known) return 0;
    httpd_error_field(req, 400, "field", "queue", "queue \"%s\" is not declared in the configuration file", in->queue);
    return -1;
}

static int read_args(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in)
{
    (void)req; (void)srv; (void)tok;
    free(in->args);
    in->args = api_member_json(d, 0, "args");   /* verbatim, as a send's */
    return 0;
}

static int read_int(httpd_req *req, const json_doc *d, int tok, const char *field, int64_t lo, int64_t hi, char *out)
{
    int64_t v;
    if (d->tokens[tok].type != JSON_NUMBER || json_int64(d, (uint32_t)tok, &v) < 0 || v < lo || v > hi) {
        httpd_error_field(req, 400, "field", field, "%s must be an integer from %lld to %lld", field, (long long)lo,
                          (long long)hi);
        return -1;
    }
    snprintf(out, 24, "%lld", (long long)v);
    return 0;
}

static int read_catch_up(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in)
{
    (void)srv;
    return read_int(req, d, tok, "catchUp", 0, CONFFILE_CATCH_UP_MAX, in->catch_up);
}

static int read_priority(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in)
{
    (void)srv;
    return read_int(req, d, tok, "priority", TASK_PRIORITY_MIN, TASK_PRIORITY_MAX, in->priority);
}

static int read_class(httpd_req *req, server *srv, const json_doc *d, int tok, schedule_input *in)
{
    char *key = NULL;
    if (string_of(req, d, tok, "retentionClassKey", &key) < 0) return -1;
    char err[512];
    in->class_key = retention_class_for(&srv->conf.retention, "", RETENTION_ASK_KEY, key, err, sizeof err);
    free(key);
    if (in->class_key) return 0;
    httpd_error_field(req, 400, "field", "retentionClassKey", "retentionClassKey cannot be used: %s", err);
    return -1;
}

/* Every field of a definition but name and paused, with its column. */
static const struct {
    const char *key, *column;
    field_fn    read;
    bool        required;   /* by a create; and never null */
} fields[] = {
    { "cron",              "cron",                read_cron,      true },
    { "timezone",          "timezone",            read_timezone,  false },
    { "task",              "task_name",           read_task,      true },
    { "queue",             "queue_name",          read_queue,     true },
    { "args",              "args",                read_args,      false },
    { "catchUp",           "catch_up",            read_catch_up,  false },
    { "priority",          "priority",            read_priority,  false },
    { "retentionClassKey", "retention_class_key", read_class,     false },
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static const char *const create_fields[] = {
    "name", "cron", "timezone", "task", "queue", "args", "catchUp", "priority", "retentionClassKey", "paused", NULL,
};
static const char *const change_fields[] = {
    "cron", "timezone", "task", "queue", "args", "catchUp", "priority", "retentionClassKey", NULL,
};

void schedule_input_init(schedule_input *in)
{
    memset(in, 0, sizeof *in);
    in->timezone = xstrdup("UTC");
    in->args = xstrdup("null");
    strcpy(in->catch_up, "0");
    db_array_init(&in->set);
}

void schedule_input_fini(schedule_input *in)
{
    free(in->name);
    free(in->cron);
    free(in->timezone);
    free(in->task);
    free(in->queue);
    free(in->args);
    db_array_fini(&in->set);
}

/* Field i of d when given (a null one keeps its default): 0, 1 when
 * absent, or -1 after a 400. */
static int read_field(httpd_req *req, server *srv, const json_doc *d, size_t i, schedule_input *in)
{
    int tok = json_get(d, 0, fields[i].key);
    if (tok < 0) return 1;
    if (d->tokens[tok].type != JSON_NULL) return fields[i].read(req, srv, d, tok, in) < 0 ? -1 : 0;
    if (fields[i].required) return bad(req, fields[i].key, "must be a string");
    return 0;
}

static int read_name(httpd_req *req, const json_doc *d, schedule_input *in)
{
    int tok = json_get(d, 0, "name");
    if (tok < 0 || d->tokens[tok].type == JSON_NULL) return bad(req, "name", "is required");
    if (string_of(req, d, tok, "name", &in->name) < 0) return -1;
    if (names_conf_valid(in->name)) return 0;
    return bad(req, "name", "must be 1 to 48 characters of A-Z, a-z, 0-9, _ and -");
}

static int read_paused(httpd_req *req, const json_doc *d, schedule_input *in)
{
    int tok = json_get(d, 0, "paused");
    json_type t = tok < 0 ? JSON_NULL : d->tokens[tok].type;
    if (t == JSON_NULL) return 0;
    if (t != JSON_TRUE && t != JSON_FALSE) return bad(req, "paused", "must be true or false");
    in->paused = t == JSON_TRUE;
    return 0;
}

int schedule_input_create(httpd_req *req, server *srv, const json_doc *d, schedule_input *in)
{
    if (api_only_known(req, d, 0, "", "a schedule", create_fields) < 0 || read_name(req, d, in) < 0) return -1;
    for (size_t i = 0; i < NFIELDS; i++) {
        int rc = read_field(req, srv, d, i, in);
        if (rc < 0) return -1;
        if (rc == 1 && fields[i].required) return bad(req, fields[i].key, "is required");
    }
    return read_paused(req, d, in);
}

int schedule_input_change(httpd_req *req, server *srv, const json_doc *d, schedule_input *in)
{
    if (api_only_known(req, d, 0, "", "a schedule change", change_fields) < 0) return -1;
    for (size_t i = 0; i < NFIELDS; i++) {
        int rc = read_field(req, srv, d, i, in);
        if (rc < 0) return -1;
        if (rc == 0) db_array_text(&in->set, fields[i].column);
    }
    if (in->set.n > 0) return 0;
    httpd_error(req, 400, "a schedule change gives at least one of cron, timezone, task, queue, args, catchUp, "
                "priority, retentionClassKey");
    return -1;
}

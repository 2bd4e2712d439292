/* conffile: reads and checks silt.conf (see conffile.h). libinih splits
 * lines into sections and `key = value` pairs; this file owns what they
 * mean: which sections and keys exist (one table per section, each row a key
 * with its bounds), the rules across keys, and a report of every problem
 * with its line.
 *
 * Line numbers come from our own reader, not from inih's handler. Debian's
 * libinih 55 is built to pass them (checked: its handler calls load the
 * line into the fifth argument), but ini.h's default handler type has no
 * such argument, and a build that disagreed would hand us garbage without
 * a warning. The reader has to see every line anyway: inih calls no handler
 * for a section header (an empty [queue.x] must still be declared and
 * checked), keeps only 50 bytes of a section name, and returns the line of
 * the first syntax error only, where we report them all. */
#include "base/conffile.h"
#include <errno.h>
#include <ini.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base/conf_retention.h"
#include "base/confreport.h"
#include "base/json.h"
#include "base/names.h"
#include "base/retention_class.h"
#include "base/xalloc.h"
#include "base/cron.h"

/* ---- the sections and their keys ---------------------------------------- */

typedef struct parser parser;
typedef struct key_def key_def;

/* Checks a value other than a bounded integer, reports what is wrong with
 * it, and stores it when it is right (a value refused keeps what was there:
 * the default, or an earlier line's value). */
typedef void (*key_setter)(parser *p, const key_def *k, const char *value);

struct key_def {
    const char *name;
    size_t      offset;   /* of an int (or, with set, the field set) in the section's struct */
    long long   lo, hi;   /* bounds, inclusive, of an int */
    key_setter  set;      /* NULL: an int within lo..hi */
};

static void set_rate(parser *p, const key_def *k, const char *value);

static const key_def queue_keys[] = {
    { "priority",           offsetof(conf_queue, priority),        1, 100,    NULL },
    { "max_concurrency",    offsetof(conf_queue, max_concurrency), 0, 100000, NULL },
    { "rate_limit",         offsetof(conf_queue, rate),            0, 0,      set_rate },
    { "rate_limit_per_key", offsetof(conf_queue, rate_per_key),    0, 0,      set_rate },
};

static void set_cron(parser *p, const key_def *k, const char *value);
static void set_timezone(parser *p, const key_def *k, const char *value);
static void set_task(parser *p, const key_def *k, const char *value);
static void set_schedule_queue(parser *p, const key_def *k, const char *value);
static void set_args(parser *p, const key_def *k, const char *value);
static void set_catch_up(parser *p, const key_def *k, const char *value);
static void set_schedule_class(parser *p, const key_def *k, const char *value);

enum { SCH_CRON, SCH_TIMEZONE, SCH_TASK, SCH_QUEUE, SCH_ARGS, SCH_CATCH_UP, SCH_PRIORITY, SCH_CLASS, SCH_NKEYS };

static const key_def schedule_keys[SCH_NKEYS] = {
    [SCH_CRON]     = { "cron",     offsetof(conf_schedule, cron),     0, 0, set_cron },
    [SCH_TIMEZONE] = { "timezone", offsetof(conf_schedule, timezone), 0, 0, set_timezone },
    [SCH_TASK]     = { "task",     offsetof(conf_schedule, task),     0, 0, set_task },
    [SCH_QUEUE]    = { "queue",    offsetof(conf_schedule, queue),    0, 0, set_schedule_queue },
    [SCH_ARGS]     = { "args",     offsetof(conf_schedule, args),     0, 0, set_args },
    [SCH_CATCH_UP] = { "catch_up", offsetof(conf_schedule, catch_up), 1, CONFFILE_CATCH_UP_MAX, set_catch_up },
    [SCH_PRIORITY] = { "priority", offsetof(conf_schedule, priority), 1, 100, NULL },
    [SCH_CLASS]    = { "retention_class_key", offsetof(conf_schedule, retention_class_key), 0, 0, set_schedule_class },
};

/* What a schedule cannot do without, and how the help says to give it. */
static const struct { int key; const char *example; } schedule_required[] = {
    { SCH_CRON,  "cron = 30 3 * * *   (minute hour day-of-month month day-of-week)" },
    { SCH_TASK,  "task = NAME, the task each slot sends" },
    { SCH_QUEUE, "queue = NAME, the queue the task is sent to" },
};

enum { REC_CLAIMER_HB, REC_RUNNER_HB, REC_CLAIMED_STALE, REC_RUNNING_STALE, REC_CHECK, REC_NKEYS };

static const key_def recovery_keys[REC_NKEYS] = {
    [REC_CLAIMER_HB]    = { "claimer_heartbeat_interval_ms", offsetof(conf_recovery, claimer_heartbeat_interval_ms), 1000, 600000, NULL },
    [REC_RUNNER_HB]     = { "runner_heartbeat_interval_ms",  offsetof(conf_recovery, runner_heartbeat_interval_ms),  1000, 600000, NULL },
    [REC_CLAIMED_STALE] = { "claimed_stale_after_ms",        offsetof(conf_recovery, claimed_stale_after_ms),        2000, 86400000, NULL },
    [REC_RUNNING_STALE] = { "running_stale_after_ms",        offsetof(conf_recovery, running_stale_after_ms),        2000, 86400000, NULL },
    [REC_CHECK]         = { "check_interval_ms",             offsetof(conf_recovery, check_interval_ms),             1000, 600000, NULL },
};

#define MAX_SECTION_KEYS 8   /* the longest key table; sized for a few more */
#define NELEM(a) (sizeof (a) / sizeof (a)[0])
_Static_assert(NELEM(queue_keys) <= MAX_SECTION_KEYS && REC_NKEYS <= MAX_SECTION_KEYS
               && SCH_NKEYS <= MAX_SECTION_KEYS, "raise MAX_SECTION_KEYS");

typedef enum section_kind {
    SECTION_NONE,       /* before the first header */
    SECTION_RECOVERY,
    SECTION_QUEUE,
    SECTION_SCHEDULE,
    SECTION_RETENTION,  /* its keys are base/conf_retention.c's */
    SECTION_SKIPPED,    /* unknown or unreadable header: already reported */
} section_kind;

/* What the parse has seen so far. A section that is checked but not kept
 * (a repeated one, or a queue or schedule with an invalid name) writes into a
 * scratch record, so its keys are still checked and reported in the same
 * pass. */
struct parser {
    silt_conf     *conf;
    confreport     rep;
    const char    *text;        /* the whole file */
    size_t         len, pos;    /* reader position in text */
    int            line;        /* the line inih is working on */
    bool           want_key;    /* the line is neither blank, comment nor header */
    bool           got_key;     /* inih called the handler for it */
    char          *raw;         /* the line as read, for messages */
    section_kind   kind;
    char          *section;     /* its name as written, e.g. "queue.emails" */
    void          *target;      /* conf_queue, conf_schedule or conf_recovery the keys fill */
    int            key_line[MAX_SECTION_KEYS];   /* where each key was set in this section; 0 not yet */
    int            recovery_line;                /* the first [recovery]; 0 none */
    int            rec_line[REC_NKEYS];          /* where [recovery]'s keys were set; 0 default */
    bool           rec_bad[REC_NKEYS];           /* the value given was refused */
    int           *queue_line;                   /* per kept schedule: where its queue was set; 0 not */
    int            retention_line;               /* the first [retention]; 0 none */
    conf_retention_reader retention;             /* the [retention] being read */
    conf_retention scratch_retention;
    conf_queue     scratch_queue;
    conf_schedule  scratch_schedule;
    conf_recovery  scratch_recovery;
};

static const key_def *section_keys(section_kind kind, size_t *n)
{
    if (kind == SECTION_QUEUE) { *n = NELEM(queue_keys); return queue_keys; }
    if (kind == SECTION_RECOVERY) { *n = NELEM(recovery_keys); return recovery_keys; }
    if (kind == SECTION_SCHEDULE) { *n = NELEM(schedule_keys); return schedule_keys; }
    *n = 0;
    return NULL;
}

static void recovery_defaults(conf_recovery *r)
{
    r->claimer_heartbeat_interval_ms = 30000;
    r->runner_heartbeat_interval_ms = 30000;
    r->claimed_stale_after_ms = 120000;
    r->running_stale_after_ms = 300000;
    r->check_interval_ms = 30000;
}

static void queue_defaults(conf_queue *q, int line)
{
    q->name = NULL;
    q->priority = 100;
    q->max_concurrency = 0;
    q->rate = q->rate_per_key = (rate_limit){ 0, 0 };
    q->line = line;
}

static void schedule_defaults(conf_schedule *s, int line)
{
    s->name = s->cron = s->task = s->queue = NULL;
    s->timezone = xstrdup("UTC");
    s->args = xstrdup("null");
    s->catch_up = 0;
    s->priority = 0;
    s->retention_class_key = NULL;
    s->retention_class_line = 0;
    s->line = line;
}

static void schedule_fini(conf_schedule *s)
{
    free(s->name);
    free(s->cron);
    free(s->timezone);
    free(s->task);
    free(s->queue);
    free(s->args);
    free(s->retention_class_key);
}

/* ---- sections ------------------------------------------------------------ */

/* A section given again (at line; first at first_line) is reported; the
 * caller reads it into the scratch section: checked, not kept. The help
 * ends with also (after "merge the two into one [section] section"). */
static void given_twice(parser *p, const char *section, int first_line, const char *also, int line)
{
    confreport_error_at(&p->rep, CONFREPORT_E_DUPLICATE, line, "section [%s] given twice", section);
    confreport_note(&p->rep, "first given at %s:%d", p->rep.path, first_line);
    confreport_help(&p->rep, "merge the two into one [%s] section%s", section, also);
}

static void open_recovery(parser *p, int line)
{
    p->kind = SECTION_RECOVERY;
    if (!p->recovery_line) {
        p->recovery_line = line;
        p->target = &p->conf->recovery;
        return;
    }
    given_twice(p, "recovery", p->recovery_line, "", line);
    recovery_defaults(&p->scratch_recovery);
    p->target = &p->scratch_recovery;
}

static void open_retention(parser *p, int line)
{
    p->kind = SECTION_RETENTION;
    if (!p->retention_line) {
        p->retention_line = line;
        conf_retention_open(&p->retention, &p->conf->retention, &p->rep);
        return;
    }
    given_twice(p, "retention", p->retention_line, "", line);
    conf_retention_fini(&p->scratch_retention);
    conf_retention_open(&p->retention, &p->scratch_retention, &p->rep);
}

/* what: "queue" or "schedule" */
static void invalid_name(parser *p, const char *what, const char *name, int line)
{
    confreport_error_at(&p->rep, CONFREPORT_E_QUEUE_NAME, line, "invalid %s name `%s`", what, name);
    confreport_note(&p->rep, "a %s name is 1 to %d characters of A-Z, a-z, 0-9, `_` and `-` (this one has %zu)",
                    what, CONFFILE_QUEUE_NAME_MAX, strlen(name));
}

/* The name of a [<what>.<name>] section: false, reported, when it is
 * invalid or a section of that name came before (first_line; NULL: none).
 * A valid name is 1..48 characters of A-Z a-z 0-9 _ -: it fits in
 * identifiers, URLs and log lines without quoting. */
static bool section_name_ok(parser *p, const char *what, const char *name, const int *first_line, const char *also,
                            int line)
{
    if (!names_conf_valid(name)) {
        invalid_name(p, what, name, line);
        return false;
    }
    if (!first_line) return true;
    char section[16 + CONFFILE_QUEUE_NAME_MAX];
    snprintf(section, sizeof section, "%s.%s", what, name);
    given_twice(p, section, *first_line, also, line);
    return false;
}

static void queue_to_scratch(parser *p, int line)
{
    queue_defaults(&p->scratch_queue, line);
    p->target = &p->scratch_queue;
}

static void open_queue(parser *p, const char *name, int line)
{
    p->kind = SECTION_QUEUE;
    const conf_queue *first = conffile_queue(p->conf, name);
    if (!section_name_ok(p, "queue", name, first ? &first->line : NULL, "", line)) {
        queue_to_scratch(p, line);
        return;
    }
    silt_conf *c = p->conf;
    c->queues = xrealloc(c->queues, (c->nqueues + 1) * sizeof *c->queues);
    conf_queue *q = &c->queues[c->nqueues++];
    queue_defaults(q, line);
    q->name = xstrdup(name);
    p->target = q;
}

static void schedule_to_scratch(parser *p, int line)
{
    schedule_fini(&p->scratch_schedule);
    schedule_defaults(&p->scratch_schedule, line);
    p->target = &p->scratch_schedule;
}

static void open_schedule(parser *p, const char *name, int line)
{
    p->kind = SECTION_SCHEDULE;
    const conf_schedule *first = conffile_schedule(p->conf, name);
    if (!section_name_ok(p, "schedule", name, first ? &first->line : NULL, ", or rename one", line)) {
        schedule_to_scratch(p, line);
        return;
    }
    silt_conf *c = p->conf;
    c->schedules = xrealloc(c->schedules, (c->nschedules + 1) * sizeof *c->schedules);
    p->queue_line = xrealloc(p->queue_line, (c->nschedules + 1) * sizeof *p->queue_line);
    p->queue_line[c->nschedules] = 0;
    conf_schedule *s = &c->schedules[c->nschedules++];
    schedule_defaults(s, line);
    s->name = xstrdup(name);
    p->target = s;
}

/* The kept schedule the keys fill, or NULL (none, or a refused section). */
static conf_schedule *kept_schedule(parser *p, size_t *index)
{
    if (p->kind != SECTION_SCHEDULE || p->target == &p->scratch_schedule) return NULL;
    conf_schedule *s = p->target;
    *index = (size_t)(s - p->conf->schedules);
    return s;
}

/* At the end of a kept [schedule.NAME]: every required key given (a value
 * given but refused is reported at its own line, not again here). */
static void close_section(parser *p)
{
    size_t index;
    conf_schedule *s = kept_schedule(p, &index);
    if (!s) return;
    for (size_t i = 0; i < NELEM(schedule_required); i++) {
        int k = schedule_required[i].key;
        if (p->key_line[k]) continue;
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, s->line, "missing key `%s` in [schedule.%s]",
                            schedule_keys[k].name, s->name);
        confreport_help(&p->rep, "every schedule sets cron, task and queue; add %s", schedule_required[i].example);
    }
}

static void unknown_section(parser *p, const char *name, int line)
{
    p->kind = SECTION_SKIPPED;
    confreport_error_at(&p->rep, CONFREPORT_E_SECTION, line, "unknown section [%s]", name);
    confreport_help(&p->rep, "the sections are [recovery], [retention], [queue.NAME] and [schedule.NAME]");
}

static void open_section(parser *p, const char *name, int line)
{
    close_section(p);
    free(p->section);
    p->section = xstrdup(name);
    memset(p->key_line, 0, sizeof p->key_line);
    if (strcmp(name, "recovery") == 0) open_recovery(p, line);
    else if (strcmp(name, "retention") == 0) open_retention(p, line);
    else if (strncmp(name, "queue.", 6) == 0) open_queue(p, name + 6, line);
    else if (strncmp(name, "schedule.", 9) == 0) open_schedule(p, name + 9, line);
    else unknown_section(p, name, line);
}

static bool is_comment_or_blank(const char *s)
{
    return *s == '\0' || *s == ';' || *s == '#';
}

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

/* "[name]", optionally followed by a comment; blanks around name ignored. */
static void read_header(parser *p, const char *s)
{
    const char *close = strchr(s, ']');
    if (!close) {
        close_section(p);
        p->kind = SECTION_SKIPPED;
        confreport_error_at(&p->rep, CONFREPORT_E_SYNTAX, p->line, "section header without a closing `]`");
        confreport_note(&p->rep, "found `%s`", s);
        return;
    }
    const char *start = skip_space(s + 1), *end = close;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t')) end--;
    char *name = xstrndup(start, (size_t)(end - start));
    open_section(p, name, p->line);
    free(name);
    const char *rest = skip_space(close + 1);
    if (!is_comment_or_blank(rest)) {
        confreport_error_at(&p->rep, CONFREPORT_E_SYNTAX, p->line, "unexpected text after the section header");
        confreport_note(&p->rep, "found `%s`", rest);
        confreport_help(&p->rep, "a comment starts with `#` or `;`");
    }
}

/* ---- keys ---------------------------------------------------------------- */

static const key_def *find_key(const key_def *keys, size_t n, const char *name, size_t *index)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i].name, name) == 0) { *index = i; return &keys[i]; }
    return NULL;
}

static void unknown_key(parser *p, const char *name, const key_def *keys, size_t n)
{
    if (p->kind == SECTION_RECOVERY && conf_retention_moved(&p->rep, name, p->line)) return;
    confreport_error_at(&p->rep, CONFREPORT_E_KEY, p->line, "unknown key `%s` in [%s]", name, p->section);
    buf known;
    buf_init(&known);
    for (size_t i = 0; i < n; i++) buf_printf(&known, "%s%s", i ? ", " : "", keys[i].name);
    const char *kind = p->kind == SECTION_QUEUE ? "queue.NAME" : p->kind == SECTION_SCHEDULE ? "schedule.NAME" : p->section;
    confreport_help(&p->rep, "the keys of [%s] are %s", kind, known.data);
    buf_fini(&known);
}

/* A whole decimal integer within the key's bounds. */
static bool parse_int(const key_def *k, const char *value, int *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (errno || end == value || *end || v < k->lo || v > k->hi) return false;
    *out = (int)v;
    return true;
}

static void bad_value(parser *p, const key_def *k, const char *value)
{
    confreport_error_at(&p->rep, CONFREPORT_E_VALUE, p->line, "%s in [%s] must be an integer from %lld to %lld",
                        k->name, p->section, k->lo, k->hi);
    confreport_note(&p->rep, "found %s = %s", k->name, *value ? value : "(nothing)");
}

static void duplicate_key(parser *p, const char *name, int first_line)
{
    confreport_key_twice(&p->rep, CONFREPORT_E_DUPLICATE, p->line, name, p->section, first_line);
}

/* ---- the values of [schedule.NAME] ------------------------------------------ */

static const char *shown(const char *value)
{
    return *value ? value : "(nothing)";
}

static void store_text(parser *p, const key_def *k, const char *value)
{
    char **field = (char **)((char *)p->target + k->offset);
    free(*field);
    *field = xstrdup(value);
}

static void set_cron(parser *p, const key_def *k, const char *value)
{
    cron_expr e;
    char err[160];
    if (cron_parse(value, &e, err, sizeof err) < 0) {
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, p->line, "invalid cron expression `%s` in [%s]",
                            value, p->section);
        confreport_note(&p->rep, "%s", err);
        confreport_help(&p->rep, "five fields: minute hour day-of-month month day-of-week, e.g. cron = 30 3 * * *");
        return;
    }
    if (!cron_can_fire(&e)) {
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, p->line, "`%s` can never fire: no date matches it", value);
        confreport_note(&p->rep, "in [%s]; no date in the next %d years has the day of month, month and "
                        "day of week it asks for", p->section, CRON_HORIZON_YEARS);
        confreport_help(&p->rep, "30 and 31 February, and the 31st of April, June, September and November, never come");
        return;
    }
    store_text(p, k, value);
}

static void set_timezone(parser *p, const key_def *k, const char *value)
{
    if (!cron_tz_valid(value)) {
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, p->line, "unknown timezone `%s` in [%s]", value, p->section);
        confreport_note(&p->rep, "a timezone is a zone name of /usr/share/zoneinfo, case-sensitive: "
                        "UTC, Europe/Paris, America/New_York");
        return;
    }
    store_text(p, k, value);
}

static void set_task(parser *p, const key_def *k, const char *value)
{
    size_t n = strlen(value);
    if (n < 1 || n > NAMES_MAX_BYTES || !json_utf8_valid(value, n)) {
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, p->line, "task in [%s] must be 1 to %d bytes of UTF-8",
                            p->section, NAMES_MAX_BYTES);
        confreport_note(&p->rep, "found task = %s", shown(value));
        return;
    }
    store_text(p, k, value);
}

static void set_schedule_queue(parser *p, const key_def *k, const char *value)
{
    if (!names_conf_valid(value)) {
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, p->line, "queue in [%s] must be a queue name", p->section);
        confreport_note(&p->rep, "a queue name is 1 to %d characters of A-Z, a-z, 0-9, `_` and `-`; found queue = %s",
                        CONFFILE_QUEUE_NAME_MAX, shown(value));
        return;
    }
    store_text(p, k, value);
    size_t index;
    if (kept_schedule(p, &index)) p->queue_line[index] = p->line;
}

/* The value is at most one line (199 characters), so a few hundred tokens
 * are more than it can hold. */
static void set_args(parser *p, const key_def *k, const char *value)
{
    json_doc d;
    json_doc_init(&d);
    if (json_parse(&d, value, strlen(value), 512) < 0) {
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, p->line, "args in [%s] is not valid JSON", p->section);
        confreport_note(&p->rep, "%s; found args = %s", d.error, shown(value));
        confreport_help(&p->rep, "one JSON value, whole on this line, e.g. args = {\"report\": \"daily\"}; "
                        "`#` or `;` after a blank starts a comment");
    } else {
        store_text(p, k, value);
    }
    json_doc_fini(&d);
}

static bool parse_int(const key_def *k, const char *value, int *out);

static void set_catch_up(parser *p, const key_def *k, const char *value)
{
    int *field = (int *)((char *)p->target + k->offset);
    if (strcmp(value, "skip") == 0) { *field = 0; return; }
    if (parse_int(k, value, field)) return;
    confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, p->line,
                        "catch_up in [%s] must be `skip` or an integer from %lld to %lld", p->section, k->lo, k->hi);
    confreport_note(&p->rep, "found catch_up = %s", shown(value));
    confreport_help(&p->rep, "`skip` runs no missed slot; N runs up to the N most recent ones, oldest first");
}

/* The key is checked once the whole file is read, against [retention]. */
static void set_schedule_class(parser *p, const key_def *k, const char *value)
{
    store_text(p, k, value);
    size_t index;
    conf_schedule *s = kept_schedule(p, &index);
    if (s) s->retention_class_line = p->line;
}

/* Once the whole file is read: a schedule's retention_class_key is a class
 * this file knows (as a send's is checked against the server's file). */
static void check_schedule_classes(parser *p)
{
    const silt_conf *c = p->conf;
    for (size_t i = 0; i < c->nschedules; i++) {
        const conf_schedule *s = &c->schedules[i];
        char err[512];
        if (!s->retention_class_key || !s->queue ||
            retention_class_for(&c->retention, s->queue, RETENTION_ASK_KEY, s->retention_class_key, err, sizeof err))
            continue;
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, s->retention_class_line,
                            "retention_class_key of [schedule.%s] cannot be used", s->name);
        confreport_note(&p->rep, "%s", err);
        confreport_help(&p->rep, "declare it under [retention] as retention_classes.%s = DURATION, or name one of "
                        "those", s->retention_class_key);
    }
}

/* Once the whole file is read: when it declares queues, each schedule
 * sends to one of them (a server would refuse its tasks otherwise). */
static void check_schedule_queues(parser *p)
{
    const silt_conf *c = p->conf;
    if (!c->nqueues) return;
    for (size_t i = 0; i < c->nschedules; i++) {
        const conf_schedule *s = &c->schedules[i];
        if (!s->queue || conffile_queue(c, s->queue)) continue;
        confreport_error_at(&p->rep, CONFREPORT_E_SCHEDULE, p->queue_line[i],
                            "queue `%s` of [schedule.%s] is not declared", s->queue, s->name);
        buf names;
        buf_init(&names);
        for (size_t q = 0; q < c->nqueues; q++)
            buf_printf(&names, "%s[queue.%s]", q ? ", " : "", c->queues[q].name);
        confreport_note(&p->rep, "the file declares %s", names.data);
        confreport_help(&p->rep, "declare [queue.%s], or send to one of those", s->queue);
        buf_fini(&names);
    }
}

/* ---- the values of [queue.NAME] -------------------------------------------- */

static const char *const rate_faults[] = {
    [-RATE_E_FORM] = "not N/PERIOD",
    [-RATE_E_LIMIT] = "N must be from 1 to 1000000",
    [-RATE_E_PERIOD] = "PERIOD must be from 1ms to 24h",
};

/* rate_limit, rate_limit_per_key: N/PERIOD (base/rate.h). */
static void set_rate(parser *p, const key_def *k, const char *value)
{
    rate_fault f = rate_parse(value, (rate_limit *)((char *)p->target + k->offset));
    if (f == RATE_OK) return;
    confreport_error_at(&p->rep, CONFREPORT_E_VALUE, p->line, "%s in [%s] must be N/PERIOD, at most N claims in any "
                        "window of PERIOD", k->name, p->section);
    confreport_note(&p->rep, "found %s = %s: %s", k->name, shown(value), rate_faults[-f]);
    confreport_help(&p->rep, "N from 1 to %d, PERIOD a whole number and ms, s, m or h, from 1ms to 24h: "
                    "e.g. %s = 100/1s, 20/1m or 5/500ms", RATE_MAX_LIMIT, k->name);
}

/* Records where a [recovery] key was set, for the checks across keys. */
static void note_recovery_key(parser *p, size_t i, bool ok)
{
    if (p->target != &p->conf->recovery) return;
    if (!p->rec_line[i]) p->rec_line[i] = p->line;
    if (!ok) p->rec_bad[i] = true;
}

static void set_key(parser *p, const char *name, const char *value)
{
    if (p->kind == SECTION_RETENTION) { conf_retention_set(&p->retention, name, value, p->line); return; }
    size_t n, i;
    const key_def *keys = section_keys(p->kind, &n);
    const key_def *k = find_key(keys, n, name, &i);
    if (!k) { unknown_key(p, name, keys, n); return; }
    if (p->key_line[i]) duplicate_key(p, name, p->key_line[i]);
    else p->key_line[i] = p->line;
    if (k->set) { k->set(p, k, value); return; }
    bool ok = parse_int(k, value, (int *)((char *)p->target + k->offset));
    if (!ok) bad_value(p, k, value);
    if (p->kind == SECTION_RECOVERY) note_recovery_key(p, i, ok);
}

/* inih's handler: one `key = value` line, blanks and inline comments
 * already stripped. Always "success": we collect, inih never stops. */
static int on_key(void *user, const char *section, const char *name, const char *value)
{
    (void)section;   /* inih's copy is cut at 50 bytes: ours is whole */
    parser *p = user;
    p->got_key = true;
    if (!*name) {
        confreport_error_at(&p->rep, CONFREPORT_E_SYNTAX, p->line, "missing key before `=`");
        return 1;
    }
    if (p->kind == SECTION_NONE) {
        confreport_error_at(&p->rep, CONFREPORT_E_KEY, p->line, "key `%s` outside any section", name);
        confreport_help(&p->rep, "put it under [recovery], [retention], a [queue.NAME] or a [schedule.NAME] section");
        return 1;
    }
    if (p->kind != SECTION_SKIPPED) set_key(p, name, value ? value : "");
    return 1;
}

/* ---- the reader ---------------------------------------------------------- */

/* Called before each next line and at the end: a line that should have been
 * a key and that inih could not split is a syntax error. */
static void finish_line(parser *p)
{
    if (p->want_key && !p->got_key) {
        confreport_error_at(&p->rep, CONFREPORT_E_SYNTAX, p->line, "expected `key = value`, a [section] or a comment");
        confreport_note(&p->rep, "found `%s`", skip_space(p->raw));
    }
    p->want_key = p->got_key = false;
}

/* Takes the next line of the file (without its "\n" or "\r\n"); its length
 * through len. */
static const char *take_line(parser *p, size_t *len)
{
    const char *start = p->text + p->pos;
    const char *nl = memchr(start, '\n', p->len - p->pos);
    size_t n = nl ? (size_t)(nl - start) : p->len - p->pos;
    p->pos += n + (nl ? 1 : 0);
    p->line++;
    if (n && start[n - 1] == '\r') n--;
    *len = n;
    return start;
}

/* A line inih cannot be given whole is reported here, and inih gets an
 * empty line in its place, so the count stays right. */
static bool line_fits(parser *p, const char *s, size_t n, int room)
{
    if (memchr(s, '\0', n)) {
        confreport_error_at(&p->rep, CONFREPORT_E_SYNTAX, p->line, "the line holds a NUL byte");
        return false;
    }
    if (n + 1 > (size_t)room) {
        confreport_error_at(&p->rep, CONFREPORT_E_SYNTAX, p->line, "the line is longer than %d characters", room - 1);
        return false;
    }
    return true;
}

/* inih's reader (fgets-like): hands over one line and sees it first, to
 * count it, open sections and know whether a key must come of it. */
static char *next_line(char *str, int num, void *stream)
{
    parser *p = stream;
    finish_line(p);
    if (p->pos >= p->len) return NULL;
    size_t n;
    const char *s = take_line(p, &n);
    str[0] = '\0';
    if (!line_fits(p, s, n, num)) return str;
    memcpy(str, s, n);
    str[n] = '\0';
    free(p->raw);
    p->raw = xstrdup(str);
    const char *t = skip_space(str);
    if (*t == '[') read_header(p, t);
    else p->want_key = !is_comment_or_blank(t);
    return str;
}

/* ---- checks across keys -------------------------------------------------- */

static void check_stale(parser *p, int stale, int interval, const char *what)
{
    const conf_recovery *r = &p->conf->recovery;
    int s = *(const int *)((const char *)r + recovery_keys[stale].offset);
    int i = *(const int *)((const char *)r + recovery_keys[interval].offset);
    if (p->rec_bad[stale] || p->rec_bad[interval] || (long long)s >= 2LL * i) return;
    const char *sname = recovery_keys[stale].name, *iname = recovery_keys[interval].name;
    int line = p->rec_line[stale] ? p->rec_line[stale] : p->rec_line[interval];
    confreport_error_at(&p->rep, CONFREPORT_E_RECOVERY, line, "%s must be at least twice the %s heartbeat interval",
                        sname, what);
    confreport_note(&p->rep, "%s = %d%s, %s = %d%s", sname, s, p->rec_line[stale] ? "" : " (the default)",
                    iname, i, p->rec_line[interval] ? "" : " (the default)");
    confreport_help(&p->rep, "set %s to at least %lld, or lower the interval", sname, 2LL * i);
}

/* A worker is stale only after missing two heartbeats in a row: with a
 * shorter threshold one late beat would make a live worker's task look
 * abandoned, and recovery would run it twice. */
static void check_recovery(parser *p)
{
    check_stale(p, REC_CLAIMED_STALE, REC_CLAIMER_HB, "claimer");
    check_stale(p, REC_RUNNING_STALE, REC_RUNNER_HB, "runner");
}

/* ---- the file ------------------------------------------------------------ */

static void unreadable(confreport *rep, const char *path, const char *why)
{
    confreport_error_at(rep, CONFREPORT_E_UNREADABLE, 0, "cannot read %s: %s", path, why);
}

/* The whole file into text, bounded before it is read. 0 ok, -1 reported. */
static int read_text(const char *path, buf *text, confreport *rep)
{
    FILE *f = fopen(path, "rb");
    if (!f) { unreadable(rep, path, strerror(errno)); return -1; }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > CONFFILE_MAX_BYTES) {
        fclose(f);
        unreadable(rep, path, "larger than 1 MiB");
        return -1;
    }
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && text->len <= CONFFILE_MAX_BYTES)
        buf_append(text, chunk, n);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) { unreadable(rep, path, strerror(err)); return -1; }
    if (text->len > CONFFILE_MAX_BYTES) { unreadable(rep, path, "larger than 1 MiB"); return -1; }
    return 0;
}

/* inih's switches, set on each load (they are process-wide): an indented
 * line is a line of its own, not the previous value continued; `#` may end
 * a value like `;`; no stopping at the first error. */
static char inline_comment_prefixes[] = ";#";

static void configure_inih(void)
{
    ini_allow_multiline = false;
    ini_allow_inline_comments = true;
    ini_inline_comment_prefixes = inline_comment_prefixes;
    ini_allow_no_value = false;
    ini_stop_on_first_error = false;
    ini_allow_bom = false;   /* our reader drops it, so line 1 reads the same to both */
}

/* Once the whole file is read: when it declares [queue.*] sections, every
 * queue_retention mapping names one of them. */
static void check_retention_queues(const silt_conf *c, confreport *rep)
{
    if (!c->nqueues) return;
    for (size_t i = 0; i < c->retention.nqueues; i++) {
        const conf_queue_retention *m = &c->retention.queues[i];
        if (conffile_queue(c, m->queue)) continue;
        confreport_error_at(rep, CONFREPORT_E_RETENTION, m->line,
                            CONF_RETENTION_QUEUE_PREFIX " names queue `%s`, which silt.conf does not declare", m->queue);
        buf names;
        buf_init(&names);
        for (size_t q = 0; q < c->nqueues; q++) buf_printf(&names, "%s[queue.%s]", q ? ", " : "", c->queues[q].name);
        confreport_note(rep, "the file declares %s", names.data);
        confreport_help(rep, "declare [queue.%s], or map one of those", m->queue);
        buf_fini(&names);
    }
}

static void parse(parser *p, const buf *text)
{
    p->text = text->data ? text->data : "";
    p->len = text->len;
    if (p->len >= 3 && memcmp(p->text, "\xEF\xBB\xBF", 3) == 0) p->pos = 3;
    configure_inih();
    ini_parse_stream(next_line, p, on_key, p);   /* its result: the first error line, which we have already */
    finish_line(p);
    close_section(p);
    check_recovery(p);
    check_schedule_queues(p);
    check_retention_queues(p->conf, &p->rep);
    check_schedule_classes(p);
}

/* ---- the interface ------------------------------------------------------- */

void conffile_defaults(silt_conf *c)
{
    c->path = NULL;
    c->queues = NULL;
    c->nqueues = 0;
    c->schedules = NULL;
    c->nschedules = 0;
    recovery_defaults(&c->recovery);
    conf_retention_defaults(&c->retention);
}

int conffile_load(const char *path, silt_conf *c, buf *report)
{
    conffile_defaults(c);
    c->path = xstrdup(path);
    parser p;
    memset(&p, 0, sizeof p);
    p.conf = c;
    confreport_init(&p.rep, path);
    buf text;
    buf_init(&text);
    if (read_text(path, &text, &p.rep) == 0) parse(&p, &text);
    buf_fini(&text);
    int errors = (int)confreport_count(&p.rep);
    confreport_render(&p.rep, report);
    confreport_fini(&p.rep);
    free(p.raw);
    free(p.section);
    free(p.queue_line);
    schedule_fini(&p.scratch_schedule);
    conf_retention_close(&p.retention);
    conf_retention_fini(&p.scratch_retention);
    return errors;
}

void conffile_free(silt_conf *c)
{
    for (size_t i = 0; i < c->nqueues; i++) free(c->queues[i].name);
    free(c->queues);
    for (size_t i = 0; i < c->nschedules; i++) schedule_fini(&c->schedules[i]);
    free(c->schedules);
    conf_retention_fini(&c->retention);
    free(c->path);
    conffile_defaults(c);
}

const conf_queue *conffile_queue(const silt_conf *c, const char *name)
{
    for (size_t i = 0; i < c->nqueues; i++)
        if (strcmp(c->queues[i].name, name) == 0) return &c->queues[i];
    return NULL;
}

const conf_schedule *conffile_schedule(const silt_conf *c, const char *name)
{
    for (size_t i = 0; i < c->nschedules; i++)
        if (strcmp(c->schedules[i].name, name) == 0) return &c->schedules[i];
    return NULL;
}

const char *conffile_locate(const char *given)
{
    if (given) return given;
    const char *env = getenv("SILT_CONFIG");
    return env && *env ? env : NULL;
}

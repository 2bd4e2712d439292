/* conf_retention: reads and checks [retention] (see conf_retention.h).
 *
 * The section has two kinds of line. Plain keys, one row each of a table
 * with their bounds, an integer or a duration, some of them allowed to be
 * None. And the document's two mappings, written one entry per line as
 * dotted keys, queue_retention.<queue> = 7d | None and
 * retention_classes.<key> = 365d, so that each entry has a line of its own
 * to be refused at. */
#include "base/conf_retention.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/class_key.h"
#include "base/duration.h"
#include "base/names.h"
#include "base/xalloc.h"

#define QUEUE_PREFIX CONF_RETENTION_QUEUE_PREFIX
#define CLASS_PREFIX "retention_classes"
#define PREDECESSOR  "queue_terminal_record_retention_hours"
#define DURATION_FORMS "a positive duration such as 7d, 36h, 90m or 45s"
#define KEY_TEXT_MAX 256   /* a key as written: at most a line, 199 characters */
#define KEY_RULE "a class key is 1 to 18 characters of a-z, 0-9 and _, starting with a letter"

typedef struct plain_key {
    const char *name;
    size_t      offset;     /* of an int64_t in conf_retention */
    int64_t     lo, hi;     /* bounds, inclusive */
    bool        none;       /* None is allowed: CONF_NONE */
    bool        duration;   /* a duration (7d) rather than an integer */
} plain_key;

#define AT(field) offsetof(conf_retention, field)

/* The document's settings, in its order. The two bounds it leaves open
 * (the row-delete retentions) are five years and one year. */
static const plain_key plain_keys[] = {
    { "terminal_record_retention_hours",   AT(terminal_record_retention_hours),     1, 43800, true,  false },
    { "worker_state_retention_hours",      AT(worker_state_retention_hours),        1, 8760,  true,  false },
    { "retention_sweep_interval_s",        AT(retention_sweep_interval_s),          30, 86400, false, false },
    { "retention_delete_batch_size",       AT(retention_delete_batch_size),         50, 10000, false, false },
    { "paused_workflow_auto_cancel_after", AT(paused_workflow_auto_cancel_after_s), 1, DURATION_MAX_SECONDS, true, true },
    { "history_leaf_horizon_days",         AT(history_leaf_horizon_days),           2, 14,    false, false },
    { "heartbeat_leaf_horizon_hours",      AT(heartbeat_leaf_horizon_hours),        2, 48,    false, false },
    { "partition_maintenance_interval_s",  AT(partition_maintenance_interval_s),    60, 3600, false, false },
};

#define NPLAIN (sizeof plain_keys / sizeof plain_keys[0])
_Static_assert(NPLAIN <= CONF_RETENTION_PLAIN_MAX, "raise CONF_RETENTION_PLAIN_MAX");

/* ---- defaults and lifetime ------------------------------------------------ */

void conf_retention_defaults(conf_retention *r)
{
    *r = (conf_retention){
        .terminal_record_retention_hours = 720,
        .worker_state_retention_hours = 168,
        .retention_sweep_interval_s = 300,
        .retention_delete_batch_size = 500,
        .paused_workflow_auto_cancel_after_s = CONF_NONE,
        .history_leaf_horizon_days = 3,
        .heartbeat_leaf_horizon_hours = 6,
        .partition_maintenance_interval_s = 900,
    };
}

void conf_retention_fini(conf_retention *r)
{
    for (size_t i = 0; i < r->nqueues; i++) {
        free(r->queues[i].queue);
        free(r->queues[i].class_key);
    }
    free(r->queues);
    for (size_t i = 0; i < r->nclasses; i++) free(r->classes[i].key);
    free(r->classes);
    conf_retention_defaults(r);
}

void conf_retention_open(conf_retention_reader *rd, conf_retention *target, confreport *rep)
{
    conf_retention_close(rd);
    rd->target = target;
    rd->rep = rep;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

void conf_retention_close(conf_retention_reader *rd)
{
    free_names(rd->queues, rd->nqueues);
    free_names(rd->classes, rd->nclasses);
    free(rd->queue_lines);
    free(rd->class_lines);
    memset(rd, 0, sizeof *rd);
}

/* ---- names seen in this section ---------------------------------------------- */

/* The line where name was first given in this section, 0 if never; records
 * it when it was not. */
static int seen_before(char ***names, int **lines, size_t *n, const char *name, int line)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*names)[i], name) == 0) return (*lines)[i];
    *names = xrealloc(*names, (*n + 1) * sizeof **names);
    *lines = xrealloc(*lines, (*n + 1) * sizeof **lines);
    (*names)[*n] = xstrdup(name);
    (*lines)[(*n)++] = line;
    return 0;
}

/* ---- values ----------------------------------------------------------------- */

static bool is_none(const char *value)
{
    return strcmp(value, "None") == 0 || strcmp(value, "none") == 0;
}

static const char *shown(const char *value)
{
    return *value ? value : "(nothing)";
}

/* A whole decimal integer within lo..hi. */
static bool parse_bounded(const char *value, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (errno || end == value || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* The help for a duration refused: what to write instead. */
static void duration_help(confreport *rep, const char *value, bool none_allowed)
{
    int64_t s;
    char d[DURATION_TEXT_BYTES];
    duration_fault f = duration_parse(value, &s);
    if (duration_decimal(value, &s) == 0) {
        duration_format(s, d);
        confreport_help(rep, "write %s: a duration is a whole number and one unit, s, m, h or d", d);
    } else if (f == DURATION_E_ZERO) {
        confreport_help(rep, none_allowed ? "a duration is positive; None means forever"
                                          : "a duration is positive");
    } else if (f == DURATION_E_TOO_LONG) {
        confreport_help(rep, "the longest duration is 36500d (100 years)");
    } else {
        confreport_help(rep, "a duration is a whole number and one unit, s, m, h or d, with nothing between "
                        "them; compound forms such as 1d12h are written in the smaller unit, 36h");
    }
}

/* Reads a duration or (when allowed) None into *seconds; reports what is
 * wrong at line, naming the key as written, and returns false. */
static bool read_duration(conf_retention_reader *rd, const char *key, const char *value, bool none_allowed,
                          int line, int64_t *seconds)
{
    if (none_allowed && is_none(value)) { *seconds = CONF_NONE; return true; }
    if (duration_parse(value, seconds) == DURATION_OK) return true;
    confreport_error_at(rd->rep, CONFREPORT_E_RETENTION, line, "%s in [retention] must be %s%s",
                        key, DURATION_FORMS, none_allowed ? ", or None" : "");
    confreport_note(rd->rep, "found %s = %s", key, shown(value));
    if (!none_allowed && is_none(value))
        confreport_help(rd->rep, "a declared class is finite: to keep records forever, map their queue "
                        "to None in queue_retention (the class forever)");
    else
        duration_help(rd->rep, value, none_allowed);
    return false;
}

/* ---- plain keys ------------------------------------------------------------- */

static void bad_integer(conf_retention_reader *rd, const plain_key *k, const char *value, int line)
{
    confreport_error_at(rd->rep, CONFREPORT_E_RETENTION, line, "%s in [retention] must be an integer from %lld to %lld%s",
                        k->name, (long long)k->lo, (long long)k->hi, k->none ? ", or None" : "");
    confreport_note(rd->rep, "found %s = %s", k->name, shown(value));
}

static void set_plain(conf_retention_reader *rd, const plain_key *k, const char *value, int line)
{
    int64_t *field = (int64_t *)((char *)rd->target + k->offset);
    int64_t v;
    if (k->duration) {
        if (read_duration(rd, k->name, value, k->none, line, &v)) *field = v;
        return;
    }
    if (k->none && is_none(value)) *field = CONF_NONE;
    else if (parse_bounded(value, k->lo, k->hi, &v)) *field = v;
    else bad_integer(rd, k, value, line);
}

static const plain_key *find_plain(const char *name, size_t *index)
{
    for (size_t i = 0; i < NPLAIN; i++)
        if (strcmp(plain_keys[i].name, name) == 0) { *index = i; return &plain_keys[i]; }
    return NULL;
}

/* ---- class keys ------------------------------------------------------------- */

/* The bound, with the arithmetic the document says configuration states. */
static void too_long(confreport *rep, const char *key, int line)
{
    confreport_error_at(rep, CONFREPORT_E_RETENTION, line, "retention class key `%s` is %zu characters, over the bound of %d",
                        key, strlen(key), CLASS_KEY_MAX);
    confreport_note(rep, "its longest relation is horsies_task_history_%s_YYYY_MM_DD_enqueued_idx: "
                    "%d + %zu + %d + %d = %zu bytes, and PostgreSQL truncates names past %d",
                    key, CLASS_KEY_RELATION_BYTES, strlen(key), CLASS_KEY_DAY_BYTES, CLASS_KEY_INDEX_BYTES,
                    class_key_longest_name_bytes(key), CLASS_KEY_IDENTIFIER_MAX);
}

static void bad_declared_key(confreport *rep, const char *key, class_key_fault f, int line)
{
    switch (f) {
    case CLASS_KEY_OK:
        return;
    case CLASS_KEY_NOT_IDENTIFIER:
        confreport_error_at(rep, CONFREPORT_E_RETENTION, line, "retention class key `%s` is not a usable identifier", key);
        confreport_note(rep, KEY_RULE);
        return;
    case CLASS_KEY_RESERVED:
        confreport_error_at(rep, CONFREPORT_E_RETENTION, line, "retention class key `%s` is reserved", key);
        confreport_note(rep, "standard_30d, forever and heartbeats are silt's own classes");
        confreport_help(rep, "declare the class under another key");
        return;
    case CLASS_KEY_PREFIX:
        confreport_error_at(rep, CONFREPORT_E_RETENTION, line, "retention class key `%s` uses the reserved prefix q_", key);
        confreport_note(rep, "q_ keys are derived from queue_retention, which gives them their duration");
        confreport_help(rep, "declare the class without the q_ prefix, or map the queue in queue_retention");
        return;
    case CLASS_KEY_RELATION:
        confreport_error_at(rep, CONFREPORT_E_RETENTION, line, "retention class key `%s` names another relation", key);
        confreport_note(rep, "horsies_task_history_%s would be %s", key,
                        strcmp(key, CLASS_KEY_CATALOG) == 0 ? "the leaf catalog"
                                                            : "the name of another class's daily partition");
        confreport_help(rep, "declare the class under a key that does not end like a day (_YYYY_MM_DD)");
        return;
    case CLASS_KEY_TOO_LONG:
        too_long(rep, key, line);
        confreport_help(rep, "declare the class under a key of at most %d characters", CLASS_KEY_MAX);
        return;
    }
}

/* retention_classes.<key> = duration */
static void set_class(conf_retention_reader *rd, const char *key, const char *value, int line)
{
    class_key_fault f = class_key_check_declared(key);
    bad_declared_key(rd->rep, key, f, line);
    int first = seen_before(&rd->classes, &rd->class_lines, &rd->nclasses, key, line);
    if (first) {
        confreport_error_at(rd->rep, CONFREPORT_E_RETENTION, line, "retention class `%s` declared twice", key);
        confreport_note(rd->rep, "first declared at %s:%d", rd->rep->path, first);
        confreport_help(rd->rep, "keep one of them: a class has exactly one duration");
    }
    char name[KEY_TEXT_MAX];
    snprintf(name, sizeof name, CLASS_PREFIX ".%s", key);
    int64_t seconds;
    if (!read_duration(rd, name, value, false, line, &seconds) || f != CLASS_KEY_OK || first) return;
    conf_retention *r = rd->target;
    r->classes = xrealloc(r->classes, (r->nclasses + 1) * sizeof *r->classes);
    r->classes[r->nclasses++] = (conf_retention_class){ xstrdup(key), seconds, line };
}

/* ---- queue mappings ----------------------------------------------------------- */

/* A queue silt accepts but whose derived key could not name a relation:
 * refused, never lower-cased or escaped (Emails and emails would meet). */
static bool derived_key_ok(confreport *rep, const char *queue, const char *key, int64_t seconds, int line)
{
    class_key_fault f = class_key_check_derived(key);
    if (f == CLASS_KEY_NOT_IDENTIFIER) {
        confreport_error_at(rep, CONFREPORT_E_RETENTION, line,
                            "queue `%s` cannot be mapped: its class key %s is not a usable identifier", queue, key);
        confreport_note(rep, KEY_RULE);
        confreport_help(rep, "map a queue named in a-z, 0-9 and _, or declare a class in retention_classes "
                        "and name it at the send");
    } else if (f == CLASS_KEY_TOO_LONG) {
        char d[DURATION_TEXT_BYTES];
        duration_format(seconds, d);
        too_long(rep, key, line);
        confreport_help(rep, "a queue mapped to %s may have %zu characters; map a shorter queue name, or declare "
                        "a short class in retention_classes and name it at the send", d, class_key_queue_room(seconds));
    }
    return f == CLASS_KEY_OK;
}

static void add_mapping(conf_retention *r, const char *queue, int64_t seconds, char *class_key, int line)
{
    r->queues = xrealloc(r->queues, (r->nqueues + 1) * sizeof *r->queues);
    r->queues[r->nqueues++] = (conf_queue_retention){ xstrdup(queue), seconds, class_key, line };
}

/* queue_retention.<queue> = duration | None */
static void set_queue(conf_retention_reader *rd, const char *queue, const char *value, int line)
{
    char name[KEY_TEXT_MAX];
    snprintf(name, sizeof name, QUEUE_PREFIX ".%s", queue);
    bool named = names_conf_valid(queue);
    if (!named) {
        confreport_error_at(rd->rep, CONFREPORT_E_RETENTION, line, "invalid queue name `%s` in %s", queue, name);
        confreport_note(rd->rep, "a queue name is 1 to %d characters of A-Z, a-z, 0-9, `_` and `-`",
                        NAMES_CONF_MAX);
    }
    int first = seen_before(&rd->queues, &rd->queue_lines, &rd->nqueues, queue, line);
    if (first) confreport_key_twice(rd->rep, CONFREPORT_E_DUPLICATE, line, name, "retention", first);
    int64_t seconds;
    if (!read_duration(rd, name, value, true, line, &seconds) || !named || first) return;
    if (seconds == CONF_NONE) { add_mapping(rd->target, queue, seconds, xstrdup(CLASS_KEY_FOREVER), line); return; }
    char *key = class_key_derive(queue, seconds);
    if (derived_key_ok(rd->rep, queue, key, seconds, line)) add_mapping(rd->target, queue, seconds, key, line);
    else free(key);
}

/* ---- the predecessor and the mappings written whole ------------------------------- */

/* queue_terminal_record_retention_hours[.<queue>]: the 0.4.x setting, which
 * counted hours and deleted rows. The help writes its successor's line
 * when the entry says enough to. */
static void successor_help(confreport *rep, const char *queue, const char *value)
{
    int64_t hours;
    char d[DURATION_TEXT_BYTES];
    if (queue && is_none(value)) {
        confreport_help(rep, "write " QUEUE_PREFIX ".%s = None (kept forever)", queue);
    } else if (queue && parse_bounded(value, 1, DURATION_MAX_SECONDS / 3600, &hours)) {
        duration_format(hours * 3600, d);
        confreport_help(rep, "write " QUEUE_PREFIX ".%s = %s for %s: %lld", queue, d, queue, (long long)hours);
    } else {
        confreport_help(rep, "write one line per queue, " QUEUE_PREFIX ".<queue> = <duration> or None, "
                        "e.g. " QUEUE_PREFIX ".emails = 7d for emails: 168");
    }
}

static void predecessor(conf_retention_reader *rd, const char *queue, const char *value, int line)
{
    confreport_error_at(rd->rep, CONFREPORT_E_RETENTION, line, PREDECESSOR " was replaced by " QUEUE_PREFIX);
    confreport_note(rd->rep, QUEUE_PREFIX " is its direct successor: a duration instead of an hour count, "
                    "and whole partitions dropped rather than rows deleted");
    successor_help(rd->rep, queue, value);
}

static void mapping_written_whole(conf_retention_reader *rd, const char *key, int line)
{
    bool queues = strcmp(key, QUEUE_PREFIX) == 0;
    confreport_error_at(rd->rep, CONFREPORT_E_RETENTION, line, "%s takes one line per %s", key, queues ? "queue" : "class");
    if (queues)
        confreport_help(rd->rep, "write " QUEUE_PREFIX ".<queue> = <duration> or None, e.g. " QUEUE_PREFIX ".emails = 7d");
    else
        confreport_help(rd->rep, "write " CLASS_PREFIX ".<key> = <duration>, e.g. " CLASS_PREFIX ".audit_1y = 365d");
}

static void unknown_key(conf_retention_reader *rd, const char *key, int line)
{
    confreport_error_at(rd->rep, CONFREPORT_E_KEY, line, "unknown key `%s` in [retention]", key);
    buf known;
    buf_init(&known);
    buf_puts(&known, QUEUE_PREFIX ".<queue>, " CLASS_PREFIX ".<key>");
    for (size_t i = 0; i < NPLAIN; i++) buf_printf(&known, ", %s", plain_keys[i].name);
    confreport_help(rd->rep, "the keys of [retention] are %s", known.data);
    buf_fini(&known);
}

/* The part after "prefix.", or NULL when key is not prefix.<something>. */
static const char *dotted(const char *key, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(key, prefix, n) == 0 && key[n] == '.' ? key + n + 1 : NULL;
}

void conf_retention_set(conf_retention_reader *rd, const char *key, const char *value, int line)
{
    size_t i;
    const plain_key *k = find_plain(key, &i);
    const char *rest;
    if (k) {
        if (rd->plain_line[i]) confreport_key_twice(rd->rep, CONFREPORT_E_DUPLICATE, line, key, "retention", rd->plain_line[i]);
        else rd->plain_line[i] = line;
        set_plain(rd, k, value, line);
    } else if ((rest = dotted(key, QUEUE_PREFIX))) {
        set_queue(rd, rest, value, line);
    } else if ((rest = dotted(key, CLASS_PREFIX))) {
        set_class(rd, rest, value, line);
    } else if (strcmp(key, PREDECESSOR) == 0 || dotted(key, PREDECESSOR)) {
        predecessor(rd, dotted(key, PREDECESSOR), value, line);
    } else if (strcmp(key, QUEUE_PREFIX) == 0 || strcmp(key, CLASS_PREFIX) == 0) {
        mapping_written_whole(rd, key, line);
    } else {
        unknown_key(rd, key, line);
    }
}

/* ---- across the file -------------------------------------------------------------- */


/* The setting a key under [recovery] names: a plain key's name, or the
 * mapping's name before the dot. NULL: not a retention setting. */
static const char *retention_setting(const char *key)
{
    static const char *const mappings[] = { QUEUE_PREFIX, CLASS_PREFIX, PREDECESSOR };
    size_t i;
    if (find_plain(key, &i)) return plain_keys[i].name;
    for (size_t m = 0; m < sizeof mappings / sizeof mappings[0]; m++)
        if (strcmp(key, mappings[m]) == 0 || dotted(key, mappings[m])) return mappings[m];
    return NULL;
}

/* The document's report, its home translated from AppConfig.retention to
 * [retention]; the note is the document's, word for word. */
bool conf_retention_moved(confreport *rep, const char *key, int line)
{
    const char *setting = retention_setting(key);
    if (!setting) return false;
    confreport_error_at(rep, CONFREPORT_E_RECOVERY, line, "%s moved to [retention]", setting);
    confreport_note(rep, "it governs how long records live, not how stalled work is detected");
    if (strcmp(setting, PREDECESSOR) == 0)
        confreport_help(rep, "set " QUEUE_PREFIX " in [retention], its successor: one line per queue, "
                        "e.g. " QUEUE_PREFIX ".emails = 7d for emails: 168");
    else
        confreport_help(rep, "set %s in [retention]", key);
    return true;
}

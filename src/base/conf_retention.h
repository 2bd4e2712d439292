/* conf_retention: the [retention] section of silt.conf, for conffile.c,
 * and what it reads into (conf_retention: silt_conf in base/conffile.h
 * holds one, and the retention passes read it). Kept apart so the file
 * reader stays one concept per file: this module owns the section's keys,
 * their defaults and bounds, the durations and class keys it takes (base/duration.h,
 * base/class_key.h), and its refusals, all HRS-216 but for the file-level
 * ones every section shares (HRS-203 unknown key, HRS-207 a key twice).
 * docs/configuration.md "[retention]" is the user's side of it.
 *
 * It also knows the section's names when they are written elsewhere:
 * under [recovery], where they lived before, each is refused with HRS-204
 * naming [retention] (the document's "Moved from RecoveryConfig"). */
#ifndef SILT_CONF_RETENTION_H
#define SILT_CONF_RETENTION_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/confreport.h"

/* A [retention] setting the document allows to be None (disabled, or forever). */
#define CONF_NONE (-1)

/* queue_retention.<queue> = duration | None: the class a queue's tasks get
 * unless the send names one. */
typedef struct conf_queue_retention {
    char   *queue;
    int64_t seconds;     /* > 0; CONF_NONE: forever */
    char   *class_key;   /* the derived q_<queue>_<duration>, or "forever" */
    int     line;
} conf_queue_retention;

/* retention_classes.<key> = duration: a finite class the deployment declares. */
typedef struct conf_retention_class {
    char   *key;
    int64_t seconds;     /* > 0 */
    int     line;
} conf_retention_class;

/* [retention]: how long task records live (the Retention Config document,
 * docs/configuration.md; read by base/conf_retention.c). Durations in
 * seconds. With no error in the file: every mapping names a distinct queue
 * (one of the file's [queue.*] when it declares any) and its class_key is
 * "forever" or a derived key that passes class_key_check_derived (an
 * identifier of at most 18 characters); every declared class has a distinct
 * key that passes class_key_check_declared. */
typedef struct conf_retention {
    conf_queue_retention *queues;      /* in file order */
    size_t                nqueues;
    conf_retention_class *classes;     /* in file order */
    size_t                nclasses;
    int64_t terminal_record_retention_hours;     /* default 720; CONF_NONE: terminal workflows kept */
    int64_t worker_state_retention_hours;        /* default 168; CONF_NONE: worker states kept */
    int64_t retention_sweep_interval_s;          /* default 300, 30..86400 */
    int64_t retention_delete_batch_size;         /* default 500, 50..10000: rows per DELETE, one commit each */
    int64_t paused_workflow_auto_cancel_after_s; /* default CONF_NONE: PAUSED workflows never expire */
    int64_t history_leaf_horizon_days;           /* default 3, 2..14 */
    int64_t heartbeat_leaf_horizon_hours;        /* default 6, 2..48 */
    int64_t partition_maintenance_interval_s;    /* default 900, 60..3600 */
} conf_retention;

#define CONF_RETENTION_QUEUE_PREFIX "queue_retention"   /* queue_retention.<queue> */
#define CONF_RETENTION_PLAIN_MAX 16   /* room for the section's plain keys (8 today) */

/* One [retention] section being read into target. A repeated section is
 * read into a scratch conf_retention, so its lines are still checked. */
typedef struct conf_retention_reader {
    conf_retention *target;
    confreport     *rep;
    int             plain_line[CONF_RETENTION_PLAIN_MAX];   /* where each plain key was set; 0 not yet */
    char          **queues;           /* every queue_retention.<queue> seen, refused or not */
    char          **classes;          /* every retention_classes.<key> seen */
    int            *queue_lines, *class_lines;
    size_t          nqueues, nclasses;
} conf_retention_reader;

void conf_retention_defaults(conf_retention *r);
/* Frees what r holds and sets the defaults again. */
void conf_retention_fini(conf_retention *r);

/* Starts a section: the keys that follow fill target. */
void conf_retention_open(conf_retention_reader *rd, conf_retention *target, confreport *rep);
void conf_retention_close(conf_retention_reader *rd);
/* One `key = value` line of the section. */
void conf_retention_set(conf_retention_reader *rd, const char *key, const char *value, int line);
/* key, written under [recovery]: when it is a [retention] setting (or its
 * predecessor, queue_terminal_record_retention_hours), reports HRS-204 at
 * line and returns true. */
bool conf_retention_moved(confreport *rep, const char *key, int line);

#endif

/* conf_retention: the [retention] section of silt.conf, for conffile.c
 * (the struct itself, conf_retention, is in base/conffile.h, where the
 * retention passes read it). Kept apart so the file reader stays one
 * concept per file: this module owns the section's keys, their defaults
 * and bounds, the durations and class keys it takes (base/duration.h,
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
#include "base/confreport.h"
#include "base/conffile.h"

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
/* Once the whole file is read: when it declares [queue.*] sections, every
 * mapping names one of them. */
void conf_retention_check_queues(const silt_conf *c, confreport *rep);
/* key, written under [recovery]: when it is a [retention] setting (or its
 * predecessor, queue_terminal_record_retention_hours), reports HRS-204 at
 * line and returns true. */
bool conf_retention_moved(confreport *rep, const char *key, int line);

#endif

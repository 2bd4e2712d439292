/* class_key: the names of retention classes (the Retention Config
 * document, docs/configuration.md "[retention]").
 *
 * A class key is spliced into every relation its class owns, the longest
 * being a leaf's index, horsies_task_history_<key>_YYYY_MM_DD_enqueued_idx.
 * PostgreSQL truncates an identifier past 63 bytes instead of refusing it,
 * so the bound is enforced here, where a configuration can still be fixed:
 * 63 - 21 - 11 - 13 = 18 characters. A key is also written unquoted in
 * those names, so it must be a plain identifier, ^[a-z][a-z0-9_]*$.
 *
 * Keys come from three places: silt's own (standard_30d, forever,
 * heartbeats), a queue's mapping (q_<queue>_<duration>, derived here), and
 * the deployment's declarations (retention_classes), which may use neither
 * a reserved key nor the q_ prefix of derived ones. */
#ifndef SILT_CLASS_KEY_H
#define SILT_CLASS_KEY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLASS_KEY_STANDARD   "standard_30d"   /* the immutable 30-day default */
#define CLASS_KEY_STANDARD_SECONDS (30 * 86400)
#define CLASS_KEY_FOREVER    "forever"        /* never dropped: a None mapping or send */
#define CLASS_KEY_HEARTBEATS "heartbeats"     /* the heartbeat partitions; never a task's */
#define CLASS_KEY_DERIVED_PREFIX "q_"
#define CLASS_KEY_CATALOG    "leaf_catalog"   /* horsies_task_history_leaf_catalog is the leaf catalog */

/* The arithmetic of the bound, by the parts of the longest relation name. */
#define CLASS_KEY_IDENTIFIER_MAX 63   /* bytes PostgreSQL keeps of a name */
#define CLASS_KEY_RELATION_BYTES 21   /* "horsies_task_history_" */
#define CLASS_KEY_DAY_BYTES      11   /* "_YYYY_MM_DD" */
#define CLASS_KEY_INDEX_BYTES    13   /* "_enqueued_idx" */
#define CLASS_KEY_MAX (CLASS_KEY_IDENTIFIER_MAX - CLASS_KEY_RELATION_BYTES - CLASS_KEY_DAY_BYTES \
                       - CLASS_KEY_INDEX_BYTES)
_Static_assert(CLASS_KEY_MAX == 18, "the document's bound: 63 - 21 - 11 - 13 = 18");

/* What is wrong with a key, the first of these that applies. */
typedef enum class_key_fault {
    CLASS_KEY_OK = 0,
    CLASS_KEY_NOT_IDENTIFIER,   /* empty, or not ^[a-z][a-z0-9_]*$ */
    CLASS_KEY_RESERVED,         /* standard_30d, forever, heartbeats */
    CLASS_KEY_PREFIX,           /* q_...: only a mapping derives those */
    CLASS_KEY_RELATION,         /* its parent's name would be another relation's: a key ending
                                 * _YYYY_MM_DD (a daily leaf) or leaf_catalog */
    CLASS_KEY_TOO_LONG,         /* over CLASS_KEY_MAX characters */
} class_key_fault;

/* "q_<queue>_<duration>" (duration in its largest exact unit: 168h -> 7d)
 * for a queue mapped to seconds (> 0); the caller frees it. Not checked:
 * see class_key_check_derived. */
char *class_key_derive(const char *queue, int64_t seconds);
/* A derived key: an identifier within the bound. */
class_key_fault class_key_check_derived(const char *key);
/* A key declared in retention_classes: every rule. */
class_key_fault class_key_check_declared(const char *key);
bool class_key_is_identifier(const char *key);
bool class_key_is_reserved(const char *key);
bool class_key_names_a_relation(const char *key);
/* The bytes of the key's longest relation name: 21 + key + 11 + 13. */
size_t class_key_longest_name_bytes(const char *key);
/* How long a queue name may be to derive a key within the bound when
 * mapped to seconds (13 for 7d, 12 for 90d). */
size_t class_key_queue_room(int64_t seconds);

#endif

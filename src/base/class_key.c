/* class_key: derive and check retention class keys (see class_key.h). Pure
 * functions: the configuration refuses a bad key at its line, and the
 * passes that create partitions rely on every key having passed here. */
#include "base/class_key.h"
#include <ctype.h>
#include <string.h>
#include "base/buf.h"
#include "base/duration.h"

static const char *const reserved[] = { CLASS_KEY_STANDARD, CLASS_KEY_FOREVER, CLASS_KEY_HEARTBEATS };

char *class_key_derive(const char *queue, int64_t seconds)
{
    char d[DURATION_TEXT_BYTES];
    duration_format(seconds, d);
    buf b;
    buf_init(&b);
    buf_printf(&b, "%s%s_%s", CLASS_KEY_DERIVED_PREFIX, queue, d);
    return buf_steal(&b);
}

bool class_key_is_identifier(const char *key)
{
    if (!(key[0] >= 'a' && key[0] <= 'z')) return false;
    size_t n = strlen(key);
    return strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

bool class_key_is_reserved(const char *key)
{
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcmp(key, reserved[i]) == 0) return true;
    return false;
}

class_key_fault class_key_check_derived(const char *key)
{
    if (!class_key_is_identifier(key)) return CLASS_KEY_NOT_IDENTIFIER;
    return strlen(key) > CLASS_KEY_MAX ? CLASS_KEY_TOO_LONG : CLASS_KEY_OK;
}

/* Reserved and prefixed before long: a q_ key too long is refused for its
 * prefix, since shortening it would not make it acceptable. */
/* Whether horsies_task_history_<key> would be the name of another relation:
 * a daily leaf of some class (a key ending _YYYY_MM_DD) or the leaf catalog. */
bool class_key_names_a_relation(const char *key)
{
    if (strcmp(key, CLASS_KEY_CATALOG) == 0) return true;
    size_t n = strlen(key);
    static const char day[] = "_dddd_dd_dd";   /* d: a digit */
    size_t m = sizeof day - 1;
    if (n <= m) return false;
    for (size_t i = 0; i < m; i++) {
        char c = key[n - m + i];
        if (day[i] == 'd' ? !isdigit((unsigned char)c) : c != day[i]) return false;
    }
    return true;
}

class_key_fault class_key_check_declared(const char *key)
{
    if (!class_key_is_identifier(key)) return CLASS_KEY_NOT_IDENTIFIER;
    if (class_key_is_reserved(key)) return CLASS_KEY_RESERVED;
    if (class_key_names_a_relation(key)) return CLASS_KEY_RELATION;
    if (strncmp(key, CLASS_KEY_DERIVED_PREFIX, strlen(CLASS_KEY_DERIVED_PREFIX)) == 0) return CLASS_KEY_PREFIX;
    return strlen(key) > CLASS_KEY_MAX ? CLASS_KEY_TOO_LONG : CLASS_KEY_OK;
}

size_t class_key_longest_name_bytes(const char *key)
{
    return CLASS_KEY_RELATION_BYTES + strlen(key) + CLASS_KEY_DAY_BYTES + CLASS_KEY_INDEX_BYTES;
}

/* 18 - "q_" - "_" - the duration's text. */
size_t class_key_queue_room(int64_t seconds)
{
    char d[DURATION_TEXT_BYTES];
    duration_format(seconds, d);
    size_t used = strlen(CLASS_KEY_DERIVED_PREFIX) + 1 + strlen(d);
    return used < CLASS_KEY_MAX ? CLASS_KEY_MAX - used : 0;
}

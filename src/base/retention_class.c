/* retention_class: the class a task gets at enqueue (see retention_class.h). */
#include "base/retention_class.h"
#include <stdio.h>
#include <string.h>
#include "base/buf.h"
#include "base/class_key.h"

static const conf_queue_retention *mapping_of(const conf_retention *r, const char *queue)
{
    for (size_t i = 0; i < r->nqueues; i++)
        if (strcmp(r->queues[i].queue, queue) == 0) return &r->queues[i];
    return NULL;
}

/* The key as this process knows it (silt's own, declared, or derived from
 * a current mapping), or NULL. */
static const char *known(const conf_retention *r, const char *key)
{
    if (strcmp(key, CLASS_KEY_STANDARD) == 0) return CLASS_KEY_STANDARD;
    if (strcmp(key, CLASS_KEY_FOREVER) == 0) return CLASS_KEY_FOREVER;
    for (size_t i = 0; i < r->nclasses; i++)
        if (strcmp(r->classes[i].key, key) == 0) return r->classes[i].key;
    for (size_t i = 0; i < r->nqueues; i++)
        if (r->queues[i].class_key && strcmp(r->queues[i].class_key, key) == 0) return r->queues[i].class_key;
    return NULL;
}

void retention_class_each_key(const conf_retention *r, void (*fn)(void *arg, const char *key), void *arg)
{
    fn(arg, CLASS_KEY_STANDARD);
    fn(arg, CLASS_KEY_FOREVER);
    for (size_t i = 0; i < r->nclasses; i++) fn(arg, r->classes[i].key);
    for (size_t i = 0; i < r->nqueues; i++)
        if (r->queues[i].class_key && strcmp(r->queues[i].class_key, CLASS_KEY_FOREVER) != 0)
            fn(arg, r->queues[i].class_key);
}

static void list_one(void *arg, const char *key)
{
    buf *out = arg;
    buf_printf(out, "%s%s", out->len ? ", " : "", key);
}

/* "standard_30d, forever, audit_1y, q_emails_7d": every key a send may name. */
static void list_known(const conf_retention *r, buf *out)
{
    retention_class_each_key(r, list_one, out);
}

const char *retention_class_for(const conf_retention *r, const char *queue, retention_ask ask, const char *key,
                                char *err, size_t errlen)
{
    if (ask == RETENTION_ASK_NONE) return CLASS_KEY_FOREVER;
    if (ask == RETENTION_ASK_NOTHING) {
        const conf_queue_retention *m = mapping_of(r, queue);
        return m && m->class_key ? m->class_key : CLASS_KEY_STANDARD;
    }
    if (strcmp(key, CLASS_KEY_HEARTBEATS) == 0) {
        snprintf(err, errlen, "retention class heartbeats is silt's own, for heartbeat partitions: a task cannot "
                 "use it");
        return NULL;
    }
    const char *k = known(r, key);
    if (k) return k;
    buf keys;
    buf_init(&keys);
    list_known(r, &keys);
    snprintf(err, errlen, "unknown retention class %s: this server's silt.conf knows %s", key, keys.data);
    buf_fini(&keys);
    return NULL;
}

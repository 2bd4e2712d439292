/* retention_class: which retention class a task gets at enqueue (the
 * Retention Config document, "Which class a send gets"): the one its send
 * names (a key, or None: forever), else its queue's queue_retention
 * mapping, else standard_30d. The same precedence for every enqueue: a
 * send over HTTP or the CLI, a delayed send, a workflow node (its queue,
 * when the workflow is accepted), a schedule's fire (the firing server's
 * silt.conf). Checked against this process's silt.conf only, so it costs
 * no database round trip; a key this process does not know is refused. */
#ifndef SILT_RETENTION_CLASS_H
#define SILT_RETENTION_CLASS_H
#include <stdbool.h>
#include <stddef.h>
#include "base/conffile.h"

/* What a send says of its class. */
typedef enum retention_ask {
    RETENTION_ASK_NOTHING,   /* no retentionClassKey: the queue's, else the default */
    RETENTION_ASK_NONE,      /* retentionClassKey null: kept forever */
    RETENTION_ASK_KEY,       /* a key */
} retention_ask;

/* Every key a send may name, in the order a refusal lists them: silt's
 * (standard_30d, forever), the declared classes, the mappings' derived
 * keys. src/tasks/send_settings.c stores them for tasks.enqueue. */
void retention_class_each_key(const conf_retention *r, void (*fn)(void *arg, const char *key), void *arg);

/* The class of a task enqueued on queue: a string owned by r or static.
 * NULL for a key this process cannot use, with the reason in err. */
const char *retention_class_for(const conf_retention *r, const char *queue, retention_ask ask, const char *key,
                                char *err, size_t errlen);

#endif

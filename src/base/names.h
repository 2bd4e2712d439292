/* names: the one length limit of the names silt is given — queue,
 * partition, consumer group, namespace, task and task queue names —
 * wherever they come from: a request's body, path or query (api.h,
 * api_check_name) or silt.conf (a schedule's task).
 *
 * Bytes, not characters: what PostgreSQL stores and what a notification
 * carries are bytes, and a fixed buffer sized by this constant holds any
 * name that was admitted (tasks/hub.c). silt.conf's queue and schedule
 * names keep their own, narrower rule (names_conf_valid), within this one. */
#ifndef SILT_NAMES_H
#define SILT_NAMES_H

#include <stdbool.h>

#define NAMES_MAX_BYTES 255
#define NAMES_CONF_MAX  48    /* characters of a silt.conf queue or schedule name */

/* A queue or schedule name silt.conf accepts: 1 to NAMES_CONF_MAX
 * characters of A-Z, a-z, 0-9, `_` and `-` (it is spliced into keys such
 * as queue_retention.<queue> and into derived class keys). */
bool names_conf_valid(const char *name);

#endif

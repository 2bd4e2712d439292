/* names: the one length limit of the names silt is given — queue,
 * partition, consumer group, namespace, task and task queue names —
 * wherever they come from: a request's body, path or query (api.h,
 * api_check_name) or silt.conf (a schedule's task).
 *
 * Bytes, not characters: what PostgreSQL stores and what a notification
 * carries are bytes, and a fixed buffer sized by this constant holds any
 * name that was admitted (tasks/hub.c). silt.conf's [queue.NAME] keeps its
 * own, narrower rule (conffile.h, CONFFILE_QUEUE_NAME_MAX), within this one. */
#ifndef SILT_NAMES_H
#define SILT_NAMES_H

#define NAMES_MAX_BYTES 255

#endif

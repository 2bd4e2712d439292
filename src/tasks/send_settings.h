/* send_settings: what silt.conf says of sends, stored in the database at
 * a server's start (tasks.send_settings, tasks.send_queues: migration 045)
 * for tasks.enqueue, the one implementation of the send rules that POST
 * /api/v1/tasks and the SQL API (docs/sql-api.md) both go through: whether
 * queues are declared, each queue's priority and retention class, and the
 * class keys a send may name. Servers sharing a database share a
 * configuration (docs/operations.md); the last one started wrote it. */
#ifndef SILT_SEND_SETTINGS_H
#define SILT_SEND_SETTINGS_H
#include <libpq-fe.h>
#include "base/buf.h"
#include "base/conffile.h"

/* 0 stored; -1 with the database's message in err. */
int send_settings_store(PGconn *pg, const silt_conf *conf, buf *err) __attribute__((warn_unused_result));

#endif

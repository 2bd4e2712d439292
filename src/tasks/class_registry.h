/* class_registry: a server's retention classes registered in the database
 * at startup (sql/023): silt's standard_30d and forever, the ones its
 * silt.conf declares and the ones its queue mappings derive. A key already registered with another duration refuses the
 * start with HRS-216, in silt.conf's report format: classes are immutable,
 * because rows already carry the old window. */
#ifndef SILT_CLASS_REGISTRY_H
#define SILT_CLASS_REGISTRY_H
#include <libpq-fe.h>
#include "base/buf.h"
#include "base/conffile.h"

#define CLASS_REGISTRY_CONFLICT (-1)   /* report: silt.conf's report of every conflicting key */
#define CLASS_REGISTRY_DB_ERROR (-2)   /* report: the database's message */

/* 0: registered; otherwise one of the above, nothing registered. */
int class_registry_register(PGconn *pg, const silt_conf *conf, buf *report);

#endif

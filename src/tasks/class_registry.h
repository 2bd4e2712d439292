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
#include "db/array.h"

#define CLASS_REGISTRY_CONFLICT (-1)   /* report: silt.conf's report of every conflicting key */
#define CLASS_REGISTRY_DB_ERROR (-2)   /* report: the database's message */

#define CLASS_REGISTRY_ARRAYS 3
/* The registration: keys, durations (NULL: forever) and origins as three
 * parallel arrays; answers the keys registered with another duration
 * (class_key, registered_s, declared_s), and then registers nothing (at a
 * start), or every other class (CLASS_REGISTRY_EACH_SQL, at each pass). */
#define CLASS_REGISTRY_SQL "SELECT class_key, registered_s, declared_s FROM tasks.register_classes(" \
                           "$1::text[], $2::bigint[], $3::text[], true)"
#define CLASS_REGISTRY_EACH_SQL "SELECT class_key, registered_s, declared_s FROM tasks.register_classes(" \
                                "$1::text[], $2::bigint[], $3::text[], false)"

/* This server's classes as CLASS_REGISTRY_SQL's parameters. */
typedef struct class_registry_params {
    db_array    arrays[CLASS_REGISTRY_ARRAYS];
    const char *values[CLASS_REGISTRY_ARRAYS];
} class_registry_params;

void class_registry_values(const silt_conf *conf, class_registry_params *p);
void class_registry_values_fini(class_registry_params *p);
/* CLASS_REGISTRY_SQL's conflicts as silt.conf's report (HRS-216, each key
 * at the line that declares it). */
void class_registry_report(const PGresult *res, const silt_conf *conf, buf *report);

/* 0: registered; otherwise one of the above, nothing registered. */
int class_registry_register(PGconn *pg, const silt_conf *conf, buf *report);

#endif

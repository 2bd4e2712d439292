/* class_registry: a server's classes registered at startup (see class_registry.h). */
#include "tasks/class_registry.h"
#include <stdio.h>
#include <string.h>
#include "base/class_key.h"
#include "base/confreport.h"
#include "base/duration.h"
#include "db/array.h"
#include "db/result.h"

enum { R_KEYS, R_DURATIONS, R_ORIGINS };

static void add(db_array *a, const char *key, int64_t seconds, const char *origin)
{
    db_array_text(&a[R_KEYS], key);
    if (seconds == CONF_NONE) db_array_text(&a[R_DURATIONS], NULL);
    else db_array_int(&a[R_DURATIONS], seconds);
    db_array_text(&a[R_ORIGINS], origin);
}

/* Where silt.conf gives the key (its retention_classes line), and how. */
static int line_of(const conf_retention *r, const char *key, int64_t *seconds)
{
    for (size_t i = 0; i < r->nclasses; i++)
        if (strcmp(r->classes[i].key, key) == 0) { *seconds = r->classes[i].seconds; return r->classes[i].line; }
    for (size_t i = 0; i < r->nqueues; i++)
        if (r->queues[i].class_key && strcmp(r->queues[i].class_key, key) == 0) {
            *seconds = r->queues[i].seconds;
            return r->queues[i].line;
        }
    *seconds = 0;
    return 0;
}

void class_registry_report(const PGresult *res, const silt_conf *conf, buf *report)
{
    confreport rep;
    confreport_init(&rep, conf->path ? conf->path : "silt.conf");
    for (int i = 0; i < PQntuples(res); i++) {
        const char *key = db_str(res, i, 0);
        char had[DURATION_TEXT_BYTES], says[DURATION_TEXT_BYTES];
        duration_format(db_int(res, i, 1), had);
        int64_t seconds;
        int line = line_of(&conf->retention, key, &seconds);
        duration_format(seconds, says);
        confreport_error_at(&rep, CONFREPORT_E_RETENTION, line, "retention class `%s` is registered with %s; "
                            "silt.conf declares %s", key, had, says);
        confreport_note(&rep, "classes are immutable: rows already carry the %s window", had);
        confreport_help(&rep, "declare the new duration under a new key, e.g. %.*s_%s", (int)strcspn(key, "_"), key,
                        says);
    }
    confreport_render(&rep, report);
    confreport_fini(&rep);
}

void class_registry_values(const silt_conf *conf, class_registry_params *p)
{
    const conf_retention *r = &conf->retention;
    for (int i = 0; i < CLASS_REGISTRY_ARRAYS; i++) db_array_init(&p->arrays[i]);
    add(p->arrays, CLASS_KEY_STANDARD, CLASS_KEY_STANDARD_SECONDS, "silt");
    add(p->arrays, CLASS_KEY_FOREVER, CONF_NONE, "silt");
    for (size_t i = 0; i < r->nclasses; i++) add(p->arrays, r->classes[i].key, r->classes[i].seconds, "declared");
    for (size_t i = 0; i < r->nqueues; i++)
        if (r->queues[i].class_key && r->queues[i].seconds != CONF_NONE)   /* None maps to forever, silt's own */
            add(p->arrays, r->queues[i].class_key, r->queues[i].seconds, "mapping");
    for (int i = 0; i < CLASS_REGISTRY_ARRAYS; i++) p->values[i] = db_array_literal(&p->arrays[i]);
}

void class_registry_values_fini(class_registry_params *p)
{
    for (int i = 0; i < CLASS_REGISTRY_ARRAYS; i++) db_array_fini(&p->arrays[i]);
}

int class_registry_register(PGconn *pg, const silt_conf *conf, buf *report)
{
    class_registry_params p;
    class_registry_values(conf, &p);
    PGresult *res = PQexecParams(pg, CLASS_REGISTRY_SQL, CLASS_REGISTRY_ARRAYS, NULL, p.values, NULL, NULL, 1);
    int rc = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        buf_printf(report, "cannot register the retention classes: %s", PQerrorMessage(pg));
        rc = CLASS_REGISTRY_DB_ERROR;
    } else if (PQntuples(res) > 0) {
        class_registry_report(res, conf, report);
        rc = CLASS_REGISTRY_CONFLICT;
    }
    PQclear(res);
    class_registry_values_fini(&p);
    return rc;
}

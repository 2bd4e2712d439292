/* send_settings: silt.conf's settings of sends stored at start (see send_settings.h). */
#include "tasks/send_settings.h"
#include "base/retention_class.h"
#include "db/array.h"
#include "tasks/tasks.h"

#define SEND_SETTINGS_SQL "SELECT tasks.send_settings_store($1::text[], $2::boolean[], $3::integer[]," \
                          " $4::text[], $5::boolean, $6::text[])"

enum { Q_NAMES, Q_DECLARED, Q_PRIORITIES, Q_CLASSES, Q_KEYS, Q_ARRAYS };

/* A queue and the class a send to it gets when it names none (its
 * mapping, else standard_30d: base/retention_class.h). */
static void add_queue(db_array *a, const silt_conf *conf, const char *name, const conf_queue *q)
{
    char err[8];
    db_array_text(&a[Q_NAMES], name);
    db_array_bool(&a[Q_DECLARED], q != NULL);
    db_array_int(&a[Q_PRIORITIES], q ? q->priority : TASK_PRIORITY_DEFAULT);
    db_array_text(&a[Q_CLASSES], retention_class_for(&conf->retention, name, RETENTION_ASK_NOTHING, NULL, err,
                                                     sizeof err));
}

/* Every queue the file declares, then every one it only maps. */
static void add_queues(db_array *a, const silt_conf *conf)
{
    const conf_retention *r = &conf->retention;
    for (size_t i = 0; i < conf->nqueues; i++) add_queue(a, conf, conf->queues[i].name, &conf->queues[i]);
    for (size_t i = 0; i < r->nqueues; i++)
        if (!conffile_queue(conf, r->queues[i].queue)) add_queue(a, conf, r->queues[i].queue, NULL);
}

static void add_key(void *keys, const char *key) { db_array_text(keys, key); }

int send_settings_store(PGconn *pg, const silt_conf *conf, buf *err)
{
    db_array a[Q_ARRAYS];
    for (int i = 0; i < Q_ARRAYS; i++) db_array_init(&a[i]);
    add_queues(a, conf);
    retention_class_each_key(&conf->retention, add_key, &a[Q_KEYS]);   /* in the order a refusal lists them */
    const char *values[6] = { db_array_literal(&a[Q_NAMES]), db_array_literal(&a[Q_DECLARED]),
                              db_array_literal(&a[Q_PRIORITIES]), db_array_literal(&a[Q_CLASSES]),
                              conf->nqueues > 0 ? "true" : "false", db_array_literal(&a[Q_KEYS]) };
    PGresult *res = PQexecParams(pg, SEND_SETTINGS_SQL, 6, NULL, values, NULL, NULL, 1);
    int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc < 0) buf_printf(err, "cannot store the settings of sends: %s", PQerrorMessage(pg));
    PQclear(res);
    for (int i = 0; i < Q_ARRAYS; i++) db_array_fini(&a[i]);
    return rc;
}

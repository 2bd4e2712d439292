/* conffile: silt.conf, the configuration file of the task engine (task
 * queues, schedules, recovery and retention). INI, read with
 * Debian's libinih; every problem in a file is collected with its line and
 * reported together in the seed's format (base/confreport.h), so one edit
 * fixes the file. docs/configuration.md is the user's side of this header:
 * every section, key, default, bound and error code.
 *
 * The environment variables of base/config.h stay the server's own
 * settings; the file adds to them and replaces none. */
#ifndef SILT_CONFFILE_H
#define SILT_CONFFILE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/names.h"
#include "base/conf_retention.h"
#include "base/confreport.h"
#include "base/rate.h"

#define CONFFILE_QUEUE_NAME_MAX NAMES_CONF_MAX   /* characters of a queue or schedule name */
#define CONFFILE_CATCH_UP_MAX   1000      /* missed slots a schedule may run at most */
#define CONFFILE_MAX_BYTES      (1 << 20) /* a larger file is refused unread */

/* [queue.NAME]: a task queue. */
typedef struct conf_queue {
    char *name;             /* NAME: 1..48 characters of A-Z a-z 0-9 _ - */
    int   priority;         /* 1 is most urgent, 100 least (default 100): claims take lower first */
    int   max_concurrency;  /* tasks RUNNING or CLAIMED at once across the whole cluster;
                             * 0 (default) unlimited; 0..100000 */
    rate_limit rate;        /* claims of the queue in any window, across the cluster; none by default */
    rate_limit rate_per_key;   /* claims of each rateKey of the queue in any window; none by default */
    int   line;             /* the section's line */
} conf_queue;

/* [schedule.NAME]: a task sent at every slot of a cron expression. With no
 * error in the file, cron, timezone, task, queue and args are all set (cron
 * parses and can fire, the zone exists, args is one JSON value, and queue is
 * one of the file's [queue.*] when it declares any); with errors any of them
 * may be NULL. */
typedef struct conf_schedule {
    char *name;          /* NAME: the rule of queue names */
    char *cron;          /* five fields, as written (blanks around it trimmed) */
    char *timezone;      /* an IANA zone (cron_tz_valid); default "UTC" */
    char *task;          /* the task name sent, 1..NAMES_MAX_BYTES of UTF-8 */
    char *queue;         /* the queue it is sent to: a queue name */
    char *args;          /* the task's args, a JSON text as written; default "null" */
    int   catch_up;      /* slots missed while no scheduler ran: 0 (`skip`, default)
                          * runs none; N (1..1000) runs up to the N most recent, oldest first */
    int   priority;      /* of the tasks sent, 1..100; 0 (default): the queue's */
    char *retention_class_key;   /* the tasks' retention class; NULL (default): the queue's mapping,
                                  * else standard_30d (base/retention_class.h) */
    int   retention_class_line;  /* where it was set */
    int   line;          /* the section's line */
} conf_schedule;

/* [recovery]: how stalled work is noticed. A stale threshold of at least two
 * heartbeat intervals means one late heartbeat never looks like a dead
 * worker (HRS-204 otherwise). */
typedef struct conf_recovery {
    int claimer_heartbeat_interval_ms;  /* default 30000, 1000..600000 */
    int runner_heartbeat_interval_ms;   /* default 30000, 1000..600000 */
    int claimed_stale_after_ms;         /* default 120000, 2000..86400000, >= 2 x claimer interval */
    int running_stale_after_ms;         /* default 300000, 2000..86400000, >= 2 x runner interval */
    int check_interval_ms;              /* default 30000, 1000..600000: how often recovery runs */
} conf_recovery;

typedef struct silt_conf {
    char         *path;      /* the file as given; NULL: no file, every default */
    conf_queue   *queues;    /* in file order */
    size_t        nqueues;
    conf_schedule *schedules;   /* in file order */
    size_t        nschedules;
    conf_recovery recovery;
    conf_retention retention;
} silt_conf;

/* No file: no queues or schedules declared, every recovery default. */
void conffile_defaults(silt_conf *c);
/* Reads and checks path into c (defaults first, then the file). Appends the
 * full report (every problem, in line order, then "error: aborting due to N
 * previous errors") to report, nothing when the file is good; returns the
 * number of errors: 0 and c is usable. With errors c still holds what could
 * be read; free it either way. */
int  conffile_load(const char *path, silt_conf *c, buf *report) __attribute__((warn_unused_result));
void conffile_free(silt_conf *c);
/* The queue declared as [queue.name], or NULL when the file does not declare it. */
const conf_queue *conffile_queue(const silt_conf *c, const char *name);
/* 1..48 characters of A-Z a-z 0-9 _ -: the rule of queue and schedule names. */
/* The schedule declared as [schedule.name], or NULL. */
const conf_schedule *conffile_schedule(const silt_conf *c, const char *name);
/* The file to read: given (a --config argument) when not NULL, else
 * $SILT_CONFIG when set and not empty, else NULL (run on the defaults). */
const char *conffile_locate(const char *given);

#endif

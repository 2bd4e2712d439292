/* confreport: the error report of a configuration file, in the format the
 * retention seed gives (docs/configuration.md, "Reading a report"):
 *
 *   error[HRS-204]: claimed_stale_after_ms must be at least twice ...
 *     --> silt.conf:14
 *      = note: claimed_stale_after_ms = 50000, claimer_heartbeat_interval_ms = 30000
 *      = help: set claimed_stale_after_ms to at least 60000, or lower the interval
 *   error: aborting due to 1 previous error
 *
 * A checker adds every problem it finds (it never stops at the first), then
 * renders them all at once, in line order, so one edit fixes the file. */
#ifndef SILT_CONFREPORT_H
#define SILT_CONFREPORT_H
#include <stddef.h>
#include "base/buf.h"

/* The error codes (HRS-NNN) of a report. */
enum {
    CONFREPORT_E_UNREADABLE    = 200,   /* the file cannot be read: the OS reason */
    CONFREPORT_E_SYNTAX        = 201,   /* not a section, a key = value, a comment or blank */
    CONFREPORT_E_SECTION       = 202,   /* unknown section */
    CONFREPORT_E_KEY           = 203,   /* unknown key in a known section */
    CONFREPORT_E_RECOVERY      = 204,   /* recovery thresholds inconsistent, or a [retention] key under [recovery] */
    CONFREPORT_E_VALUE         = 205,   /* not an integer, or out of bounds */
    CONFREPORT_E_QUEUE_NAME    = 206,   /* [queue.NAME] or [schedule.NAME] with an invalid NAME */
    CONFREPORT_E_DUPLICATE     = 207,   /* a section, or a key in one section, given twice */
    CONFREPORT_E_SCHEDULE      = 208,   /* [schedule.NAME]: cron invalid or never firing, unknown
                                       * timezone, task or queue missing or invalid, args not
                                       * JSON, catch_up invalid, queue not declared */
    CONFREPORT_E_RETENTION     = 216,   /* [retention]: a bound, a duration, a class key (not an
                                       * identifier, reserved, q_, over 18 characters, declared
                                       * twice), a mapped queue whose key cannot be formed or that
                                       * the file does not declare, queue_terminal_record_retention_hours */
};


typedef struct confreport_error {
    int   code;      /* the NNN of HRS-NNN */
    int   line;      /* 1-based; 0: the file as a whole (no line shown) */
    char *message;   /* lower-case, no trailing period */
    char *note;      /* NULL or a fact that explains it */
    char *help;      /* NULL or how to fix it */
} confreport_error;

typedef struct confreport {
    const char       *path;     /* the file as the user named it (not owned) */
    confreport_error *errors;   /* in the order they were found */
    size_t            n, cap;
} confreport;

void   confreport_init(confreport *r, const char *path);
void   confreport_fini(confreport *r);
/* Adds an error; the note and help calls that follow attach to it. */
void   confreport_error_at(confreport *r, int code, int line, const char *fmt, ...)
       __attribute__((format(printf, 4, 5)));
void   confreport_note(confreport *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void   confreport_help(confreport *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error every section shares for a key set twice in one section
 * (HRS-207 in silt.conf): "key `KEY` given twice in [SECTION]", the note
 * naming the first line. */
void   confreport_key_twice(confreport *r, int code, int line, const char *key, const char *section, int first_line);
size_t confreport_count(const confreport *r);
/* Appends every error, ordered by line (a file-wide error first, ties in the
 * order found), and the closing "error: aborting due to N previous errors";
 * nothing when there is no error. */
void   confreport_render(const confreport *r, buf *out);

#endif

/* schedule_input: a schedule's definition read from a request (POST
 * /api/v1/schedules whole, PATCH /api/v1/schedules/:name in part), every
 * field checked with silt.conf's rules before anything is written: a bad
 * one is a 400 naming it. */
#ifndef SILT_SCHEDULE_INPUT_H
#define SILT_SCHEDULE_INPUT_H
#include <stdbool.h>
#include "api/api.h"
#include "db/array.h"

/* The statements' values, as text; NULL where SQL takes its default. */
typedef struct schedule_input {
    char       *name, *cron, *timezone, *task, *queue, *args;
    const char *class_key;   /* owned by the server's silt.conf, or NULL: the queue's */
    char        catch_up[24], priority[24];   /* priority "": the queue's */
    bool        paused;
    db_array    set;         /* the columns a change gives */
} schedule_input;

void schedule_input_init(schedule_input *in);
void schedule_input_fini(schedule_input *in);
/* A new schedule: name, cron, task and queue required, the rest defaulted.
 * 0, or -1 after a 400. */
int  schedule_input_create(httpd_req *req, server *srv, const json_doc *d, schedule_input *in)
     __attribute__((warn_unused_result));
/* A change: at least one field but name and paused; in->set lists them.
 * 0, or -1 after a 400. */
int  schedule_input_change(httpd_req *req, server *srv, const json_doc *d, schedule_input *in)
     __attribute__((warn_unused_result));

#endif

/* held_get: GET of one record by id that ?wait=MS holds until the record
 * has ended (a task terminal, a workflow finished), woken by the end's
 * announcement (done:<id>, tasks/hub.h) through whichever server saw it. */
#ifndef SILT_HELD_GET_H
#define SILT_HELD_GET_H
#include <stdbool.h>
#include "api/api.h"

typedef struct held_get_ops {
    const char *what;                                       /* "task": 404 "no task <id>" */
    int64_t     max_wait_ms;
    void (*read)(db_job *job, const char *const *id);       /* the calls reading it ($1 the id) */
    /* Whether the reply shows the record ended; a record not there is not held. */
    bool (*ended)(const db_reply *reply);
    void (*reply)(httpd_req *req, const db_reply *reply);   /* 200 with the record */
} held_get_ops;

/* Answers GET .../:id[?wait=MS] (the id is the route's first parameter). */
void api_held_get(httpd_req *req, server *srv, const held_get_ops *ops);

#endif

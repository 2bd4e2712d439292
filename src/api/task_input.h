/* task_input: one task to send, read from a request (see task_input.c). */
#ifndef SILT_TASK_INPUT_H
#define SILT_TASK_INPUT_H
#include "api/api.h"
#include "tasks/tasks.h"

/* 0, or -1 after replying 400; where ("tasks[2]: " or "") starts every message. */
int api_task_spec(httpd_req *req, server *srv, const json_doc *d, uint32_t obj, const char *where, task_spec *t)
    __attribute__((warn_unused_result));

#endif

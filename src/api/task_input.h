/* task_input: one task to send, read from a request (see task_input.c). */
#ifndef SILT_TASK_INPUT_H
#define SILT_TASK_INPUT_H
#include "api/api.h"
#include "db/array.h"
#include "tasks/tasks.h"

/* What an object describing a task to run may hold: its name for messages
 * ("a task", "a node"), the key of the task's name, every key allowed. */
typedef struct task_form {
    const char        *what;
    const char        *name_key;
    const char *const *fields;
    /* The queue's defaults and silt.conf's checks (declared queue, known
     * class) are left to tasks.enqueue, which applies them for every send
     * (HTTP and the SQL API alike): priority stays 0 ("the queue's") unless
     * given, retention_class NULL ("the queue's") unless named. */
    bool               rules_in_sql;
} task_form;
extern const task_form TASK_FORM_SEND;   /* POST /api/v1/tasks */

/* Every member of object obj is one of known (NULL-terminated): 0, or -1
 * after a 400 naming the first that is not (what: "a task", "a workflow"). */
int api_only_known(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *what,
                   const char *const *known) __attribute__((warn_unused_result));

/* A task described by obj in the given form. 0, or -1 after replying 400;
 * where ("nodes[2]: " or "") starts every message. */
int api_task_read(httpd_req *req, server *srv, const json_doc *d, uint32_t obj, const char *where,
                  const task_form *form, task_spec *t) __attribute__((warn_unused_result));
/* The same for a send: 0, or -1 after replying 400; where ("tasks[2]: " or "") starts every message. */
int api_task_spec(httpd_req *req, server *srv, const json_doc *d, uint32_t obj, const char *where, task_spec *t)
    __attribute__((warn_unused_result));

/* The "retry" member of obj, when present and not null, read into r (its
 * retryOn codes are heap copies): 0, or -1 after a 400 naming the field. */
int api_task_retry(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, task_retry *r)
    __attribute__((warn_unused_result));

/* A worker id from the path: at most TASK_WORKER_ID_MAX characters. */
#define TASK_WORKER_ID_MAX 200
int  api_task_worker_id(httpd_req *req, const char *id) __attribute__((warn_unused_result));
/* The "queues" member: 1 to 64 queue names, each declared when the
 * configuration declares any; *list in claim order (declared priority, then
 * name), and their names and caps appended to names and caps when given.
 * Free *list with api_task_queues_free (also after an error). */
int  api_task_queues(httpd_req *req, server *srv, const json_doc *d, db_array *names, db_array *caps,
                     char ***list, size_t *n) __attribute__((warn_unused_result));
void api_task_queues_free(char **list, size_t n);
/* The rate limits of queues as tasks.claim_many and tasks.rate_reopens_at
 * take them: an int[][] literal, one row per queue in the order given, {limit,
 * period_ms, limit_per_key, key_period_ms}, 0 for none
 * ("{{0,0,0,0},{100,1000,0,0}}"); a heap copy. NULL when no queue has one,
 * unless always: a claim of queues without rate limits then sends, locks
 * and records nothing more than it ever did. */
char *api_task_rates(server *srv, const char *const *queues, size_t n, bool always);

#endif

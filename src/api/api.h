/* api: the HTTP handlers, one file per resource, and the helpers they share
 * for reading requests. Handlers translate JSON to engine calls and engine
 * results back to JSON; the rules themselves live in src/streams and sql/. */
#ifndef SILT_API_H
#define SILT_API_H
#include <stdbool.h>
#include <stdint.h>
#include "api/server.h"
#include "base/emit.h"
#include "base/ids.h"
#include "base/json.h"
#include "net/httpd.h"
#include "streams/ack.h"
#include "streams/options.h"
#include "streams/push.h"

typedef void (*api_handler)(httpd_req *req, server *srv);

void api_dispatch(httpd_req *req, void *srv);
/* The server's handler (admit.c): what every request passes before its
 * route — load shedding, name lengths in the path and query, HEAD — then
 * api_dispatch. */
void api_admit(httpd_req *req, void *srv);
/* Requests waiting on the database at or past their bound
 * (MAX_PENDING_REQUESTS, MAX_PENDING_BYTES): new ones are shed. */
bool api_overloaded(const server *srv);

/* Names (queue, partition, consumer group, namespace, task) have one
 * length limit, NAMES_MAX_BYTES (base/names.h), and one answer past it.
 * 0, or answered 400 "<where><field> is longer than 255 bytes" (req freed). */
int  api_check_name(httpd_req *req, const char *where, const char *field, const char *value);
/* That answer for a name that is not one member's string (a path segment,
 * an array's element): 400 "<where><what> is longer than 255 bytes" naming
 * field (req freed); -1. */
int  api_name_too_long(httpd_req *req, const char *field, const char *where, const char *what);

/* Submits a job whose work is for req alone: dropped unsent if req's client
 * leaves or the request times out while the job still waits for a
 * connection (abandon.c). Its done must be what answers req, so req is
 * still there when the pool looks at it. */
void api_submit(httpd_req *req, server *srv, db_job *job);
/* What a callback needs to answer a request once the engine is done with
 * its work: the request and its server (for calls that carry nothing
 * more). xcalloc'd; the callback frees it. */
typedef struct api_call {
    httpd_req *req;
    server    *srv;
} api_call;
api_call *api_call_new(httpd_req *req, server *srv);
/* A statement's callback taking its api_call apart: *req and *srv set and
 * the call freed. 0 to answer from reply; -1 when the statement failed,
 * already answered as api_db_error does. */
int  api_call_end(void *arg, const db_reply *reply, httpd_req **req, server **srv)
     __attribute__((warn_unused_result));
/* A call whose answer repeats a name the handler read or made (the queue
 * configured, the worker registered). The call owns name: *name is taken
 * and set NULL. api_named_call_free frees both. */
typedef struct api_named_call {
    httpd_req *req;
    server    *srv;
    char      *name;
} api_named_call;
api_named_call *api_named_call_new(httpd_req *req, server *srv, char **name);
void            api_named_call_free(api_named_call *c);
/* The most common job: one statement with text values, its reply to done
 * (arg passed along), submitted as api_submit does. */
void api_submit_stmt(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, db_done_fn done,
                     void *arg);
/* The server's httpd_on_leave hook: has the pool drop what such requests
 * left waiting. */
void api_client_left(httpd_req *req, void *srv);

void api_health(httpd_req *req, server *srv);
void api_whoami(httpd_req *req, server *srv);
void api_dashboard_index(httpd_req *req, server *srv);
void api_dashboard_asset(httpd_req *req, server *srv);
void api_metrics(httpd_req *req, server *srv);
void api_configure(httpd_req *req, server *srv);
void api_push(httpd_req *req, server *srv);
void api_pop(httpd_req *req, server *srv);
void api_pop_discover(httpd_req *req, server *srv);
void api_ack(httpd_req *req, server *srv);
void api_ack_batch(httpd_req *req, server *srv);
/* Acks that gave a lease back leave the rest of its span to the group's
 * other pops: those parked here and on the other servers look again (once
 * per group). */
void api_announce_released(server *srv, const ack_item *items, size_t n);
void api_lease_extend(httpd_req *req, server *srv);
void api_queue_list(httpd_req *req, server *srv);
void api_queue_detail(httpd_req *req, server *srv);
void api_queue_delete(httpd_req *req, server *srv);
void api_overview(httpd_req *req, server *srv);
/* stats_history.c */
void api_stats_history(httpd_req *req, server *srv);
void api_group_list(httpd_req *req, server *srv);
void api_group_detail(httpd_req *req, server *srv);
void api_group_delete(httpd_req *req, server *srv);
void api_group_queue_delete(httpd_req *req, server *srv);
void api_group_subscription(httpd_req *req, server *srv);
void api_seek_queue(httpd_req *req, server *srv);
void api_seek_partition(httpd_req *req, server *srv);
void api_dlq_list(httpd_req *req, server *srv);
void api_dlq_replay(httpd_req *req, server *srv);
/* dlq_bulk.c */
void api_dlq_replay_matching(httpd_req *req, server *srv);
void api_dlq_delete_matching(httpd_req *req, server *srv);
void api_message_get(httpd_req *req, server *srv);
void api_message_delete(httpd_req *req, server *srv);
void api_transaction(httpd_req *req, server *srv);
void api_retention_run(httpd_req *req, server *srv);
void api_maintenance_get(httpd_req *req, server *srv);
void api_trace_record(httpd_req *req, server *srv);
void api_traces_of_message(httpd_req *req, server *srv);
void api_traces_by_name(httpd_req *req, server *srv);
void api_trace_names(httpd_req *req, server *srv);
void api_maintenance_set(httpd_req *req, server *srv);
void api_retention_explain(httpd_req *req, server *srv);
void api_retention_analytics(httpd_req *req, server *srv);
void api_task_send(httpd_req *req, server *srv);
void api_task_get(httpd_req *req, server *srv);
void api_task_attempts(httpd_req *req, server *srv);
void api_task_list(httpd_req *req, server *srv);
void api_task_cancel(httpd_req *req, server *srv);
void api_task_start(httpd_req *req, server *srv);
void api_task_complete(httpd_req *req, server *srv);
void api_task_fail(httpd_req *req, server *srv);
void api_worker_register(httpd_req *req, server *srv);
void api_worker_claim(httpd_req *req, server *srv);
void api_worker_heartbeat(httpd_req *req, server *srv);
void api_worker_release(httpd_req *req, server *srv);
void api_worker_finish(httpd_req *req, server *srv);
void api_workflow_start(httpd_req *req, server *srv);
void api_workflow_get(httpd_req *req, server *srv);
void api_workflow_list(httpd_req *req, server *srv);
void api_workflow_pause(httpd_req *req, server *srv);
void api_workflow_resume(httpd_req *req, server *srv);
void api_workflow_cancel(httpd_req *req, server *srv);
/* schedules.c */
void api_schedule_list(httpd_req *req, server *srv);
void api_schedule_get(httpd_req *req, server *srv);
void api_schedule_create(httpd_req *req, server *srv);
void api_schedule_change(httpd_req *req, server *srv);
void api_schedule_pause(httpd_req *req, server *srv);
void api_schedule_resume(httpd_req *req, server *srv);
void api_schedule_delete(httpd_req *req, server *srv);
/* task_queues.c */
void api_task_queue_list(httpd_req *req, server *srv);
void api_task_queue_pause(httpd_req *req, server *srv);
void api_task_queue_resume(httpd_req *req, server *srv);
/* task_rerun.c */
void api_task_rerun(httpd_req *req, server *srv);
void api_task_rerun_many(httpd_req *req, server *srv);
/* task_sweep.c */
void api_task_sweep(httpd_req *req, server *srv);
/* task_retention.c */
void api_task_retention_run(httpd_req *req, server *srv);
void api_task_retention_classes(httpd_req *req, server *srv);
void api_task_retention_leaves(httpd_req *req, server *srv);
void api_task_retention_coverage(httpd_req *req, server *srv);
void api_worker_list(httpd_req *req, server *srv);

/* The implicit consumer group: "queue mode". */
#define QUEUE_MODE "__QUEUE_MODE__"

/* Item readers shared by /push, /ack and /transaction; each replies 400 and
 * returns -1 on bad input. */
int  api_push_item(httpd_req *req, server *srv, const json_doc *d, uint32_t tok, const char *where, push_item *it)
     __attribute__((warn_unused_result));
int  api_ack_item(httpd_req *req, const json_doc *d, uint32_t tok, const char *where, const char *group, ack_item *it)
     __attribute__((warn_unused_result));

/* Values of binary results written with the emitter, NULL as null
 * (columns.c). */
void api_emit_uuid_col(emit *e, const PGresult *r, int row, int col);
void api_emit_text_col(emit *e, const PGresult *r, int row, int col);
void api_emit_time_col(emit *e, const PGresult *r, int row, int col);
void api_emit_int_col(emit *e, const PGresult *r, int row, int col);
/* json a client sent (task args, results), returned byte for byte. */
void api_emit_stored_json_col(emit *e, const PGresult *r, int row, int col);
/* A page's closing members: "total" and "pagination": {"limit", "offset"}. */
void api_emit_pagination(emit *e, int64_t total, int64_t limit, int64_t offset);

/* A JSON reply being written (reply.c): its body and the emitter writing
 * it. Open it with api_reply_object (or _array, _list), write through the
 * emitter, then api_reply_send: it closes every container still open and
 * replies status with the body (the request takes its memory). */
typedef struct api_reply {
    buf  body;
    emit e;
} api_reply;
emit *api_reply_object(api_reply *r);
/* The same for a reply whose body is one array. */
emit *api_reply_array(api_reply *r);
/* A reply {"<member>": [...]} (member static): the emitter is inside the
 * array, and api_reply_send closes it and the object. */
emit *api_reply_list(api_reply *r, const char *member);
void  api_reply_send(api_reply *r, httpd_req *req, int status);

/* Request helpers (request.c). Each replies with a 4xx itself and returns -1
 * when the input is bad, so a handler just returns. */
int  api_read_object(httpd_req *req, server *srv, json_doc *doc) __attribute__((warn_unused_result));
/* The same for bodies that carry opaque values (payloads, trace data): only
 * values inside at most record_depth containers become tokens. */
int  api_read_shallow(httpd_req *req, server *srv, json_doc *doc, int record_depth)
     __attribute__((warn_unused_result));
#define API_ALL_DEPTHS    64
#define API_PUSH_DEPTH    3   /* {"items":[{"payload": here}]} */
#define API_TX_DEPTH      5   /* {"operations":[{"items":[{"payload": here}]}]} */
/* A timestamp from a client (NULL: none given): 0 when it is ISO 8601
 * (base/iso_time.h), else 400 naming the field. */
int  api_check_time(httpd_req *req, const char *field, const char *text) __attribute__((warn_unused_result));
/* A uuid in a path or field, normalised into out; 400 "<what> must be a
 * uuid" naming the field. */
int  api_read_uuid(httpd_req *req, const char *text, char out[IDS_UUID_TEXT], const char *what)
     __attribute__((warn_unused_result));
/* Optional string member: *out NULL when absent or null; 400 naming the field
 * when present with another type or empty. */
/* The same inside an array: where ("items[3]: ") starts every message, so an
 * error names the element it is about. One scheme for every array. */
int  api_member_string(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key,
                       char **out) __attribute__((warn_unused_result));
int  api_opt_string(httpd_req *req, const json_doc *d, uint32_t obj, const char *key, char **out)
     __attribute__((warn_unused_result));
/* Member key of obj as its JSON text, verbatim (absent: "null"); a heap copy. */
char *api_member_json(const json_doc *d, uint32_t obj, const char *key);
/* Optional integer member from min to max: *out untouched when absent or
 * null; 400 naming the field (after where) otherwise. */
int  api_member_int(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key,
                    int64_t min, int64_t max, int64_t *out) __attribute__((warn_unused_result));
/* Optional boolean member: *out untouched when absent or null; 400 naming
 * the field (after where) otherwise. */
int  api_member_bool(httpd_req *req, const json_doc *d, uint32_t obj, const char *where, const char *key, bool *out)
     __attribute__((warn_unused_result));
/* Query parameters. */
int  api_query_int(httpd_req *req, const char *key, int64_t fallback, int64_t min, int64_t max, int64_t *out)
     __attribute__((warn_unused_result));
int  api_query_bool(httpd_req *req, const char *key, bool fallback, bool *out) __attribute__((warn_unused_result));
/* Reply for a failed engine call: 503 when PostgreSQL is unreachable, 400
 * when PostgreSQL rejected the client's data (SQLSTATE class 22, such as a
 * malformed timestamp or a name that is not UTF-8), 500 otherwise. sqlstate
 * may be NULL. */
void api_engine_error(httpd_req *req, const char *error, const char *sqlstate, bool unavailable);
void api_db_error(httpd_req *req, const db_reply *reply);
/* Runs a statement whose one value is a JSON document and replies with it:
 * 200, or 404 with not_found when the value is NULL. A second column, when
 * the statement has one, is the size of the whole list the document is a
 * page of: the reply's X-Total-Count header. */
void api_json_call(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, const char *not_found);
/* The same for a statement that may leave group more to take (a seek):
 * once it answered, the group's parked pops are told (server_group_released). */
void api_json_call_waking(httpd_req *req, server *srv, db_stmt stmt, const char *const *values,
                          const char *not_found, const char *group);

/* A list read a page at a time in id order (GET /api/v1/tasks,
 * /api/v1/workflows): ?limit= rows (1 to API_PAGE_MAX, default
 * API_PAGE_DEFAULT) after ?cursor=, the last id of the page before. */
#define API_PAGE_DEFAULT 100
#define API_PAGE_MAX     1000
#define API_PAGE_FILTERS 4      /* filters a list may have */
typedef struct api_page {
    const char *member;     /* the reply's array of rows: "tasks" */
    db_stmt     stmt;       /* $1..$n the filters, then the cursor, then the limit */
    int         id_col;     /* a row's id: the next page's cursor */
    void      (*emit_row)(emit *e, const PGresult *r, int row);   /* one row, one JSON value */
    /* Checks the filters (a 400 and -1 for a bad one) once the limit is
     * read, before the cursor is; NULL: any value goes. */
    int       (*check)(httpd_req *req, const char *const *filters);
    /* counted: count_stmt, with the filters alone, answers "total": how
     * many rows they match, up to API_PAGE_COUNT_CAP, and "totalCapped":
     * true past it (a count that reads no further than that). */
    bool        counted;
    db_stmt     count_stmt;
} api_page;
#define API_PAGE_COUNT_CAP 10000
/* Reads the limit and the cursor (a 400 for a bad one), runs page->stmt
 * with the nfilters filters (NULL: not given; at most API_PAGE_FILTERS)
 * and replies {"<member>": [rows], "nextCursor": the last row's id when
 * the page is full (more may follow), else null}. page is static: it
 * outlives the call. */
void api_list_page(httpd_req *req, server *srv, const api_page *page, const char *const *filters, size_t nfilters);
/* A page by position: ?limit= (1 to API_PAGE_MAX, default_limit when not
 * given) and ?offset= (0 on, default 0), as numbers (for
 * api_emit_pagination) and as the text a statement takes. -1 after a 400
 * naming the field. */
typedef struct api_position {
    int64_t limit, offset;
    char    limit_text[24], offset_text[24];
} api_position;
int  api_query_position(httpd_req *req, int64_t default_limit, api_position *pos)
     __attribute__((warn_unused_result));
/* A list by position with its total (GET /api/v1/dlq,
 * /api/v1/traces/names): count_stmt with the filters alone counts what they
 * match, page_stmt with the filters, then the limit and the offset, reads
 * the page. page is static: it outlives the call. */
typedef struct api_position_list {
    const char *member;          /* the reply's array of rows: "messages" */
    int64_t     default_limit;   /* ?limit= when not given */
    db_stmt     count_stmt, page_stmt;
    void      (*emit_row)(emit *e, const PGresult *r, int row);   /* one row, one JSON value */
} api_position_list;
/* Reads ?limit= and ?offset= (a 400 for a bad one), runs both statements
 * with the nfilters filters (NULL: not given; at most API_PAGE_FILTERS)
 * and replies {"<member>": [rows], "total", "pagination": {"limit",
 * "offset"}}. */
void api_list_by_position(httpd_req *req, server *srv, const api_position_list *list, const char *const *filters,
                          size_t nfilters);
/* A whole list a client may ask for a page of, by position, as the queues
 * and groups lists. Neither given: both NULL, the whole list (what Queen's
 * clients read). -1 after a 400 naming the field. limit and offset point
 * into the struct's own text. */
typedef struct api_offset_page {
    const char  *limit, *offset;
    api_position pos;
} api_offset_page;
int  api_query_offset_page(httpd_req *req, api_offset_page *page) __attribute__((warn_unused_result));
/* ?search=, ?sort= and ?order= of a list the server sorts (queues,
 * groups). search: absent or empty for every name, else a substring of
 * the names listed (case aside; at most 255 bytes). sort: one of sorts
 * (NULL-terminated; absent: the first, the name). order: asc or desc;
 * absent, a to z by name and largest first by any other key. desc is "t"
 * or "f", a statement's value. -1 after a 400 naming the parameter. */
typedef struct api_find {
    const char *search, *sort, *desc;
} api_find;
int  api_query_find(httpd_req *req, const char *const *sorts, api_find *out) __attribute__((warn_unused_result));
/* Runs stmt with values and replies {"<member>": [every row, by emit_row]}:
 * a whole list, for lists a server keeps short (workers, retention
 * classes and leaves). member is static. */
void api_rows_call(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, const char *member,
                   void (*emit_row)(emit *e, const PGresult *r, int row));
/* Writes a reply object's members from a statement's result r: srv for
 * what the answer also announces, flag the handler's choice (pause or
 * resume, release or heartbeat) given to api_object_call. */
typedef void (*api_members_fn)(emit *e, server *srv, const PGresult *r, bool flag);
/* Runs stmt with values and replies 200 with one object, its members
 * written by members: the answer of a handler with one statement. */
void api_object_call(httpd_req *req, server *srv, db_stmt stmt, const char *const *values, api_members_fn members,
                     bool flag);

#endif

/* chaos: what the parts of `silt chaos` share. chaos.c: the message log's
 * producers, first consumer group and read-back; chaos_mover.c: a second
 * consumer group that moves the messages to another queue in transactions
 * and acks a share with retry and dlq; chaos_tasks.c: tasks sent, run by
 * `silt worker` processes that scripts/chaos.sh starts and by
 * chaos_http_worker.c, and checked; chaos_workflows.c and
 * chaos_schedules.c: workflows run by the same workers, and the slots of a
 * schedule of silt.conf; chaos_runs.c: the file every run of a task leaves
 * a line in. */
#ifndef SILT_CLI_CHAOS_H
#define SILT_CLI_CHAOS_H
#include <stdatomic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/ids.h"
#include "base/json.h"
#include "net/http_client.h"

#define CHAOS_TIMEOUT_MS   10000   /* one request; the server may be down */
#define CHAOS_BACKOFF_MS   100     /* after a failed request */
#define CHAOS_LEASE_S      3       /* the queues' leaseTime: expired leases redeliver soon */
#define CHAOS_POP_BATCH    100
#define CHAOS_GRACE_MS     60000   /* past the drain deadline, for the checks' last waits */

/* 0 with a parsed reply for a 2xx; -1 otherwise (r and d are then empty). */
int  chaos_call(http_client *h, const char *method, const char *path, const buf *body, http_response *r,
                json_doc *d);
/* chaos_call until it answers 2xx or deadline passes; -1 then. */
int  chaos_call_until(http_client *h, const char *method, const char *path, const buf *body, int64_t deadline,
                      http_response *r, json_doc *d);
void chaos_sleep_ms(int ms);
bool chaos_past(int64_t deadline_ms);

/* b := {"<key>":[item first, ..., item first+n-1]}, each written by put. */
void chaos_batch_body(buf *b, const char *key, long first, long n, void (*put)(buf *, const void *, long),
                      const void *ctx);

/* A thread that spreads a workload's items evenly from its start to
 * t_end_ms (tasks sent, workflows started), so that they go on through
 * every kill; t_drain_ms bounds the resends after it. */
typedef struct chaos_spread {
    pthread_t thread;
    bool      started;
    int64_t   t_begin_ms, t_end_ms, t_drain_ms;
} chaos_spread;
void chaos_spread_start(chaos_spread *s, void *(*fn)(void *), void *arg, int64_t t_end_ms, int64_t t_drain_ms);
void chaos_spread_join(chaos_spread *s);
/* Waits until item i of n is due: false once t_end_ms has passed. */
bool chaos_spread_wait(const chaos_spread *s, long i, long n);
http_client *chaos_client(const char *url);
/* The string value of key in object obj copied into out ("" when absent). */
void chaos_str(const json_doc *d, int obj, const char *key, char *out, size_t cap);

/* ---- the message log ---- */

/* What happened to message i. Each byte has one writer: push the producer
 * that owns i, deliveries and ack_ok the consumer of i's partition, stored
 * the read-back (after every thread has been joined). */
typedef struct chaos_msg {
    uint8_t push;         /* CHAOS_UNSENT, CHAOS_UNKNOWN or CHAOS_ACKED */
    uint8_t deliveries;   /* to the consumer group, saturating at 255 */
    uint8_t ack_ok;       /* the latest delivery's ack was answered 2xx, success */
    uint8_t stored;       /* times the read-back saw it, saturating */
} chaos_msg;

enum { CHAOS_UNSENT, CHAOS_UNKNOWN, CHAOS_ACKED };

typedef struct chaos_counts {
    _Atomic uint64_t push_requests, push_failed, push_resent, push_dup_items;
    _Atomic uint64_t pops, pops_failed, acks, acks_failed, acks_refused;
    _Atomic uint64_t redelivered_excused, redelivered_after_ack, foreign;
    uint64_t out_of_order;   /* the read-back's: a producer's message stored before one it pushed earlier */
} chaos_counts;

typedef struct chaos_run {
    const char   *url, *consumer_url;
    long          seconds, messages, producers, partitions, batch, drain;
    char          queue[48];
    chaos_msg    *msgs;          /* [messages] */
    long         *last_read;     /* [partitions * producers]: the read-back's last index of each producer */
    chaos_counts  n;
    int64_t       t_end_ms;      /* monotonic: the workload stops */
    int64_t       t_drain_ms;    /* monotonic: everything gives up */
    atomic_int    producers_left;
} chaos_run;

/* Message number of a transactionId "m<i>" (token tok), or -1. */
long chaos_msg_index(const json_doc *d, int tok, long messages);
/* A consumer: pops partition p of the run's queue with group, giving each
 * answered pop to batch (1 when it held messages, 0 when empty), until
 * the producers are done and two pops that started more than a lease after
 * its last delivery or failure found nothing (or the drain deadline).
 * pops and pops_failed count its requests. */
typedef int (*chaos_batch_fn)(void *ctx, const json_doc *d);
void chaos_consume(http_client *h, const chaos_run *run, const char *group, long p, _Atomic uint64_t *pops,
                   _Atomic uint64_t *pops_failed, chaos_batch_fn batch, void *ctx);
/* Reads partition p of queue whole with a fresh group (autoAck), calling
 * seen for each message (i -1: not of this run); -1 on any failure. */
typedef void (*chaos_seen_fn)(void *ctx, long p, long i);
int  chaos_read_partition(http_client *h, const char *queue, const char *group, long p, long messages,
                          chaos_seen_fn seen, void *ctx);
int  chaos_configure(http_client *h, const char *queue, int64_t deadline);
/* Message i was pushed by producer chaos_producer_of(run, i). */
long chaos_producer_of(const chaos_run *run, long i);

/* The second consumer group (chaos_mover.c): one thread per partition. */
typedef struct chaos_mover chaos_mover;
chaos_mover *chaos_mover_new(chaos_run *run);
void         chaos_mover_start(chaos_mover *m);
void         chaos_mover_join(chaos_mover *m);
/* After the read-back (run->msgs[].stored): reads the downstream queue and
 * the dead letters, prints the figures, true when every check held. */
bool         chaos_mover_check(chaos_mover *m, http_client *h);
void         chaos_mover_free(chaos_mover *m);

/* ---- tasks ---- */

/* The runs file: one line "<id> <attempt>" per run of a task, appended by
 * the `silt worker` processes' command and by the HTTP worker. */
typedef struct chaos_runs chaos_runs;
chaos_runs *chaos_runs_load(const char *path);
int         chaos_runs_of(const chaos_runs *r, const char *id);
long        chaos_runs_total(const chaos_runs *r);
void        chaos_runs_free(chaos_runs *r);
/* Appends one line, in one write (O_APPEND): lines of processes never mix. */
int         chaos_runs_append(const char *path, const char *id, long attempt);

/* How tasks ended, for every kind of task the run checks. */
typedef struct chaos_task_figures {
    uint64_t checked, completed, lost, unfinished, failed, completed_twice, ran_twice, retried;
} chaos_task_figures;
/* A task's end, as the server tells it once the task has ended. */
typedef struct chaos_task_end {
    char id[IDS_UUID_TEXT];
    char status[16];    /* "" unknown to the server; a live status when the deadline came first */
    int  attempts, completed;   /* attempt rows; those COMPLETED */
} chaos_task_end;
/* Waits (until deadline) for task e->id to end and reads its attempts. */
void chaos_task_await(http_client *h, chaos_task_end *e, int64_t deadline);
void chaos_task_tally(const chaos_task_end *e, int runs, chaos_task_figures *f);
bool chaos_task_figures_ok(const chaos_task_figures *f);
void chaos_task_figures_print(const char *what, const chaos_task_figures *f);
/* Ids of every task of queue, live or finished (paged); -1 when unreadable. */
int  chaos_task_ids(http_client *h, const char *queue, int64_t deadline, char (**ids)[IDS_UUID_TEXT], long *n);

typedef struct chaos_tasks chaos_tasks;

/* n tasks to queue, sent from chaos_tasks_start until t_end_ms, each with
 * an idempotency key and resent until acknowledged. */
chaos_tasks *chaos_tasks_new(const char *url, const char *queue, long n);
void         chaos_tasks_start(chaos_tasks *t, int64_t t_end_ms, int64_t t_drain_ms);
void         chaos_tasks_join(chaos_tasks *t);
/* Waits (until the drain deadline and the grace) for every acknowledged
 * task to end; then, with the runs file read after every wait, prints the
 * figures: true when none was lost, left unfinished, failed, completed
 * twice or run twice. */
void         chaos_tasks_await(chaos_tasks *t);
bool         chaos_tasks_report(const chaos_tasks *t, const chaos_runs *runs);
void         chaos_tasks_free(chaos_tasks *t);

/* An HTTP worker (chaos_http_worker.c): registers, claims without
 * starting, starts, heartbeats and finishes with the claimId, as
 * docs/tasks.md's protocol says, until stopped. */
typedef struct chaos_http_worker chaos_http_worker;
chaos_http_worker *chaos_http_worker_start(const char *url, const char *const *queues, int nqueues,
                                           const char *runs, int64_t t_give_up_ms);
/* Stops it (its held ends delivered first, bounded) and prints its counts. */
void               chaos_http_worker_stop(chaos_http_worker *w);

/* Workflows (chaos_workflows.c), started over the workload. */
typedef struct chaos_workflows chaos_workflows;
chaos_workflows *chaos_workflows_new(const char *url, const char *queue, long n);
void             chaos_workflows_start(chaos_workflows *w, int64_t t_end_ms, int64_t t_drain_ms);
void             chaos_workflows_join(chaos_workflows *w);
void             chaos_workflows_await(chaos_workflows *w);
bool             chaos_workflows_report(const chaos_workflows *w, const chaos_runs *runs);
void             chaos_workflows_free(chaos_workflows *w);

/* A schedule of silt.conf firing every minute (chaos_schedules.c): watched
 * from start until check. */
typedef struct chaos_schedule chaos_schedule;
chaos_schedule *chaos_schedule_watch(const char *url, const char *name, const char *queue, int64_t t_give_up_ms);
/* Stops watching, reads the schedule's tasks and waits for them to end. */
void            chaos_schedule_await(chaos_schedule *s);
bool            chaos_schedule_report(const chaos_schedule *s, const chaos_runs *runs);
void            chaos_schedule_free(chaos_schedule *s);

#endif

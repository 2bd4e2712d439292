/* chaos: what the halves of `silt chaos` share (chaos.c: the message log's
 * producers and consumers; chaos_tasks.c: tasks sent, run by `silt worker`
 * processes that scripts/chaos.sh starts, and checked). */
#ifndef SILT_CLI_CHAOS_H
#define SILT_CLI_CHAOS_H
#include <stdbool.h>
#include <stdint.h>
#include "base/buf.h"
#include "base/json.h"
#include "net/http_client.h"

#define CHAOS_TIMEOUT_MS   10000   /* one request; the server may be down */
#define CHAOS_BACKOFF_MS   100     /* after a failed request */

/* 0 with a parsed reply for a 2xx; -1 otherwise (r and d are then empty). */
int  chaos_call(http_client *h, const char *method, const char *path, const buf *body, http_response *r,
                json_doc *d);
void chaos_sleep_ms(int ms);
bool chaos_past(int64_t deadline_ms);

typedef struct chaos_tasks chaos_tasks;

/* n tasks to queue, sent from chaos_tasks_start until t_end_ms, each with
 * an idempotency key and resent until acknowledged; runs is the file the
 * workers' command appends "<id> <attempt>" to, one line per run. */
chaos_tasks *chaos_tasks_new(const char *url, const char *queue, long n, const char *runs);
void         chaos_tasks_start(chaos_tasks *t, int64_t t_end_ms, int64_t t_drain_ms);
void         chaos_tasks_join(chaos_tasks *t);
/* Waits (until the drain deadline) for every acknowledged task to end,
 * reads its attempts and the runs file, prints the figures: true when none
 * was lost, left unfinished, failed, completed twice or run twice. */
bool         chaos_tasks_check(chaos_tasks *t);
void         chaos_tasks_free(chaos_tasks *t);

#endif

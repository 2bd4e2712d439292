/* narrow_queues: the queues whose last reconcile through this server found
 * 256 partitions or fewer, so that their queue-wide pops are sent without
 * the ready set's reconcile (sql/035). A direct-mapped table of 64-bit name
 * hashes: a queue that loses its slot to another costs one reconcile too
 * many, and one that shares another's hash, or has grown wide since, has
 * its pop refused (SQLSTATE SLW01) and sent again behind a reconcile. What
 * a pop claims never rests on this table. Single-threaded, like the loop
 * that owns it. */
#ifndef SILT_NARROW_QUEUES_H
#define SILT_NARROW_QUEUES_H
#include <stdbool.h>

#define NARROW_QUEUES_SLOTS 4096   /* 32 KiB */

/* The SQLSTATE of a pop sent without a reconcile to a queue now wide. */
#define NARROW_QUEUES_REFUSED_SQLSTATE "SLW01"

typedef struct narrow_queues narrow_queues;

narrow_queues *narrow_queues_new(void);
void           narrow_queues_free(narrow_queues *n);
bool           narrow_queues_has(const narrow_queues *n, const char *queue);
/* What a reconcile found (or a refusal showed) about the queue's width. */
void           narrow_queues_note(narrow_queues *n, const char *queue, bool narrow);

#endif

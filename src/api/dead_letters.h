/* dead_letters: what the single and the bulk dead-letter routes share
 * (dead_letters.c, dlq_bulk.c). Rows are in DLQ_COLUMNS order
 * (db/statements.h). */
#ifndef SILT_API_DEAD_LETTERS_H
#define SILT_API_DEAD_LETTERS_H
#include <libpq-fe.h>
#include "base/emit.h"
#include "streams/push.h"

/* One dead letter as GET /api/v1/dlq lists it. */
void api_dlq_row_json(emit *e, const PGresult *r, int row);
/* Fills *it (zeroed) with row's dead letter as the message its replay
 * pushes: its partition, payload (opened when sealed), trace and
 * producerSub, transactionId "dlq:<id>". -1: the payload cannot be opened
 * (it is then left half-filled: free it all the same). */
int  api_dlq_replay_item(const PGresult *r, int row, push_item *it) __attribute__((warn_unused_result));
/* Frees what api_dlq_replay_item allocated, the payload included. */
void api_dlq_item_free(push_item *it);

#endif

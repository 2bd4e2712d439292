/* last_pop: what the most recent `silt pop` leased, remembered so that
 * `silt ack --last` can acknowledge it without anyone copying ids out of a
 * table.
 *
 * The record is one file per user, $XDG_STATE_HOME/silt/last-pop (or
 * ~/.local/state/silt/last-pop when XDG_STATE_HOME is unset or not an
 * absolute path: the XDG base directory rule for state that outlives a
 * process but is not worth backing up). It is a JSON object naming the
 * server, the consumer group given to pop, and the batch's last message:
 * its partitionId, transactionId and leaseId. Acking that message completed
 * commits the whole batch up to it.
 *
 * Every successful pop replaces the record; one that leases nothing (204,
 * or --auto-ack) removes it, so --last never reaches back past a pop that
 * found nothing; a pop the server refused leaves it alone. The file is
 * written whole and renamed into place, so a reader never sees half of one. */
#ifndef SILT_CLI_LAST_POP_H
#define SILT_CLI_LAST_POP_H
#include <stdbool.h>
#include "base/buf.h"
#include "base/json.h"

typedef struct cli_last_pop {
    char *url;              /* the server the pop went to (SILT_URL) */
    char *group;            /* --group given to pop; NULL in queue mode */
    char *partition_id;
    char *transaction_id;
    char *lease_id;
} cli_last_pop;

/* Appends the record's path; -1 when neither XDG_STATE_HOME nor HOME gives
 * an absolute directory. */
int  cli_last_pop_path(buf *out);

/* Records the last message of the pop reply d, popped as group (NULL: queue
 * mode), or removes the record when d leased nothing (d NULL, or leased
 * false). A failure is reported on stderr as a warning and otherwise
 * ignored: the pop itself succeeded and its output stands. */
void cli_last_pop_save(const json_doc *d, const char *group, bool leased);

/* Reads the record into lp (free with cli_last_pop_fini). -1 when there is
 * none or it cannot be read, the reason printed as "silt: ...". */
int  cli_last_pop_load(cli_last_pop *lp) __attribute__((warn_unused_result));
void cli_last_pop_fini(cli_last_pop *lp);

#endif

/* migrate: applies the embedded sql/ migrations in order, each once, recorded
 * in queen.schema_migrations. A session advisory lock serialises servers that
 * start together, so the second finds the work done.
 *
 * The first file is the baseline (sql/018_schema.sql): the whole schema,
 * numbered as the last of the migrations it replaced, so a database that ran
 * those has its version recorded and skips it, and a fresh one runs it.
 * A database that ran only some of them is refused: the baseline cannot be
 * laid over it. Numbered migrations follow the baseline; a file once applied
 * is never edited (docs/development.md). */
#ifndef SILT_MIGRATE_H
#define SILT_MIGRATE_H
#include <stddef.h>
#include <stdint.h>

/* Connects (waiting up to wait_ms for PostgreSQL to accept connections),
 * applies the migrations up to and including version upto (migrate_latest()
 * for all of them; upgrade tests stop earlier to build the database an older
 * silt left) and disconnects. 0 ok; on failure writes the reason to err. */
int migrate_run(const char *conninfo, int64_t wait_ms, int upto, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Highest migration version embedded in this binary. */
int migrate_latest(void);
/* `silt migrate`: the schema tool. */
int migrate_main(int argc, char **argv);

#endif

/* migrate: brings a database to the schema this binary embeds.
 *
 * The schema is two kinds of file. sql/migrations/NNN_name.sql hold tables,
 * columns, indexes, types and data changes: each runs once, recorded in
 * queen.schema_migrations, and a released one is never edited. The first is
 * the baseline (018_schema.sql), numbered as the last of the migrations it
 * replaced, so a database that ran those skips it; one that ran only some of
 * them is refused. The files of sql/functions hold every function, trigger and view
 * as it is now, each in one file: applied whole (CREATE OR REPLACE) after
 * the migrations, in sql/functions/ORDER's order, whenever the bundle differs
 * from the one the database last got (its hash is kept in
 * queen.schema_functions). Retiring a function, or changing its result type,
 * is a DROP in a migration.
 *
 * Everything one run does is one transaction, under a session advisory lock
 * that serialises servers starting together: the second finds nothing to
 * do. docs/development.md, "Changing the schema". */
#ifndef SILT_MIGRATE_H
#define SILT_MIGRATE_H
#include <stddef.h>
#include <stdint.h>

/* Connects (waiting up to wait_ms for PostgreSQL to accept connections),
 * applies the pending migrations and the function bundle, and disconnects.
 * 0 ok; on failure writes the reason to err and nothing is changed. */
int migrate_run(const char *conninfo, int64_t wait_ms, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Highest migration version embedded in this binary. */
int migrate_latest(void);
/* The function bundle's hash, as queen.schema_functions records it. */
const char *migrate_bundle_hash(void);
/* `silt migrate`: the schema tool. */
int migrate_main(int argc, char **argv);

#endif

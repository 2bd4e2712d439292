/* migrate: applies the embedded sql/ migrations in order, each once, recorded
 * in queen.schema_migrations. A session advisory lock serialises servers that
 * start together, so the second finds the work done. */
#ifndef SILT_MIGRATE_H
#define SILT_MIGRATE_H
#include <stddef.h>
#include <stdint.h>

/* Connects (waiting up to wait_ms for PostgreSQL to accept connections),
 * migrates and disconnects. 0 ok; on failure writes the reason to err. */
int migrate_run(const char *conninfo, int64_t wait_ms, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Highest migration version embedded in this binary. */
int migrate_latest(void);
/* `silt migrate`: the schema tool. */
int migrate_main(int argc, char **argv);

#endif

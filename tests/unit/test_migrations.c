/* test_migrations: the embedded schema files are what the migration runner
 * assumes: the baseline first, then files whose three-digit numbers rise
 * one by one. Two files with one number (two branches that each added a
 * 019) would pass unnoticed at run time: the runner records versions, so
 * the second would be taken as applied and never run. */
#include "harness.h"
#include "base/embed.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int well_named(const char *name)
{
    size_t n = strlen(name);
    if (n < 9 || strcmp(name + n - 4, ".sql") != 0 || name[3] != '_') return 0;
    for (size_t i = 0; i < 3; i++)
        if (!isdigit((unsigned char)name[i])) return 0;
    for (size_t i = 4; i < n - 4; i++)
        if (!islower((unsigned char)name[i]) && !isdigit((unsigned char)name[i]) && name[i] != '_') return 0;
    return 1;
}

TEST(schema_files_are_the_baseline_then_one_number_after_another)
{
    CHECK_STR(embed_sql[0].name, "018_schema.sql");
    int expect = 18;
    for (const embed_file *f = embed_sql; f->name; f++, expect++) {
        if (!well_named(f->name)) harness_failf(__FILE__, __LINE__, "%s is not NNN_name.sql", f->name);
        CHECK_INT(atoi(f->name), expect);
        CHECK(strlen(f->text) > 0);
    }
}

/* test_migrations: the embedded schema files are what the migration runner
 * assumes. Migrations: the baseline first, then files whose three-digit
 * numbers rise one by one (two branches that each added a 019 would pass
 * unnoticed at run time: the runner records versions, so the second would
 * be taken as applied and never run). Functions: each defined in one file
 * of sql/functions, none in a migration but the pg_temp helpers a
 * migration keeps for itself. */
#include "harness.h"
#include "base/embed.h"
#include <ctype.h>
#include <stdio.h>
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
    CHECK_STR(embed_migrations[0].name, "018_schema.sql");
    int expect = 18;
    for (const embed_file *f = embed_migrations; f->name; f++, expect++) {
        if (!well_named(f->name)) harness_failf(__FILE__, __LINE__, "%s is not NNN_name.sql", f->name);
        CHECK_INT(atoi(f->name), expect);
        CHECK(strlen(f->text) > 0);
    }
}

/* The name after each "CREATE OR REPLACE <kind> " of text, one per line of
 * out ("name\n"), the kinds being FUNCTION, VIEW and TRIGGER. */
static void defined_names(const char *text, const char *create, char *out, size_t cap)
{
    size_t len = strlen(out);
    for (const char *p = strstr(text, create); p; p = strstr(p + 1, create)) {
        const char *name = p + strlen(create);
        name += strcspn(name, " ") + 1;   /* past the kind */
        size_t n = strcspn(name, "( \n");
        len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%.*s\n", (int)n, name);
    }
}

TEST(every_function_trigger_and_view_is_defined_in_one_function_file)
{
    static char seen[64 * 1024];
    seen[0] = '\0';
    for (const embed_file *const *list = (const embed_file *const[]){ embed_functions_before, embed_functions, NULL };
         *list; list++)
        for (const embed_file *f = *list; f->name; f++) {
            char mine[16 * 1024] = "";
            defined_names(f->text, "CREATE OR REPLACE ", mine, sizeof mine);
            CHECK(mine[0] != '\0');
            for (char *line = mine, *end; *line; line = end + 1) {
                end = strchr(line, '\n');
                *end = '\0';
                char key[sizeof mine + 2];   /* "\n", a line of mine, " " */
                snprintf(key, sizeof key, "\n%s ", line);
                const char *other = strstr(seen, key);
                if (other && strncmp(other + strlen(key), f->name, strlen(f->name)) != 0)
                    harness_failf(__FILE__, __LINE__, "%s is defined in %s and in another file", line, f->name);
                snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "\n%s %s", line, f->name);
            }
        }
    for (const embed_file *f = embed_migrations; f->name; f++)
        for (const char *const *kind = (const char *const[]){ "CREATE FUNCTION ", "CREATE OR REPLACE FUNCTION ",
                                                              "CREATE VIEW ", "CREATE TRIGGER ", NULL }; *kind; kind++)
            for (const char *p = strstr(f->text, *kind); p; p = strstr(p + 1, *kind))
                if (strncmp(p + strlen(*kind), "pg_temp.", 8) != 0)
                    harness_failf(__FILE__, __LINE__, "migration %s defines %.40s: it belongs in sql/functions",
                                  f->name, p);
}

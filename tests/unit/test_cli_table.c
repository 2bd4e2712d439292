/* test_cli_table: the client's text tables, above all the fitted last
 * column that keeps a long value (a payload) from wrapping every row. */
#include "harness.h"
#include "cli/cli_common.h"
#include <stdio.h>
#include <stdlib.h>

/* The table printed, in a static buffer. */
static const char *printed(const cli_table *t)
{
    static char out[4096];
    FILE *f = fmemopen(out, sizeof out, "w");
    CHECK(f != NULL);
    cli_table_print(t, f);
    fclose(f);
    return out;
}

static void two_column_table(cli_table *t, const char *value)
{
    static const char *const headers[] = { "KEY", "DATA" };
    cli_table_init(t, 2, headers);
    cli_table_add(t, "k");
    cli_table_add(t, value);
}

TEST(cli_table_fit_cuts_the_last_column_with_an_ellipsis)
{
    cli_table t;
    two_column_table(&t, "abcdefghijklmnopqrstuvwxyz0123456789");
    t.fit = 30;   /* KEY and its two spaces take 5: 25 characters are left */
    CHECK_STR(printed(&t), "KEY  DATA\nk    abcdefghijklmnopqrstuvwx\xe2\x80\xa6\n");
    cli_table_fini(&t);
}

TEST(cli_table_fit_leaves_short_cells_and_unfitted_tables_whole)
{
    cli_table t;
    two_column_table(&t, "short");
    t.fit = 30;
    CHECK_STR(printed(&t), "KEY  DATA\nk    short\n");
    cli_table_fini(&t);
    two_column_table(&t, "abcdefghijklmnopqrstuvwxyz0123456789");
    CHECK_STR(printed(&t), "KEY  DATA\nk    abcdefghijklmnopqrstuvwxyz0123456789\n");
    cli_table_fini(&t);
}

TEST(cli_table_fit_counts_characters_and_never_splits_one)
{
    cli_table t;
    /* 30 two-byte characters: 24 of them, then the ellipsis */
    two_column_table(&t, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    t.fit = 30;
    const char *out = printed(&t), *row = strchr(out, '\n') + 1;
    CHECK_INT(strlen(row), 5 + 24 * 2 + 3 + 1);
    CHECK(strcmp(row + 5 + 48, "\xe2\x80\xa6\n") == 0);
    cli_table_fini(&t);
}

TEST(cli_table_fit_keeps_a_minimum_when_the_other_columns_are_wide)
{
    static const char *const headers[] = { "A", "DATA" };
    cli_table t;
    cli_table_init(&t, 2, headers);
    cli_table_add(&t, "a-very-long-first-column-value");
    cli_table_add(&t, "abcdefghijklmnopqrstuvwxyz");
    t.fit = 30;   /* the first column alone takes 32: the last keeps 20 */
    const char *row = strchr(printed(&t), '\n') + 1;
    CHECK_STR(row, "a-very-long-first-column-value  abcdefghijklmnopqrs\xe2\x80\xa6\n");
    cli_table_fini(&t);
}

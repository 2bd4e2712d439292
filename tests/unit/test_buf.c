/* test_buf: the growable buffer every module builds strings with; the
 * terminator and growth contracts are what callers silently rely on. */
#include "harness.h"
#include "base/buf.h"
#include <stdlib.h>

TEST(buf_init_is_empty)
{
    buf b;
    buf_init(&b);
    CHECK(b.data == NULL);
    CHECK_INT(b.len, 0);
    CHECK_INT(b.cap, 0);
    buf_reset(&b);   /* safe before any allocation */
    buf_fini(&b);
    buf_fini(&b);    /* fini leaves an empty buf behind */
    CHECK(b.data == NULL);
}

TEST(buf_append_terminates_and_grows)
{
    buf b;
    buf_init(&b);
    buf_append(&b, "abc", 3);
    CHECK_INT(b.len, 3);
    CHECK_STR(b.data, "abc");
    buf_puts(&b, "def");
    buf_putc(&b, 'g');
    CHECK_STR(b.data, "abcdefg");
    buf_append(&b, "xyz", 0);
    CHECK_INT(b.len, 7);
    for (int i = 0; i < 1000; i++) buf_putc(&b, (char)('0' + i % 10));
    CHECK_INT(b.len, 1007);
    CHECK(b.cap > b.len);
    CHECK_INT(b.data[1007], '\0');
    CHECK_INT(b.data[1006], '9');
    buf_append(&b, "a\0b", 3);   /* binary-safe */
    CHECK_INT(b.len, 1010);
    CHECK(memcmp(b.data + 1007, "a\0b", 3) == 0);
    buf_fini(&b);
}

TEST(buf_empty_append_terminates)
{
    buf b;
    buf_init(&b);
    buf_append(&b, "", 0);
    CHECK(b.data != NULL);
    CHECK_STR(b.data, "");
    buf_fini(&b);
}

TEST(buf_reset_keeps_memory)
{
    buf b;
    buf_init(&b);
    buf_puts(&b, "hello");
    char *p = b.data;
    size_t cap = b.cap;
    buf_reset(&b);
    CHECK_INT(b.len, 0);
    CHECK_STR(b.data, "");
    CHECK(b.data == p);
    CHECK_INT(b.cap, cap);
    buf_puts(&b, "x");
    CHECK_STR(b.data, "x");
    buf_fini(&b);
}

TEST(buf_printf_formats_and_appends)
{
    buf b;
    buf_init(&b);
    buf_printf(&b, "%d-%s", 42, "x");
    CHECK_STR(b.data, "42-x");
    buf_printf(&b, "|%05.1f|%c", 3.14159, 'z');
    CHECK_STR(b.data, "42-x|003.1|z");
    CHECK_INT(b.len, strlen("42-x|003.1|z"));
    buf_printf(&b, "%s", "");
    CHECK_INT(b.len, 12);
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    buf_printf(&b, "<%s>", big);   /* longer than the current capacity */
    CHECK_INT(b.len, 12 + 5001);
    CHECK_INT(b.data[12], '<');
    CHECK_INT(b.data[b.len - 1], '>');
    CHECK_INT(b.data[b.len], '\0');
    buf_fini(&b);
}

TEST(buf_reserve_makes_room)
{
    buf b;
    buf_init(&b);
    buf_reserve(&b, 100);
    CHECK(b.cap >= 101);
    CHECK_INT(b.len, 0);
    char *p = b.data;
    for (int i = 0; i < 100; i++) buf_putc(&b, 'a');
    CHECK(b.data == p);   /* no reallocation within the reserved room */
    size_t cap = b.cap;
    buf_reserve(&b, 0);
    CHECK_INT(b.cap, cap);
    buf_reserve(&b, cap);  /* growth keeps the contents */
    CHECK(b.cap >= b.len + cap + 1);
    CHECK_INT(b.len, 100);
    CHECK_INT(b.data[99], 'a');
    buf_fini(&b);
}

TEST(buf_steal_hands_over_memory)
{
    buf b;
    buf_init(&b);
    buf_puts(&b, "owned");
    char *s = buf_steal(&b);
    CHECK_STR(s, "owned");
    CHECK(b.data == NULL);
    CHECK_INT(b.len, 0);
    CHECK_INT(b.cap, 0);
    free(s);
    buf_puts(&b, "again");   /* usable after a steal */
    CHECK_STR(b.data, "again");
    buf_fini(&b);
}

TEST(buf_steal_empty_is_empty_string)
{
    buf b;
    buf_init(&b);
    char *s = buf_steal(&b);
    CHECK(s != NULL);
    CHECK_INT(s[0], '\0');   /* not CHECK_STR: an unterminated s would overrun */
    free(s);
}

/* test_narrow_queues: a queue noted narrow is found so until noted wide; a
 * queue never noted is not; noting one queue wide leaves the others, and a
 * queue that takes another's slot only costs that one its entry. */
#include "harness.h"
#include "streams/narrow_queues.h"
#include <stdio.h>

TEST(narrow_queues_answers_what_was_last_noted)
{
    narrow_queues *n = narrow_queues_new();
    CHECK(!narrow_queues_has(n, "orders"));
    narrow_queues_note(n, "orders", true);
    CHECK(narrow_queues_has(n, "orders"));
    CHECK(!narrow_queues_has(n, "orders2"));
    narrow_queues_note(n, "orders", false);
    CHECK(!narrow_queues_has(n, "orders"));
    narrow_queues_free(n);
}

TEST(narrow_queues_noting_one_queue_wide_leaves_the_others)
{
    narrow_queues *n = narrow_queues_new();
    narrow_queues_note(n, "a", true);
    narrow_queues_note(n, "b", true);
    narrow_queues_note(n, "b", false);
    narrow_queues_note(n, "c", false);   /* never noted narrow: nothing to forget */
    CHECK(narrow_queues_has(n, "a"));
    CHECK(!narrow_queues_has(n, "b"));
    CHECK(!narrow_queues_has(n, "c"));
    narrow_queues_free(n);
}

/* More queues than slots: every answer is still one the queue was given,
 * never another queue's (a lost entry reads as "not known narrow"). */
TEST(narrow_queues_a_full_table_forgets_but_never_answers_wrongly)
{
    narrow_queues *n = narrow_queues_new();
    char name[32];
    for (int i = 0; i < 3 * NARROW_QUEUES_SLOTS; i++) {
        snprintf(name, sizeof name, "q%d", i);
        narrow_queues_note(n, name, i % 2 == 0);
    }
    int kept = 0;
    for (int i = 0; i < 3 * NARROW_QUEUES_SLOTS; i++) {
        snprintf(name, sizeof name, "q%d", i);
        if (!narrow_queues_has(n, name)) continue;
        CHECK(i % 2 == 0);
        kept++;
    }
    CHECK(kept > 0 && kept <= NARROW_QUEUES_SLOTS);
    narrow_queues_free(n);
}

/* Noting a queue wide clears its own entry only: a queue that took the
 * slot since keeps being known narrow. */
TEST(narrow_queues_noting_a_queue_wide_leaves_the_queue_that_took_its_slot)
{
    narrow_queues *n = narrow_queues_new();
    char name[32];
    narrow_queues_note(n, "a", true);
    int i = 0;
    do {   /* a name whose slot is a's: it evicts a */
        snprintf(name, sizeof name, "q%d", i++);
        narrow_queues_note(n, name, true);
        if (narrow_queues_has(n, "a")) narrow_queues_note(n, name, false);
    } while (narrow_queues_has(n, "a") && i < 100 * NARROW_QUEUES_SLOTS);
    CHECK(!narrow_queues_has(n, "a"));
    CHECK(narrow_queues_has(n, name));
    narrow_queues_note(n, "a", false);   /* a was evicted: nothing of a's to clear */
    CHECK(narrow_queues_has(n, name));
    narrow_queues_free(n);
}

/* test_mailbox: what another thread posts reaches the loop, every letter
 * once and in the order posted, however the posts and the loop's swaps
 * interleave; a letter posted while the loop delivers waits for the next
 * swap instead of being lost or delivered inside the current one. */
#include "harness.h"
#include "net/mailbox.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define POSTED 20000

typedef struct box_test {
    struct event_base *base;
    mailbox           *box;
    int                got;        /* letters delivered */
    int                out_of_order;
    int                last_kind;  /* what the poster's sequence last said */
    int                reposts;    /* letters the loop posted to itself */
} box_test;

static void receive(int kind, void *item, void *arg)
{
    box_test *t = arg;
    if (item == NULL) {   /* the loop's own letter, posted while delivering */
        t->reposts++;
        return;
    }
    if (kind != t->last_kind + 1) t->out_of_order++;
    t->last_kind = kind;
    if (++t->got == POSTED) event_base_loopbreak(t->base);
    if (kind % 1000 == 0) mailbox_post(t->box, -1, NULL);
}

static void *post_all(void *arg)
{
    box_test *t = arg;
    static int item;
    for (int i = 1; i <= POSTED; i++) mailbox_post(t->box, i, &item);
    return NULL;
}

TEST(mailbox_delivers_every_letter_of_another_thread_once_in_order)
{
    box_test t = { 0 };
    t.base = event_base_new();
    t.box = mailbox_new(t.base, receive, &t);
    CHECK(t.box != NULL);
    pthread_t poster;
    CHECK_INT(pthread_create(&poster, NULL, post_all, &t), 0);
    struct timeval deadline = { 20, 0 };   /* a lost wake-up ends the loop here */
    event_base_loopexit(t.base, &deadline);
    event_base_dispatch(t.base);
    pthread_join(poster, NULL);
    CHECK_INT(t.got, POSTED);
    CHECK_INT(t.out_of_order, 0);
    size_t rest = mailbox_flush(t.box);   /* the loop's own last letters, if the loop stopped first */
    CHECK_INT(t.reposts, POSTED / 1000);
    CHECK((int)rest <= POSTED / 1000);
    CHECK_INT(mailbox_flush(t.box), 0);
    mailbox_free(t.box);
    event_base_free(t.base);
}

/* test_lease_book: an ack learns the offset its pop handed out only for the
 * same lease, partition and transactionId; a transactionId held twice is
 * not answered for; a released lease is forgotten; the book evicts its
 * oldest entries by age and by what they hold. A wrong answer here would be trusted
 * by queen.ack_span while the lease is live, so every miss must be -1. */
#include "harness.h"
#include "base/ids.h"
#include "streams/lease_book.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hash_of(const char *txn, uint8_t out[16]) { ids_txn_hash(txn, strlen(txn), out); }

/* n messages "t<first>".."t<first+n-1>" at offsets first.. */
static lease_book_msg *messages(int first, size_t n)
{
    lease_book_msg *m = calloc(n, sizeof *m);
    for (size_t i = 0; i < n; i++) {
        char txn[32];
        snprintf(txn, sizeof txn, "t%d", first + (int)i);
        hash_of(txn, m[i].hash);
        m[i].offset = first + (int64_t)i;
    }
    return m;
}

static int64_t lookup(const lease_book *b, const uint8_t lease[16], const uint8_t part[16], const char *txn)
{
    uint8_t h[16];
    hash_of(txn, h);
    return lease_book_offset(b, lease, part, h);
}

TEST(lease_book_answers_only_for_the_lease_partition_and_transaction_it_noted)
{
    lease_book *b = lease_book_new();
    uint8_t lease[16], other_lease[16], part[16], other_part[16];
    ids_uuid7(lease);
    ids_uuid7(other_lease);
    ids_uuid7(part);
    ids_uuid7(other_part);
    lease_book_msg *m = messages(40, 5);
    lease_book_note(b, lease, part, m, 5, 0);
    CHECK_INT(lease_book_messages(b), 5);
    CHECK_INT(lookup(b, lease, part, "t40"), 40);
    CHECK_INT(lookup(b, lease, part, "t44"), 44);
    CHECK_INT(lookup(b, lease, part, "t45"), -1);           /* not handed out */
    CHECK_INT(lookup(b, other_lease, part, "t41"), -1);     /* another lease */
    CHECK_INT(lookup(b, lease, other_part, "t41"), -1);     /* another partition */
    free(m);
    lease_book_free(b);
}

TEST(lease_book_does_not_answer_for_a_transaction_id_handed_out_twice)
{
    lease_book *b = lease_book_new();
    uint8_t lease[16], part[16];
    ids_uuid7(lease);
    ids_uuid7(part);
    lease_book_msg *m = messages(0, 4);
    memcpy(m[3].hash, m[1].hash, 16);   /* t1 at offsets 1 and 3 */
    lease_book_note(b, lease, part, m, 4, 0);
    CHECK_INT(lookup(b, lease, part, "t1"), -1);
    CHECK_INT(lookup(b, lease, part, "t0"), 0);
    CHECK_INT(lookup(b, lease, part, "t2"), 2);
    free(m);
    lease_book_free(b);
}

TEST(lease_book_forgets_a_released_lease_and_keeps_the_others)
{
    lease_book *b = lease_book_new();
    uint8_t a[16], c[16], part[16];
    ids_uuid7(a);
    ids_uuid7(c);
    ids_uuid7(part);
    lease_book_msg *m = messages(0, 3);
    lease_book_note(b, a, part, m, 3, 0);
    lease_book_note(b, c, part, m, 3, 0);
    lease_book_forget(b, a, part);
    lease_book_forget(b, a, part);   /* twice is harmless */
    CHECK_INT(lookup(b, a, part, "t0"), -1);
    CHECK_INT(lookup(b, c, part, "t0"), 0);
    CHECK_INT(lease_book_messages(b), 3);
    free(m);
    lease_book_free(b);
}

TEST(lease_book_evicts_entries_past_their_age_and_the_oldest_past_its_size)
{
    lease_book *b = lease_book_new();
    uint8_t old[16], young[16], part[16];
    ids_uuid7(old);
    ids_uuid7(young);
    ids_uuid7(part);
    lease_book_msg *m = messages(0, 2);
    lease_book_note(b, old, part, m, 2, 0);
    lease_book_note(b, young, part, m, 2, LEASE_BOOK_MAX_AGE_US + 1);   /* the first is now too old */
    CHECK_INT(lookup(b, old, part, "t0"), -1);
    CHECK_INT(lookup(b, young, part, "t1"), 1);
    free(m);

    /* size: a note that would pass the cap pushes the oldest out first */
    size_t half = LEASE_BOOK_MAX_BYTES / 2 / sizeof(lease_book_msg);
    lease_book_msg *big = messages(0, half);
    uint8_t l1[16], l2[16];
    ids_uuid7(l1);
    ids_uuid7(l2);
    lease_book_note(b, l1, part, big, half, LEASE_BOOK_MAX_AGE_US + 2);
    CHECK_INT(lookup(b, young, part, "t1"), 1);
    lease_book_note(b, l2, part, big, half, LEASE_BOOK_MAX_AGE_US + 3);
    CHECK_INT(lookup(b, young, part, "t1"), -1);
    CHECK_INT(lookup(b, l1, part, "t7"), -1);
    CHECK_INT(lookup(b, l2, part, "t7"), 7);
    CHECK(lease_book_bytes(b) <= LEASE_BOOK_MAX_BYTES);
    free(big);
    lease_book_free(b);
}

TEST(lease_book_finds_every_entry_after_its_table_grows)
{
    lease_book *b = lease_book_new();
    enum { N = 2000 };
    uint8_t (*leases)[16] = calloc(N, 16);
    uint8_t part[16];
    ids_uuid7(part);
    lease_book_msg *m = messages(0, 1);
    for (int i = 0; i < N; i++) {
        ids_uuid7(leases[i]);
        lease_book_note(b, leases[i], part, m, 1, i);
    }
    for (int i = 0; i < N; i++) CHECK_INT(lookup(b, leases[i], part, "t0"), 0);
    CHECK_INT(lease_book_messages(b), N);
    free(m);
    free(leases);
    lease_book_free(b);
}

TEST(lease_book_charges_each_entry_so_many_small_leases_stay_within_its_bytes)
{
    lease_book *b = lease_book_new();
    uint8_t lease[16], part[16];
    ids_uuid7(part);
    lease_book_msg *m = messages(0, 1);
    size_t notes = LEASE_BOOK_MAX_BYTES / (sizeof(lease_book_msg) * 2);   /* far more than fit */
    for (size_t i = 0; i < notes; i++) {
        ids_uuid7(lease);
        lease_book_note(b, lease, part, m, 1, 0);
    }
    CHECK(lease_book_bytes(b) <= LEASE_BOOK_MAX_BYTES);
    CHECK(lease_book_messages(b) < notes);
    CHECK_INT(lookup(b, lease, part, "t0"), 0);   /* the newest is kept */
    free(m);
    lease_book_free(b);
}

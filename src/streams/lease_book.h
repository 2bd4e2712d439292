/* lease_book: what this server handed out under each lease, so that an ack
 * can say at which offset each of its items sits (sql/033). A pop notes,
 * per (lease, partition), the transactionId hash and offset of every message
 * it leased; an ack looks its items up. PostgreSQL trusts the offsets only
 * while that lease is the cursor's live one, so an entry that is stale,
 * evicted or never noted (the pop was answered by another server) costs
 * only the general path's resolution, never a wrong commit.
 *
 * An entry leaves when an ack through this server releases its lease.
 * Others (leases that expired, acks through another server or without a
 * leaseId) leave by eviction, oldest first, whenever a pop notes a lease:
 * those older than LEASE_BOOK_MAX_AGE_US, and as many as it takes to keep
 * the book within LEASE_BOOK_MAX_BYTES. Single-threaded, like the loop
 * that owns it. */
#ifndef SILT_LEASE_BOOK_H
#define SILT_LEASE_BOOK_H
#include <stddef.h>
#include <stdint.h>

#define LEASE_BOOK_MAX_BYTES  ((size_t)32 << 20)   /* entries and messages, as charged by lease_book.c */
#define LEASE_BOOK_MAX_AGE_US ((int64_t)3600 * 1000000)   /* past any lease worth acking fast */

typedef struct lease_book lease_book;

/* One leased message: its transactionId hash (ids_txn_hash) and offset. */
typedef struct lease_book_msg {
    uint8_t hash[16];
    int64_t offset;
} lease_book_msg;

lease_book *lease_book_new(void);
void        lease_book_free(lease_book *b);
/* The n messages a pop leased of one partition (msgs is copied; now_us is
 * clock_mono_us). A transactionId that appears twice in them is not
 * answered for: which offset the client means is not known. */
void    lease_book_note(lease_book *b, const uint8_t lease[16], const uint8_t partition[16],
                        const lease_book_msg *msgs, size_t n, int64_t now_us);
/* The offset of the message with this hash handed out under lease of
 * partition, or -1. */
int64_t lease_book_offset(const lease_book *b, const uint8_t lease[16], const uint8_t partition[16],
                          const uint8_t hash[16]);
/* The lease was released: its messages are not acked under it again. */
void    lease_book_forget(lease_book *b, const uint8_t lease[16], const uint8_t partition[16]);
size_t  lease_book_messages(const lease_book *b);   /* messages held */
size_t  lease_book_bytes(const lease_book *b);      /* what they are charged, at most LEASE_BOOK_MAX_BYTES */

#endif

/* lease_book: offsets handed out per (lease, partition) (see lease_book.h). */
#include "streams/lease_book.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "base/xalloc.h"

/* One pop's messages of one partition, sorted by hash for the lookup. */
typedef struct entry {
    uint8_t         lease[16], partition[16];
    int64_t         noted_us;
    lease_book_msg *msgs;
    size_t          n;
    struct entry   *chain;          /* next in its bucket */
    struct entry   *older, *newer;  /* the book's age order */
} entry;

struct lease_book {
    entry **buckets;
    size_t  nbuckets;   /* a power of two */
    size_t  nentries, nmessages;
    size_t  bytes;      /* charged (entry_bytes) */
    entry  *oldest, *newest;
};

/* What an entry of n messages holds: its record and its messages, each
 * with an allocation's overhead, and its share of the buckets (the table
 * keeps about one per entry). */
static size_t entry_bytes(size_t n)
{
    return sizeof(entry) + n * sizeof(lease_book_msg) + 2 * 16 + sizeof(entry *);
}

/* A lease id is a UUIDv7: its last eight bytes are random, where the first
 * are a clock. */
static size_t bucket_of(const lease_book *b, const uint8_t lease[16], const uint8_t partition[16])
{
    uint64_t h, p;
    memcpy(&h, lease + 8, 8);
    memcpy(&p, partition + 8, 8);
    h ^= p * 0x9e3779b97f4a7c15u;
    return (size_t)(h ^ h >> 29) & (b->nbuckets - 1);
}

static entry **slot_of(const lease_book *b, const uint8_t lease[16], const uint8_t partition[16])
{
    entry **at = &b->buckets[bucket_of(b, lease, partition)];
    while (*at && (memcmp((*at)->lease, lease, 16) || memcmp((*at)->partition, partition, 16)))
        at = &(*at)->chain;
    return at;
}

static void unlink_entry(lease_book *b, entry **slot)
{
    entry *e = *slot;
    *slot = e->chain;
    if (e->older) e->older->newer = e->newer; else b->oldest = e->newer;
    if (e->newer) e->newer->older = e->older; else b->newest = e->older;
    b->nentries--;
    b->nmessages -= e->n;
    b->bytes -= entry_bytes(e->n);
    free(e->msgs);
    free(e);
}

static void grow(lease_book *b)
{
    size_t n = b->nbuckets * 2;
    entry **old = b->buckets;
    size_t nold = b->nbuckets;
    b->buckets = xcalloc(n, sizeof *b->buckets);
    b->nbuckets = n;
    for (size_t i = 0; i < nold; i++)
        for (entry *e = old[i], *next; e; e = next) {
            next = e->chain;
            entry **head = &b->buckets[bucket_of(b, e->lease, e->partition)];
            e->chain = *head;
            *head = e;
        }
    free(old);
}

static int by_hash(const void *a, const void *b)
{
    return memcmp(((const lease_book_msg *)a)->hash, ((const lease_book_msg *)b)->hash, 16);
}

/* A hash held twice keeps offset -1: neither is answered for. */
static void mark_duplicates(lease_book_msg *msgs, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (memcmp(msgs[i].hash, msgs[i - 1].hash, 16) == 0) msgs[i].offset = msgs[i - 1].offset = -1;
}

static void evict(lease_book *b, size_t incoming, int64_t now_us)
{
    while (b->oldest && (b->bytes + incoming > LEASE_BOOK_MAX_BYTES ||
                         now_us - b->oldest->noted_us > LEASE_BOOK_MAX_AGE_US))
        unlink_entry(b, slot_of(b, b->oldest->lease, b->oldest->partition));
}

lease_book *lease_book_new(void)
{
    lease_book *b = xcalloc(1, sizeof *b);
    b->nbuckets = 256;
    b->buckets = xcalloc(b->nbuckets, sizeof *b->buckets);
    return b;
}

void lease_book_free(lease_book *b)
{
    if (!b) return;
    while (b->oldest) unlink_entry(b, slot_of(b, b->oldest->lease, b->oldest->partition));
    free(b->buckets);
    free(b);
}

void lease_book_note(lease_book *b, const uint8_t lease[16], const uint8_t partition[16],
                     const lease_book_msg *msgs, size_t n, int64_t now_us)
{
    if (n == 0 || entry_bytes(n) > LEASE_BOOK_MAX_BYTES) return;
    evict(b, entry_bytes(n), now_us);
    entry **slot = slot_of(b, lease, partition);
    if (*slot) unlink_entry(b, slot);   /* a lease is noted once; a repeat replaces it */
    entry *e = xcalloc(1, sizeof *e);
    memcpy(e->lease, lease, 16);
    memcpy(e->partition, partition, 16);
    e->noted_us = now_us;
    e->msgs = xmalloc(n * sizeof *msgs);
    memcpy(e->msgs, msgs, n * sizeof *msgs);
    e->n = n;
    qsort(e->msgs, n, sizeof *msgs, by_hash);
    mark_duplicates(e->msgs, n);
    slot = &b->buckets[bucket_of(b, lease, partition)];
    e->chain = *slot;
    *slot = e;
    e->older = b->newest;
    if (b->newest) b->newest->newer = e; else b->oldest = e;
    b->newest = e;
    b->nentries++;
    b->nmessages += n;
    b->bytes += entry_bytes(n);
    if (b->nentries > b->nbuckets) grow(b);
}

int64_t lease_book_offset(const lease_book *b, const uint8_t lease[16], const uint8_t partition[16],
                          const uint8_t hash[16])
{
    const entry *e = *slot_of(b, lease, partition);
    if (!e) return -1;
    lease_book_msg key;
    memcpy(key.hash, hash, 16);
    const lease_book_msg *m = bsearch(&key, e->msgs, e->n, sizeof key, by_hash);
    return m ? m->offset : -1;
}

void lease_book_forget(lease_book *b, const uint8_t lease[16], const uint8_t partition[16])
{
    entry **slot = slot_of(b, lease, partition);
    if (*slot) unlink_entry(b, slot);
}

size_t lease_book_messages(const lease_book *b) { return b->nmessages; }

size_t lease_book_bytes(const lease_book *b) { return b->bytes; }

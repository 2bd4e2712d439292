/* narrow_queues: see narrow_queues.h. */
#include "streams/narrow_queues.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "base/xalloc.h"

struct narrow_queues {
    uint64_t slots[NARROW_QUEUES_SLOTS];   /* a name's hash, 0: empty */
};

static uint64_t name_hash(const char *queue)
{
    uint64_t h = XXH3_64bits(queue, strlen(queue));
    return h ? h : 1;   /* 0 marks an empty slot */
}

narrow_queues *narrow_queues_new(void) { return xcalloc(1, sizeof(narrow_queues)); }

void narrow_queues_free(narrow_queues *n) { free(n); }

bool narrow_queues_has(const narrow_queues *n, const char *queue)
{
    uint64_t h = name_hash(queue);
    return n->slots[h % NARROW_QUEUES_SLOTS] == h;
}

void narrow_queues_note(narrow_queues *n, const char *queue, bool narrow)
{
    uint64_t h = name_hash(queue);
    uint64_t *slot = &n->slots[h % NARROW_QUEUES_SLOTS];
    if (narrow) *slot = h;
    else if (*slot == h) *slot = 0;
}

-- 028: the duplicate check of a push is an index lookup, and a parked
-- long-poll learns when to look again instead of polling (issue 14).
--
-- queen.find_duplicates (018) walked the partition's sidecar rows newest
-- first down to the edge of the dedup window, searching each row's hashes
-- for each pushed hash: with client-chosen transactionIds every push read
-- the whole window (3,000 sidecar rows, 60,000 hashes at an hour's window)
-- while it held the partition's row lock, and a 20-item push went from 4 ms
-- to 74 ms as the partition filled. The sidecar's only index is its key,
-- (partition_id, base_offset): it finds a row by offset, never by hash.
--
-- An expression GIN index on the sidecar now finds the rows holding a
-- (partition, hash) pair, however many rows the window holds. Its keys are
-- the partition's 16 bytes followed by the hash's 16, so a lookup never
-- meets another partition's rows (clients reuse ids across partitions, e.g.
-- a counter per partition) and a hit is exact. The sidecar's rows, their
-- writers and their purges are unchanged: the index follows the rows it
-- indexes, so the dedup window, retention of the sidecar (txns_start) and
-- the deletion of partitions mean what they meant.
--
-- fastupdate is off: with it on, new entries wait in a pending list that
-- every lookup reads whole (up to gin_pending_list_limit, 4 MB), and the
-- push that overflows it merges the list while holding its partition locks.
-- Off, a push inserts its hashes into the index directly, a few pages each.
--
-- Building the index reads the sidecar once, holding off pushes for that
-- long (the migration is one transaction).

CREATE INDEX log_txns_keys ON queen.log_txns USING gin (queen.txn_keys(partition_id, hashes))
    WITH (fastupdate = off);

-- 028: the duplicate check of a push is an index lookup (issue 14).
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

-- The index keys of a sidecar row: partition id || hash, one per frame.
CREATE FUNCTION queen.txn_keys(p_partition uuid, p_hashes bytea) RETURNS bytea[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_agg(uuid_send(p_partition) || substring(p_hashes FROM k * 16 + 1 FOR 16))
      FROM generate_series(0, length(p_hashes) / 16 - 1) AS k
$$;

CREATE INDEX log_txns_keys ON queen.log_txns USING gin (queen.txn_keys(partition_id, hashes))
    WITH (fastupdate = off);

-- Frames of p_hashes already pushed to the partition inside the window:
-- "frame:message-id-hex,..." in frame order, or NULL. Per pushed hash, one
-- index probe for the newest sidecar row holding it at or after the
-- sidecar watermark and the window's edge (created_at never decreases with
-- offset, so these are the rows the walk of 018 met before it stopped),
-- and the message id of its first frame with that hash, as 018 reported.
-- The lookup names no partition_id column, so the planner has no offset
-- range of the partition to walk instead: the partition is in the key.
-- PL/pgSQL, so the statement's plan is kept for the session.
CREATE OR REPLACE FUNCTION queen.find_duplicates(p_partition uuid, p_txns_start bigint,
                                                 p_cutoff timestamptz, p_hashes bytea)
RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
        SELECT string_agg(k || ':' || encode(substring(m.message_ids FROM m.at * 16 + 1 FOR 16), 'hex'), ','
                          ORDER BY k)
          FROM generate_series(0, length(p_hashes) / 16 - 1) AS k
          CROSS JOIN LATERAL (
              SELECT t.message_ids, queen.hash_index(t.hashes, substring(p_hashes FROM k * 16 + 1 FOR 16)) AS at
                FROM queen.log_txns t
               WHERE queen.txn_keys(t.partition_id, t.hashes)
                     @> ARRAY[uuid_send(p_partition) || substring(p_hashes FROM k * 16 + 1 FOR 16)]
                 AND t.base_offset >= p_txns_start AND t.created_at >= p_cutoff
               ORDER BY t.base_offset DESC
               LIMIT 1) AS m);
END $$;

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


-- ==== When a parked long-poll looks again ==================================
--
-- A long-poll that found nothing is parked in the server (src/streams/pop.c)
-- and woken by commits: this server's, and other servers' through NOTIFY
-- (an ack that gives a lease back is announced too). What no commit
-- announces is time: a lease expiring (a consumer that never acked), a
-- segment ageing past delayedProcessing, a windowBuffer closing. Parked
-- pops used to query the database every LONG_POLL_RECHECK_MS for these
-- (1,000 parked pops: 1,000 transactions a second, idle). Asked once by a pop that found nothing,
-- before it parks, this answers when the first of them falls due among the
-- partitions that pop could take (NULL: none will without a commit), so a
-- parked pop looks again then and not before. Times already past are left
-- out: the pop has just seen them and found nothing to take.
CREATE FUNCTION queen.pop_wake_at(p_queue text, p_partition text, p_namespace text, p_task text,
                                  p_group text) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT min(t.at) FROM (
        SELECT least(
                   CASE WHEN c.lease_expires > now() THEN c.lease_expires END,
                   CASE WHEN w.win > 0 AND p.last_write_at + make_interval(secs => w.win) > now()
                        THEN p.last_write_at + make_interval(secs => w.win) END,
                   CASE WHEN w.delay > 0 THEN
                       (SELECT s.created_at + make_interval(secs => w.delay) FROM queen.log_segments s
                         WHERE s.partition_id = p.id AND s.end_offset > coalesce(c.committed, p.log_start - 1)
                           AND s.created_at + make_interval(secs => w.delay) > now()
                         ORDER BY s.base_offset LIMIT 1) END) AS at
          FROM queen.log_partitions p
          JOIN queen.queues q ON q.name = p.queue
          CROSS JOIN LATERAL (SELECT (q.options->>'windowBuffer')::integer AS win,
                                     (q.options->>'delayedProcessing')::integer AS delay) w
          LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
         WHERE (p_queue IS NULL OR p.queue = p_queue) AND (p_partition IS NULL OR p.name = p_partition)
           AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
           AND p.last_offset >= p.log_start
           AND (c.partition_id IS NULL OR p.last_offset > c.committed)) t
$$;

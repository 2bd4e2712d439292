-- Duplicate transactionIds of a push, found through the log_txns_keys index and
-- in the push buffer.

-- Frames of p_hashes already pushed to the partition inside the window:
-- "frame:message-id-hex,..." in frame order, or NULL. Per pushed hash, one
-- index probe for the newest sidecar row holding it at or after the
-- sidecar watermark and the window's edge (created_at never decreases with
-- offset, so these are the rows the walk of 018 met before it stopped),
-- and the message id of its first frame with that hash, as 018 reported.
-- The lookup names no partition_id column, so the planner has no offset
-- range of the partition to walk instead: the partition is in the key.
-- Only rows holding a client's transactionId are indexed (client_ids, 038):
-- a pushed id that matches a server-generated one is not a duplicate.
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
                 AND t.client_ids AND t.base_offset >= p_txns_start AND t.created_at >= p_cutoff
               ORDER BY t.base_offset DESC
               LIMIT 1) AS m);
END $$;

-- Frames of p_hashes whose transactionId is already buffered for the
-- partition since p_cutoff: "frame:message-id-hex,..." as find_duplicates.
CREATE OR REPLACE FUNCTION queen.buffered_duplicates(p_partition uuid, p_hashes bytea, p_cutoff timestamptz)
RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
        SELECT string_agg(k || ':' || encode(b.message_id, 'hex'), ',' ORDER BY k)
          FROM generate_series(0, length(p_hashes) / 16 - 1) AS k
          JOIN queen.push_buffer_txns b
            ON b.partition_id = p_partition AND b.hash = substring(p_hashes FROM k * 16 + 1 FOR 16)
         WHERE b.buffered_at >= p_cutoff);
END $$;

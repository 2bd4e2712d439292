-- 012_push_flush: one statement set per flush instead of one function call
-- per partition. A flush's partitions arrive as parallel arrays (sorted by
-- queue, partition), their segment blobs concatenated in one bytea, and are
-- locked in that order, checked, and written with set-based statements.
-- The same UPDATE starts the retention schedule of 011 for a partition
-- that was empty.

DROP FUNCTION queen.push_segment(text, text, integer, bytea, bytea, bytea, boolean, boolean);

-- A flush writes a segment and a sidecar row per partition; their foreign
-- keys cost a trigger call each, which dominated flushes touching thousands
-- of partitions. Partitions are deleted in two places only, which now delete
-- their segments and sidecar rows themselves: queue deletion (here) and
-- partition cleanup (011, for partitions that have no segments).
ALTER TABLE queen.log_segments DROP CONSTRAINT log_segments_partition_id_fkey;
ALTER TABLE queen.log_txns DROP CONSTRAINT log_txns_partition_id_fkey;

CREATE OR REPLACE FUNCTION queen.queue_delete(p_queue text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_segments s USING queen.log_partitions p WHERE s.partition_id = p.id AND p.queue = p_queue;
    DELETE FROM queen.log_txns t USING queen.log_partitions p WHERE t.partition_id = p.id AND p.queue = p_queue;
    DELETE FROM queen.log_dlq WHERE queue = p_queue;
    DELETE FROM queen.queues WHERE name = p_queue;
    RETURN FOUND;
END $$;

-- Locks the flush's partitions in (queue, name) order, creating missing
-- queues and partitions first. Returns how many exist after.
CREATE FUNCTION queen.lock_partitions(p_queues text[], p_partitions text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n      integer := array_length(p_queues, 1);
    locked integer;
BEGIN
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM queen.log_partitions lp
          JOIN unnest(p_queues, p_partitions) AS x(q, p) ON lp.queue = x.q AND lp.name = x.p
         ORDER BY lp.queue, lp.name FOR UPDATE OF lp) l;
    IF locked = n THEN RETURN locked; END IF;
    -- Creating is rare; one creator at a time keeps concurrent flushes from
    -- waiting on each other's uncommitted partition rows in a cycle.
    PERFORM pg_advisory_xact_lock(7365697);
    INSERT INTO queen.queues (name, options)
    SELECT DISTINCT x.q, queen.default_options() FROM unnest(p_queues) AS x(q) ON CONFLICT DO NOTHING;
    INSERT INTO queen.log_partitions (queue, name)
    SELECT x.q, x.p FROM unnest(p_queues, p_partitions) AS x(q, p) ON CONFLICT DO NOTHING;
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM queen.log_partitions lp
          JOIN unnest(p_queues, p_partitions) AS x(q, p) ON lp.queue = x.q AND lp.name = x.p
         ORDER BY lp.queue, lp.name FOR UPDATE OF lp) l;
    RETURN locked;
END $$;

-- Refusals that abort the whole flush: plaintext for a queue with
-- encryptionEnabled (SLE01, DETAIL the partition's index in the arrays) and
-- duplicate transactionIds inside a queue's dedupWindowSeconds (SLD01,
-- DETAIL "index|frame:message-id-hex,...").
CREATE FUNCTION queen.flush_checks(p_queues text[], p_partitions text[], p_counts integer[], p_hashes bytea,
                                   p_probe boolean[], p_encrypted boolean[], p_now timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r    record;
    dups text;
BEGIN
    SELECT x.i, x.q INTO r
      FROM unnest(p_queues, p_encrypted) WITH ORDINALITY AS x(q, enc, i)
      JOIN queen.queues qq ON qq.name = x.q
     WHERE NOT x.enc AND (qq.options->>'encryptionEnabled')::boolean
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'queue % requires encryption', r.q USING ERRCODE = 'SLE01', DETAIL = (r.i - 1)::text;
    END IF;
    IF NOT (true = ANY (p_probe)) THEN RETURN; END IF;
    FOR r IN SELECT x.i, x.c, x.first, (qq.options->>'dedupWindowSeconds')::integer AS win, lp.id, lp.txns_start
               FROM (SELECT u.*, (sum(u.c) OVER (ORDER BY u.i) - u.c)::integer AS first
                       FROM unnest(p_queues, p_partitions, p_counts, p_probe) WITH ORDINALITY AS u(q, p, c, probe, i)) x
               JOIN queen.queues qq ON qq.name = x.q
               JOIN queen.log_partitions lp ON lp.queue = x.q AND lp.name = x.p
              WHERE x.probe
    LOOP
        CONTINUE WHEN r.win <= 0;
        dups := queen.find_duplicates(r.id, r.txns_start, p_now - make_interval(secs => r.win),
                                      substring(p_hashes FROM r.first * 16 + 1 FOR r.c * 16));
        IF dups IS NOT NULL THEN
            RAISE EXCEPTION 'duplicate transaction ids' USING ERRCODE = 'SLD01', DETAIL = (r.i - 1) || '|' || dups;
        END IF;
    END LOOP;
END $$;

-- Appends one segment to each partition of a flush, assigning offsets and
-- created_at under the partition row locks (so created_at never decreases
-- with offset). Rows: the partition's index in the arrays (0-based), its id,
-- the segment's base offset and commit time.
CREATE FUNCTION queen.push_flush(p_queues text[], p_partitions text[], p_counts integer[],
                                 p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                 p_probe boolean[], p_encrypted boolean[])
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    now_ts timestamptz;
BEGIN
    PERFORM queen.lock_partitions(p_queues, p_partitions);
    now_ts := clock_timestamp();
    PERFORM queen.flush_checks(p_queues, p_partitions, p_counts, p_hashes, p_probe, p_encrypted, now_ts);
    RETURN QUERY
    WITH w AS MATERIALIZED (   -- each queue's windows, once per flush rather than per partition
        SELECT qq.name, queen.rules_window(qq.options) AS rules, (queen.retention_windows(qq.options)).ack_window AS ack
          FROM queen.queues qq WHERE qq.name = ANY (p_queues)),
    x AS (
        SELECT u.i, u.q, u.p, u.c, u.len,
               (sum(u.len) OVER (ORDER BY u.i) - u.len)::integer AS blob_at,
               (sum(u.c) OVER (ORDER BY u.i) - u.c)::integer AS frame_at
          FROM unnest(p_queues, p_partitions, p_counts, p_blob_lens) WITH ORDINALITY AS u(q, p, c, len, i)),
    upd AS (
        UPDATE queen.log_partitions lp
           SET last_offset = lp.last_offset + x.c, last_write_at = now_ts, empty_since = NULL,
               oldest_at = coalesce(lp.oldest_at, now_ts),
               retention_check_at = coalesce(lp.retention_check_at, now_ts + make_interval(secs => w.rules)),
               sidecar_check_at = coalesce(lp.sidecar_check_at, now_ts + make_interval(secs => w.ack))
          FROM x JOIN w ON w.name = x.q
         WHERE lp.queue = x.q AND lp.name = x.p
        RETURNING x.i, lp.id, lp.last_offset - x.c + 1 AS base, x.c, x.len, x.blob_at, x.frame_at),
    seg AS (
        INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at, blob)
        SELECT upd.id, upd.base, upd.base + upd.c - 1, now_ts, substring(p_blobs FROM upd.blob_at + 1 FOR upd.len)
          FROM upd),
    txn AS (
        INSERT INTO queen.log_txns (partition_id, base_offset, created_at, hashes, message_ids)
        SELECT upd.id, upd.base, now_ts, substring(p_hashes FROM upd.frame_at * 16 + 1 FOR upd.c * 16),
               substring(p_ids FROM upd.frame_at * 16 + 1 FOR upd.c * 16)
          FROM upd)
    SELECT (upd.i - 1)::integer, upd.id, upd.base, now_ts FROM upd;
END $$;

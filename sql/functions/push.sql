-- The push path: one call writes a batch of partitions' segments, their sidecar
-- rows and the partitions' offsets (src/streams/push_flush.c).

-- A flush: locks, checks, then appends (or, in maintenance mode, buffers).
-- Rows as append_segments; base_offset is NULL for a buffered flush.
CREATE OR REPLACE FUNCTION queen.push_flush(p_queues text[], p_partitions text[], p_counts integer[],
                                 p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                 p_probe boolean[], p_encrypted boolean[])
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    now_ts timestamptz;
BEGIN
    PERFORM queen.lock_partitions(p_queues, p_partitions);
    now_ts := clock_timestamp();
    PERFORM queen.flush_checks(p_queues, p_partitions, p_counts, p_hashes, p_probe, p_encrypted, now_ts);
    IF queen.flush_buffers() THEN
        RETURN QUERY SELECT * FROM queen.buffer_flush(p_queues, p_partitions, p_counts, p_blobs, p_blob_lens,
                                                      p_hashes, p_ids, p_probe, now_ts);
    ELSE
        RETURN QUERY SELECT * FROM queen.append_segments(p_queues, p_partitions, p_counts, p_blobs, p_blob_lens,
                                                         p_hashes, p_ids, p_probe, now_ts);
    END IF;
END $$;

-- 018's lock_partitions, analyzing the partitions when their creation has
-- outgrown the statistics.
CREATE OR REPLACE FUNCTION queen.lock_partitions(p_queues text[], p_partitions text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n      integer := array_length(p_queues, 1);
    locked integer;
    made   integer;
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
    GET DIAGNOSTICS made = ROW_COUNT;
    PERFORM queen.analyze_if_grown('queen.log_partitions', made);
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM queen.log_partitions lp
          JOIN unnest(p_queues, p_partitions) AS x(q, p) ON lp.queue = x.q AND lp.name = x.p
         ORDER BY lp.queue, lp.name FOR UPDATE OF lp) l;
    RETURN locked;
END $$;

-- ---- Plans that do not wait for autovacuum ---------------------------------
--
-- A session plans its statements once and keeps the plan. A plan made while
-- the partitions table was small (a sequential scan of a few rows) stayed
-- after a queue grew to 100,000 partitions, until autovacuum's analyze
-- replaced it: push batch 1 fell from 3,900 to 430 msg/s and pop+ack on a
-- small queue beside it from 20,000 to 4,800 (docs/performance.md). Setting
-- the planner per function (SET enable_seqscan = off) fixed the plans but
-- cost a pop 40% in pgbench, so instead whoever makes rows in bulk has the
-- table analyzed when it has more than doubled since its statistics, and
-- every session's plans of it are made again at their next use.
-- p_added: rows this transaction has just made (not counted in the
-- statistics views until it commits).
CREATE OR REPLACE FUNCTION queen.analyze_if_grown(p_table regclass, p_added bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    live bigint;
    known real;
BEGIN
    live := pg_stat_get_live_tuples(p_table);   -- the statistics view's column, without the view's joins
    SELECT c.reltuples INTO known FROM pg_class c WHERE c.oid = p_table;
    IF coalesce(live, 0) + p_added > 2 * greatest(known, 0) + 1000
       AND pg_try_advisory_xact_lock(hashtext('silt.analyze'), p_table::oid::integer) THEN
        EXECUTE format('ANALYZE %s', p_table);
    END IF;
END $$;

-- Refusals that abort the whole flush: plaintext for a queue with
-- encryptionEnabled (SLE01, DETAIL the partition's index in the arrays) and
-- duplicate transactionIds inside a queue's dedupWindowSeconds (SLD01,
-- DETAIL "index|frame:message-id-hex,..."). The caller re-encodes the flush
-- without the duplicates and sends it again, so a flush stays
-- all-or-nothing.
CREATE OR REPLACE FUNCTION queen.flush_checks(p_queues text[], p_partitions text[], p_counts integer[], p_hashes bytea,
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

-- Appends each partition's segment and its sidecar row, moves its offsets
-- and schedules its retention checks, and writes the flush's write rows
-- (one per queue, for the ready sets). p_client_ids: whether any message of
-- the partition's segment had a client-chosen transactionId; only those
-- sidecar rows enter the dedup index (038).
CREATE OR REPLACE FUNCTION queen.append_segments(p_queues text[], p_partitions text[], p_counts integer[],
                                                 p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                                 p_client_ids boolean[], now_ts timestamptz)
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH w AS MATERIALIZED (   -- each queue's windows, once per flush rather than per partition
        SELECT qq.name, queen.rules_window(qq.options) AS rules, (queen.retention_windows(qq.options)).ack_window AS ack
          FROM queen.queues qq WHERE qq.name = ANY (p_queues)),
    x AS (
        SELECT u.i, u.q, u.p, u.c, u.len, u.client,
               (sum(u.len) OVER (ORDER BY u.i) - u.len)::integer AS blob_at,
               (sum(u.c) OVER (ORDER BY u.i) - u.c)::integer AS frame_at
          FROM unnest(p_queues, p_partitions, p_counts, p_blob_lens, p_client_ids)
               WITH ORDINALITY AS u(q, p, c, len, client, i)),
    upd AS (
        UPDATE queen.log_partitions lp
           SET last_offset = lp.last_offset + x.c, last_write_at = now_ts, empty_since = NULL,
               oldest_at = coalesce(lp.oldest_at, now_ts),
               retention_check_at = coalesce(lp.retention_check_at, now_ts + make_interval(secs => w.rules)),
               sidecar_check_at = coalesce(lp.sidecar_check_at, now_ts + make_interval(secs => w.ack))
          FROM x JOIN w ON w.name = x.q
         WHERE lp.queue = x.q AND lp.name = x.p
        RETURNING x.i, x.q, lp.id, lp.last_offset - x.c + 1 AS base, x.c, x.len, x.blob_at, x.frame_at, x.client),
    seg AS (
        INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at, blob)
        SELECT upd.id, upd.base, upd.base + upd.c - 1, now_ts, substring(p_blobs FROM upd.blob_at + 1 FOR upd.len)
          FROM upd),
    txn AS (
        INSERT INTO queen.log_txns (partition_id, base_offset, created_at, hashes, message_ids, client_ids)
        SELECT upd.id, upd.base, now_ts, substring(p_hashes FROM upd.frame_at * 16 + 1 FOR upd.c * 16),
               substring(p_ids FROM upd.frame_at * 16 + 1 FOR upd.c * 16), upd.client
          FROM upd),
    wrote AS (
        INSERT INTO queen.log_writes (queue, partition_ids)
        SELECT upd.q, array_agg(upd.id) FROM upd GROUP BY upd.q)
    SELECT (upd.i - 1)::integer, upd.id, upd.base, now_ts FROM upd;
END $$;

-- The queue options that matter to retention, as seconds (0: off).
CREATE OR REPLACE FUNCTION queen.retention_windows(opts jsonb, OUT retention integer, OUT completed integer,
                                                   OUT max_wait integer, OUT ack_window integer)
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    retention := CASE WHEN (opts->>'retentionEnabled')::boolean THEN (opts->>'retentionSeconds')::integer ELSE 0 END;
    completed := CASE WHEN (opts->>'retentionEnabled')::boolean
                      THEN (opts->>'completedRetentionSeconds')::integer ELSE 0 END;
    max_wait := (opts->>'maxWaitTimeSeconds')::integer;
    ack_window := greatest((opts->>'dedupWindowSeconds')::integer, (opts->>'completedRetentionSeconds')::integer, 900);
END $$;

-- The shortest window after which some rule can delete a segment (seconds),
-- NULL when no rule is on.
CREATE OR REPLACE FUNCTION queen.rules_window(opts jsonb) RETURNS integer
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    w record := queen.retention_windows(opts);
BEGIN
    RETURN nullif(least(nullif(w.retention, 0), nullif(w.completed, 0), nullif(w.max_wait, 0)), 0);
END $$;

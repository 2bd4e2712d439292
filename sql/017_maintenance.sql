-- 017_maintenance: maintenance mode, as Queen's POST /api/v1/system/maintenance.
-- While it is on, pushes are accepted and held in queen.push_buffer, encoded
-- exactly as they would be written to the log, and answered "buffered".
-- When it is turned off the buffer drains into the log in the order it was
-- filled; pushes that arrive while it drains queue behind it, so a
-- partition's order is the order of its pushes. The switch is a row of
-- queen.system_state (Queen's table and key), so every server on the
-- database follows it at its next flush.

CREATE TABLE queen.system_state (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- draining: turned off, but the buffer has not emptied yet.
INSERT INTO queen.system_state (key, value) VALUES ('maintenance_mode', '{"enabled": false, "draining": false}');

-- One row per partition of a buffered flush: the segment as push_flush would
-- have written it.
CREATE TABLE queen.push_buffer (
    id           bigserial PRIMARY KEY,
    partition_id uuid NOT NULL REFERENCES queen.log_partitions(id) ON DELETE CASCADE,
    messages     integer NOT NULL,
    blob         bytea NOT NULL,
    hashes       bytea NOT NULL,
    message_ids  bytea NOT NULL,
    buffered_at  timestamptz NOT NULL
);
CREATE INDEX push_buffer_partition ON queen.push_buffer (partition_id);

-- The transactionIds of buffered messages, so that a repeat pushed during
-- maintenance is a duplicate there too (the log's sidecar cannot see them).
CREATE TABLE queen.push_buffer_txns (
    partition_id uuid NOT NULL,
    hash         bytea NOT NULL,
    message_id   bytea NOT NULL,
    buffer_id    bigint NOT NULL REFERENCES queen.push_buffer(id) ON DELETE CASCADE,
    buffered_at  timestamptz NOT NULL,
    PRIMARY KEY (partition_id, hash)
);
CREATE INDEX push_buffer_txns_buffer ON queen.push_buffer_txns (buffer_id);

CREATE FUNCTION queen.maintenance_value() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT value FROM queen.system_state WHERE key = 'maintenance_mode';
$$;

-- Whether a flush goes to the buffer. A flush that will buffer holds the
-- switch row FOR SHARE until it commits, so the drain cannot declare the
-- buffer empty in between (see drain_push_buffer); a flush that read "off"
-- needs no lock: nothing can be buffered while the switch says off.
CREATE FUNCTION queen.flush_buffers() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v jsonb := queen.maintenance_value();
BEGIN
    IF NOT ((v->>'enabled')::boolean OR (v->>'draining')::boolean) THEN RETURN false; END IF;
    SELECT value INTO v FROM queen.system_state WHERE key = 'maintenance_mode' FOR SHARE;
    RETURN (v->>'enabled')::boolean OR (v->>'draining')::boolean;
END $$;

-- Appends one segment to each partition of a flush (locked by the caller),
-- assigning offsets and created_at under the partition row locks (so
-- created_at never decreases with offset). Rows: the partition's index in
-- the arrays (0-based), its id, the segment's base offset and commit time.
-- Was the body of push_flush (012); the buffer drain appends the same way.
-- PL/pgSQL rather than SQL: its statement's plan is kept for the session,
-- where a SQL function's would be made again on every flush.
CREATE FUNCTION queen.append_segments(p_queues text[], p_partitions text[], p_counts integer[],
                                      p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                      now_ts timestamptz)
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
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

-- Frames of p_hashes whose transactionId is already buffered for the
-- partition since p_cutoff: "frame:message-id-hex,..." as find_duplicates.
CREATE FUNCTION queen.buffered_duplicates(p_partition uuid, p_hashes bytea, p_cutoff timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT string_agg(k || ':' || encode(b.message_id, 'hex'), ',' ORDER BY k)
      FROM generate_series(0, length(p_hashes) / 16 - 1) AS k
      JOIN queen.push_buffer_txns b
        ON b.partition_id = p_partition AND b.hash = substring(p_hashes FROM k * 16 + 1 FOR 16)
     WHERE b.buffered_at >= p_cutoff;
$$;

-- Holds a flush in the buffer (maintenance mode). Rows as append_segments,
-- with base_offset NULL: the messages have no offset yet.
CREATE FUNCTION queen.buffer_flush(p_queues text[], p_partitions text[], p_counts integer[],
                                   p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                   p_probe boolean[], now_ts timestamptz)
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r    record;
    dups text;
    bid  bigint;
BEGIN
    FOR r IN SELECT x.i, lp.id, x.c, x.probe, (qq.options->>'dedupWindowSeconds')::integer AS win,
                    substring(p_blobs FROM x.blob_at + 1 FOR x.len) AS blob,
                    substring(p_hashes FROM x.frame_at * 16 + 1 FOR x.c * 16) AS hashes,
                    substring(p_ids FROM x.frame_at * 16 + 1 FOR x.c * 16) AS ids
               FROM (SELECT u.*, (sum(u.len) OVER (ORDER BY u.i) - u.len)::integer AS blob_at,
                            (sum(u.c) OVER (ORDER BY u.i) - u.c)::integer AS frame_at
                       FROM unnest(p_queues, p_partitions, p_counts, p_blob_lens, p_probe)
                            WITH ORDINALITY AS u(q, p, c, len, probe, i)) x
               JOIN queen.queues qq ON qq.name = x.q
               JOIN queen.log_partitions lp ON lp.queue = x.q AND lp.name = x.p
              ORDER BY x.i
    LOOP
        IF r.probe AND r.win > 0 THEN
            dups := queen.buffered_duplicates(r.id, r.hashes, now_ts - make_interval(secs => r.win));
            IF dups IS NOT NULL THEN
                RAISE EXCEPTION 'duplicate transaction ids' USING ERRCODE = 'SLD01', DETAIL = (r.i - 1) || '|' || dups;
            END IF;
        END IF;
        INSERT INTO queen.push_buffer (partition_id, messages, blob, hashes, message_ids, buffered_at)
        VALUES (r.id, r.c, r.blob, r.hashes, r.ids, now_ts) RETURNING id INTO bid;
        -- a push all the same: partition cleanup (014) leaves the partition alone
        UPDATE queen.log_partitions SET last_write_at = now_ts WHERE id = r.id;
        IF r.probe THEN
            INSERT INTO queen.push_buffer_txns AS t (partition_id, hash, message_id, buffer_id, buffered_at)
            SELECT r.id, substring(r.hashes FROM k * 16 + 1 FOR 16), substring(r.ids FROM k * 16 + 1 FOR 16), bid, now_ts
              FROM generate_series(0, r.c - 1) AS k
            ON CONFLICT ON CONSTRAINT push_buffer_txns_pkey DO UPDATE   -- an expired repeat replaces the first
               SET message_id = excluded.message_id, buffer_id = excluded.buffer_id, buffered_at = excluded.buffered_at;
        END IF;
        idx := r.i - 1;
        partition_id := r.id;
        base_offset := NULL;
        created_at := now_ts;
        RETURN NEXT;
    END LOOP;
END $$;

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
                                                         p_hashes, p_ids, now_ts);
    END IF;
END $$;

-- The switch and what it holds.
CREATE FUNCTION queen.maintenance_status(OUT enabled boolean, OUT draining boolean, OUT buffered bigint,
                                         OUT oldest_buffered_at timestamptz, OUT updated_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT (s.value->>'enabled')::boolean, (s.value->>'draining')::boolean,
           (SELECT coalesce(sum(messages), 0) FROM queen.push_buffer),
           (SELECT min(buffered_at) FROM queen.push_buffer), s.updated_at
      FROM queen.system_state s WHERE s.key = 'maintenance_mode';
$$;

CREATE FUNCTION queen.maintenance_set(p_enabled boolean, OUT enabled boolean, OUT draining boolean,
                                      OUT buffered bigint, OUT oldest_buffered_at timestamptz,
                                      OUT updated_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE queen.system_state
       SET value = jsonb_build_object('enabled', p_enabled,
                                      'draining', NOT p_enabled AND EXISTS (SELECT 1 FROM queen.push_buffer)),
           updated_at = now()
     WHERE key = 'maintenance_mode';
    SELECT * INTO enabled, draining, buffered, oldest_buffered_at, updated_at FROM queen.maintenance_status();
END $$;

-- Moves up to p_limit buffered segments into the log, oldest first, and
-- returns the queues it appended to (with how many messages). One drainer
-- at a time across servers; nothing moves while maintenance is on. When the
-- buffer is empty the switch leaves "draining": the UPDATE waits for any
-- flush that buffered under FOR SHARE, and the buffer is looked at again
-- after it.
CREATE FUNCTION queen.drain_push_buffer(p_limit integer) RETURNS TABLE (queue text, messages bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    b     record;
    moved jsonb := '{}';
BEGIN
    IF NOT pg_try_advisory_xact_lock(7365698) THEN RETURN; END IF;
    IF (queen.maintenance_value()->>'enabled')::boolean THEN RETURN; END IF;
    FOR b IN SELECT pb.*, lp.queue AS q, lp.name AS p FROM queen.push_buffer pb
               JOIN queen.log_partitions lp ON lp.id = pb.partition_id
              ORDER BY pb.id LIMIT p_limit
    LOOP
        PERFORM queen.lock_partitions(ARRAY[b.q], ARRAY[b.p]);
        PERFORM queen.append_segments(ARRAY[b.q], ARRAY[b.p], ARRAY[b.messages], b.blob, ARRAY[length(b.blob)],
                                      b.hashes, b.message_ids, clock_timestamp());
        DELETE FROM queen.push_buffer WHERE id = b.id;
        moved := jsonb_set(moved, ARRAY[b.q], to_jsonb(coalesce((moved->>b.q)::bigint, 0) + b.messages));
    END LOOP;
    IF NOT EXISTS (SELECT 1 FROM queen.push_buffer) THEN
        UPDATE queen.system_state SET value = value || '{"draining": false}', updated_at = now()
         WHERE key = 'maintenance_mode' AND (value->>'draining')::boolean;
        IF FOUND AND EXISTS (SELECT 1 FROM queen.push_buffer) THEN
            UPDATE queen.system_state SET value = value || '{"draining": true}' WHERE key = 'maintenance_mode';
        END IF;
    END IF;
    RETURN QUERY SELECT m.key, m.value::bigint FROM jsonb_each_text(moved) AS m;
END $$;

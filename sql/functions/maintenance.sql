-- Maintenance mode: pushes go to queen.push_buffer while it is on, and are
-- drained into the log when it goes off.

-- The maintenance switch's value (NULL: no row).
CREATE OR REPLACE FUNCTION queen.maintenance_value() RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v jsonb;
BEGIN
    SELECT value INTO v FROM queen.system_state WHERE key = 'maintenance_mode';
    RETURN v;
END $$;

-- Whether a flush goes to the buffer. A flush that will buffer holds the
-- switch row FOR SHARE until it commits, so the drain cannot declare the
-- buffer empty in between (see drain_push_buffer); a flush that read "off"
-- needs no lock: nothing can be buffered while the switch says off.
CREATE OR REPLACE FUNCTION queen.flush_buffers() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v jsonb := queen.maintenance_value();
BEGIN
    IF NOT ((v->>'enabled')::boolean OR (v->>'draining')::boolean) THEN RETURN false; END IF;
    SELECT value INTO v FROM queen.system_state WHERE key = 'maintenance_mode' FOR SHARE;
    RETURN (v->>'enabled')::boolean OR (v->>'draining')::boolean;
END $$;

-- Holds a flush in the buffer (maintenance mode). Rows as append_segments,
-- with base_offset NULL: the messages have no offset yet.
CREATE OR REPLACE FUNCTION queen.buffer_flush(p_queues text[], p_partitions text[], p_counts integer[],
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
        -- a push all the same: partition cleanup leaves the partition alone
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

-- The switch and what it holds.
CREATE OR REPLACE FUNCTION queen.maintenance_status(OUT enabled boolean, OUT draining boolean, OUT buffered bigint,
                                         OUT oldest_buffered_at timestamptz, OUT updated_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT (s.value->>'enabled')::boolean, (s.value->>'draining')::boolean,
           (SELECT coalesce(sum(messages), 0) FROM queen.push_buffer),
           (SELECT min(buffered_at) FROM queen.push_buffer), s.updated_at
      FROM queen.system_state s WHERE s.key = 'maintenance_mode';
$$;

CREATE OR REPLACE FUNCTION queen.maintenance_set(p_enabled boolean, OUT enabled boolean, OUT draining boolean,
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
CREATE OR REPLACE FUNCTION queen.drain_push_buffer(p_limit integer) RETURNS TABLE (queue text, messages bigint)
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
                                      b.hashes, b.message_ids, ARRAY[true], clock_timestamp());
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

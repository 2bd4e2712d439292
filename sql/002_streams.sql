-- 002_streams: the round trips of the hot path, one SQL function each.
-- C does framing, compression and hashing; these functions do locking and
-- bookkeeping under the partition or cursor row lock.

CREATE FUNCTION queen.default_options() RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT '{"leaseTime": 300, "retryLimit": 3, "retryDelay": 1000, "priority": 0,
             "ttl": 3600, "maxSize": 0, "deadLetterQueue": true,
             "dlqAfterMaxRetries": true, "delayedProcessing": 0, "windowBuffer": 0,
             "retentionEnabled": false, "retentionSeconds": 0,
             "completedRetentionSeconds": 0, "maxWaitTimeSeconds": 0,
             "dedupWindowSeconds": 3600, "encryptionEnabled": false}'::jsonb
$$;

-- Index (0-based) of the 16-byte hash h among the aligned 16-byte entries of
-- hashes, or -1. position() may match across an entry boundary, so misaligned
-- hits are skipped.
CREATE FUNCTION queen.hash_index(hashes bytea, h bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    base integer := 0;
    pos  integer;
BEGIN
    LOOP
        pos := position(h IN substring(hashes FROM base + 1));
        IF pos = 0 THEN RETURN -1; END IF;
        IF (base + pos - 1) % 16 = 0 THEN RETURN (base + pos - 1) / 16; END IF;
        base := base + pos;
    END LOOP;
END $$;

CREATE FUNCTION queen.ensure_partition(p_queue text, p_partition text) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO queen.queues (name, options) VALUES (p_queue, queen.default_options())
        ON CONFLICT DO NOTHING;
    INSERT INTO queen.log_partitions (queue, name) VALUES (p_queue, p_partition)
        ON CONFLICT DO NOTHING;
$$;

-- Frames of p_hashes already pushed to the partition inside the window:
-- "frame:message-id-hex,..." or NULL. Walks sidecar rows newest first and stops
-- at the window's edge (created_at never decreases with offset).
CREATE FUNCTION queen.find_duplicates(p_partition uuid, p_txns_start bigint,
                                      p_cutoff timestamptz, p_hashes bytea)
RETURNS text LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    r      record;
    n      integer := length(p_hashes) / 16;
    found  integer;
    seen   boolean[] := array_fill(false, ARRAY[n]);
    result text;
BEGIN
    FOR r IN SELECT t.created_at, t.hashes, t.message_ids FROM queen.log_txns t
             WHERE t.partition_id = p_partition AND t.base_offset >= p_txns_start
             ORDER BY t.base_offset DESC
    LOOP
        EXIT WHEN r.created_at < p_cutoff;
        FOR i IN 0 .. n - 1 LOOP
            CONTINUE WHEN seen[i + 1];
            found := queen.hash_index(r.hashes, substring(p_hashes FROM i * 16 + 1 FOR 16));
            CONTINUE WHEN found < 0;
            seen[i + 1] := true;
            result := concat_ws(',', result,
                i || ':' || encode(substring(r.message_ids FROM found * 16 + 1 FOR 16), 'hex'));
        END LOOP;
    END LOOP;
    RETURN result;
END $$;

-- Appends one segment to a partition (created on first use). Offsets and
-- created_at are assigned under the partition row lock, so created_at never
-- decreases with offset. With p_probe, a segment holding a transactionId
-- already pushed inside the queue's dedupWindowSeconds is refused with
-- SQLSTATE SLD01 and the duplicates ("frame:message-id-hex,...") as DETAIL,
-- which aborts the whole flush; the caller re-encodes without them and
-- retries, so a flush stays all-or-nothing.
CREATE FUNCTION queen.push_segment(p_queue text, p_partition text, p_count integer,
                                   p_blob bytea, p_hashes bytea, p_ids bytea,
                                   p_probe boolean,
                                   OUT partition_id uuid, OUT base_offset bigint,
                                   OUT created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    part   queen.log_partitions%ROWTYPE;
    win    integer;
    dups   text;
BEGIN
    SELECT * INTO part FROM queen.log_partitions p
     WHERE p.queue = p_queue AND p.name = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM queen.ensure_partition(p_queue, p_partition);
        SELECT * INTO part FROM queen.log_partitions p
         WHERE p.queue = p_queue AND p.name = p_partition FOR UPDATE;
    END IF;
    partition_id := part.id;
    created_at := clock_timestamp();
    IF p_probe THEN
        SELECT (q.options->>'dedupWindowSeconds')::integer INTO win
          FROM queen.queues q WHERE q.name = p_queue;
        IF win > 0 THEN
            dups := queen.find_duplicates(part.id, part.txns_start,
                                          created_at - make_interval(secs => win), p_hashes);
            IF dups IS NOT NULL THEN
                RAISE EXCEPTION 'duplicate transaction ids' USING ERRCODE = 'SLD01', DETAIL = dups;
            END IF;
        END IF;
    END IF;
    base_offset := part.last_offset + 1;
    UPDATE queen.log_partitions SET last_offset = last_offset + p_count, last_write_at = created_at
     WHERE id = part.id;
    INSERT INTO queen.log_segments VALUES (part.id, base_offset, base_offset + p_count - 1, created_at, p_blob);
    INSERT INTO queen.log_txns VALUES (part.id, base_offset, created_at, p_hashes, p_ids);
END $$;

-- Creates or updates a queue. p_patch holds only the options given; a key
-- given as null returns to its default. Tags change only when given.
CREATE FUNCTION queen.configure(p_queue text, p_namespace text, p_task text, p_patch jsonb,
                                OUT namespace text, OUT task text, OUT options jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    defaults jsonb := queen.default_options();
    reset    text[];
BEGIN
    SELECT coalesce(array_agg(key), '{}') INTO reset
      FROM jsonb_each(p_patch) WHERE jsonb_typeof(value) = 'null';
    INSERT INTO queen.queues AS q (name, namespace, task, options)
    VALUES (p_queue, p_namespace, p_task, defaults || jsonb_strip_nulls(p_patch))
    ON CONFLICT (name) DO UPDATE SET
        namespace = coalesce(p_namespace, q.namespace),
        task = coalesce(p_task, q.task),
        options = defaults || (q.options - reset) || jsonb_strip_nulls(p_patch)
    RETURNING q.namespace, q.task, q.options INTO namespace, task, options;
END $$;

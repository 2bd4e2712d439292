-- 004_ack: acknowledgement is an offset commit. transactionIds arrive as
-- xxh3-128 hashes and resolve to offsets through the sidecar; the cursor then
-- moves per the ack contract (docs/api.md).

-- Offset of the frame whose hash is p_hash among sidecar rows with base
-- offsets in [p_lo, p_hi], searching newest first; NULL when absent.
CREATE FUNCTION queen.resolve_offset(p_partition uuid, p_lo bigint, p_hi bigint, p_hash bytea)
RETURNS bigint LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    r record;
    i integer;
BEGIN
    FOR r IN SELECT t.base_offset, t.hashes FROM queen.log_txns t
             WHERE t.partition_id = p_partition AND t.base_offset BETWEEN p_lo AND p_hi
             ORDER BY t.base_offset DESC
    LOOP
        i := queen.hash_index(r.hashes, p_hash);
        IF i >= 0 THEN RETURN r.base_offset + i; END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- The base offset of the sidecar row covering offset p_offset (or the lowest
-- retained one), where a search of the leased span starts.
CREATE FUNCTION queen.span_floor(p_partition uuid, p_offset bigint, p_txns_start bigint)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT greatest(p_txns_start, coalesce(
        (SELECT max(t.base_offset) FROM queen.log_txns t
          WHERE t.partition_id = p_partition AND t.base_offset <= p_offset), 0))
$$;

-- Per-item outcome rows of ack_partition; dlq_* columns are set when the
-- item's message must be copied to the dead-letter queue by the caller
-- (the payload is inside a compressed segment that only C can read).
CREATE TYPE queen.ack_result AS (
    idx integer, success boolean, error text, lease_released boolean, dlq boolean,
    noop boolean, dropped boolean, dlq_offset bigint, dlq_base bigint,
    dlq_created timestamptz, dlq_blob bytea
);

-- Resolves one item against the locked cursor: its offset, or an error.
CREATE FUNCTION queen.ack_locate(c queen.log_consumers, part queen.log_partitions,
                                 p_hash bytea, p_lease uuid, p_status text,
                                 OUT off bigint, OUT error text, OUT noop boolean)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
BEGIN
    noop := false;
    IF p_lease IS NOT NULL AND (c.lease_id IS DISTINCT FROM p_lease OR c.lease_expires <= now()) THEN
        error := 'invalid or expired lease'; RETURN;
    END IF;
    IF c.lease_end IS NOT NULL THEN
        off := queen.resolve_offset(part.id, queen.span_floor(part.id, c.committed + 1, part.txns_start),
                                    c.lease_end, p_hash);
        IF off > c.committed AND off <= c.lease_end THEN RETURN; END IF;
    END IF;
    off := queen.resolve_offset(part.id, part.txns_start, greatest(c.committed, -1), p_hash);
    IF off IS NULL THEN
        error := 'unresolvable: transaction id not found in the partition';
    ELSIF off > c.committed THEN
        error := 'unresolvable: message is not leased'; off := NULL;
    ELSIF p_status = 'c' THEN
        noop := true;
    ELSE
        error := 'already committed';
    END IF;
END $$;

-- The segment covering p_offset, if retention has not removed it.
CREATE FUNCTION queen.covering_segment(p_partition uuid, p_offset bigint,
                                       OUT base bigint, OUT created timestamptz, OUT blob bytea)
LANGUAGE sql STABLE AS $$
    SELECT s.base_offset, s.created_at, s.blob FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset <= p_offset AND s.end_offset >= p_offset
       AND p_offset >= (SELECT log_start FROM queen.log_partitions WHERE id = p_partition)
     ORDER BY s.base_offset DESC LIMIT 1
$$;

CREATE FUNCTION queen.ack_partition(p_group text, p_partition uuid, p_items jsonb)
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c        queen.log_consumers%ROWTYPE;
    part     queen.log_partitions%ROWTYPE;
    opts     jsonb;
    it       record;
    loc      record;
    v_off    bigint;
    res      queen.ack_result[] := '{}';
    offs     bigint[] := '{}';
    sts      text[] := '{}';
    r        queen.ack_result;
    done_max bigint;           -- highest offset acked completed in the span
    stop_at  bigint;           -- lowest explicit failed/retry/dlq offset
    stop_st  text;
    target   bigint;
    release  boolean := false;
    retries  integer;
    seg      record;
    dlq_on   boolean;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = part.queue;
    FOR it IN SELECT (x->>'i')::integer AS i, decode(x->>'h', 'hex') AS h, x->>'s' AS s,
                     (x->>'l')::uuid AS l
                FROM jsonb_array_elements(p_items) x
    LOOP
        r := ROW(it.i, false, NULL, false, false, false, false, NULL, NULL, NULL, NULL);
        v_off := NULL;
        IF part.id IS NULL THEN
            r.error := 'unresolvable: unknown partition';
        ELSIF c.partition_id IS NULL THEN
            r.error := 'unresolvable: the consumer group has no cursor on this partition';
        ELSE
            loc := queen.ack_locate(c, part, it.h, it.l, it.s);
            r.error := loc.error; r.noop := loc.noop; r.success := loc.noop; v_off := loc.off;
            IF v_off > c.committed AND loc.error IS NULL THEN
                r.success := true;
                IF it.s = 'c' THEN done_max := greatest(done_max, v_off);
                ELSIF stop_at IS NULL OR v_off < stop_at THEN stop_at := v_off; stop_st := it.s;
                END IF;
            END IF;
        END IF;
        res := res || r; offs := offs || v_off; sts := sts || it.s;
    END LOOP;
    IF c.partition_id IS NULL OR part.id IS NULL THEN RETURN QUERY SELECT * FROM unnest(res); RETURN; END IF;

    -- Implicit ack up to the highest completed offset, never past an explicit signal.
    target := greatest(c.committed, least(coalesce(done_max, c.committed), coalesce(stop_at - 1, done_max, c.committed)));
    retries := CASE WHEN target > c.committed THEN 0 ELSE c.retry_count END;
    dlq_on := coalesce((opts->>'deadLetterQueue')::boolean, true) OR coalesce((opts->>'dlqAfterMaxRetries')::boolean, true);

    IF stop_st = 'r' THEN
        release := true;
    ELSIF stop_st = 'f' AND retries < (opts->>'retryLimit')::integer THEN
        retries := retries + 1; release := true;
    ELSIF stop_st IS NOT NULL AND NOT dlq_on THEN
        target := stop_at; retries := 0;
        FOR k IN 1 .. array_length(res, 1) LOOP
            IF offs[k] = stop_at AND sts[k] <> 'c' THEN res[k].dropped := true; END IF;
        END LOOP;
    ELSIF stop_st IS NOT NULL THEN
        seg := queen.covering_segment(p_partition, stop_at);
        FOR k IN 1 .. array_length(res, 1) LOOP
            CONTINUE WHEN offs[k] IS DISTINCT FROM stop_at OR sts[k] = 'c';
            IF seg.base IS NULL THEN
                res[k].success := false; res[k].error := 'dlq rejected'; release := true;
            ELSE
                res[k].dlq_offset := stop_at; res[k].dlq_base := seg.base;
                res[k].dlq_created := seg.created; res[k].dlq_blob := seg.blob;
            END IF;
            EXIT;
        END LOOP;
    END IF;

    release := release OR target >= c.lease_end;
    UPDATE queen.log_consumers SET committed = target, retry_count = retries,
           total_consumed = total_consumed + (target - c.committed), last_activity_at = now(),
           lease_id = CASE WHEN release THEN NULL ELSE lease_id END,
           lease_end = CASE WHEN release THEN NULL ELSE lease_end END,
           lease_expires = CASE WHEN release THEN NULL ELSE lease_expires END
     WHERE partition_id = p_partition AND consumer_group = p_group;
    FOR k IN 1 .. array_length(res, 1) LOOP
        res[k].lease_released := release;
    END LOOP;
    RETURN QUERY SELECT * FROM unnest(res);
END $$;

-- Acks a batch: items [{"i": index, "g": consumerGroup, "p": partitionId,
-- "h": hash hex, "s": c|f|r|d, "l": leaseId|null}]. Cursors are locked in
-- (partition, group) order, so concurrent batches cannot deadlock.
CREATE FUNCTION queen.ack(p_items jsonb)
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
DECLARE
    k record;
BEGIN
    FOR k IN SELECT DISTINCT (x->>'p')::uuid AS pid, x->>'g' AS grp
               FROM jsonb_array_elements(p_items) x ORDER BY 1, 2
    LOOP
        RETURN QUERY SELECT * FROM queen.ack_partition(k.grp, k.pid,
            (SELECT jsonb_agg(x) FROM jsonb_array_elements(p_items) x
              WHERE (x->>'p')::uuid = k.pid AND x->>'g' = k.grp));
    END LOOP;
END $$;

-- Second half of a dead-letter hand-off: stores the full copy C decoded from
-- the covering segment and moves the cursor past it (committing what the
-- leased batch held below it), unless the cursor already passed it. Returns
-- whether the lease was released, or an error.
CREATE FUNCTION queen.dead_letter(p_group text, p_partition uuid, p_offset bigint,
                                  p_message_id uuid, p_transaction_id text, p_trace_id uuid,
                                  p_payload bytea, p_error text, p_created timestamptz,
                                  OUT lease_released boolean, OUT error text)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c    queen.log_consumers%ROWTYPE;
    part queen.log_partitions%ROWTYPE;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    IF c.partition_id IS NULL OR c.committed >= p_offset THEN
        error := 'already committed'; lease_released := false; RETURN;
    END IF;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    INSERT INTO queen.log_dlq (queue, partition_id, partition, consumer_group, message_offset,
                               message_id, transaction_id, trace_id, payload, error_message,
                               retry_count, created_at)
    VALUES (part.queue, p_partition, part.name, p_group, p_offset, p_message_id,
            p_transaction_id, p_trace_id, p_payload, p_error, c.retry_count, p_created);
    lease_released := c.lease_end IS NULL OR p_offset >= c.lease_end;
    UPDATE queen.log_consumers SET committed = p_offset, retry_count = 0,
           total_consumed = total_consumed + (p_offset - c.committed), last_activity_at = now(),
           lease_id = CASE WHEN lease_released THEN NULL ELSE lease_id END,
           lease_end = CASE WHEN lease_released THEN NULL ELSE lease_end END,
           lease_expires = CASE WHEN lease_released THEN NULL ELSE lease_expires END
     WHERE partition_id = p_partition AND consumer_group = p_group;
END $$;

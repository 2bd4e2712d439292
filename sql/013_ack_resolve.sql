-- 013_ack_resolve: an ack batch resolves all its transactionIds in the
-- leased span with one set-based join against the span's sidecar rows,
-- instead of one sidecar scan per item; items not found there (below the
-- cursor, or unknown) still take the per-item search.

-- Item index -> offset for the items whose hash is in (committed, lease_end].
CREATE FUNCTION queen.span_offsets(c queen.log_consumers, part queen.log_partitions, p_items jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    lo     bigint;
    result jsonb;
BEGIN
    IF c.lease_end IS NULL THEN RETURN '{}'; END IF;
    lo := queen.span_floor(part.id, c.committed + 1, part.txns_start);   -- once, so the scan is an index range
    SELECT coalesce(jsonb_object_agg(it.i, f.off), '{}') INTO result
      FROM (SELECT x->>'i' AS i, decode(x->>'h', 'hex') AS h FROM jsonb_array_elements(p_items) x) it
      JOIN (SELECT r.base_offset + k AS off, substring(r.hashes FROM k * 16 + 1 FOR 16) AS h
              FROM queen.log_txns r,   -- only the frames inside the span, however long the segment
                   generate_series(greatest(0, c.committed + 1 - r.base_offset)::integer,
                                   least(length(r.hashes) / 16 - 1, c.lease_end - r.base_offset)::integer) AS k
             WHERE r.partition_id = part.id AND r.base_offset BETWEEN lo AND c.lease_end) f
        ON f.h = it.h;
    RETURN result;
END $$;

-- ack_locate with the offset span_offsets found (NULL: not in the span).
CREATE FUNCTION queen.ack_locate(c queen.log_consumers, part queen.log_partitions,
                                 p_hash bytea, p_lease uuid, p_status text, p_in_span bigint,
                                 OUT off bigint, OUT error text, OUT noop boolean)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
BEGIN
    noop := false;
    IF p_lease IS NOT NULL AND (c.lease_id IS DISTINCT FROM p_lease OR c.lease_expires <= now()) THEN
        error := 'invalid or expired lease'; RETURN;
    END IF;
    IF p_in_span IS NOT NULL THEN off := p_in_span; RETURN; END IF;
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

CREATE OR REPLACE FUNCTION queen.ack_partition(p_group text, p_partition uuid, p_items jsonb)
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
    in_span  jsonb;            -- item index -> offset, for items found in the leased span
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = part.queue;
    in_span := queen.span_offsets(c, part, p_items);
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
            v_off := (in_span->>(it.i::text))::bigint;
            IF v_off IS NULL OR it.l IS NOT NULL THEN   -- the common case skips the call
                loc := queen.ack_locate(c, part, it.h, it.l, it.s, v_off);
                r.error := loc.error; r.noop := loc.noop; r.success := loc.noop; v_off := loc.off;
            END IF;
            IF v_off > c.committed AND r.error IS NULL THEN
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

-- The per-item form is no longer called.
DROP FUNCTION queen.ack_locate(queen.log_consumers, queen.log_partitions, bytea, uuid, text);

-- 013_ack_resolve: an ack batch resolves all its transactionIds in the
-- leased span with one set-based join against the span's sidecar rows,
-- instead of one sidecar scan per item; items not found there (below the
-- cursor, or unknown) still take the per-item search. The rules are those
-- of 004, kept in scalar arrays rather than an array of composites.

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

-- Where an item outside the leased span stands: below the cursor (completed:
-- a noop; otherwise already committed), above it but not leased, or nowhere.
CREATE FUNCTION queen.ack_locate(c queen.log_consumers, part queen.log_partitions,
                                 p_hash bytea, p_status text,
                                 OUT off bigint, OUT error text, OUT noop boolean)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
BEGIN
    noop := false;
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

-- The contract's rules as in 004, with the per-item work set-based: items
-- are read once into parallel arrays, the leased span resolves them in one
-- join, and only items outside it take ack_locate's search.
CREATE OR REPLACE FUNCTION queen.ack_partition(p_group text, p_partition uuid, p_items jsonb)
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c        queen.log_consumers%ROWTYPE;
    part     queen.log_partitions%ROWTYPE;
    opts     jsonb;
    loc      record;
    idx      integer[];        -- per item, in request order:
    hs       bytea[];          --   hash
    sts      text[];           --   status c|f|r|d
    leases   uuid[];           --   leaseId given
    offs     bigint[];         --   resolved offset (NULL: none)
    errs     text[];           --   error
    noops    boolean[];        --   at or below the cursor, completed
    oks      boolean[];        --   success
    flags    text[];           --   'dropped' | 'dlq' | NULL
    done_max bigint;           -- highest offset acked completed in the span
    stop_at  bigint;           -- lowest explicit failed/retry/dlq offset
    stop_st  text;
    target   bigint;
    release  boolean := false;
    retries  integer;
    seg      record;           -- the segment covering stop_at, for a dead letter
    seg_base bigint;
    seg_at   timestamptz;
    seg_blob bytea;
    dlq_on   boolean;
    n        integer;
    in_span  jsonb;            -- item index -> offset inside the leased span
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = part.queue;
    in_span := CASE WHEN c.partition_id IS NULL THEN '{}'::jsonb ELSE queen.span_offsets(c, part, p_items) END;
    SELECT array_agg(x.i ORDER BY x.ord), array_agg(x.h ORDER BY x.ord), array_agg(x.s ORDER BY x.ord),
           array_agg(x.l ORDER BY x.ord), array_agg(x.off ORDER BY x.ord)
      INTO idx, hs, sts, leases, offs
      FROM (SELECT e.ord, (e.x->>'i')::integer AS i, decode(e.x->>'h', 'hex') AS h, e.x->>'s' AS s,
                   (e.x->>'l')::uuid AS l, (in_span->>(e.x->>'i'))::bigint AS off
              FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(x, ord)) x;
    n := array_length(idx, 1);
    errs := array_fill(NULL::text, ARRAY[n]); noops := array_fill(false, ARRAY[n]);
    oks := array_fill(false, ARRAY[n]); flags := array_fill(NULL::text, ARRAY[n]);
    FOR k IN 1 .. n LOOP
        IF part.id IS NULL THEN
            errs[k] := 'unresolvable: unknown partition'; offs[k] := NULL; CONTINUE;
        ELSIF c.partition_id IS NULL THEN
            errs[k] := 'unresolvable: the consumer group has no cursor on this partition'; offs[k] := NULL; CONTINUE;
        END IF;
        IF leases[k] IS NOT NULL AND (c.lease_id IS DISTINCT FROM leases[k] OR c.lease_expires <= now()) THEN
            errs[k] := 'invalid or expired lease'; offs[k] := NULL; CONTINUE;
        END IF;
        IF offs[k] IS NULL THEN   -- outside the leased span: the per-item search
            loc := queen.ack_locate(c, part, hs[k], sts[k]);
            offs[k] := loc.off; errs[k] := loc.error; noops[k] := loc.noop; oks[k] := loc.noop;
        END IF;
        CONTINUE WHEN errs[k] IS NOT NULL OR NOT offs[k] > c.committed;
        oks[k] := true;
        IF sts[k] = 'c' THEN done_max := greatest(done_max, offs[k]);
        ELSIF stop_at IS NULL OR offs[k] < stop_at THEN stop_at := offs[k]; stop_st := sts[k];
        END IF;
    END LOOP;
    IF c.partition_id IS NULL OR part.id IS NULL THEN
        RETURN QUERY SELECT idx[k], false, errs[k], false, false, false, false, NULL::bigint, NULL::bigint,
                            NULL::timestamptz, NULL::bytea FROM generate_subscripts(idx, 1) k;
        RETURN;
    END IF;

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
        FOR k IN 1 .. n LOOP
            IF offs[k] = stop_at AND sts[k] <> 'c' THEN flags[k] := 'dropped'; END IF;
        END LOOP;
    ELSIF stop_st IS NOT NULL THEN
        seg := queen.covering_segment(p_partition, stop_at);
        FOR k IN 1 .. n LOOP
            CONTINUE WHEN offs[k] IS DISTINCT FROM stop_at OR sts[k] = 'c';
            IF seg.base IS NULL THEN oks[k] := false; errs[k] := 'dlq rejected'; release := true;
            ELSE flags[k] := 'dlq'; seg_base := seg.base; seg_at := seg.created; seg_blob := seg.blob;
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
    RETURN QUERY
        SELECT idx[k], oks[k], errs[k], release, false, noops[k], flags[k] IS NOT DISTINCT FROM 'dropped',
               CASE WHEN flags[k] = 'dlq' THEN stop_at END, CASE WHEN flags[k] = 'dlq' THEN seg_base END,
               CASE WHEN flags[k] = 'dlq' THEN seg_at END, CASE WHEN flags[k] = 'dlq' THEN seg_blob END
          FROM generate_subscripts(idx, 1) k;
END $$;

-- 004's form, with the lease check and span search now done by the caller.
DROP FUNCTION queen.ack_locate(queen.log_consumers, queen.log_partitions, bytea, uuid, text);

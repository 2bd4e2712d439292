-- Acknowledgments: items resolved to offsets, cursors moved, retries and dead
-- letters decided.

CREATE OR REPLACE FUNCTION queen.ack(p_groups text[], p_partitions uuid[], p_hashes bytea,
                          p_statuses text[], p_leases uuid[], p_offsets bigint[] DEFAULT NULL)
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
DECLARE
    k record;
BEGIN
    FOR k IN SELECT i.partition_id, i.consumer_group, array_agg(i ORDER BY i.idx) AS items,
                    array_agg(p_offsets[i.idx + 1] ORDER BY i.idx) AS offsets,
                    min(i.lease_id::text)::uuid AS lease,
                    bool_and(i.status = 'completed' AND p_offsets[i.idx + 1] IS NOT NULL) AND
                        count(i.lease_id) = count(*) AND count(DISTINCT i.lease_id) = 1 AS known
               FROM queen.ack_items(p_groups, p_partitions, p_hashes, p_statuses, p_leases) i
              GROUP BY 1, 2 ORDER BY 1, i.consumer_group COLLATE "C"   -- byte order, as gathered acks lock (streams/ack.c)
    LOOP
        IF k.known THEN
            RETURN QUERY SELECT * FROM queen.ack_span(k.consumer_group, k.partition_id, k.lease, k.items, k.offsets);
        ELSE
            RETURN QUERY SELECT * FROM queen.ack_partition(k.consumer_group, k.partition_id, k.items);
        END IF;
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION queen.ack_items(p_groups text[], p_partitions uuid[], p_hashes bytea,
                                p_statuses text[], p_leases uuid[])
RETURNS SETOF queen.ack_item LANGUAGE sql IMMUTABLE AS $$
    SELECT (u.ord - 1)::integer, u.grp, u.pid, substring(p_hashes FROM (u.ord - 1)::integer * 16 + 1 FOR 16),
           u.status, u.lease
      FROM unnest(p_groups, p_partitions, p_statuses, p_leases) WITH ORDINALITY AS u(grp, pid, status, lease, ord)
$$;

-- queen.ack's fast path for one (group, partition), as result rows; the
-- general path answers when ack_known does not apply.
CREATE OR REPLACE FUNCTION queen.ack_span(p_group text, p_partition uuid, p_lease uuid, p_items queen.ack_item[],
                               p_offsets bigint[])
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    k record;
BEGIN
    SELECT * INTO k FROM queen.ack_known(p_group, p_partition, p_lease,
                                         (SELECT min(o) FROM unnest(p_offsets) o),
                                         (SELECT max(o) FROM unnest(p_offsets) o));
    IF NOT k.applied THEN
        RETURN QUERY SELECT * FROM queen.ack_partition(p_group, p_partition, p_items);
        RETURN;
    END IF;
    RETURN QUERY
        SELECT (p_items[i]).idx, true, NULL::text, k.released, false, p_offsets[i] <= k.committed_before, false,
               NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::bytea
          FROM generate_subscripts(p_items, 1) AS i
         ORDER BY 1;
END $$;

-- The fast path's decision and commit for one (group, partition): the
-- items, all completed and handed out under p_lease, lie at offsets
-- p_lo..p_hi (their lowest and highest). Applied only while p_lease is the
-- cursor's live lease, p_hi inside its span and p_lo at or above the
-- sidecar's watermark: a hash the sidecar no longer holds makes its ack
-- unresolvable (the ack window), however well this server remembers the
-- offset. Otherwise nothing changes and applied is false: the caller takes
-- the general path. committed_before is the cursor before the commit (an
-- item at or below it is a noop, as queen.ack_locate says), released
-- whether the lease was given back. The server calls it directly for an
-- ack of one lease's items (STMT_ACK_KNOWN); queen.ack through ack_span.
CREATE OR REPLACE FUNCTION queen.ack_known(p_group text, p_partition uuid, p_lease uuid, p_lo bigint, p_hi bigint,
                                OUT applied boolean, OUT committed_before bigint, OUT released boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c          queen.log_consumers%ROWTYPE;
    txns_floor bigint;
    target     bigint;
BEGIN
    applied := false;
    released := false;
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    SELECT txns_start INTO txns_floor FROM queen.log_partitions WHERE id = p_partition;
    IF c.partition_id IS NULL OR c.lease_id IS DISTINCT FROM p_lease OR c.lease_expires <= now()
       OR c.lease_end IS NULL OR p_hi > c.lease_end OR txns_floor IS NULL OR p_lo < txns_floor THEN
        RETURN;
    END IF;
    committed_before := c.committed;
    target := greatest(c.committed, p_hi);
    released := target >= c.lease_end;
    -- The general path's update for an all-completed batch (ack_partition, step 4).
    UPDATE queen.log_consumers SET committed = target,
           retry_count = CASE WHEN target > c.committed THEN 0 ELSE retry_count END,
           total_consumed = total_consumed + (target - c.committed), last_activity_at = now(),
           lease_id = CASE WHEN released THEN NULL ELSE lease_id END,
           lease_end = CASE WHEN released THEN NULL ELSE lease_end END,
           lease_expires = CASE WHEN released THEN NULL ELSE lease_expires END
     WHERE partition_id = p_partition AND consumer_group = p_group;
    applied := true;
END $$;

-- The ack contract for one (group, partition), in four steps: resolve the
-- items (ack_resolve); find the highest completed offset and the lowest
-- explicit signal (failed, retry, dlq) above the cursor; decide what that
-- signal does (retry in place, drop, or dead-letter) and where the cursor
-- goes; move the cursor. One row per item, in request order.
CREATE OR REPLACE FUNCTION queen.ack_partition(p_group text, p_partition uuid, p_items queen.ack_item[])
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c        queen.log_consumers%ROWTYPE;
    part     queen.log_partitions%ROWTYPE;
    opts     jsonb;
    items    queen.ack_resolved[];
    done_max bigint;           -- highest offset acked completed in the span
    stop_idx integer;          -- the explicit signal with the lowest offset (its first item)
    stop_off bigint;
    stop_st  text;
    fate     text;             -- what happens to it: 'dropped' | 'dlq' | 'dlq rejected' | NULL
    seg_base bigint;           -- the segment covering stop_off, for a dead letter
    seg_at   timestamptz;
    seg_blob bytea;
    target   bigint;           -- where the cursor goes
    retries  integer;
    release  boolean := false;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    IF part.id IS NULL OR c.partition_id IS NULL THEN
        RETURN QUERY SELECT i.idx, false, CASE WHEN part.id IS NULL THEN 'unresolvable: unknown partition'
                                          ELSE 'unresolvable: the consumer group has no cursor on this partition' END,
                            false, false, false, false, NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::bytea
                       FROM unnest(p_items) i ORDER BY i.idx;
        RETURN;
    END IF;
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = part.queue;

    -- 1. Resolve. 2. What moves the cursor: only items above it without an error.
    items := ARRAY(SELECT queen.ack_resolve(c, part, p_items));
    SELECT max(i.off) INTO done_max FROM unnest(items) i
     WHERE i.error IS NULL AND i.off > c.committed AND i.status = 'completed';
    SELECT i.idx, i.off, i.status INTO stop_idx, stop_off, stop_st FROM unnest(items) i
     WHERE i.error IS NULL AND i.off > c.committed AND i.status <> 'completed'
     ORDER BY i.off, i.idx LIMIT 1;

    -- 3. Implicit ack up to the highest completed offset, never past an explicit signal.
    target := greatest(c.committed, least(coalesce(done_max, c.committed), coalesce(stop_off - 1, done_max, c.committed)));
    retries := CASE WHEN target > c.committed THEN 0 ELSE c.retry_count END;
    IF stop_st = 'retry' THEN
        release := true;
    ELSIF stop_st = 'failed' AND retries < (opts->>'retryLimit')::integer THEN
        retries := retries + 1; release := true;
    ELSIF stop_st IS NOT NULL AND NOT (coalesce((opts->>'deadLetterQueue')::boolean, true)
                                           OR coalesce((opts->>'dlqAfterMaxRetries')::boolean, true)) THEN
        fate := 'dropped'; target := stop_off; retries := 0;
    ELSIF stop_st IS NOT NULL THEN   -- the cursor stays below it; queen.dead_letter moves it
        SELECT s.base, s.created, s.blob INTO seg_base, seg_at, seg_blob
          FROM queen.covering_segment(p_partition, stop_off) s;
        IF seg_base IS NULL THEN fate := 'dlq rejected'; release := true; ELSE fate := 'dlq'; END IF;
    END IF;

    -- 4. Move the cursor.
    release := release OR target >= c.lease_end;
    UPDATE queen.log_consumers SET committed = target, retry_count = retries,
           total_consumed = total_consumed + (target - c.committed), last_activity_at = now(),
           lease_id = CASE WHEN release THEN NULL ELSE lease_id END,
           lease_end = CASE WHEN release THEN NULL ELSE lease_end END,
           lease_expires = CASE WHEN release THEN NULL ELSE lease_expires END
     WHERE partition_id = p_partition AND consumer_group = p_group;

    -- A drop marks every non-completed item of the stopping offset; a
    -- dead-letter hand-off (or its rejection) only the first of them.
    RETURN QUERY
        SELECT i.idx, i.error IS NULL AND m.mark IS DISTINCT FROM 'dlq rejected',
               CASE WHEN m.mark = 'dlq rejected' THEN m.mark ELSE i.error END,
               release, false, i.noop, m.mark IS NOT DISTINCT FROM 'dropped',
               CASE WHEN m.mark = 'dlq' THEN stop_off END, CASE WHEN m.mark = 'dlq' THEN seg_base END,
               CASE WHEN m.mark = 'dlq' THEN seg_at END, CASE WHEN m.mark = 'dlq' THEN seg_blob END
          FROM unnest(items) i,
               LATERAL (SELECT CASE WHEN i.idx = stop_idx
                                      OR (fate = 'dropped' AND i.off = stop_off AND i.status <> 'completed')
                                    THEN fate END AS mark) m
         ORDER BY i.idx;
END $$;

-- Resolves each item of one (group, partition) to an offset: a lease named
-- must be the cursor's live one; the leased span resolves most items in one
-- join (span_offsets), and only the rest take ack_locate's search. In
-- request order.
CREATE OR REPLACE FUNCTION queen.ack_resolve(c queen.log_consumers, part queen.log_partitions, p_items queen.ack_item[])
RETURNS SETOF queen.ack_resolved LANGUAGE plpgsql STABLE AS $$
DECLARE
    it  record;
    loc record;
    res queen.ack_resolved;
BEGIN
    FOR it IN SELECT i.idx, i.hash, i.status, i.lease_id, s.off
                FROM unnest(p_items) i LEFT JOIN queen.span_offsets(c, part, p_items) s ON s.idx = i.idx
               ORDER BY i.idx
    LOOP
        res := ROW(it.idx, it.status, NULL, NULL, false);
        IF it.lease_id IS NOT NULL AND (c.lease_id IS DISTINCT FROM it.lease_id OR c.lease_expires <= now()) THEN
            res.error := 'invalid or expired lease';
        ELSIF it.off IS NOT NULL THEN
            res.off := it.off;
        ELSE
            loc := queen.ack_locate(c, part, it.hash, it.status);
            res.off := loc.off; res.error := loc.error; res.noop := loc.noop;
        END IF;
        RETURN NEXT res;
    END LOOP;
END $$;

-- Item index -> offset for the items whose hash is in (committed, lease_end]:
-- one set-based join against the span's sidecar rows for the whole batch,
-- rather than one sidecar scan per item.
CREATE OR REPLACE FUNCTION queen.span_offsets(c queen.log_consumers, part queen.log_partitions, p_items queen.ack_item[])
RETURNS TABLE (idx integer, off bigint) LANGUAGE plpgsql STABLE AS $$
DECLARE
    lo bigint;
BEGIN
    IF c.lease_end IS NULL THEN RETURN; END IF;
    lo := queen.span_floor(part.id, c.committed + 1, part.txns_start);   -- once, so the scan is an index range
    RETURN QUERY
        SELECT it.idx, f.off
          FROM unnest(p_items) it
          JOIN (SELECT r.base_offset + k AS off, substring(r.hashes FROM k * 16 + 1 FOR 16) AS h
                  FROM queen.log_txns r,   -- only the frames inside the span, however long the segment
                       generate_series(greatest(0, c.committed + 1 - r.base_offset)::integer,
                                       least(length(r.hashes) / 16 - 1, c.lease_end - r.base_offset)::integer) AS k
                 WHERE r.partition_id = part.id AND r.base_offset BETWEEN lo AND c.lease_end) f
            ON f.h = it.hash;
END $$;

-- The base offset of the sidecar row covering offset p_offset (or the lowest
-- retained one), where a search of the leased span starts.
CREATE OR REPLACE FUNCTION queen.span_floor(p_partition uuid, p_offset bigint, p_txns_start bigint)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT greatest(p_txns_start, coalesce(
        (SELECT max(t.base_offset) FROM queen.log_txns t
          WHERE t.partition_id = p_partition AND t.base_offset <= p_offset), 0))
$$;

-- Where an item outside the leased span stands: below the cursor (completed:
-- a noop; otherwise already committed), above it but not leased, or nowhere.
CREATE OR REPLACE FUNCTION queen.ack_locate(c queen.log_consumers, part queen.log_partitions,
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
    ELSIF p_status = 'completed' THEN
        noop := true;
    ELSE
        error := 'already committed';
    END IF;
END $$;

-- Offset of the frame whose hash is p_hash among sidecar rows with base
-- offsets in [p_lo, p_hi], searching newest first; NULL when absent.
CREATE OR REPLACE FUNCTION queen.resolve_offset(p_partition uuid, p_lo bigint, p_hi bigint, p_hash bytea)
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

-- ==== Acks resolved from what the server handed out (issue 15, point 1) ====
--
-- Under pop+ack (10 consumers, batch 100), three quarters of PostgreSQL's
-- CPU per consumed message went to queen.ack: 3.7 ms an ack of 100 items,
-- of which the per-item loop of queen.ack_resolve took 1.1 ms and the join
-- that finds each transactionId's offset in the leased span
-- (queen.span_offsets) 1.0 ms (pg_stat_statements, track = all).
--
-- The server that answered a pop knows each message's offset: it decoded
-- them. It keeps them per lease (src/streams/lease_book.c) and, for an ack
-- whose items are all 'completed', all under one lease of one (group,
-- partition) and all known to it, calls queen.ack_known with the lowest and
-- highest of their offsets: one locked read of the cursor and one update,
-- no per-item resolution. Any other ack goes to queen.ack with the offsets
-- it knows (p_offsets, NULL where it does not), and a (group, partition)
-- of that batch that meets the same premise takes the same function
-- (through queen.ack_span). The offsets are trusted only while that lease
-- is the cursor's live one: a lease id is a fresh uuid per pop, so the
-- offsets handed out under it are exactly the ones it leased. Everything
-- else (another lease, an expired one, a failed or retried item, an item
-- the server does not know) takes queen.ack_partition, the general path,
-- unchanged.

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
CREATE FUNCTION queen.ack_known(p_group text, p_partition uuid, p_lease uuid, p_lo bigint, p_hi bigint,
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

-- queen.ack's fast path for one (group, partition), as result rows; the
-- general path answers when ack_known does not apply.
CREATE FUNCTION queen.ack_span(p_group text, p_partition uuid, p_lease uuid, p_items queen.ack_item[],
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

-- 018's queen.ack with the offsets the server knows (p_offsets, parallel to
-- the other arrays; NULL: none known, the 018 call). Cursors are still
-- locked in (partition, group) order.
DROP FUNCTION queen.ack(text[], uuid[], bytea, text[], uuid[]);
CREATE FUNCTION queen.ack(p_groups text[], p_partitions uuid[], p_hashes bytea,
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
              GROUP BY 1, 2 ORDER BY 1, 2
    LOOP
        IF k.known THEN
            RETURN QUERY SELECT * FROM queen.ack_span(k.consumer_group, k.partition_id, k.lease, k.items, k.offsets);
        ELSE
            RETURN QUERY SELECT * FROM queen.ack_partition(k.consumer_group, k.partition_id, k.items);
        END IF;
    END LOOP;
END $$;

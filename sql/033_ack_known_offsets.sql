-- ==== Acks resolved from what the server handed out (issue 15, point 1) ====
--
-- Under pop+ack (10 consumers, batch 100), three quarters of PostgreSQL's
-- CPU per consumed message went to queen.ack: 3.7 ms an ack of 100 items,
-- of which the per-item loop of queen.ack_resolve took 1.1 ms and the join
-- that finds each transactionId's offset in the leased span
-- (queen.span_offsets) 1.0 ms (pg_stat_statements, track = all).
--
-- The server that answered a pop knows each message's offset: it decoded
-- them. It keeps them per lease (src/streams/lease_book.c) and sends, with an
-- ack, the offset of each item it handed out under the lease the item
-- names (p_offsets, NULL where it does not know). A (group, partition)
-- whose items are all 'completed', all name one lease and all have an
-- offset is acked by queen.ack_span: one locked read of the cursor and one
-- update, no per-item resolution. The offsets are trusted only while that
-- lease is the cursor's live one: a lease id is a fresh uuid per pop, so
-- the offsets handed out under it are exactly the ones it leased; and only
-- at or above the partition's txns_start, so that an ack whose hash the
-- sidecar has purged stays unresolvable (the ack window). Anything
-- else (another lease, an expired one, a failed or retried item, an item
-- the server does not know) takes queen.ack_partition, the general path,
-- unchanged.

-- The fast path for one (group, partition); the general path answers
-- whenever its premise does not hold once the cursor is locked.
CREATE FUNCTION queen.ack_span(p_group text, p_partition uuid, p_lease uuid, p_items queen.ack_item[],
                               p_offsets bigint[])
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c       queen.log_consumers%ROWTYPE;
    lo      bigint;
    hi      bigint;
    txns_floor bigint;
    target  bigint;
    release boolean;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    SELECT min(o), max(o) INTO lo, hi FROM unnest(p_offsets) o;
    SELECT txns_start INTO txns_floor FROM queen.log_partitions WHERE id = p_partition;
    -- A hash the sidecar no longer holds makes its ack unresolvable (the
    -- ack window), however well this server remembers the offset.
    IF c.partition_id IS NULL OR c.lease_id IS DISTINCT FROM p_lease OR c.lease_expires <= now()
       OR c.lease_end IS NULL OR hi > c.lease_end OR txns_floor IS NULL OR lo < txns_floor THEN
        RETURN QUERY SELECT * FROM queen.ack_partition(p_group, p_partition, p_items);
        RETURN;
    END IF;
    target := greatest(c.committed, hi);
    release := target >= c.lease_end;
    -- The general path's update for an all-completed batch (ack_partition, step 4).
    UPDATE queen.log_consumers SET committed = target,
           retry_count = CASE WHEN target > c.committed THEN 0 ELSE retry_count END,
           total_consumed = total_consumed + (target - c.committed), last_activity_at = now(),
           lease_id = CASE WHEN release THEN NULL ELSE lease_id END,
           lease_end = CASE WHEN release THEN NULL ELSE lease_end END,
           lease_expires = CASE WHEN release THEN NULL ELSE lease_expires END
     WHERE partition_id = p_partition AND consumer_group = p_group;
    -- An item at or below the cursor was already committed: a noop, as ack_locate says.
    RETURN QUERY
        SELECT (p_items[k]).idx, true, NULL::text, release, false, p_offsets[k] <= c.committed, false,
               NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::bytea
          FROM generate_subscripts(p_items, 1) AS k
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

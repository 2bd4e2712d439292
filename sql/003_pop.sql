-- 003_pop: leases. A pop claims (committed, end] of one partition for one
-- consumer group under a lease, or commits it at once with autoAck.

-- The time a group's cursors are seeded from in a queue (NULL: the oldest
-- retained message), remembered at the group's first contact with the queue.
-- p_subscription: NULL or 'all', 'now', or an ISO timestamp.
CREATE FUNCTION queen.subscription_start(p_group text, p_queue text, p_subscription text)
RETURNS timestamptz LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    ts timestamptz;
BEGIN
    IF p_group = '__QUEUE_MODE__' THEN RETURN NULL; END IF;
    SELECT s.from_ts INTO ts FROM queen.subscriptions s
     WHERE s.consumer_group = p_group AND s.queue = p_queue;
    IF FOUND THEN RETURN ts; END IF;
    ts := CASE WHEN p_subscription IS NULL OR p_subscription = 'all' THEN NULL
               WHEN p_subscription = 'now' THEN now()
               ELSE p_subscription::timestamptz END;
    INSERT INTO queen.subscriptions (consumer_group, queue, from_ts)
    VALUES (p_group, p_queue, ts) ON CONFLICT DO NOTHING;
    SELECT s.from_ts INTO ts FROM queen.subscriptions s
     WHERE s.consumer_group = p_group AND s.queue = p_queue;
    RETURN ts;
END $$;

-- Where a new cursor starts: before the first retained segment committed at or
-- after p_from, at the watermark when p_from is NULL, at the end when no
-- segment is that new. Lookups start at the watermark.
CREATE FUNCTION queen.seed_cursor(p_partition uuid, p_from timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    part queen.log_partitions%ROWTYPE;
    first_base bigint;
BEGIN
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    IF p_from IS NULL THEN RETURN part.log_start - 1; END IF;
    SELECT s.base_offset INTO first_base FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset >= part.log_start
       AND s.created_at >= p_from
     ORDER BY s.base_offset LIMIT 1;
    RETURN coalesce(first_base - 1, part.last_offset);
END $$;

-- Locks the group's cursor on a partition, creating it from the subscription
-- on first contact. NULL when another session holds it.
CREATE FUNCTION queen.lock_cursor(p_partition uuid, p_group text, p_from timestamptz)
RETURNS queen.log_consumers LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c queen.log_consumers%ROWTYPE;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE SKIP LOCKED;
    IF FOUND THEN RETURN c; END IF;
    INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
    VALUES (p_partition, p_group, queen.seed_cursor(p_partition, p_from))
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN RETURN NULL; END IF;
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    RETURN c;
END $$;

-- Highest offset a pop may hand out now: the partition's end, held back by
-- windowBuffer (nothing while the newest message is too young) and
-- delayedProcessing (only segments old enough). -1 means nothing.
CREATE FUNCTION queen.deliverable_end(part queen.log_partitions, opts jsonb) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    win   integer := (opts->>'windowBuffer')::integer;
    delay integer := (opts->>'delayedProcessing')::integer;
    ready bigint;
BEGIN
    IF win > 0 AND part.last_write_at > now() - make_interval(secs => win) THEN RETURN -1; END IF;
    IF delay <= 0 THEN RETURN part.last_offset; END IF;
    SELECT s.end_offset INTO ready FROM queen.log_segments s
     WHERE s.partition_id = part.id AND s.created_at <= now() - make_interval(secs => delay)
     ORDER BY s.base_offset DESC LIMIT 1;
    RETURN coalesce(ready, -1);
END $$;

-- Claims up to p_batch offsets of one partition; NULL span when there is
-- nothing to claim (cursor held elsewhere, live lease, nothing deliverable).
CREATE FUNCTION queen.claim(p_partition uuid, p_group text, p_from timestamptz, opts jsonb,
                            p_batch integer, p_auto_ack boolean, p_lease uuid,
                            OUT cursor_from bigint, OUT cursor_to bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    part  queen.log_partitions%ROWTYPE;
    c     queen.log_consumers%ROWTYPE;
BEGIN
    c := queen.lock_cursor(p_partition, p_group, p_from);
    IF c.partition_id IS NULL OR c.lease_expires > now() THEN RETURN; END IF;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    cursor_from := greatest(c.committed, part.log_start - 1);
    cursor_to := least(cursor_from + p_batch, queen.deliverable_end(part, opts));
    IF cursor_to <= cursor_from THEN cursor_to := NULL; RETURN; END IF;
    IF p_auto_ack THEN
        UPDATE queen.log_consumers SET committed = cursor_to, retry_count = 0,
               total_consumed = total_consumed + (cursor_to - cursor_from),
               lease_id = NULL, lease_end = NULL, lease_expires = NULL, last_activity_at = now()
         WHERE partition_id = p_partition AND consumer_group = p_group;
    ELSE
        UPDATE queen.log_consumers SET committed = cursor_from, lease_id = p_lease,
               lease_end = cursor_to, last_activity_at = now(),
               lease_expires = now() + make_interval(secs => (opts->>'leaseTime')::integer)
         WHERE partition_id = p_partition AND consumer_group = p_group;
    END IF;
END $$;

-- One pop: claims the first partition of the queue (or the named one) with
-- something deliverable, least recently served first, and returns the
-- segments covering the claimed span, one row each, in offset order.
CREATE FUNCTION queen.pop(p_queue text, p_partition text, p_group text, p_batch integer,
                          p_auto_ack boolean, p_subscription text, p_lease uuid)
RETURNS TABLE (partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    opts jsonb;
    from_ts timestamptz;
    cand record;
    span record;
BEGIN
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = p_queue;
    IF NOT FOUND THEN RETURN; END IF;
    from_ts := queen.subscription_start(p_group, p_queue, p_subscription);
    FOR cand IN
        SELECT p.id, p.name FROM queen.log_partitions p
          LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
         WHERE p.queue = p_queue AND (p_partition IS NULL OR p.name = p_partition)
           AND p.last_offset >= p.log_start
           AND (c.partition_id IS NULL OR (p.last_offset > c.committed
                AND (c.lease_expires IS NULL OR c.lease_expires <= now())))
         ORDER BY c.last_activity_at NULLS FIRST
         LIMIT 32
    LOOP
        span := queen.claim(cand.id, p_group, from_ts, opts, p_batch, p_auto_ack, p_lease);
        CONTINUE WHEN span.cursor_to IS NULL;
        RETURN QUERY
            SELECT cand.id, cand.name, span.cursor_from, span.cursor_to,
                   s.base_offset, s.created_at, s.blob
              FROM queen.log_segments s
             WHERE s.partition_id = cand.id AND s.base_offset <= span.cursor_to
               AND s.base_offset >= coalesce((SELECT max(s2.base_offset) FROM queen.log_segments s2
                                               WHERE s2.partition_id = cand.id
                                                 AND s2.base_offset <= span.cursor_from + 1), 0)
             ORDER BY s.base_offset;
        RETURN;
    END LOOP;
END $$;

-- Renews every partition lease held under p_lease to at least now + p_seconds.
CREATE FUNCTION queen.extend_lease(p_lease uuid, p_seconds integer,
                                   OUT renewed integer, OUT expires_at timestamptz)
LANGUAGE sql AS $$
    WITH renewed AS (
        UPDATE queen.log_consumers
           SET lease_expires = greatest(lease_expires, now() + make_interval(secs => p_seconds)),
               last_activity_at = now()
         WHERE lease_id = p_lease AND lease_expires > now()
        RETURNING lease_expires)
    SELECT count(*)::integer, max(lease_expires) FROM renewed
$$;

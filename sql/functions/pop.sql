-- The pop path: which partition a pop takes, the lease on its cursor, and what
-- it delivers.

CREATE OR REPLACE FUNCTION queen.pop(p_queue text, p_partition text, p_namespace text, p_task text,
                          p_group text, p_batch integer, p_partitions integer,
                          p_auto_ack boolean, p_subscription text, p_lease uuid, p_reconciled boolean)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_queue IS NOT NULL AND p_partition IS NULL AND queen.queue_is_wide(p_queue) THEN
        IF p_reconciled IS NOT TRUE THEN
            RAISE EXCEPTION 'queue % has more than 256 partitions: its pops reconcile first', p_queue
                USING ERRCODE = 'SLW01';
        END IF;
        RETURN QUERY SELECT * FROM queen.pop_ready(p_queue, p_namespace, p_task, p_group, p_batch, p_partitions,
                                                   p_auto_ack, p_subscription, p_lease);
        RETURN;
    END IF;
    RETURN QUERY SELECT m.queue, m.partition_id, m.partition, m.cursor_from, m.cursor_to,
                        m.seg_base, m.seg_created, m.seg_blob
                   FROM queen.pop_many(p_queue, p_partition, p_namespace, p_task, p_group, ARRAY[p_batch],
                                       p_partitions, p_auto_ack, p_subscription, ARRAY[p_lease], true) m;
END $$;

-- Several pops of one kind (the same queue or tags, partition, group,
-- autoAck, subscription and partitions a pop may claim) in one statement,
-- as the server gathers them while one is in flight: one look at the
-- candidates serves them all, each member in turn taking the next
-- partition it can claim, under its own lease (p_leases[i]) and batch
-- (p_batches[i]). Rows carry their member (1-based, the last column),
-- grouped by member in order. A queue-wide pop of a queue of more than 256 partitions is
-- refused (SLW01: its pops reconcile first and go through queen.pop);
-- p_checked_narrow: the caller has looked already.
CREATE OR REPLACE FUNCTION queen.pop_many(p_queue text, p_partition text, p_namespace text, p_task text,
                                          p_group text, p_batches integer[], p_partitions integer,
                                          p_auto_ack boolean, p_subscription text, p_leases uuid[],
                                          p_checked_narrow boolean DEFAULT false)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea, member integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    m         integer := 1;
    remaining integer := p_batches[1];
    claimed   integer := 0;
    cands     refcursor;
    cand      record;
    span      record;
    from_ts   timestamptz;
    from_of   text;        -- the queue from_ts was looked up for (discovery pops cross queues)
BEGIN
    IF coalesce(cardinality(p_batches), 0) < 1 OR cardinality(p_batches) <> coalesce(cardinality(p_leases), -1)
       OR array_position(p_batches, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pop_many: one batch and one lease per member' USING ERRCODE = '22023';
    END IF;
    IF NOT p_checked_narrow AND p_queue IS NOT NULL AND p_partition IS NULL AND queen.queue_is_wide(p_queue) THEN
        RAISE EXCEPTION 'queue % has more than 256 partitions: its pops reconcile first', p_queue
            USING ERRCODE = 'SLW01';
    END IF;
    -- A leased pop's commit does not wait for its WAL to reach disk. Lost
    -- in a crash, it loses only the lease: the messages come again and the
    -- lease's ack fails, as after an expiry. Its ack waits (it flushes the
    -- pop's WAL too), so a 2xx ack still means the cursor moved for good.
    -- A pop that acks (autoAck), makes a group's first contact
    -- (queen.commit_durably), or runs in a transaction that wrote before
    -- it stays durable.
    IF NOT p_auto_ack AND pg_current_xact_id_if_assigned() IS NULL THEN   -- nothing else of the transaction's to keep
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    -- Two statements, not one with (p_queue IS NULL OR p.queue = p_queue):
    -- a session's generic plan of that form cannot use the queue's index,
    -- and scanned every partition of every queue (19 ms a pop of a small
    -- queue beside a queue of 100,000 partitions).
    IF p_queue IS NOT NULL THEN
        OPEN cands FOR
            SELECT p.id, p.name, p.queue, q.options, c.partition_id IS NOT NULL AS has_cursor
              FROM queen.log_partitions p
              JOIN queen.queues q ON q.name = p.queue
              LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
             WHERE p.queue = p_queue AND (p_partition IS NULL OR p.name = p_partition)
               AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
               AND p.last_offset >= p.log_start
               AND (c.partition_id IS NULL OR (p.last_offset > c.committed
                    AND (c.lease_expires IS NULL OR c.lease_expires <= now())))
             ORDER BY c.last_activity_at NULLS FIRST;
    ELSE
        OPEN cands FOR
            SELECT p.id, p.name, p.queue, q.options, c.partition_id IS NOT NULL AS has_cursor
              FROM queen.log_partitions p
              JOIN queen.queues q ON q.name = p.queue
              LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
             WHERE (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
               AND p.last_offset >= p.log_start
               AND (c.partition_id IS NULL OR (p.last_offset > c.committed
                    AND (c.lease_expires IS NULL OR c.lease_expires <= now())))
             ORDER BY c.last_activity_at NULLS FIRST;
    END IF;
    LOOP   -- no limit: partitions that cannot deliver yet (a window, a delay, a cursor
           -- another pop holds) must not hide one that can; rows are fetched as the loop goes
        FETCH cands INTO cand;
        EXIT WHEN NOT FOUND;
        -- Every pop records the group's first contact with the queue (a seek
        -- makes cursors without it, and partitions born later are seeded
        -- from it). For a cursor the query saw, 'infinity' tells lock_cursor
        -- to make none: it spares the look for the row that a try on a
        -- cursor another pop holds took (pops running together try ~3 such
        -- cursors before they take one).
        IF from_of IS DISTINCT FROM cand.queue THEN   -- once per queue a pop reaches, not per candidate
            from_ts := queen.subscription_start(p_group, cand.queue, p_subscription);
            from_of := cand.queue;
        END IF;
        span := queen.claim(cand.id, p_group, CASE WHEN cand.has_cursor THEN 'infinity' ELSE from_ts END,
                            cand.options, remaining, p_auto_ack, p_leases[m]);
        CONTINUE WHEN span.cursor_to IS NULL;
        RETURN QUERY
            SELECT cand.queue, cand.id, cand.name, span.cursor_from, span.cursor_to,
                   s.base_offset, s.created_at, s.blob, m
              FROM queen.log_segments s
             WHERE s.partition_id = cand.id AND s.base_offset <= span.cursor_to
               AND s.base_offset >= coalesce((SELECT max(s2.base_offset) FROM queen.log_segments s2
                                               WHERE s2.partition_id = cand.id
                                                 AND s2.base_offset <= span.cursor_from + 1), 0)
             ORDER BY s.base_offset;
        remaining := remaining - (span.cursor_to - span.cursor_from)::integer;
        claimed := claimed + 1;
        IF claimed >= p_partitions OR remaining <= 0 THEN   -- this member is served: the next one
            m := m + 1;
            EXIT WHEN m > cardinality(p_batches);
            remaining := p_batches[m];
            claimed := 0;
        END IF;
    END LOOP;
    CLOSE cands;
END $$;

CREATE OR REPLACE FUNCTION queen.pop(p_queue text, p_partition text, p_namespace text, p_task text,
                                     p_group text, p_batch integer, p_partitions integer,
                                     p_auto_ack boolean, p_subscription text, p_lease uuid)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE sql AS $$
    SELECT * FROM queen.pop(p_queue, p_partition, p_namespace, p_task, p_group, p_batch, p_partitions,
                            p_auto_ack, p_subscription, p_lease, true)
$$;

-- Gives the current transaction's commit back the session's durability
-- (synchronous_commit as configured) after queen.pop waived it: a group's
-- first contact (its subscription row, a new cursor) must outlive a crash,
-- or a 'now' group made again later would start later and skip what came
-- between.
CREATE OR REPLACE FUNCTION queen.commit_durably() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL synchronous_commit TO DEFAULT;
END $$;

-- The time a group's cursors are seeded from in a queue (NULL: the oldest
-- retained message), remembered at the group's first contact with the queue.
-- p_subscription: NULL or 'all', 'now', or an ISO timestamp (never
-- 'infinity': the API takes ISO 8601 only). 'infinity' when another pop is
-- making the group's first contact right now: its insert would make this
-- one wait for its commit, so this pop seeds no cursor (queen.lock_cursor)
-- and serves only those that exist. The advisory lock is held by whoever
-- inserts, so a pop that takes it either inserts first or finds the row
-- committed: no insert here waits.
CREATE OR REPLACE FUNCTION queen.subscription_start(p_group text, p_queue text, p_subscription text)
RETURNS timestamptz LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    ts timestamptz;
BEGIN
    IF p_group = '__QUEUE_MODE__' THEN RETURN NULL; END IF;
    SELECT s.from_ts INTO ts FROM queen.subscriptions s
     WHERE s.consumer_group = p_group AND s.queue = p_queue;
    IF FOUND THEN RETURN ts; END IF;
    IF NOT pg_try_advisory_xact_lock(hashtext('silt.subscription'), hashtext(p_group || '/' || p_queue)) THEN
        RETURN 'infinity';
    END IF;
    ts := CASE WHEN p_subscription IS NULL OR p_subscription = 'all' THEN NULL
               WHEN p_subscription = 'now' THEN now()
               ELSE p_subscription::timestamptz END;
    INSERT INTO queen.subscriptions (consumer_group, queue, from_ts)
    VALUES (p_group, p_queue, ts) ON CONFLICT DO NOTHING;
    PERFORM queen.commit_durably();
    SELECT s.from_ts INTO ts FROM queen.subscriptions s
     WHERE s.consumer_group = p_group AND s.queue = p_queue;
    RETURN ts;
END $$;

-- Claims up to p_batch offsets of one partition; NULL span when there is
-- nothing to claim (cursor held elsewhere, live lease, nothing deliverable).
CREATE OR REPLACE FUNCTION queen.claim(p_partition uuid, p_group text, p_from timestamptz, opts jsonb,
                            p_batch integer, p_auto_ack boolean, p_lease uuid,
                            OUT cursor_from bigint, OUT cursor_to bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    part  queen.log_partitions%ROWTYPE;
    c     queen.log_consumers%ROWTYPE;
BEGIN
    c := queen.lock_cursor(p_partition, p_group, p_from);
    IF c.partition_id IS NULL THEN RETURN; END IF;   -- leased, held elsewhere, or being made
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

-- ==== Pops pass over a cursor another transaction holds (issue 15, point 1) ====
--
-- queen.lock_cursor takes a cursor with FOR UPDATE SKIP LOCKED and, finding
-- none, inserts it with ON CONFLICT DO NOTHING. When the row exists but
-- another pop's (or an ack's) transaction holds it, that insert waits for
-- the holder to commit, and then does nothing: the pop learns only what it
-- could have learnt at once, that the partition is being served. Under
-- pop+ack (10 consumers, 10 partitions, batch 100) a pop made 2.3 such
-- inserts and waited 3.9 ms of its 4.7 (pg_stat_statements, track = all).
-- A cursor that exists is now passed over at once; only a partition the
-- group has no cursor on yet takes the insert.
--
-- The insert itself waited too: two pops reaching a partition the group had
-- no cursor on both insert it, and the second waits for the first to commit
-- (an insert waits on a conflicting row not yet committed, ON CONFLICT DO
-- NOTHING or not), only to do nothing (issue 33: 45 such inserts in 10 s of
-- pop+ack, 9.8 ms each). The inserter now holds a transaction-level advisory
-- lock on (group, partition) (the key queen.pop_ready used already), and a
-- pop that cannot take it passes the partition over, as it passes over a
-- cursor another transaction holds. A cursor under a live lease is not
-- locked either: the pop cannot take it, and the lease holder's ack would
-- wait for the pop's commit.
CREATE OR REPLACE FUNCTION queen.lock_cursor(p_partition uuid, p_group text, p_from timestamptz)
RETURNS queen.log_consumers LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c queen.log_consumers%ROWTYPE;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group
       AND (lease_expires IS NULL OR lease_expires <= now())
       FOR UPDATE SKIP LOCKED;
    IF FOUND THEN RETURN c; END IF;
    -- 'infinity': make no cursor (the group's first contact is being made
    -- elsewhere, or the caller saw this cursor exist)
    IF p_from = 'infinity' THEN RETURN NULL; END IF;
    PERFORM 1 FROM queen.log_consumers WHERE partition_id = p_partition AND consumer_group = p_group;
    IF FOUND THEN RETURN NULL; END IF;   -- leased, or held by another transaction: the next partition
    IF NOT pg_try_advisory_xact_lock(hashtext(p_group), hashtext(p_partition::text)) THEN
        RETURN NULL;                     -- another pop is making this cursor: the next partition
    END IF;
    INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
    VALUES (p_partition, p_group, queen.seed_cursor(p_partition, p_from))
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN RETURN NULL; END IF;
    PERFORM queen.commit_durably();
    PERFORM queen.analyze_if_grown('queen.log_consumers', 1);
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    RETURN c;
END $$;

-- Where a new cursor starts: before the first retained segment committed at or
-- after p_from, at the watermark when p_from is NULL, at the end when no
-- segment is that new. Lookups start at the watermark.
CREATE OR REPLACE FUNCTION queen.seed_cursor(p_partition uuid, p_from timestamptz) RETURNS bigint
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

-- Highest offset a pop may hand out now: the partition's end, held back by
-- windowBuffer (nothing while the newest message is too young) and
-- delayedProcessing (only segments old enough). -1 means nothing.
CREATE OR REPLACE FUNCTION queen.deliverable_end(part queen.log_partitions, opts jsonb) RETURNS bigint
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

-- Renews every partition lease held under p_lease to at least now + p_seconds.
CREATE OR REPLACE FUNCTION queen.extend_lease(p_lease uuid, p_seconds integer,
                                   OUT renewed integer, OUT expires_at timestamptz)
LANGUAGE sql AS $$
    -- The cursors are locked in (partition, group) order first, as acks
    -- lock them (several of a lease's may be acked in one transaction).
    WITH locked AS (
        SELECT partition_id, consumer_group FROM queen.log_consumers
         WHERE lease_id = p_lease AND lease_expires > now()
         ORDER BY partition_id, consumer_group COLLATE "C" FOR UPDATE),
    renewed AS (
        UPDATE queen.log_consumers c
           SET lease_expires = greatest(c.lease_expires, now() + make_interval(secs => p_seconds)),
               last_activity_at = now()
          FROM locked l
         WHERE c.partition_id = l.partition_id AND c.consumer_group = l.consumer_group
           AND c.lease_id = p_lease AND c.lease_expires > now()
        RETURNING c.lease_expires)
    SELECT count(*)::integer, max(lease_expires) FROM renewed
$$;

-- The segment covering p_offset, if retention has not removed it. Always one
-- row, all NULL when the segment is gone, so a caller that assigns it to a
-- record can test base IS NULL (a SQL function would return a NULL record
-- instead, and a dead-letter hand-off of a removed message would fail rather
-- than answer "dlq rejected").
CREATE OR REPLACE FUNCTION queen.covering_segment(p_partition uuid, p_offset bigint,
                                       OUT base bigint, OUT created timestamptz, OUT blob bytea)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT s.base_offset, s.created_at, s.blob INTO base, created, blob
      FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset <= p_offset AND s.end_offset >= p_offset
       AND p_offset >= (SELECT log_start FROM queen.log_partitions WHERE id = p_partition)
     ORDER BY s.base_offset DESC LIMIT 1;
END $$;

-- ==== A narrow queue's pop takes its cursor in one locking read (issue 15, point 1) ====
--
-- 031's pop walks its candidates with a cursor and, for each, calls
-- queen.claim: queen.subscription_start, queen.lock_cursor (a locking read
-- that skips a held cursor, and a second read when it did), a read of the
-- partition and the cursor's update. Under pop+ack (10 consumers, batch 100,
-- 10 partitions) a pop made 2.3 claims, 1.3 of them finding the cursor held,
-- and PostgreSQL's time went to starting those small statements rather than
-- to their work (pg_stat_statements, track = all; a perf profile of the
-- backends: executor start-up, plan-cache checks, memory contexts).
--
-- When the group already has a cursor on every partition of the queue that
-- holds messages (so no partition without one would come first), and the
-- queue holds nothing back by time (no windowBuffer, no delayedProcessing:
-- what a claim may hand out is the partition's end), the same choice is one
-- statement: the least recently served cursor with something to deliver and
-- no live lease, locked, passing over cursors another transaction holds.
-- PostgreSQL locks the rows in that order and checks each locked row again
-- at its newest version, as queen.claim re-read the cursor it had locked.
-- The claim's update and the segment read follow as in queen.claim and 031's
-- pop. Everything else (a wide queue, one partition, discovery, tags, a
-- first contact, a queue holding back by time) and a pop this way finds
-- nothing for goes the way it went before.
CREATE OR REPLACE FUNCTION queen.pop(p_queue text, p_partition text, p_namespace text, p_task text,
                                     p_group text, p_batch integer, p_partitions integer,
                                     p_auto_ack boolean, p_subscription text, p_lease uuid)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    remaining integer := p_batch;
    claimed   integer := 0;
    cands     refcursor;
    cand      record;
    span      record;
    look      record;
    hit       record;
    span_to   bigint;
BEGIN
    IF p_queue IS NOT NULL AND p_partition IS NULL THEN
        -- In the index's order, both: a session's generic plan of a bare
        -- EXISTS can scan the whole table (031's queue_is_wide).
        SELECT q.options AS opts,
               EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.queue = p_queue
                        ORDER BY p.queue, p.name OFFSET 256 LIMIT 1) AS wide,
               EXISTS (SELECT 1 FROM queen.log_partitions p
                        WHERE p.queue = p_queue AND p.last_offset >= p.log_start
                          AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c
                                           WHERE c.partition_id = p.id AND c.consumer_group = p_group)
                        ORDER BY p.queue, p.name LIMIT 1) AS uncovered
          INTO look FROM queen.queues q WHERE q.name = p_queue;
        IF FOUND AND look.wide THEN
            RETURN QUERY SELECT * FROM queen.pop_ready(p_queue, p_namespace, p_task, p_group, p_batch, p_partitions,
                                                       p_auto_ack, p_subscription, p_lease);
            RETURN;
        END IF;
        IF FOUND AND NOT look.uncovered AND p_namespace IS NULL AND p_task IS NULL
           AND coalesce((look.opts->>'windowBuffer')::integer, 0) <= 0
           AND coalesce((look.opts->>'delayedProcessing')::integer, 0) <= 0 THEN
            LOOP
                SELECT c.partition_id AS id, p.name, greatest(c.committed, p.log_start - 1) AS from_at,
                       p.last_offset AS last_at
                  INTO hit
                  FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
                 WHERE p.queue = p_queue AND c.consumer_group = p_group
                   AND p.last_offset >= p.log_start AND p.last_offset > c.committed
                   AND (c.lease_expires IS NULL OR c.lease_expires <= now())
                 ORDER BY c.last_activity_at
                 LIMIT 1
                   FOR UPDATE OF c SKIP LOCKED;
                EXIT WHEN NOT FOUND;
                IF claimed = 0 THEN   -- what queen.claim's caller did per candidate: its first contact
                    PERFORM queen.subscription_start(p_group, p_queue, p_subscription);
                END IF;
                span_to := least(hit.from_at + remaining, hit.last_at);
                IF p_auto_ack THEN
                    UPDATE queen.log_consumers c SET committed = span_to, retry_count = 0,
                           total_consumed = c.total_consumed + (span_to - hit.from_at),
                           lease_id = NULL, lease_end = NULL, lease_expires = NULL, last_activity_at = now()
                     WHERE c.partition_id = hit.id AND c.consumer_group = p_group;
                ELSE
                    UPDATE queen.log_consumers c SET committed = hit.from_at, lease_id = p_lease,
                           lease_end = span_to, last_activity_at = now(),
                           lease_expires = now() + make_interval(secs => (look.opts->>'leaseTime')::integer)
                     WHERE c.partition_id = hit.id AND c.consumer_group = p_group;
                END IF;
                RETURN QUERY
                    SELECT p_queue, hit.id, hit.name, hit.from_at, span_to,
                           s.base_offset, s.created_at, s.blob
                      FROM queen.log_segments s
                     WHERE s.partition_id = hit.id AND s.base_offset <= span_to
                       AND s.base_offset >= coalesce((SELECT max(s2.base_offset) FROM queen.log_segments s2
                                                       WHERE s2.partition_id = hit.id
                                                         AND s2.base_offset <= hit.from_at + 1), 0)
                     ORDER BY s.base_offset;
                remaining := remaining - (span_to - hit.from_at)::integer;
                claimed := claimed + 1;
                EXIT WHEN claimed >= p_partitions OR remaining <= 0;
            END LOOP;
            IF claimed > 0 THEN RETURN; END IF;
        END IF;
    END IF;
    -- Two statements, not one with (p_queue IS NULL OR p.queue = p_queue):
    -- a session's generic plan of that form cannot use the queue's index,
    -- and scanned every partition of every queue (19 ms a pop of a small
    -- queue beside a queue of 100,000 partitions).
    IF p_queue IS NOT NULL THEN
        OPEN cands FOR
            SELECT p.id, p.name, p.queue, q.options FROM queen.log_partitions p
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
            SELECT p.id, p.name, p.queue, q.options FROM queen.log_partitions p
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
        span := queen.claim(cand.id, p_group, queen.subscription_start(p_group, cand.queue, p_subscription),
                            cand.options, remaining, p_auto_ack, p_lease);
        CONTINUE WHEN span.cursor_to IS NULL;
        RETURN QUERY
            SELECT cand.queue, cand.id, cand.name, span.cursor_from, span.cursor_to,
                   s.base_offset, s.created_at, s.blob
              FROM queen.log_segments s
             WHERE s.partition_id = cand.id AND s.base_offset <= span.cursor_to
               AND s.base_offset >= coalesce((SELECT max(s2.base_offset) FROM queen.log_segments s2
                                               WHERE s2.partition_id = cand.id
                                                 AND s2.base_offset <= span.cursor_from + 1), 0)
             ORDER BY s.base_offset;
        remaining := remaining - (span.cursor_to - span.cursor_from)::integer;
        claimed := claimed + 1;
        EXIT WHEN claimed >= p_partitions OR remaining <= 0;
    END LOOP;
    CLOSE cands;
END $$;

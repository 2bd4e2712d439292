-- ==== A pop claims a partition it has a cursor on without a call per claim (issue 15, point 1) ====
--
-- 031's pop walks its candidates and, for each, calls queen.claim, which
-- calls queen.lock_cursor (a locking read that skips a held cursor, and a
-- second read to tell held from missing) and queen.deliverable_end, and
-- reads the partition again; queen.subscription_start is called first, per
-- candidate. Under pop+ack (10 consumers, batch 100, 10 partitions) a pop
-- made 2.3 claims, 1.3 of them finding the cursor held, and PostgreSQL's
-- time went to starting these small functions and statements rather than to
-- their work (pg_stat_statements, track = all; a perf profile of the
-- backends: executor start-up, plan-cache checks, memory contexts).
--
-- The walk is the same: the same candidates in the same order. For a
-- candidate the group already has a cursor on, in a queue that holds nothing
-- back by time (no windowBuffer, no delayedProcessing: a claim may hand out
-- up to the partition's end), the claim is now inline: one read locks the
-- cursor, passing over it when another transaction holds it, and reads the
-- partition's offsets in the same statement; then the cursor's update.
-- queen.subscription_start, whose only effect for such a candidate is to
-- record a first contact, runs once per pop. A candidate without a cursor
-- (its first contact seeds one) and a queue that holds back by time take
-- queen.claim as before. One difference: a cursor that existed when the
-- walk began and is gone when it is reached (its group deleted meanwhile)
-- is passed over, where queen.claim would have seeded a new one; the next
-- pop does.
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
    cur       record;
    span_from bigint;
    span_to   bigint;
    contacted text[] := '{}';   -- queues whose subscription_start has run in this pop
BEGIN
    IF p_queue IS NOT NULL AND p_partition IS NULL AND queen.queue_is_wide(p_queue) THEN
        RETURN QUERY SELECT * FROM queen.pop_ready(p_queue, p_namespace, p_task, p_group, p_batch, p_partitions,
                                                   p_auto_ack, p_subscription, p_lease);
        RETURN;
    END IF;
    -- Two statements, not one with (p_queue IS NULL OR p.queue = p_queue):
    -- a session's generic plan of that form cannot use the queue's index,
    -- and scanned every partition of every queue (19 ms a pop of a small
    -- queue beside a queue of 100,000 partitions).
    IF p_queue IS NOT NULL THEN
        OPEN cands FOR
            SELECT p.id, p.name, p.queue, q.options, c.partition_id IS NOT NULL AS has_cursor FROM queen.log_partitions p
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
            SELECT p.id, p.name, p.queue, q.options, c.partition_id IS NOT NULL AS has_cursor FROM queen.log_partitions p
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
        -- delayedProcessing absent (NULL) goes to queen.claim too, whose
        -- deliverable_end hands out nothing then.
        IF cand.has_cursor AND coalesce((cand.options->>'windowBuffer')::integer, 0) <= 0
           AND (cand.options->>'delayedProcessing')::integer <= 0 THEN
            IF NOT cand.queue = ANY (contacted) THEN
                PERFORM queen.subscription_start(p_group, cand.queue, p_subscription);
                contacted := contacted || cand.queue;
            END IF;
            SELECT c.committed, c.lease_expires, p.log_start, p.last_offset INTO cur
              FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
             WHERE c.partition_id = cand.id AND c.consumer_group = p_group
               FOR UPDATE OF c SKIP LOCKED;
            CONTINUE WHEN NOT FOUND OR cur.lease_expires > now();   -- held elsewhere, or a live lease
            span_from := greatest(cur.committed, cur.log_start - 1);
            span_to := least(span_from + remaining, cur.last_offset);
            CONTINUE WHEN span_to <= span_from;
            IF p_auto_ack THEN   -- queen.claim's two updates
                UPDATE queen.log_consumers c SET committed = span_to, retry_count = 0,
                       total_consumed = c.total_consumed + (span_to - span_from),
                       lease_id = NULL, lease_end = NULL, lease_expires = NULL, last_activity_at = now()
                 WHERE c.partition_id = cand.id AND c.consumer_group = p_group;
            ELSE
                UPDATE queen.log_consumers c SET committed = span_from, lease_id = p_lease,
                       lease_end = span_to, last_activity_at = now(),
                       lease_expires = now() + make_interval(secs => (cand.options->>'leaseTime')::integer)
                 WHERE c.partition_id = cand.id AND c.consumer_group = p_group;
            END IF;
        ELSE
            span := queen.claim(cand.id, p_group, queen.subscription_start(p_group, cand.queue, p_subscription),
                                cand.options, remaining, p_auto_ack, p_lease);
            CONTINUE WHEN span.cursor_to IS NULL;
            span_from := span.cursor_from;
            span_to := span.cursor_to;
        END IF;
        RETURN QUERY
            SELECT cand.queue, cand.id, cand.name, span_from, span_to,
                   s.base_offset, s.created_at, s.blob
              FROM queen.log_segments s
             WHERE s.partition_id = cand.id AND s.base_offset <= span_to
               AND s.base_offset >= coalesce((SELECT max(s2.base_offset) FROM queen.log_segments s2
                                               WHERE s2.partition_id = cand.id
                                                 AND s2.base_offset <= span_from + 1), 0)
             ORDER BY s.base_offset;
        remaining := remaining - (span_to - span_from)::integer;
        claimed := claimed + 1;
        EXIT WHEN claimed >= p_partitions OR remaining <= 0;
    END LOOP;
    CLOSE cands;
END $$;

-- ==== Pops of narrow queues send no reconcile (issue 15, point 1) ====
--
-- A queue-wide pop sent queen.ready_reconcile (031) in a transaction of
-- its own before every claim. For a queue of 256 partitions or fewer it
-- returns at once, but the transaction still cost: under pop+ack (10
-- consumers, 10 partitions, batch 100) PostgreSQL spent about a tenth more
-- CPU per consumed message with it (docs/performance.md, "Narrow pops
-- alone").
--
-- The server now remembers which queues the reconcile found narrow and
-- sends their pops alone, saying so (p_reconciled false). A queue that has
-- grown past 256 partitions since (through any server) refuses such a pop
-- before it claims anything, with SQLSTATE SLW01; the server forgets the
-- queue and sends the pop again behind a reconcile. A pop therefore never
-- walks a ready set that was not brought up to date just before it, as in
-- 031. 031's pop, with that refusal added. The ten-argument form stays for
-- servers of the previous version still running beside this one while
-- they are replaced: they reconcile before every queue-wide pop.

CREATE FUNCTION queen.pop(p_queue text, p_partition text, p_namespace text, p_task text,
                          p_group text, p_batch integer, p_partitions integer,
                          p_auto_ack boolean, p_subscription text, p_lease uuid, p_reconciled boolean)
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

CREATE OR REPLACE FUNCTION queen.pop(p_queue text, p_partition text, p_namespace text, p_task text,
                                     p_group text, p_batch integer, p_partitions integer,
                                     p_auto_ack boolean, p_subscription text, p_lease uuid)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE sql AS $$
    SELECT * FROM queen.pop(p_queue, p_partition, p_namespace, p_task, p_group, p_batch, p_partitions,
                            p_auto_ack, p_subscription, p_lease, true)
$$;

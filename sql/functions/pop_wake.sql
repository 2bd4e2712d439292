-- When a parked long-poll should look again (src/streams/pop_wait.c).

-- 029's pop_wake_at: a queue-wide pop reads its group's ready set (and
-- looks again at once when writes it has not taken in are there); the rest,
-- and a group with no set yet, scan as before.
CREATE OR REPLACE FUNCTION queen.pop_wake_at(p_queue text, p_partition text, p_namespace text, p_task text,
                                             p_group text, p_seen timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE
-- A cursor is found by its key (partition, group), never through every
-- cursor of the group, whatever stale statistics make that look cost.
SET enable_bitmapscan = off
AS $$
DECLARE
    st queen.log_ready_scans%ROWTYPE;
BEGIN
    IF p_queue IS NOT NULL AND p_partition IS NULL AND queen.queue_is_wide(p_queue) THEN
        SELECT * INTO st FROM queen.log_ready_scans WHERE consumer_group = p_group AND queue = p_queue;
    END IF;
    IF st.consumer_group IS NULL AND p_queue IS NOT NULL THEN   -- a narrow queue, a partition, no set yet
        RETURN (SELECT min(queen.partition_wake_at(p, q.options, c.committed, c.lease_expires, p_seen))
                  FROM queen.log_partitions p
                  JOIN queen.queues q ON q.name = p.queue
                  LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
                 WHERE p.queue = p_queue AND (p_partition IS NULL OR p.name = p_partition)
                   AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
                   AND p.last_offset >= p.log_start
                   AND (c.partition_id IS NULL OR p.last_offset > c.committed));
    END IF;
    IF st.consumer_group IS NULL THEN   -- a discovery pop (its own statement: see queen.pop)
        RETURN (SELECT min(queen.partition_wake_at(p, q.options, c.committed, c.lease_expires, p_seen))
                  FROM queen.log_partitions p
                  JOIN queen.queues q ON q.name = p.queue
                  LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
                 WHERE (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
                   AND p.last_offset >= p.log_start
                   AND (c.partition_id IS NULL OR p.last_offset > c.committed));
    END IF;
    IF EXISTS (SELECT 1 FROM queen.log_writes w WHERE w.queue = p_queue AND w.id > st.seen_id)
       OR EXISTS (SELECT 1 FROM queen.log_writes w WHERE w.writer = ANY (st.in_flight) AND w.queue = p_queue) THEN
        RETURN p_seen;   -- written since the pop's reconcile: look again
    END IF;
    RETURN (SELECT min(queen.partition_wake_at(p, q.options, c.committed, c.lease_expires, p_seen))
              FROM queen.log_ready r
              JOIN queen.log_partitions p ON p.id = r.partition_id
              JOIN queen.queues q ON q.name = p.queue
                                 AND (p_namespace IS NULL OR q.namespace = p_namespace)
                                 AND (p_task IS NULL OR q.task = p_task)
              LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
             WHERE r.consumer_group = p_group AND r.queue = p_queue
               AND p.last_offset >= p.log_start
               AND (c.partition_id IS NULL OR p.last_offset > c.committed));
END $$;

-- When something the pop could not take falls due, for one partition (029's
-- expression, per partition, so both ways of asking share it).
CREATE OR REPLACE FUNCTION queen.partition_wake_at(p queen.log_partitions, opts jsonb, c_committed bigint,
                                        c_lease_expires timestamptz, p_seen timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT least(
               CASE WHEN c_lease_expires > p_seen THEN c_lease_expires END,
               CASE WHEN (opts->>'windowBuffer')::integer > 0
                         AND p.last_write_at + make_interval(secs => (opts->>'windowBuffer')::integer) > p_seen
                    THEN p.last_write_at + make_interval(secs => (opts->>'windowBuffer')::integer) END,
               CASE WHEN (opts->>'delayedProcessing')::integer > 0 THEN
                   (SELECT s.created_at + make_interval(secs => (opts->>'delayedProcessing')::integer)
                      FROM queen.log_segments s
                     WHERE s.partition_id = p.id AND s.end_offset > coalesce(c_committed, p.log_start - 1)
                       AND s.created_at + make_interval(secs => (opts->>'delayedProcessing')::integer) > p_seen
                     ORDER BY s.base_offset LIMIT 1) END)
$$;

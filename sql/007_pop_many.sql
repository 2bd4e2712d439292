-- 007_pop_many: pops that may claim several partitions under one leaseId
-- (batch is then a total across them) and discovery pops that pick any queue
-- tagged with a namespace and/or task.

DROP FUNCTION queen.pop(text, text, text, integer, boolean, text, uuid);

CREATE FUNCTION queen.pop(p_queue text, p_partition text, p_namespace text, p_task text,
                          p_group text, p_batch integer, p_partitions integer,
                          p_auto_ack boolean, p_subscription text, p_lease uuid)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    remaining integer := p_batch;
    claimed   integer := 0;
    cand      record;
    span      record;
BEGIN
    FOR cand IN
        SELECT p.id, p.name, p.queue, q.options FROM queen.log_partitions p
          JOIN queen.queues q ON q.name = p.queue
          LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
         WHERE (p_queue IS NULL OR p.queue = p_queue) AND (p_partition IS NULL OR p.name = p_partition)
           AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
           AND p.last_offset >= p.log_start
           AND (c.partition_id IS NULL OR (p.last_offset > c.committed
                AND (c.lease_expires IS NULL OR c.lease_expires <= now())))
         ORDER BY c.last_activity_at NULLS FIRST
         LIMIT 32 + p_partitions
    LOOP
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
END $$;

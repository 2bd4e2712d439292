-- ==== A parked long-poll's due time, measured from the look it took =========
--
-- queen.pop_wake_at (028) left out times already past when it was asked,
-- on the ground that the pop had just seen them. But it is asked in a
-- transaction of its own after the pop's, so a time falling due between
-- the two (a segment ageing past delayedProcessing in that moment, more
-- likely the busier the server) was neither taken by the pop nor answered
-- here: the pop parked with no due time and slept to its deadline. Now the
-- pop's job also reads its transaction's now() (p_seen), and only times
-- the pop had seen pass are left out: one that fell due since is answered
-- (in the past), and the pop looks again at once.
DROP FUNCTION queen.pop_wake_at(text, text, text, text, text);

CREATE FUNCTION queen.pop_wake_at(p_queue text, p_partition text, p_namespace text, p_task text,
                                  p_group text, p_seen timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT min(t.at) FROM (
        SELECT least(
                   CASE WHEN c.lease_expires > p_seen THEN c.lease_expires END,
                   CASE WHEN w.win > 0 AND p.last_write_at + make_interval(secs => w.win) > p_seen
                        THEN p.last_write_at + make_interval(secs => w.win) END,
                   CASE WHEN w.delay > 0 THEN
                       (SELECT s.created_at + make_interval(secs => w.delay) FROM queen.log_segments s
                         WHERE s.partition_id = p.id AND s.end_offset > coalesce(c.committed, p.log_start - 1)
                           AND s.created_at + make_interval(secs => w.delay) > p_seen
                         ORDER BY s.base_offset LIMIT 1) END) AS at
          FROM queen.log_partitions p
          JOIN queen.queues q ON q.name = p.queue
          CROSS JOIN LATERAL (SELECT (q.options->>'windowBuffer')::integer AS win,
                                     (q.options->>'delayedProcessing')::integer AS delay) w
          LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
         WHERE (p_queue IS NULL OR p.queue = p_queue) AND (p_partition IS NULL OR p.name = p_partition)
           AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
           AND p.last_offset >= p.log_start
           AND (c.partition_id IS NULL OR p.last_offset > c.committed)) t
$$;

-- 016_not_found: deleting what does not exist is a 404, for queues and
-- consumer groups alike (the API answers not-found when a statement
-- returns NULL).

-- Whether a consumer group has anything (cursors or a stored subscription)
-- on p_queue, or anywhere when p_queue is NULL.
CREATE FUNCTION queen.group_known(p_group text, p_queue text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
                    WHERE c.consumer_group = p_group AND (p_queue IS NULL OR p.queue = p_queue))
        OR EXISTS (SELECT 1 FROM queen.subscriptions s
                    WHERE s.consumer_group = p_group AND (p_queue IS NULL OR s.queue = p_queue));
END $$;

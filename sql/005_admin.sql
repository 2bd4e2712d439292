-- 005_admin: queue and consumer-group administration. These are not on the
-- hot path, so they build their JSON replies in SQL.

-- First offset a group has not consumed on a partition (never below the watermark).
CREATE FUNCTION queen.next_offset(part queen.log_partitions, p_committed bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(p_committed, part.log_start - 1) + 1
$$;

-- Commit time of the segment holding offset p_offset, if retained.
CREATE FUNCTION queen.offset_time(p_partition uuid, p_offset bigint) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT s.created_at FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset <= p_offset AND s.end_offset >= p_offset
     ORDER BY s.base_offset DESC LIMIT 1
$$;

-- Where a timestamp lands in a partition: just before the first retained
-- segment committed at or after p_ts. A timestamp older than the oldest
-- retained segment resolves to that segment; newer than all, to the end.
CREATE FUNCTION queen.cursor_at(part queen.log_partitions, p_ts timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT s.base_offset - 1 FROM queen.log_segments s
                      WHERE s.partition_id = part.id AND s.base_offset >= part.log_start
                        AND s.created_at >= p_ts
                      ORDER BY s.base_offset LIMIT 1), part.last_offset)
$$;

CREATE FUNCTION queen.partition_json(part queen.log_partitions) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', part.id, 'name', part.name, 'lastOffset', part.last_offset,
        'logStart', part.log_start, 'txnsStart', part.txns_start,
        'messages', part.last_offset + 1 - part.log_start,
        'segments', (SELECT count(*) FROM queen.log_segments s WHERE s.partition_id = part.id),
        'lastWriteAt', part.last_write_at, 'createdAt', part.created_at)
$$;

CREATE FUNCTION queen.queue_json(q queen.queues, p_detail boolean) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'name', q.name, 'namespace', q.namespace, 'task', q.task, 'createdAt', q.created_at,
        'partitions', (SELECT count(*) FROM queen.log_partitions p WHERE p.queue = q.name),
        'messages', jsonb_build_object(
            'total', (SELECT coalesce(sum(p.last_offset + 1 - p.log_start), 0)
                        FROM queen.log_partitions p WHERE p.queue = q.name),
            'pending', (SELECT coalesce(jsonb_object_agg(g.consumer_group, g.lag), '{}')
                          FROM (SELECT c.consumer_group, sum(p.last_offset + 1 - queen.next_offset(p, c.committed)) AS lag
                                  FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
                                 WHERE p.queue = q.name GROUP BY c.consumer_group) g),
            'deadLetters', (SELECT count(*) FROM queen.log_dlq d WHERE d.queue = q.name)))
      || CASE WHEN p_detail THEN jsonb_build_object(
             'options', q.options,
             'partitionList', (SELECT coalesce(jsonb_agg(queen.partition_json(p) ORDER BY p.name), '[]')
                                 FROM queen.log_partitions p WHERE p.queue = q.name))
         ELSE '{}' END
$$;

CREATE FUNCTION queen.queue_list() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(queen.queue_json(q, false) ORDER BY q.name), '[]') FROM queen.queues q
$$;

CREATE FUNCTION queen.queue_detail(p_queue text) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT queen.queue_json(q, true) FROM queen.queues q WHERE q.name = p_queue
$$;

-- Deletes a queue and everything of it: partitions, segments, sidecar,
-- cursors and subscriptions (by cascade) and its dead letters.
CREATE FUNCTION queen.queue_delete(p_queue text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_dlq WHERE queue = p_queue;
    DELETE FROM queen.queues WHERE name = p_queue;
    RETURN FOUND;
END $$;

CREATE FUNCTION queen.overview() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'queues', (SELECT count(*) FROM queen.queues),
        'partitions', (SELECT count(*) FROM queen.log_partitions),
        'messages', (SELECT coalesce(sum(last_offset + 1 - log_start), 0) FROM queen.log_partitions),
        'segments', (SELECT count(*) FROM queen.log_segments),
        'consumerGroups', (SELECT count(DISTINCT consumer_group) FROM queen.log_consumers),
        'activeLeases', (SELECT count(*) FROM queen.log_consumers WHERE lease_expires > now()),
        'deadLetters', (SELECT count(*) FROM queen.log_dlq),
        'lastWriteAt', (SELECT max(last_write_at) FROM queen.log_partitions))
$$;

-- Per (group, partition): lag in offsets and age of the oldest unconsumed message.
CREATE VIEW queen.group_cursors AS
    SELECT c.consumer_group, p.queue, p.name AS partition, p.id AS partition_id,
           c.committed, c.lease_id, c.lease_end, c.lease_expires, c.retry_count,
           c.total_consumed, c.last_activity_at,
           p.last_offset + 1 - queen.next_offset(p, c.committed) AS lag,
           CASE WHEN p.last_offset >= queen.next_offset(p, c.committed)
                THEN extract(epoch FROM now() - queen.offset_time(p.id, queen.next_offset(p, c.committed)))
                ELSE 0 END AS time_lag
      FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id;

-- Stable: nothing unconsumed older than p_lagging_seconds. Lagging: older
-- backlog, but the group moved within p_dead_seconds. Dead: backlog and no
-- activity for p_dead_seconds.
CREATE FUNCTION queen.group_state(p_lag numeric, p_time_lag numeric, p_last timestamptz,
                                  p_lagging_seconds integer, p_dead_seconds integer) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_lag = 0 OR p_time_lag < p_lagging_seconds THEN 'Stable'
                WHEN p_last < now() - make_interval(secs => p_dead_seconds) THEN 'Dead'
                ELSE 'Lagging' END
$$;

CREATE FUNCTION queen.group_list(p_lagging_seconds integer, p_dead_seconds integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'name', g.consumer_group, 'queues', g.queues, 'members', g.members,
               'totalLag', g.lag, 'maxTimeLag', round(g.time_lag),
               'lastActivityAt', g.last_activity,
               'state', queen.group_state(g.lag, g.time_lag, g.last_activity, p_lagging_seconds, p_dead_seconds))
           ORDER BY g.consumer_group), '[]')
      FROM (SELECT consumer_group, jsonb_agg(DISTINCT queue) AS queues,
                   count(*) FILTER (WHERE lease_expires > now()) AS members,
                   sum(lag) AS lag, coalesce(max(time_lag), 0) AS time_lag,
                   max(last_activity_at) AS last_activity
              FROM queen.group_cursors GROUP BY consumer_group) g
$$;

CREATE FUNCTION queen.group_detail(p_group text) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('name', p_group, 'partitions', jsonb_agg(jsonb_build_object(
               'queue', c.queue, 'partition', c.partition, 'partitionId', c.partition_id,
               'committedOffset', c.committed, 'lag', c.lag, 'timeLag', round(c.time_lag),
               'retryCount', c.retry_count, 'totalConsumed', c.total_consumed,
               'lastActivityAt', c.last_activity_at,
               'lease', CASE WHEN c.lease_expires > now() THEN jsonb_build_object(
                   'leaseId', c.lease_id, 'leaseEnd', c.lease_end, 'expiresAt', c.lease_expires) END)
           ORDER BY c.queue, c.partition),
           'subscriptions', (SELECT coalesce(jsonb_agg(jsonb_build_object(
               'queue', s.queue, 'from', s.from_ts, 'createdAt', s.created_at) ORDER BY s.queue), '[]')
               FROM queen.subscriptions s WHERE s.consumer_group = p_group))
      FROM queen.group_cursors c WHERE c.consumer_group = p_group
    HAVING count(*) > 0 OR EXISTS (SELECT 1 FROM queen.subscriptions s WHERE s.consumer_group = p_group)
$$;

-- Drops a group's cursors (of one queue, or all), and with p_metadata its
-- stored subscriptions too. Returns the number of cursors removed.
CREATE FUNCTION queen.group_delete(p_group text, p_queue text, p_metadata boolean) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    DELETE FROM queen.log_consumers c USING queen.log_partitions p
     WHERE c.partition_id = p.id AND c.consumer_group = p_group AND (p_queue IS NULL OR p.queue = p_queue);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF p_metadata THEN
        DELETE FROM queen.subscriptions WHERE consumer_group = p_group AND (p_queue IS NULL OR queue = p_queue);
    END IF;
    RETURN n;
END $$;

CREATE FUNCTION queen.group_set_subscription(p_group text, p_ts timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    UPDATE queen.subscriptions SET from_ts = p_ts WHERE consumer_group = p_group;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- Moves a group's cursors on a queue (or one partition) to the end or to a
-- timestamp, releasing leases and resetting retry state. Partitions the group
-- never touched get a cursor. Returns the partitions moved and where.
CREATE FUNCTION queen.seek(p_group text, p_queue text, p_partition text, p_to_end boolean, p_ts timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    part   queen.log_partitions%ROWTYPE;
    target bigint;
    moved  jsonb := '[]';
BEGIN
    IF NOT EXISTS (SELECT 1 FROM queen.log_partitions
                    WHERE queue = p_queue AND (p_partition IS NULL OR name = p_partition)) THEN
        RETURN NULL;
    END IF;
    FOR part IN SELECT * FROM queen.log_partitions
                 WHERE queue = p_queue AND (p_partition IS NULL OR name = p_partition)
                 ORDER BY id FOR UPDATE
    LOOP
        target := CASE WHEN p_to_end THEN part.last_offset ELSE queen.cursor_at(part, p_ts) END;
        INSERT INTO queen.log_consumers AS c (partition_id, consumer_group, committed)
        VALUES (part.id, p_group, target)
        ON CONFLICT (partition_id, consumer_group) DO UPDATE
           SET committed = target, lease_id = NULL, lease_end = NULL, lease_expires = NULL,
               retry_count = 0, last_activity_at = now();
        moved := moved || jsonb_build_object('partition', part.name, 'partitionId', part.id,
                                             'committedOffset', target);
    END LOOP;
    RETURN jsonb_build_object('group', p_group, 'queue', p_queue, 'partitions', moved);
END $$;

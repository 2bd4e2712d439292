-- Consumer groups: their state, pages, seek, deletion and subscriptions.

-- First offset a group has not consumed on a partition (never below the watermark).
CREATE OR REPLACE FUNCTION queen.next_offset(part queen.log_partitions, p_committed bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(p_committed, part.log_start - 1) + 1
$$;

-- Commit time of the segment holding offset p_offset, if retained.
CREATE OR REPLACE FUNCTION queen.offset_time(p_partition uuid, p_offset bigint) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT s.created_at FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset <= p_offset AND s.end_offset >= p_offset
     ORDER BY s.base_offset DESC LIMIT 1
$$;

-- Per (group, partition): lag in offsets and age of the oldest unconsumed message.
CREATE OR REPLACE VIEW queen.group_cursors AS
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
CREATE OR REPLACE FUNCTION queen.group_state(p_lag numeric, p_time_lag numeric, p_last timestamptz,
                                  p_lagging_seconds integer, p_dead_seconds integer) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_lag = 0 OR p_time_lag < p_lagging_seconds THEN 'Stable'
                WHEN p_last < now() - make_interval(secs => p_dead_seconds) THEN 'Dead'
                ELSE 'Lagging' END
$$;

-- One group's figures over all its cursors (NULL: it has none): what the
-- list shows for each group and a group's page shows at its top.
CREATE OR REPLACE FUNCTION queen.group_summary(p_group text, p_lagging_seconds integer, p_dead_seconds integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
               'name', p_group, 'queues', g.queues, 'members', g.members, 'cursors', g.cursors,
               'totalLag', g.lag, 'maxTimeLag', round(g.time_lag),
               'lastActivityAt', queen.iso_ms(g.last_activity),
               'state', queen.group_state(g.lag, g.time_lag, g.last_activity, p_lagging_seconds, p_dead_seconds))
      FROM (SELECT jsonb_agg(queue ORDER BY queue) AS queues, sum(cursors) AS cursors, sum(members) AS members,
                   sum(lag) AS lag, max(time_lag) AS time_lag, max(last_activity) AS last_activity
              FROM (SELECT queue, count(*) AS cursors, count(*) FILTER (WHERE lease_expires > now()) AS members,
                           sum(lag) AS lag, coalesce(max(time_lag), 0) AS time_lag,
                           max(last_activity_at) AS last_activity
                      FROM queen.group_cursors WHERE consumer_group = p_group GROUP BY queue) per_queue
            HAVING count(*) > 0) g
$$;

CREATE OR REPLACE FUNCTION queen.group_list(p_lagging_seconds integer, p_dead_seconds integer, p_queue text,
                                 p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(queen.group_summary(n.consumer_group, p_lagging_seconds, p_dead_seconds)
                              ORDER BY n.consumer_group), '[]')
      FROM (SELECT DISTINCT c.consumer_group FROM queen.log_consumers c
             WHERE p_queue IS NULL OR c.partition_id IN (SELECT p.id FROM queen.log_partitions p WHERE p.queue = p_queue)
             ORDER BY c.consumer_group LIMIT p_limit OFFSET coalesce(p_offset, 0)) n
$$;

CREATE OR REPLACE FUNCTION queen.group_detail(p_group text, p_lagging_seconds integer, p_dead_seconds integer,
                                   p_limit integer, p_offset integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(queen.group_summary(p_group, p_lagging_seconds, p_dead_seconds),
                    jsonb_build_object('name', p_group, 'queues', '[]'::jsonb, 'cursors', 0))
        || jsonb_build_object(
           'partitions', (SELECT coalesce(jsonb_agg(jsonb_build_object(
               'queue', c.queue, 'partition', c.partition, 'partitionId', c.partition_id,
               'committedOffset', c.committed, 'lag', c.lag, 'timeLag', round(c.time_lag),
               'retryCount', c.retry_count, 'totalConsumed', c.total_consumed,
               'lastActivityAt', queen.iso_ms(c.last_activity_at),
               'lease', CASE WHEN c.lease_expires > now() THEN jsonb_build_object(
                   'leaseId', c.lease_id, 'leaseEnd', c.lease_end, 'expiresAt', queen.iso_ms(c.lease_expires)) END)
               ORDER BY c.queue, c.partition), '[]')
               FROM (SELECT * FROM queen.group_cursors WHERE consumer_group = p_group
                      ORDER BY queue, partition LIMIT p_limit OFFSET coalesce(p_offset, 0)) c),
           'subscriptions', (SELECT coalesce(jsonb_agg(jsonb_build_object(
               'queue', s.queue, 'from', queen.iso_ms(s.from_ts), 'createdAt', queen.iso_ms(s.created_at)) ORDER BY s.queue), '[]')
               FROM queen.subscriptions s WHERE s.consumer_group = p_group))
        || queen.pagination_json(p_limit, p_offset)
     WHERE EXISTS (SELECT 1 FROM queen.log_consumers c WHERE c.consumer_group = p_group)
        OR EXISTS (SELECT 1 FROM queen.subscriptions s WHERE s.consumer_group = p_group)
$$;

-- Whether a consumer group has anything (cursors or a stored subscription)
-- on p_queue, or anywhere when p_queue is NULL: deleting a group that has
-- nothing there is a 404, as for a queue.
CREATE OR REPLACE FUNCTION queen.group_known(p_group text, p_queue text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
                    WHERE c.consumer_group = p_group AND (p_queue IS NULL OR p.queue = p_queue))
        OR EXISTS (SELECT 1 FROM queen.subscriptions s
                    WHERE s.consumer_group = p_group AND (p_queue IS NULL OR s.queue = p_queue));
END $$;

-- 031's group_delete, locking the group's scans rows before it deletes the
-- set's rows.
CREATE OR REPLACE FUNCTION queen.group_delete(p_group text, p_queue text, p_metadata boolean) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('silt.ready'), hashtext(p_group));
    PERFORM 1 FROM queen.log_ready_scans
      WHERE consumer_group = p_group AND (p_queue IS NULL OR queue = p_queue)
      ORDER BY queue FOR UPDATE;
    DELETE FROM queen.log_consumers c USING queen.log_partitions p
     WHERE c.partition_id = p.id AND c.consumer_group = p_group AND (p_queue IS NULL OR p.queue = p_queue);
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM queen.log_ready WHERE consumer_group = p_group AND (p_queue IS NULL OR queue = p_queue);
    DELETE FROM queen.log_ready_scans WHERE consumer_group = p_group AND (p_queue IS NULL OR queue = p_queue);
    IF p_metadata THEN
        DELETE FROM queen.subscriptions WHERE consumer_group = p_group AND (p_queue IS NULL OR queue = p_queue);
    END IF;
    RETURN n;
END $$;

CREATE OR REPLACE FUNCTION queen.group_set_subscription(p_group text, p_ts timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    UPDATE queen.subscriptions SET from_ts = p_ts WHERE consumer_group = p_group;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- Where a timestamp lands in a partition: just before the first retained
-- segment committed at or after p_ts. A timestamp older than the oldest
-- retained segment resolves to that segment; newer than all, to the end.
CREATE OR REPLACE FUNCTION queen.cursor_at(part queen.log_partitions, p_ts timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT s.base_offset - 1 FROM queen.log_segments s
                      WHERE s.partition_id = part.id AND s.base_offset >= part.log_start
                        AND s.created_at >= p_ts
                      ORDER BY s.base_offset LIMIT 1), part.last_offset)
$$;

-- 018's seek, re-marking every partition it moves the cursor back from.
CREATE OR REPLACE FUNCTION queen.seek(p_group text, p_queue text, p_partition text, p_to_end boolean,
                                      p_ts timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    part   queen.log_partitions%ROWTYPE;
    target bigint;
    moved  jsonb := '[]';
    behind uuid[] := '{}';
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
        IF target < part.last_offset THEN behind := behind || part.id; END IF;
        moved := moved || jsonb_build_object('partition', part.name, 'partitionId', part.id,
                                             'committedOffset', target);
    END LOOP;
    PERFORM queen.ready_mark(p_group, p_queue, behind);
    RETURN jsonb_build_object('group', p_group, 'queue', p_queue, 'partitions', moved);
END $$;

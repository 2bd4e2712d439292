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

-- A group's lag on a partition, in offsets, from the offset it last
-- committed (or would start from): every lag silt reports is this one.
CREATE OR REPLACE FUNCTION queen.partition_lag(part queen.log_partitions, p_committed bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT part.last_offset + 1 - queen.next_offset(part, p_committed)
$$;

-- Age in seconds of the oldest message a group has not consumed on a
-- partition (0: none; NULL: its segment is gone).
CREATE OR REPLACE FUNCTION queen.partition_time_lag(part queen.log_partitions, p_committed bigint) RETURNS numeric
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN part.last_offset >= queen.next_offset(part, p_committed)
                THEN extract(epoch FROM now() - queen.offset_time(part.id, queen.next_offset(part, p_committed)))
                ELSE 0 END
$$;

-- Per (group, partition): lag in offsets and age of the oldest unconsumed message.
CREATE OR REPLACE VIEW queen.group_cursors AS
    SELECT c.consumer_group, p.queue, p.name AS partition, p.id AS partition_id,
           c.committed, c.lease_id, c.lease_end, c.lease_expires, c.retry_count,
           c.total_consumed, c.last_activity_at,
           queen.partition_lag(p, c.committed) AS lag,
           queen.partition_time_lag(p, c.committed) AS time_lag
      FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id;

-- A group's lag per queue it reads (issue 36): the queues it holds
-- cursors on and those it is subscribed to (queue mode, __QUEUE_MODE__,
-- stores no subscription: its queues are those it has cursors on). A
-- partition it holds no cursor on yet counts from where its first pop
-- there would start (queen.seed_cursor): the watermark when the
-- subscription's from_ts is NULL, else the first retained segment
-- committed at or after it. The one place a group's total lag, a queue's
-- pending count by group and the overview's total lag are summed from.
-- p_group, p_queue: NULL for all. cursors and members count the cursors it
-- holds; last_activity is theirs (NULL: none yet).
--
-- Cost at 100,000 partitions: one pass over the cursors held (as the
-- cursor list makes), one count of the queue's partitions, and the
-- partitions without a cursor only when there are some, in one set-based
-- statement with no function call per partition (the start with from_ts
-- NULL is arithmetic). PL/pgSQL so that each caller's arguments plan it
-- (a SQL function's generic plan of "p_group IS NULL OR ..." scans every
-- cursor). No JIT (below).
CREATE OR REPLACE FUNCTION queen.group_lag(p_group text, p_queue text)
RETURNS TABLE (consumer_group text, queue text, cursors bigint, members bigint, lag numeric,
               time_lag numeric, last_activity timestamptz)
LANGUAGE plpgsql STABLE
SET jit = off   -- the estimate of the partitions without a cursor, per queue, crosses jit_above_cost: compiling took 1.2 s of 1.5
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH held AS (
        SELECT c.consumer_group, p.queue, count(*) AS cursors,
               count(*) FILTER (WHERE c.lease_expires > now()) AS members,
               sum(queen.partition_lag(p, c.committed)) AS lag,
               coalesce(max(queen.partition_time_lag(p, c.committed)), 0) AS time_lag,
               max(c.last_activity_at) AS last_activity
          FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
         WHERE (p_group IS NULL OR c.consumer_group = p_group) AND (p_queue IS NULL OR p.queue = p_queue)
         GROUP BY c.consumer_group, p.queue),
    subscribed AS (
        SELECT s.consumer_group, s.queue, s.from_ts FROM queen.subscriptions s
         WHERE (p_group IS NULL OR s.consumer_group = p_group) AND (p_queue IS NULL OR s.queue = p_queue)),
    reads AS (
        SELECT coalesce(h.consumer_group, s.consumer_group) AS consumer_group, coalesce(h.queue, s.queue) AS queue,
               s.from_ts, coalesce(h.cursors, 0) AS cursors, coalesce(h.members, 0) AS members,
               coalesce(h.lag, 0) AS lag, coalesce(h.time_lag, 0) AS time_lag, h.last_activity
          FROM held h FULL JOIN subscribed s ON s.consumer_group = h.consumer_group AND s.queue = h.queue)
    SELECT r.consumer_group, r.queue, r.cursors, r.members, r.lag + coalesce(u.lag, 0),
           greatest(r.time_lag, coalesce(u.time_lag, 0)), r.last_activity
      FROM reads r
      LEFT JOIN LATERAL (
          SELECT sum(queen.partition_lag(p, st.committed)) AS lag,
                 max(queen.partition_time_lag(p, st.committed)) AS time_lag
            FROM queen.log_partitions p
           CROSS JOIN LATERAL (SELECT CASE WHEN r.from_ts IS NULL THEN p.log_start - 1
                   ELSE coalesce((SELECT s.base_offset - 1 FROM queen.log_segments s
                                   WHERE s.partition_id = p.id AND s.base_offset >= p.log_start
                                     AND s.created_at >= r.from_ts
                                   ORDER BY s.base_offset LIMIT 1), p.last_offset) END AS committed
                               OFFSET 0) st   -- not pulled up: the lag functions then inline
           WHERE r.cursors < (SELECT count(*) FROM queen.log_partitions p2 WHERE p2.queue = r.queue)
             AND p.queue = r.queue
             AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c
                              WHERE c.partition_id = p.id AND c.consumer_group = r.consumer_group)) u ON true;
END $$;

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

-- One group's figures over every partition it reads (NULL: it reads
-- none): what the list shows for each group and a group's page shows at
-- its top. cursors and members count the cursors it holds.
CREATE OR REPLACE FUNCTION queen.group_summary(p_group text, p_lagging_seconds integer, p_dead_seconds integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
               'name', p_group, 'queues', g.queues, 'members', g.members, 'cursors', g.cursors,
               'totalLag', g.lag, 'maxTimeLag', round(g.time_lag),
               'lastActivityAt', queen.iso_ms(g.last_activity),
               'state', queen.group_state(g.lag, g.time_lag, g.last_activity, p_lagging_seconds, p_dead_seconds))
      FROM (SELECT jsonb_agg(queue ORDER BY queue) AS queues, sum(cursors) AS cursors, sum(members) AS members,
                   sum(lag) AS lag, max(time_lag) AS time_lag, max(last_activity) AS last_activity
              FROM queen.group_lag(p_group, NULL)
            HAVING count(*) > 0) g
$$;

-- The groups that read a queue (p_queue's only when given), by a
-- subscription or by cursors, whose name holds p_search.
CREATE OR REPLACE FUNCTION queen.group_names(p_queue text, p_search text) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT n.consumer_group FROM (
        SELECT c.consumer_group FROM queen.log_consumers c
         WHERE p_queue IS NULL OR c.partition_id IN (SELECT p.id FROM queen.log_partitions p WHERE p.queue = p_queue)
         UNION
        SELECT s.consumer_group FROM queen.subscriptions s WHERE p_queue IS NULL OR s.queue = p_queue) n
     WHERE queen.name_matches(n.consumer_group, p_search)
$$;

-- Those groups in the order of p_sort: name, lag (totalLag) or age
-- (maxTimeLag: the oldest message not consumed), largest first when
-- p_desc; name breaks ties. The lag is read only when sorting by it
-- (gated by p_sort, as in queue_list).
CREATE OR REPLACE FUNCTION queen.group_list(p_lagging_seconds integer, p_dead_seconds integer, p_queue text,
                                 p_limit integer, p_offset integer, p_search text, p_sort text, p_desc boolean)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT coalesce(jsonb_agg(queen.group_summary(o.name, p_lagging_seconds, p_dead_seconds)
                                      ORDER BY o.rank), '[]')
      FROM (SELECT k.name, row_number() OVER (ORDER BY CASE WHEN p_desc THEN k.key END DESC NULLS LAST,
                                                       CASE WHEN NOT p_desc THEN k.key END ASC NULLS LAST,
                                                       CASE WHEN p_desc AND p_sort = 'name' THEN k.name END DESC,
                                                       k.name) AS rank
              FROM (SELECT n.name, CASE p_sort WHEN 'lag' THEN l.lag WHEN 'age' THEN l.time_lag END AS key
                      FROM queen.group_names(p_queue, p_search) n(name)
                      LEFT JOIN (SELECT g.consumer_group, sum(g.lag) AS lag, max(g.time_lag) AS time_lag
                                   FROM queen.group_lag(NULL, NULL) g
                                  WHERE p_sort IN ('lag', 'age') GROUP BY g.consumer_group) l
                        ON l.consumer_group = n.name) k
             ORDER BY rank LIMIT p_limit OFFSET coalesce(p_offset, 0)) o);
END $$;

-- How many groups group_list(p_queue, p_search) lists in all.
CREATE OR REPLACE FUNCTION queen.group_count(p_queue text, p_search text) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM queen.group_names(p_queue, p_search)
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

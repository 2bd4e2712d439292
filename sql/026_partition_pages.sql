-- 026: what the dashboard reads at scale: queues, consumer groups, a
-- queue's partitions and a group's cursors a page at a time, the cluster's
-- traffic as counters any server can read, and leased offsets evicted over
-- time.
--
-- A queue may hold 100,000 partitions: its detail and its retention explain
-- listed every one (26 s and 63 s at that size). With a limit they answer
-- one page, ordered by partition name, and the queue-wide figures come from
-- one scan of the partition rows, never from per-partition work. Without a
-- limit they answer the whole list, as Queen's clients read it.

-- The figures of a queue every page needs: one scan of its partition rows.
CREATE FUNCTION queen.queue_partition_totals(p_queue text, OUT partitions bigint, OUT messages numeric,
                                             OUT last_write_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT count(*), coalesce(sum(p.last_offset + 1 - p.log_start), 0), max(p.last_write_at)
      FROM queen.log_partitions p WHERE p.queue = p_queue
$$;

-- A queue's partitions in name order (only p_name's when given): the
-- whole list when p_limit is null.
CREATE FUNCTION queen.queue_partition_page(p_queue text, p_name text, p_limit integer, p_offset integer)
RETURNS SETOF queen.log_partitions LANGUAGE sql STABLE AS $$
    SELECT p.* FROM queen.log_partitions p WHERE p.queue = p_queue AND (p_name IS NULL OR p.name = p_name)
     ORDER BY p.name LIMIT p_limit OFFSET coalesce(p_offset, 0)
$$;

-- {"limit", "offset"} as GET /api/v1/dlq answers it; nothing for a whole list.
CREATE FUNCTION queen.pagination_json(p_limit integer, p_offset integer) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_limit IS NOT NULL
                THEN jsonb_build_object('pagination', jsonb_build_object('limit', p_limit, 'offset', coalesce(p_offset, 0)))
                ELSE '{}' END
$$;

CREATE OR REPLACE FUNCTION queen.queue_json(q queen.queues, p_detail boolean) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'name', q.name, 'namespace', q.namespace, 'task', q.task, 'createdAt', queen.iso_ms(q.created_at),
        'partitions', t.partitions, 'lastWriteAt', queen.iso_ms(t.last_write_at),
        'messages', jsonb_build_object(
            'total', t.messages,
            'pending', (SELECT coalesce(jsonb_object_agg(g.consumer_group, g.lag), '{}')
                          FROM (SELECT c.consumer_group, sum(p.last_offset + 1 - queen.next_offset(p, c.committed)) AS lag
                                  FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
                                 WHERE p.queue = q.name GROUP BY c.consumer_group) g),
            'deadLetters', (SELECT count(*) FROM queen.log_dlq d WHERE d.queue = q.name)))
      || CASE WHEN p_detail THEN jsonb_build_object('options', q.options) ELSE '{}' END
      FROM queen.queue_partition_totals(q.name) t
$$;

-- GET /api/v1/resources/queues/:queue[?limit=&offset=].
DROP FUNCTION queen.queue_detail(text);
CREATE FUNCTION queen.queue_detail(p_queue text, p_limit integer, p_offset integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT queen.queue_json(q, true)
        || jsonb_build_object('partitionList', (SELECT coalesce(jsonb_agg(queen.partition_json(p) ORDER BY p.name), '[]')
                                                  FROM queen.queue_partition_page(q.name, NULL, p_limit, p_offset) p))
        || queen.pagination_json(p_limit, p_offset)
      FROM queen.queues q WHERE q.name = p_queue
$$;

-- What a page of explain cannot show: the whole queue's retained offsets,
-- how many partitions a pass would look at now, and when the next one is
-- due. One scan of the partition rows.
CREATE FUNCTION queen.retention_queue_summary(p_queue text, p_now timestamptz) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'partitions', count(*),
        'retainedOffsets', coalesce(sum(p.last_offset + 1 - p.log_start), 0),
        'oldestRetainedAt', queen.iso_ms(min(p.oldest_at)),
        'partitionsDue', count(*) FILTER (WHERE p.retention_check_at <= p_now),
        'nextCheckAt', queen.iso_ms(min(p.retention_check_at)))
      FROM queen.log_partitions p WHERE p.queue = p_queue
$$;

-- GET /api/v1/retention/explain?queue=[&partition=][&limit=&offset=].
DROP FUNCTION queen.retention_explain(text, text, timestamptz);
CREATE FUNCTION queen.retention_explain(p_queue text, p_partition text, p_now timestamptz,
                                        p_limit integer, p_offset integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('queue', q.name, 'options', jsonb_build_object(
               'retentionEnabled', q.options->'retentionEnabled', 'retentionSeconds', q.options->'retentionSeconds',
               'completedRetentionSeconds', q.options->'completedRetentionSeconds',
               'maxWaitTimeSeconds', q.options->'maxWaitTimeSeconds',
               'dedupWindowSeconds', q.options->'dedupWindowSeconds'),
           'ackWindowSeconds', (queen.retention_windows(q.options)).ack_window,
           'summary', queen.retention_queue_summary(q.name, p_now),
           'partitions', coalesce((SELECT jsonb_agg(queen.partition_explain(p, q.options, p_now) ORDER BY p.name)
                                     FROM queen.queue_partition_page(q.name, p_partition, p_limit, p_offset) p), '[]'))
        || queen.pagination_json(p_limit, p_offset)
      FROM queen.queues q WHERE q.name = p_queue
$$;

-- GET /api/v1/resources/overview, with the cluster's traffic as counters:
-- offsetsWritten (every offset any server ever gave a partition that still
-- exists) and offsetsConsumed (how far every consumer group's cursors
-- moved). A page samples them twice for messages in and out per second
-- across all servers; /metrics counts one server's requests. totalLag is
-- every group's lag summed, which a page of groups cannot give.
CREATE OR REPLACE FUNCTION queen.overview() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'queues', (SELECT count(*) FROM queen.queues),
        'partitions', p.partitions, 'messages', p.messages, 'offsetsWritten', p.written,
        'segments', (SELECT count(*) FROM queen.log_segments),
        'consumerGroups', c.groups, 'activeLeases', c.leases, 'offsetsConsumed', c.consumed, 'totalLag', c.lag,
        'deadLetters', (SELECT count(*) FROM queen.log_dlq),
        'lastWriteAt', queen.iso_ms(p.last_write_at))
      FROM (SELECT count(*) AS partitions, coalesce(sum(last_offset + 1 - log_start), 0) AS messages,
                   coalesce(sum(last_offset + 1), 0) AS written, max(last_write_at) AS last_write_at
              FROM queen.log_partitions) p,
           (SELECT count(DISTINCT c.consumer_group) AS groups, count(*) FILTER (WHERE c.lease_expires > now()) AS leases,
                   coalesce(sum(c.total_consumed), 0) AS consumed,
                   coalesce(sum(p.last_offset + 1 - queen.next_offset(p, c.committed)), 0) AS lag
              FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id) c
$$;

-- GET /api/v1/analytics/retention, with leasedEvictedMsgs: of the offsets
-- dropped, those a consumer held under a lease when they went (any rule;
-- in practice max_wait_time_eviction), per bucket and in total.
CREATE OR REPLACE FUNCTION queen.retention_analytics(p_from timestamptz, p_to timestamptz, p_queue text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    WITH span AS (
        SELECT p_from AS f, p_to AS t,
               CASE WHEN p_to - p_from <= interval '60 minutes' THEN 1
                    WHEN p_to - p_from <= interval '6 hours' THEN 5
                    WHEN p_to - p_from <= interval '24 hours' THEN 15
                    WHEN p_to - p_from <= interval '7 days' THEN 60 ELSE 360 END AS minutes),
    rows AS (
        SELECT date_bin(make_interval(mins => span.minutes), h.executed_at, span.f) AS bucket, h.rule,
               h.offsets_dropped, h.leased_dropped
          FROM queen.retention_history h, span
         WHERE h.executed_at >= span.f AND h.executed_at < span.t AND (p_queue IS NULL OR h.queue = p_queue)),
    buckets AS (
        SELECT bucket,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'retention'), 0) AS r,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'completed_retention'), 0) AS c,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'max_wait_time_eviction'), 0) AS e,
               coalesce(sum(leased_dropped), 0) AS leased,
               coalesce(sum(offsets_dropped), 0) AS total, count(*) AS events
          FROM rows GROUP BY bucket)
    SELECT jsonb_build_object(
        'timeRange', jsonb_build_object('from', queen.iso_ms(span.f), 'to', queen.iso_ms(span.t)),
        'bucketMinutes', span.minutes,
        'series', coalesce((SELECT jsonb_agg(jsonb_build_object('bucket', queen.iso_ms(bucket), 'retentionMsgs', r,
                      'completedRetentionMsgs', c, 'evictionMsgs', e, 'leasedEvictedMsgs', leased,
                      'totalMsgs', total, 'eventCount', events)
                      ORDER BY bucket) FROM buckets), '[]'),
        'totals', jsonb_build_object(
            'retentionMsgs', coalesce((SELECT sum(r) FROM buckets), 0),
            'completedRetentionMsgs', coalesce((SELECT sum(c) FROM buckets), 0),
            'evictionMsgs', coalesce((SELECT sum(e) FROM buckets), 0),
            'leasedEvictedMsgs', coalesce((SELECT sum(leased) FROM buckets), 0),
            'totalMsgs', coalesce((SELECT sum(total) FROM buckets), 0),
            'eventCount', coalesce((SELECT sum(events) FROM buckets), 0)))
      FROM span
$$;

-- GET /api/v1/resources/queues[?limit=&offset=]: queues in name order.
DROP FUNCTION queen.queue_list();
CREATE FUNCTION queen.queue_list(p_limit integer, p_offset integer) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(queen.queue_json(q, false) ORDER BY q.name), '[]')
      FROM (SELECT * FROM queen.queues ORDER BY name LIMIT p_limit OFFSET coalesce(p_offset, 0)) q
$$;

-- A page of groups, or one group's cursors, is read by group name: without
-- this index each would scan every cursor of every group. The group never
-- changes in a row, so cursor updates stay heap-only.
CREATE INDEX log_consumers_group ON queen.log_consumers (consumer_group);

-- One group's figures over all its cursors (NULL: it has none): what the
-- list shows for each group and a group's page shows at its top.
CREATE FUNCTION queen.group_summary(p_group text, p_lagging_seconds integer, p_dead_seconds integer) RETURNS jsonb
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

-- GET /api/v1/consumer-groups[?queue=][&limit=&offset=]: groups with
-- cursors (on p_queue's partitions when given), in name order; only the
-- page's groups are summed, each over all its cursors.
DROP FUNCTION queen.group_list(integer, integer);
CREATE FUNCTION queen.group_list(p_lagging_seconds integer, p_dead_seconds integer, p_queue text,
                                 p_limit integer, p_offset integer)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(queen.group_summary(n.consumer_group, p_lagging_seconds, p_dead_seconds)
                              ORDER BY n.consumer_group), '[]')
      FROM (SELECT DISTINCT c.consumer_group FROM queen.log_consumers c
             WHERE p_queue IS NULL OR c.partition_id IN (SELECT p.id FROM queen.log_partitions p WHERE p.queue = p_queue)
             ORDER BY c.consumer_group LIMIT p_limit OFFSET coalesce(p_offset, 0)) n
$$;

-- GET /api/v1/consumer-groups/:group[?limit=&offset=]: the group's figures,
-- its cursors in (queue, partition) order — a page of them when asked —
-- and its stored subscriptions. NULL when it has neither cursors nor
-- subscriptions.
DROP FUNCTION queen.group_detail(text);
CREATE FUNCTION queen.group_detail(p_group text, p_lagging_seconds integer, p_dead_seconds integer,
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

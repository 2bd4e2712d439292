-- Queues as the admin API and the dashboard read them, and queue deletion.

-- {"limit", "offset"} as GET /api/v1/dlq answers it; nothing for a whole list.
CREATE OR REPLACE FUNCTION queen.pagination_json(p_limit integer, p_offset integer) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_limit IS NOT NULL
                THEN jsonb_build_object('pagination', jsonb_build_object('limit', p_limit, 'offset', coalesce(p_offset, 0)))
                ELSE '{}' END
$$;

-- The figures of a queue every page needs: one scan of its partition rows.
CREATE OR REPLACE FUNCTION queen.queue_partition_totals(p_queue text, OUT partitions bigint, OUT messages numeric,
                                             OUT last_write_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT count(*), coalesce(sum(p.last_offset + 1 - p.log_start), 0), max(p.last_write_at)
      FROM queen.log_partitions p WHERE p.queue = p_queue
$$;

-- A queue's partitions in name order (only p_name's when given): the
-- whole list when p_limit is null.
CREATE OR REPLACE FUNCTION queen.queue_partition_page(p_queue text, p_name text, p_limit integer, p_offset integer)
RETURNS SETOF queen.log_partitions LANGUAGE sql STABLE AS $$
    SELECT p.* FROM queen.log_partitions p WHERE p.queue = p_queue AND (p_name IS NULL OR p.name = p_name)
     ORDER BY p.name LIMIT p_limit OFFSET coalesce(p_offset, 0)
$$;

CREATE OR REPLACE FUNCTION queen.partition_json(part queen.log_partitions) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', part.id, 'name', part.name, 'lastOffset', part.last_offset,
        'logStart', part.log_start, 'txnsStart', part.txns_start,
        'messages', part.last_offset + 1 - part.log_start,
        'segments', (SELECT count(*) FROM queen.log_segments s WHERE s.partition_id = part.id),
        'lastWriteAt', queen.iso_ms(part.last_write_at), 'createdAt', queen.iso_ms(part.created_at))
$$;

CREATE OR REPLACE FUNCTION queen.queue_json(q queen.queues, p_detail boolean) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'name', q.name, 'namespace', q.namespace, 'task', q.task, 'createdAt', queen.iso_ms(q.created_at),
        'partitions', t.partitions, 'lastWriteAt', queen.iso_ms(t.last_write_at),
        'messages', jsonb_build_object(
            'total', t.messages,
            'pending', (SELECT coalesce(jsonb_object_agg(g.consumer_group, g.lag), '{}')
                          FROM queen.group_lag(NULL, q.name) g),
            'deadLetters', (SELECT count(*) FROM queen.log_dlq d WHERE d.queue = q.name)))
      || CASE WHEN p_detail THEN jsonb_build_object('options', q.options) ELSE '{}' END
      FROM queen.queue_partition_totals(q.name) t
$$;

-- Whether name holds p_search, case aside (NULL: every name): how every
-- list's ?search= matches.
CREATE OR REPLACE FUNCTION queen.name_matches(p_name text, p_search text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT p_search IS NULL OR strpos(lower(p_name), lower(p_search)) > 0
$$;

-- Queues whose name holds p_search, in the order of p_sort: name, lag
-- (every group's, summed), age (created first when p_desc), failures
-- (dead letters), messages (retained) or rate (messages pushed per second
-- in the last minute the server rolled, queen.minute_stats: 0 for a queue
-- that pushed nothing then), largest first when p_desc; name
-- breaks ties. A key is computed only when it is the one sorted by: each
-- key's join is gated by a condition on p_sort alone, which PostgreSQL
-- checks once (a one-time filter) before running that join.
CREATE OR REPLACE FUNCTION queen.queue_list(p_limit integer, p_offset integer, p_search text, p_sort text,
                                            p_desc boolean) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT coalesce(jsonb_agg(queen.queue_json(q, false) ORDER BY o.rank), '[]')
      FROM (SELECT k.name, row_number() OVER (ORDER BY CASE WHEN p_desc THEN k.key END DESC NULLS LAST,
                                                       CASE WHEN NOT p_desc THEN k.key END ASC NULLS LAST,
                                                       CASE WHEN p_desc AND p_sort = 'name' THEN k.name END DESC,
                                                       k.name) AS rank
              FROM (SELECT q.name, CASE p_sort WHEN 'lag' THEN coalesce(l.lag, 0)
                                               WHEN 'age' THEN -extract(epoch FROM q.created_at)
                                               WHEN 'failures' THEN coalesce(d.n, 0)
                                               WHEN 'messages' THEN t.messages
                                               WHEN 'rate' THEN coalesce(r.rate, 0) END AS key
                      FROM queen.queues q
                      LEFT JOIN (SELECT g.queue, sum(g.lag) AS lag FROM queen.group_lag(NULL, NULL) g
                                  WHERE p_sort = 'lag' GROUP BY g.queue) l ON l.queue = q.name
                      LEFT JOIN (SELECT x.queue, count(*) AS n FROM queen.log_dlq x
                                  WHERE p_sort = 'failures' GROUP BY x.queue) d ON d.queue = q.name
                      LEFT JOIN LATERAL (SELECT x.messages FROM queen.queue_partition_totals(q.name) x
                                          WHERE p_sort = 'messages') t ON true
                      LEFT JOIN (SELECT s.queue, s.pushed::numeric / m.seconds AS rate
                                   FROM queen.minute_stats s
                                   JOIN (SELECT minute, greatest(seconds, 1) AS seconds FROM queen.minute_rolls
                                          ORDER BY minute DESC LIMIT 1) m ON m.minute = s.minute
                                  WHERE p_sort = 'rate') r ON r.queue = q.name
                     WHERE queen.name_matches(q.name, p_search)) k
             ORDER BY rank LIMIT p_limit OFFSET coalesce(p_offset, 0)) o
      JOIN queen.queues q ON q.name = o.name);
END $$;

-- How many queues queue_list(p_search) lists in all.
CREATE OR REPLACE FUNCTION queen.queue_count(p_search text) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM queen.queues q WHERE queen.name_matches(q.name, p_search)
$$;

CREATE OR REPLACE FUNCTION queen.queue_detail(p_queue text, p_limit integer, p_offset integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT queen.queue_json(q, true)
        || jsonb_build_object('partitionList', (SELECT coalesce(jsonb_agg(queen.partition_json(p) ORDER BY p.name), '[]')
                                                  FROM queen.queue_partition_page(q.name, NULL, p_limit, p_offset) p))
        || queen.pagination_json(p_limit, p_offset)
      FROM queen.queues q WHERE q.name = p_queue
$$;

-- GET /api/v1/resources/overview, with the cluster's traffic as counters:
-- offsetsWritten (every offset any server ever gave a partition that still
-- exists) and offsetsConsumed (how far every consumer group's cursors
-- moved). A page samples them twice for messages in and out per second
-- across all servers; /metrics counts one server's requests. totalLag is
-- every group's lag summed (queen.group_lag), which a page of
-- groups cannot give.
CREATE OR REPLACE FUNCTION queen.overview() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'queues', (SELECT count(*) FROM queen.queues),
        'partitions', p.partitions, 'messages', p.messages, 'offsetsWritten', p.written,
        'segments', (SELECT count(*) FROM queen.log_segments),
        'consumerGroups', g.groups, 'activeLeases', c.leases, 'offsetsConsumed', c.consumed, 'totalLag', g.lag,
        'deadLetters', (SELECT count(*) FROM queen.log_dlq),
        'lastWriteAt', queen.iso_ms(p.last_write_at))
      FROM (SELECT count(*) AS partitions, coalesce(sum(last_offset + 1 - log_start), 0) AS messages,
                   coalesce(sum(last_offset + 1), 0) AS written, max(last_write_at) AS last_write_at
              FROM queen.log_partitions) p,
           (SELECT count(*) FILTER (WHERE c.lease_expires > now()) AS leases,
                   coalesce(sum(c.total_consumed), 0) AS consumed FROM queen.log_consumers c) c,
           (SELECT count(DISTINCT consumer_group) AS groups, coalesce(sum(lag), 0) AS lag
              FROM queen.group_lag(NULL, NULL)) g
$$;

-- Deletes a queue and everything of it: its partitions cascade, and the
-- triggers take the rest (see Deletion). false: there was no such queue.
CREATE OR REPLACE FUNCTION queen.queue_delete(p_queue text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.queues WHERE name = p_queue;
    RETURN FOUND;
END $$;

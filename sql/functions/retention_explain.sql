-- What retention will do and did, as the API explains it.

CREATE OR REPLACE FUNCTION queen.retention_explain(p_queue text, p_partition text, p_now timestamptz,
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

-- What a page of explain cannot show: the whole queue's retained offsets,
-- how many partitions a pass would look at now, and when the next one is
-- due. One scan of the partition rows.
CREATE OR REPLACE FUNCTION queen.retention_queue_summary(p_queue text, p_now timestamptz) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'partitions', count(*),
        'retainedOffsets', coalesce(sum(p.last_offset + 1 - p.log_start), 0),
        'oldestRetainedAt', queen.iso_ms(min(p.oldest_at)),
        'partitionsDue', count(*) FILTER (WHERE p.retention_check_at <= p_now),
        'nextCheckAt', queen.iso_ms(min(p.retention_check_at)))
      FROM queen.log_partitions p WHERE p.queue = p_queue
$$;

-- One partition of GET /api/v1/retention/explain: exact boundaries, and
-- what the next pass deletes, which is nothing while the schedule holds the
-- partition back (a pass only looks at partitions that are due).
CREATE OR REPLACE FUNCTION queen.partition_explain(part queen.log_partitions, opts jsonb, p_now timestamptz) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    w    record := queen.retention_windows(opts);
    plan record := queen.retention_plan(part, opts, p_now, part.log_start, 1, true);
    due  boolean := coalesce(part.retention_check_at <= p_now, false);
    segs bigint;
BEGIN
    SELECT count(*) INTO segs FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= part.log_start AND g.end_offset < plan.boundary;
    RETURN jsonb_build_object(
        'partition', part.name, 'partitionId', part.id, 'watermark', part.log_start,
        'lastOffset', part.last_offset, 'retainedOffsets', part.last_offset + 1 - part.log_start,
        'oldestRetainedAt', queen.iso_ms(part.oldest_at), 'sidecarWatermark', part.txns_start,
        'nextCheckAt', queen.iso_ms(part.retention_check_at),
        'boundaries', jsonb_build_object(
            'retention', CASE WHEN w.retention > 0 THEN plan.retention_boundary END,
            'completedRetention', CASE WHEN w.completed > 0 THEN plan.completed_boundary END,
            'maxWaitTime', CASE WHEN w.max_wait > 0 THEN plan.max_wait_boundary END),
        'consumptionCap', CASE WHEN plan.cap IS NOT NULL THEN jsonb_build_object(
            'offset', plan.cap, 'pinnedBy', plan.pinned_by, 'behind', plan.behind) END,
        'straddlingSegment', CASE WHEN plan.straddling_base IS NOT NULL THEN jsonb_build_object(
            'baseOffset', plan.straddling_base, 'endOffset', plan.straddling_end) END,
        'nextPass', CASE WHEN due AND plan.rule IS NOT NULL AND segs > 0 THEN jsonb_build_object(
            'rule', plan.rule, 'fromOffset', part.log_start, 'toOffset', plan.boundary, 'boundary', plan.boundary,
            'segments', segs, 'offsets', plan.boundary - part.log_start,
            'leasedOffsets', queen.leased_in(part.id, part.log_start, plan.boundary)) END,
        'notes', queen.retention_notes(part, opts, plan, due));
END $$;

-- Why the oldest data that stays after the next pass is kept, rule by rule,
-- and when each rule lets it go.
CREATE OR REPLACE FUNCTION queen.retention_notes(part queen.log_partitions, opts jsonb, plan record, p_due boolean)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    w     record := queen.retention_windows(opts);
    notes jsonb := '[]';
    keep  record;
BEGIN
    IF NOT (opts->>'retentionEnabled')::boolean AND ((opts->>'retentionSeconds')::integer > 0
            OR (opts->>'completedRetentionSeconds')::integer > 0) THEN
        notes := notes || to_jsonb('retention windows are set but retentionEnabled is false: they delete nothing'::text);
    END IF;
    IF (opts->>'retentionEnabled')::boolean AND w.retention = 0 AND w.completed = 0 THEN
        notes := notes || to_jsonb('retentionEnabled is true but both windows are 0: nothing is deleted by them'::text);
    END IF;
    IF w.retention = 0 AND w.completed = 0 AND w.max_wait = 0 THEN
        RETURN notes || to_jsonb('no retention rule applies to this queue: nothing is deleted'::text);
    END IF;
    IF plan.rule IS NOT NULL AND plan.boundary > part.log_start THEN
        notes := notes || to_jsonb(CASE WHEN p_due
            THEN format('the next pass deletes %s under %s', queen.offset_span(part.log_start, plan.boundary - 1), plan.rule)
            ELSE format('%s can go under %s, but this partition is next looked at %s '
                        '(a consumer group held it back when it was last checked)',
                        queen.offset_span(part.log_start, plan.boundary - 1), plan.rule,
                        queen.iso_ms(part.retention_check_at)) END);
    END IF;
    SELECT g.base_offset, g.end_offset, g.created_at INTO keep FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= coalesce(plan.boundary, part.log_start)
     ORDER BY g.base_offset LIMIT 1;
    IF NOT FOUND THEN
        RETURN notes || to_jsonb('nothing else is retained'::text);
    END IF;
    IF w.retention > 0 THEN
        notes := notes || to_jsonb(format('retentionSeconds keeps offsets from %s: segment %s-%s was committed at %s and goes at %s',
            keep.base_offset, keep.base_offset, keep.end_offset, queen.iso_ms(keep.created_at),
            queen.iso_ms(keep.created_at + make_interval(secs => w.retention))));
    END IF;
    IF w.completed > 0 AND plan.cap IS NULL THEN
        notes := notes || to_jsonb('no consumer group has a cursor on this partition: completedRetentionSeconds deletes nothing here'::text);
    ELSIF w.completed > 0 AND keep.end_offset >= plan.cap THEN
        notes := notes || to_jsonb(CASE WHEN keep.base_offset < plan.cap
            THEN format('consumer group %s has consumed up to offset %s: segment %s-%s holds its next offset and stays '
                        'with everything in it under completedRetentionSeconds until the group passes offset %s',
                        plan.pinned_by, plan.cap - 1, keep.base_offset, keep.end_offset, keep.end_offset)
            ELSE format('consumer group %s has %s retained offsets to consume: completedRetentionSeconds keeps '
                        'everything from offset %s until it consumes them', plan.pinned_by, plan.behind, keep.base_offset) END);
    ELSIF w.completed > 0 THEN
        notes := notes || to_jsonb(format('completedRetentionSeconds keeps offsets from %s (consumed): segment %s-%s '
                                          'was committed at %s and goes at %s', keep.base_offset, keep.base_offset,
            keep.end_offset, queen.iso_ms(keep.created_at), queen.iso_ms(keep.created_at + make_interval(secs => w.completed))));
    END IF;
    IF w.max_wait > 0 THEN
        notes := notes || to_jsonb(format('maxWaitTimeSeconds deletes segments older than %s s whether consumed or leased: '
            'segment %s-%s goes at %s', w.max_wait, keep.base_offset, keep.end_offset,
            queen.iso_ms(keep.created_at + make_interval(secs => w.max_wait))));
    END IF;
    RETURN notes;
END $$;

-- "offset 4" or "offsets 4-9", for notes.
CREATE OR REPLACE FUNCTION queen.offset_span(p_first bigint, p_last bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_first = p_last THEN format('offset %s', p_first) ELSE format('offsets %s-%s', p_first, p_last) END
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

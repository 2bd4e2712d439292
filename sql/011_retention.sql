-- 011_retention: the log retention engine (docs/retention.md).
--
-- Every rule deletes whole segments from the front of a partition and moves
-- its watermark (log_start). The work is done in bounded steps: one step
-- locks one partition row, deletes at most a batch of segments, records what
-- it did in retention_history, and commits.
--
-- Finding work reads a schedule, never every partition: each partition
-- carries the time its oldest segment can first fall under a rule
-- (retention_check_at) and the time its oldest sidecar row leaves the ack
-- window (sidecar_check_at). A push into an empty partition sets them, a
-- step moves them on, a partition pinned by a consumer group is looked at
-- again a pass later, and changing a queue's options reschedules its
-- partitions. A pass takes the due ones from an index, oldest first.

ALTER TABLE queen.log_partitions ADD COLUMN oldest_at timestamptz;          -- commit time of the first retained segment
ALTER TABLE queen.log_partitions ADD COLUMN retention_check_at timestamptz; -- NULL: no rule can delete anything yet
ALTER TABLE queen.log_partitions ADD COLUMN sidecar_check_at timestamptz;   -- NULL: no sidecar rows
CREATE INDEX log_partitions_retention_due ON queen.log_partitions (retention_check_at)
    WHERE retention_check_at IS NOT NULL;
CREATE INDEX log_partitions_sidecar_due ON queen.log_partitions (sidecar_check_at)
    WHERE sidecar_check_at IS NOT NULL;
-- For a partition retention has emptied: its last push (NULL again at its
-- next push). Partition cleanup reads its candidates from here, oldest
-- first. No index may cover a column every push changes (last_offset,
-- last_write_at), so that pushes stay heap-only updates of the row.
ALTER TABLE queen.log_partitions ADD COLUMN empty_since timestamptz;
CREATE INDEX log_partitions_empty ON queen.log_partitions (empty_since) WHERE empty_since IS NOT NULL;
ALTER TABLE queen.log_partitions SET (fillfactor = 50);   -- room for heap-only updates

-- Which server runs the current pass: one runner per pass across replicas.
CREATE TABLE queen.retention_runner (
    id           integer PRIMARY KEY CHECK (id = 1),
    runner       text NOT NULL,
    lease_until  timestamptz NOT NULL
);
INSERT INTO queen.retention_runner VALUES (1, '', '-infinity');

-- Under the transaction-level advisory lock, claims (or keeps) the pass for
-- p_runner. false: another server's pass is running.
CREATE FUNCTION queen.retention_claim(p_runner text, p_lease_seconds integer) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(7365696) THEN RETURN false; END IF;
    UPDATE queen.retention_runner
       SET runner = p_runner, lease_until = clock_timestamp() + make_interval(secs => p_lease_seconds)
     WHERE id = 1 AND (runner = p_runner OR lease_until < clock_timestamp());
    RETURN FOUND;
END $$;

-- Whether p_runner holds the pass now. Steps check this without writing, so
-- one runner's steps can run side by side; the claim itself (above) is the
-- only write, at the start of a pass and when it renews.
CREATE FUNCTION queen.retention_owns(p_runner text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM queen.retention_runner
                    WHERE id = 1 AND runner = p_runner AND lease_until > clock_timestamp())
$$;

CREATE FUNCTION queen.retention_release(p_runner text) RETURNS void LANGUAGE sql AS $$
    UPDATE queen.retention_runner SET lease_until = '-infinity' WHERE id = 1 AND runner = p_runner
$$;

-- The queue options that matter to retention, as seconds (0: off).
CREATE FUNCTION queen.retention_windows(opts jsonb, OUT retention integer, OUT completed integer,
                                        OUT max_wait integer, OUT ack_window integer)
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN (opts->>'retentionEnabled')::boolean THEN (opts->>'retentionSeconds')::integer ELSE 0 END,
           CASE WHEN (opts->>'retentionEnabled')::boolean THEN (opts->>'completedRetentionSeconds')::integer ELSE 0 END,
           (opts->>'maxWaitTimeSeconds')::integer,
           greatest((opts->>'dedupWindowSeconds')::integer, (opts->>'completedRetentionSeconds')::integer, 900)
$$;

-- The shortest window after which some rule can delete a segment (seconds),
-- NULL when no rule is on.
CREATE FUNCTION queen.rules_window(opts jsonb) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT nullif(least(nullif(w.retention, 0), nullif(w.completed, 0), nullif(w.max_wait, 0)), 0)
      FROM queen.retention_windows(opts) w
$$;

-- Recomputes a partition's schedule from its first retained segment and
-- first sidecar row. p_not_before (or NULL) holds retention back: for a
-- partition whose data is old enough but pinned by a consumer group.
CREATE FUNCTION queen.reschedule(p_partition uuid, opts jsonb, p_not_before timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    part      queen.log_partitions%ROWTYPE;
    first_seg timestamptz;
    first_txn timestamptz;
BEGIN
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    SELECT s.created_at INTO first_seg FROM queen.log_segments s
     WHERE s.partition_id = part.id AND s.base_offset >= part.log_start ORDER BY s.base_offset LIMIT 1;
    SELECT t.created_at INTO first_txn FROM queen.log_txns t
     WHERE t.partition_id = part.id AND t.base_offset >= part.txns_start ORDER BY t.base_offset LIMIT 1;
    UPDATE queen.log_partitions SET oldest_at = first_seg,
           retention_check_at = CASE WHEN first_seg IS NOT NULL AND queen.rules_window(opts) IS NOT NULL THEN
               greatest(first_seg + make_interval(secs => queen.rules_window(opts)), p_not_before) END,
           sidecar_check_at = first_txn + make_interval(secs => (queen.retention_windows(opts)).ack_window)
     WHERE id = part.id;
END $$;

CREATE FUNCTION queen.queue_options_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queen.reschedule(p.id, NEW.options, NULL) FROM queen.log_partitions p WHERE p.queue = NEW.name;
    RETURN NULL;
END $$;
CREATE TRIGGER queues_options_changed AFTER UPDATE OF options ON queen.queues
    FOR EACH ROW WHEN (OLD.options IS DISTINCT FROM NEW.options) EXECUTE FUNCTION queen.queue_options_changed();

SELECT queen.reschedule(p.id, q.options, NULL)   -- partitions that exist already
  FROM queen.log_partitions p JOIN queen.queues q ON q.name = p.queue;

-- The consumption cap: the lowest committed cursor over every consumer group
-- of the partition, plus one. NULL when no group has a cursor there (then
-- nothing is consumed and completed_retention deletes nothing).
CREATE FUNCTION queen.consumption_cap(p_partition uuid, OUT cap bigint, OUT pinned_by text, OUT behind bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT c.committed + 1, c.consumer_group, p.last_offset - c.committed INTO cap, pinned_by, behind
      FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
     WHERE c.partition_id = p_partition
     ORDER BY c.committed, c.consumer_group LIMIT 1;
END $$;

-- What each rule would delete from the front of the partition now: the
-- boundary (first offset kept) per rule, the winning rule and its boundary,
-- the segment the consumption cap falls inside, and how many of the first p_batch segments lie
-- wholly below it. A segment is deletable only when all of it lies below
-- the boundary.
CREATE FUNCTION queen.retention_plan(part queen.log_partitions, opts jsonb, p_now timestamptz, p_batch integer,
    OUT retention_boundary bigint, OUT completed_boundary bigint, OUT max_wait_boundary bigint,
    OUT cap bigint, OUT pinned_by text, OUT behind bigint,
    OUT rule text, OUT boundary bigint, OUT segments integer, OUT straddling_base bigint,
    OUT straddling_end bigint)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    w    record := queen.retention_windows(opts);
    s    record;
    pin  record := queen.consumption_cap(part.id);
BEGIN
    cap := pin.cap; pinned_by := pin.pinned_by; behind := pin.behind;
    retention_boundary := part.log_start; completed_boundary := part.log_start; max_wait_boundary := part.log_start;
    segments := 0;
    FOR s IN SELECT g.base_offset, g.end_offset, g.created_at FROM queen.log_segments g
              WHERE g.partition_id = part.id AND g.base_offset >= part.log_start
              ORDER BY g.base_offset LIMIT p_batch + 1
    LOOP
        IF w.retention > 0 AND s.created_at < p_now - make_interval(secs => w.retention)
           AND retention_boundary = s.base_offset THEN
            retention_boundary := s.end_offset + 1;
        END IF;
        IF w.completed > 0 AND cap IS NOT NULL AND s.end_offset < cap
           AND s.created_at < p_now - make_interval(secs => w.completed)
           AND completed_boundary = s.base_offset THEN
            completed_boundary := s.end_offset + 1;
        END IF;
        IF w.max_wait > 0 AND s.created_at < p_now - make_interval(secs => w.max_wait)
           AND max_wait_boundary = s.base_offset THEN
            max_wait_boundary := s.end_offset + 1;
        END IF;
        IF w.completed > 0 AND cap IS NOT NULL AND s.base_offset < cap AND s.end_offset >= cap THEN
            straddling_base := s.base_offset; straddling_end := s.end_offset;   /* the cap falls inside it */
        END IF;
    END LOOP;
    boundary := greatest(retention_boundary, completed_boundary);
    rule := CASE WHEN boundary = part.log_start THEN NULL
                 WHEN retention_boundary >= completed_boundary THEN 'retention'
                 ELSE 'completed_retention' END;
    IF max_wait_boundary > boundary THEN rule := 'max_wait_time_eviction'; boundary := max_wait_boundary; END IF;
    SELECT count(*) INTO segments FROM (SELECT 1 FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= part.log_start AND g.end_offset < boundary
     LIMIT p_batch) below;
END $$;

-- Offsets of live leases in [p_from, p_to): what a max-wait eviction takes
-- away from running workers.
CREATE FUNCTION queen.leased_in(p_partition uuid, p_from bigint, p_to bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(greatest(0, least(c.lease_end + 1, p_to) - greatest(c.committed + 1, p_from))), 0)::bigint
      FROM queen.log_consumers c
     WHERE c.partition_id = p_partition AND c.lease_expires > now() AND c.lease_end IS NOT NULL
$$;

-- One step on one partition: delete (or, dry, only report) at most p_batch
-- whole segments below the winning boundary, move the watermark, record it.
CREATE FUNCTION queen.retention_step(p_runner text, p_partition uuid,
                                     p_batch integer, p_now timestamptz, p_dry boolean, p_recheck_seconds integer,
                                     OUT status text, OUT rule text, OUT from_offset bigint,
                                     OUT to_offset bigint, OUT dropped bigint, OUT leased_dropped bigint,
                                     OUT segments integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    part queen.log_partitions%ROWTYPE;
    opts jsonb;
    plan record;
    last record;
BEGIN
    IF NOT p_dry AND NOT queen.retention_owns(p_runner) THEN status := 'busy'; RETURN; END IF;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition FOR UPDATE;
    IF NOT FOUND THEN status := 'gone'; RETURN; END IF;
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = part.queue;
    plan := queen.retention_plan(part, opts, p_now, p_batch);
    status := 'idle';
    IF plan.rule IS NULL OR plan.segments = 0 THEN
        -- old enough but held back (a consumption cap): look again a pass later
        IF NOT p_dry THEN PERFORM queen.reschedule(part.id, opts, p_now + make_interval(secs => p_recheck_seconds)); END IF;
        RETURN;
    END IF;
    SELECT g.end_offset INTO last FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= part.log_start AND g.end_offset < plan.boundary
     ORDER BY g.base_offset LIMIT 1 OFFSET least(plan.segments, p_batch) - 1;
    status := 'deleted'; rule := plan.rule; from_offset := part.log_start; to_offset := last.end_offset + 1;
    dropped := to_offset - from_offset; segments := least(plan.segments, p_batch);
    leased_dropped := CASE WHEN rule = 'max_wait_time_eviction' THEN queen.leased_in(part.id, from_offset, to_offset) ELSE 0 END;
    IF p_dry THEN status := 'would_delete'; RETURN; END IF;
    DELETE FROM queen.log_segments g WHERE g.partition_id = part.id AND g.base_offset >= from_offset AND g.base_offset < to_offset;
    UPDATE queen.log_partitions SET log_start = to_offset,
           empty_since = CASE WHEN to_offset > part.last_offset THEN coalesce(part.last_write_at, part.created_at) END
     WHERE id = part.id;
    PERFORM queen.reschedule(part.id, opts, NULL);
    INSERT INTO queen.retention_history (partition_id, queue, partition, rule, from_offset, to_offset,
                                         offsets_dropped, leased_dropped)
    VALUES (part.id, part.queue, part.name, rule, from_offset, to_offset, dropped, leased_dropped);
END $$;

-- Purges at most p_batch sidecar rows of one partition older than the ack
-- window max(dedupWindowSeconds, completedRetentionSeconds, 900 s), on the
-- sidecar's own watermark, independently of segments.
CREATE FUNCTION queen.sidecar_step(p_runner text, p_partition uuid,
                                   p_batch integer, p_now timestamptz, OUT status text, OUT purged integer)
LANGUAGE plpgsql AS $$
DECLARE
    part   queen.log_partitions%ROWTYPE;
    win    integer;
    cutoff timestamptz;
    upto   bigint;
BEGIN
    IF NOT queen.retention_owns(p_runner) THEN status := 'busy'; RETURN; END IF;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition FOR UPDATE;
    IF NOT FOUND THEN status := 'gone'; RETURN; END IF;
    SELECT (queen.retention_windows(q.options)).ack_window INTO win FROM queen.queues q WHERE q.name = part.queue;
    cutoff := p_now - make_interval(secs => win);
    SELECT max(t.base_offset + length(t.hashes) / 16), count(*) INTO upto, purged
      FROM (SELECT t.base_offset, t.hashes FROM queen.log_txns t
             WHERE t.partition_id = part.id AND t.base_offset >= part.txns_start AND t.created_at < cutoff
             ORDER BY t.base_offset LIMIT p_batch) t;
    status := 'idle';
    IF purged > 0 THEN
        DELETE FROM queen.log_txns t WHERE t.partition_id = part.id AND t.base_offset >= part.txns_start AND t.base_offset < upto;
        UPDATE queen.log_partitions SET txns_start = upto WHERE id = part.id;
        status := 'purged';
    END IF;
    PERFORM queen.reschedule(part.id, (SELECT q.options FROM queen.queues q WHERE q.name = part.queue), part.retention_check_at);
END $$;

-- Partitions due for a look, oldest first: two index range scans.
CREATE FUNCTION queen.retention_candidates(p_now timestamptz, p_limit integer)
RETURNS TABLE (partition_id uuid, queue text, partition text, kind text) LANGUAGE sql STABLE AS $$
    (SELECT p.id, p.queue, p.name, 'segments' FROM queen.log_partitions p
      WHERE p.retention_check_at <= p_now ORDER BY p.retention_check_at LIMIT p_limit)
    UNION ALL
    (SELECT p.id, p.queue, p.name, 'sidecar' FROM queen.log_partitions p
      WHERE p.sidecar_check_at <= p_now ORDER BY p.sidecar_check_at LIMIT p_limit)
$$;

-- Deletes at most p_batch partitions that are empty (no segments, no dead
-- letters, no in-flight lease) and untouched (no push, no consumer-group
-- activity) for p_days. Queues are never removed here.
CREATE FUNCTION queen.partition_cleanup(p_runner text, p_days integer,
                                        p_batch integer, p_now timestamptz, OUT status text, OUT removed integer)
LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz := p_now - make_interval(days => p_days);
BEGIN
    IF NOT queen.retention_owns(p_runner) THEN status := 'busy'; removed := 0; RETURN; END IF;
    WITH doomed AS (
        SELECT p.id FROM queen.log_partitions p
         WHERE p.empty_since < cutoff AND p.last_offset < p.log_start
           AND coalesce(p.last_write_at, p.created_at) < cutoff
           AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = p.id)
           AND NOT EXISTS (SELECT 1 FROM queen.log_dlq d WHERE d.partition_id = p.id)
           AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c WHERE c.partition_id = p.id
                            AND (c.lease_expires > p_now OR c.last_activity_at >= cutoff))
         ORDER BY p.empty_since LIMIT p_batch
           FOR UPDATE SKIP LOCKED)
    , gone AS (DELETE FROM queen.log_partitions p USING doomed WHERE p.id = doomed.id RETURNING p.id)
    , hashes AS (DELETE FROM queen.log_txns t USING gone WHERE t.partition_id = gone.id)   -- they outlive segments
    SELECT count(*) INTO removed FROM gone;
    status := CASE WHEN removed > 0 THEN 'removed' ELSE 'idle' END;
END $$;

-- Plain-language reasons for what retention does to a partition.
CREATE FUNCTION queen.retention_notes(opts jsonb, plan record) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    w     record := queen.retention_windows(opts);
    notes jsonb := '[]';
BEGIN
    IF NOT (opts->>'retentionEnabled')::boolean AND ((opts->>'retentionSeconds')::integer > 0
            OR (opts->>'completedRetentionSeconds')::integer > 0) THEN
        notes := notes || to_jsonb('retention windows are set but retentionEnabled is false: they delete nothing'::text);
    END IF;
    IF (opts->>'retentionEnabled')::boolean AND w.retention = 0 AND w.completed = 0 THEN
        notes := notes || to_jsonb('retentionEnabled is true but both windows are 0: nothing is deleted by them'::text);
    END IF;
    IF w.retention = 0 AND w.completed = 0 AND w.max_wait = 0 THEN
        notes := notes || to_jsonb('no retention rule applies to this queue: nothing is deleted'::text);
    END IF;
    IF w.completed > 0 AND plan.cap IS NULL THEN
        notes := notes || to_jsonb('no consumer group has a cursor on this partition: completedRetentionSeconds deletes nothing here'::text);
    ELSIF w.completed > 0 THEN
        notes := notes || to_jsonb(format('consumer group %s is %s offsets behind: completedRetentionSeconds keeps everything from offset %s',
                                          plan.pinned_by, plan.behind, plan.cap));
    END IF;
    IF plan.straddling_base IS NOT NULL THEN
        notes := notes || to_jsonb(format('segment %s-%s straddles the consumption cap and stays with everything in it',
                                          plan.straddling_base, plan.straddling_end));
    END IF;
    IF w.max_wait > 0 THEN
        notes := notes || to_jsonb(format('maxWaitTimeSeconds deletes segments older than %s s whether consumed or leased', w.max_wait));
    END IF;
    RETURN notes;
END $$;

CREATE FUNCTION queen.partition_explain(part queen.log_partitions, opts jsonb, p_now timestamptz) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    w    record := queen.retention_windows(opts);
    plan record := queen.retention_plan(part, opts, p_now, 100000);
BEGIN
    RETURN jsonb_build_object(
        'partition', part.name, 'partitionId', part.id, 'watermark', part.log_start,
        'lastOffset', part.last_offset, 'retainedOffsets', part.last_offset + 1 - part.log_start,
        'oldestRetainedAt', part.oldest_at, 'sidecarWatermark', part.txns_start,
        'boundaries', jsonb_build_object(
            'retention', CASE WHEN w.retention > 0 THEN plan.retention_boundary END,
            'completedRetention', CASE WHEN w.completed > 0 THEN plan.completed_boundary END,
            'maxWaitTime', CASE WHEN w.max_wait > 0 THEN plan.max_wait_boundary END),
        'consumptionCap', CASE WHEN plan.cap IS NOT NULL THEN jsonb_build_object(
            'offset', plan.cap, 'pinnedBy', plan.pinned_by, 'behind', plan.behind) END,
        'straddlingSegment', CASE WHEN plan.straddling_base IS NOT NULL THEN jsonb_build_object(
            'baseOffset', plan.straddling_base, 'endOffset', plan.straddling_end) END,
        'nextPass', CASE WHEN plan.rule IS NOT NULL AND plan.segments > 0 THEN jsonb_build_object(
            'rule', plan.rule, 'boundary', plan.boundary, 'segments', plan.segments,
            'offsets', plan.boundary - part.log_start,
            'leasedOffsets', CASE WHEN plan.rule = 'max_wait_time_eviction'
                                  THEN queen.leased_in(part.id, part.log_start, plan.boundary) ELSE 0 END) END,
        'notes', queen.retention_notes(opts, plan));
END $$;

-- GET /api/v1/analytics/retention: retention_history in time buckets.
CREATE FUNCTION queen.retention_analytics(p_from timestamptz, p_to timestamptz, p_queue text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    WITH span AS (
        SELECT p_from AS f, p_to AS t,
               CASE WHEN p_to - p_from <= interval '60 minutes' THEN 1
                    WHEN p_to - p_from <= interval '6 hours' THEN 5
                    WHEN p_to - p_from <= interval '24 hours' THEN 15
                    WHEN p_to - p_from <= interval '7 days' THEN 60 ELSE 360 END AS minutes),
    rows AS (
        SELECT date_bin(make_interval(mins => span.minutes), h.executed_at, span.f) AS bucket, h.rule,
               h.offsets_dropped
          FROM queen.retention_history h, span
         WHERE h.executed_at >= span.f AND h.executed_at < span.t AND (p_queue IS NULL OR h.queue = p_queue)),
    buckets AS (
        SELECT bucket,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'retention'), 0) AS r,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'completed_retention'), 0) AS c,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'max_wait_time_eviction'), 0) AS e,
               coalesce(sum(offsets_dropped), 0) AS total, count(*) AS events
          FROM rows GROUP BY bucket)
    SELECT jsonb_build_object(
        'timeRange', jsonb_build_object('from', span.f, 'to', span.t),
        'bucketMinutes', span.minutes,
        'series', coalesce((SELECT jsonb_agg(jsonb_build_object('bucket', bucket, 'retentionMsgs', r,
                      'completedRetentionMsgs', c, 'evictionMsgs', e, 'totalMsgs', total, 'eventCount', events)
                      ORDER BY bucket) FROM buckets), '[]'),
        'totals', jsonb_build_object(
            'retentionMsgs', coalesce((SELECT sum(r) FROM buckets), 0),
            'completedRetentionMsgs', coalesce((SELECT sum(c) FROM buckets), 0),
            'evictionMsgs', coalesce((SELECT sum(e) FROM buckets), 0),
            'totalMsgs', coalesce((SELECT sum(total) FROM buckets), 0),
            'eventCount', coalesce((SELECT sum(events) FROM buckets), 0)))
      FROM span
$$;

-- GET /api/v1/retention/explain: why data is still here, or why it went.
CREATE FUNCTION queen.retention_explain(p_queue text, p_partition text, p_now timestamptz) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('queue', q.name, 'options', jsonb_build_object(
               'retentionEnabled', q.options->'retentionEnabled', 'retentionSeconds', q.options->'retentionSeconds',
               'completedRetentionSeconds', q.options->'completedRetentionSeconds',
               'maxWaitTimeSeconds', q.options->'maxWaitTimeSeconds',
               'dedupWindowSeconds', q.options->'dedupWindowSeconds'),
           'ackWindowSeconds', (queen.retention_windows(q.options)).ack_window,
           'partitions', coalesce((SELECT jsonb_agg(queen.partition_explain(p, q.options, p_now) ORDER BY p.name)
                                     FROM queen.log_partitions p
                                    WHERE p.queue = q.name AND (p_partition IS NULL OR p.name = p_partition)), '[]'))
      FROM queen.queues q WHERE q.name = p_queue
$$;

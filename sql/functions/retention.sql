-- Retention of the log: the runner's claim, one step per partition, and the
-- cleanup of empty partitions (src/retention/).

-- Under the transaction-level advisory lock, claims (or keeps) the pass for
-- p_runner; false: another server's pass is running. A pass claims under its
-- own token, "<server>:<pass>": a release names the token, so a pass's late
-- release can never revoke the next pass's claim; a server may take over its
-- own earlier pass's claim (that pass has ended: a server runs one pass at a
-- time), so a release lost with the connection does not hold its next pass
-- back for a lease.
CREATE OR REPLACE FUNCTION queen.retention_claim(p_runner text, p_lease_seconds integer) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(7365696) THEN RETURN false; END IF;
    UPDATE queen.retention_runner
       SET runner = p_runner, lease_until = clock_timestamp() + make_interval(secs => p_lease_seconds)
     WHERE id = 1 AND (runner = p_runner OR lease_until < clock_timestamp()
                       OR split_part(runner, ':', 1) = split_part(p_runner, ':', 1));
    RETURN FOUND;
END $$;

-- Whether p_runner holds the pass now. Steps check this without writing, so
-- one runner's steps can run side by side; the claim itself (above) is the
-- only write, at the start of a pass and when it renews.
CREATE OR REPLACE FUNCTION queen.retention_owns(p_runner text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM queen.retention_runner
                    WHERE id = 1 AND runner = p_runner AND lease_until > clock_timestamp())
$$;

CREATE OR REPLACE FUNCTION queen.retention_release(p_runner text) RETURNS void LANGUAGE sql AS $$
    UPDATE queen.retention_runner SET runner = '', lease_until = '-infinity' WHERE id = 1 AND runner = p_runner
$$;

-- Partitions due for a look, oldest first: two index range scans.
CREATE OR REPLACE FUNCTION queen.retention_candidates(p_now timestamptz, p_limit integer)
RETURNS TABLE (partition_id uuid, queue text, partition text, kind text) LANGUAGE sql STABLE AS $$
    (SELECT p.id, p.queue, p.name, 'segments' FROM queen.log_partitions p
      WHERE p.retention_check_at <= p_now ORDER BY p.retention_check_at LIMIT p_limit)
    UNION ALL
    (SELECT p.id, p.queue, p.name, 'sidecar' FROM queen.log_partitions p
      WHERE p.sidecar_check_at <= p_now ORDER BY p.sidecar_check_at LIMIT p_limit)
$$;

-- The partition a step works on, and its queue's options: locked, once the
-- pass is known to still hold its claim, or (dry) only read. status is
-- 'busy' (the claim is gone), 'gone' (the partition is) or NULL: go on.
CREATE OR REPLACE FUNCTION queen.step_begin(p_runner text, p_partition uuid, p_dry boolean,
                                 OUT status text, OUT part queen.log_partitions, OUT opts jsonb)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_dry THEN
        SELECT * INTO part FROM queen.log_partitions p WHERE p.id = p_partition;
    ELSE
        IF NOT queen.retention_owns(p_runner) THEN status := 'busy'; RETURN; END IF;
        SELECT * INTO part FROM queen.log_partitions p WHERE p.id = p_partition FOR UPDATE;
    END IF;
    IF NOT FOUND THEN status := 'gone'; RETURN; END IF;
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = part.queue;
END $$;

-- What the rules delete from the front of a partition, starting at p_from
-- (its watermark, or a dry run's simulated one): each rule's boundary (the
-- first offset it keeps), the winning rule and its boundary, how many of
-- the next p_batch segments lie wholly below it, and the segment the
-- consumption cap falls inside. A segment is deletable only when all of it
-- lies below the boundary. The first p_batch + 1 segments are walked;
-- a boundary beyond them is searched for only when the winner depends on it
-- (two rules reach past the walk), or always when p_exact (explain).
CREATE OR REPLACE FUNCTION queen.retention_plan(part queen.log_partitions, opts jsonb, p_now timestamptz, p_from bigint,
    p_batch integer, p_exact boolean,
    OUT retention_boundary bigint, OUT completed_boundary bigint, OUT max_wait_boundary bigint,
    OUT cap bigint, OUT pinned_by text, OUT behind bigint,
    OUT rule text, OUT boundary bigint, OUT segments integer, OUT straddling_base bigint,
    OUT straddling_end bigint)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    w      record := queen.retention_windows(opts);
    pin    record := queen.consumption_cap(part.id);
    cut_r  timestamptz;
    cut_c  timestamptz;
    cut_m  timestamptz;
    open_r boolean;
    open_c boolean;
    open_m boolean;
    walked integer := 0;
    s      record;
BEGIN
    cap := pin.cap; pinned_by := pin.pinned_by; behind := pin.behind;
    IF w.retention > 0 THEN cut_r := p_now - make_interval(secs => w.retention); END IF;
    IF w.completed > 0 AND cap IS NOT NULL THEN cut_c := p_now - make_interval(secs => w.completed); END IF;
    IF w.max_wait > 0 THEN cut_m := p_now - make_interval(secs => w.max_wait); END IF;
    open_r := cut_r IS NOT NULL; open_c := cut_c IS NOT NULL; open_m := cut_m IS NOT NULL;
    retention_boundary := p_from; completed_boundary := p_from; max_wait_boundary := p_from;
    FOR s IN SELECT g.base_offset, g.end_offset, g.created_at FROM queen.log_segments g
              WHERE g.partition_id = part.id AND g.base_offset >= p_from
              ORDER BY g.base_offset LIMIT p_batch + 1
    LOOP
        walked := walked + 1;
        IF open_r THEN
            IF s.created_at < cut_r THEN retention_boundary := s.end_offset + 1; ELSE open_r := false; END IF;
        END IF;
        IF open_c THEN
            IF s.created_at < cut_c AND s.end_offset < cap THEN completed_boundary := s.end_offset + 1;
            ELSE open_c := false; END IF;
        END IF;
        IF open_m THEN
            IF s.created_at < cut_m THEN max_wait_boundary := s.end_offset + 1; ELSE open_m := false; END IF;
        END IF;
    END LOOP;
    IF walked <= p_batch THEN open_r := false; open_c := false; open_m := false; END IF;   -- walked them all
    -- One rule reaching past the walk is beyond the others whatever its exact
    -- end; two or more are compared at their exact ends.
    IF p_exact OR open_r::int + open_c::int + open_m::int > 1 THEN
        IF open_r THEN retention_boundary := queen.rule_boundary(part.id, retention_boundary, part.last_offset, cut_r, NULL); END IF;
        IF open_c THEN completed_boundary := queen.rule_boundary(part.id, completed_boundary, part.last_offset, cut_c, cap); END IF;
        IF open_m THEN max_wait_boundary := queen.rule_boundary(part.id, max_wait_boundary, part.last_offset, cut_m, NULL); END IF;
    END IF;
    boundary := greatest(retention_boundary, completed_boundary);
    rule := CASE WHEN boundary = p_from THEN NULL
                 WHEN retention_boundary >= completed_boundary THEN 'retention'
                 ELSE 'completed_retention' END;
    IF max_wait_boundary > boundary THEN rule := 'max_wait_time_eviction'; boundary := max_wait_boundary; END IF;
    SELECT count(*) INTO segments FROM (SELECT 1 FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= p_from AND g.end_offset < boundary LIMIT p_batch) below;
    IF cap IS NOT NULL THEN
        SELECT g.base_offset, g.end_offset INTO straddling_base, straddling_end FROM queen.log_segments g
         WHERE g.partition_id = part.id AND g.base_offset >= p_from AND g.base_offset < cap
         ORDER BY g.base_offset DESC LIMIT 1;
        IF straddling_end < cap THEN straddling_base := NULL; straddling_end := NULL; END IF;
    END IF;
END $$;

-- The consumption cap: the lowest committed cursor over every consumer group
-- of the partition, plus one, and how many retained offsets that group has
-- not consumed. NULL when no group has a cursor there (then nothing is
-- consumed and completed_retention deletes nothing).
CREATE OR REPLACE FUNCTION queen.consumption_cap(p_partition uuid, OUT cap bigint, OUT pinned_by text, OUT behind bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT c.committed + 1, c.consumer_group, p.last_offset - greatest(c.committed, p.log_start - 1)
      INTO cap, pinned_by, behind
      FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
     WHERE c.partition_id = p_partition
     ORDER BY c.committed, c.consumer_group LIMIT 1;
END $$;

-- The first offset a rule keeps, searching from p_from: the base of the
-- first segment the rule does not cover. A rule covers a segment committed
-- before p_cutoff that (when p_cap is given) lies wholly below p_cap.
-- Commit times never decrease with offset, so what a rule covers is a
-- prefix, and halving [lo, hi) with one index probe each finds its end in
-- O(log n) probes however many segments it covers.
CREATE OR REPLACE FUNCTION queen.rule_boundary(p_partition uuid, p_from bigint, p_last bigint, p_cutoff timestamptz,
                                    p_cap bigint) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    lo  bigint := p_from;
    hi  bigint := p_last + 1;
    mid bigint;
    s   record;
BEGIN
    WHILE lo < hi LOOP
        mid := lo + (hi - lo) / 2;
        SELECT g.base_offset, g.end_offset, g.created_at INTO s FROM queen.log_segments g
         WHERE g.partition_id = p_partition AND g.base_offset >= lo AND g.base_offset <= mid
         ORDER BY g.base_offset DESC LIMIT 1;
        IF NOT FOUND THEN
            lo := mid + 1;                       -- no segment starts in [lo, mid]
        ELSIF s.created_at < p_cutoff AND (p_cap IS NULL OR s.end_offset < p_cap) THEN
            lo := s.end_offset + 1;              -- covered, and so is all before it
        ELSE
            hi := s.base_offset;                 -- not covered, nor anything after it
        END IF;
    END LOOP;
    RETURN lo;
END $$;

-- Offsets in [p_from, p_to) inside some live lease: the union of every
-- group's leased span, so an offset two groups lease counts once.
-- (plpgsql, not sql: its plan is cached for the session instead of made
-- at every call.)
CREATE OR REPLACE FUNCTION queen.leased_in(p_partition uuid, p_from bigint, p_to bigint) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    n bigint;
BEGIN
    SELECT coalesce(sum(upper(r) - lower(r)), 0) INTO n
      FROM unnest((SELECT range_agg(int8range(greatest(c.committed + 1, p_from), least(c.lease_end + 1, p_to)))
                     FROM queen.log_consumers c
                    WHERE c.partition_id = p_partition AND c.lease_expires > now() AND c.lease_end IS NOT NULL
                      AND greatest(c.committed + 1, p_from) < least(c.lease_end + 1, p_to))) AS r;
    RETURN n;
END $$;

-- One step on one partition: delete at most p_batch whole segments below the
-- winning boundary, move the watermark, record it. A dry step deletes
-- nothing and starts at p_from (a dry pass's simulated watermark; NULL for
-- the real one), so a dry pass walks exactly the steps a real one would.
-- more: the step stopped at p_batch with more below the boundary.
CREATE OR REPLACE FUNCTION queen.retention_step(p_runner text, p_partition uuid,
                                     p_batch integer, p_now timestamptz, p_dry boolean, p_recheck_seconds integer,
                                     p_from bigint,
                                     OUT status text, OUT rule text, OUT from_offset bigint,
                                     OUT to_offset bigint, OUT dropped bigint, OUT leased_dropped bigint,
                                     OUT segments integer, OUT more boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    began record;
    part  queen.log_partitions%ROWTYPE;
    opts  jsonb;
    plan  record;
    last  record;
BEGIN
    more := false;
    began := queen.step_begin(p_runner, p_partition, p_dry);
    IF began.status IS NOT NULL THEN status := began.status; RETURN; END IF;
    part := began.part; opts := began.opts;
    from_offset := CASE WHEN p_dry THEN greatest(coalesce(p_from, part.log_start), part.log_start) ELSE part.log_start END;
    plan := queen.retention_plan(part, opts, p_now, from_offset, p_batch, false);
    status := 'idle';
    IF plan.rule IS NULL OR plan.segments = 0 THEN
        -- old enough but held back (a consumption cap): look again a pass later
        IF NOT p_dry THEN PERFORM queen.reschedule(part.id, opts, p_now + make_interval(secs => p_recheck_seconds)); END IF;
        RETURN;
    END IF;
    SELECT g.end_offset INTO last FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= from_offset AND g.end_offset < plan.boundary
     ORDER BY g.base_offset LIMIT 1 OFFSET plan.segments - 1;
    rule := plan.rule; to_offset := last.end_offset + 1; segments := plan.segments;
    dropped := to_offset - from_offset;
    more := to_offset < plan.boundary;
    leased_dropped := queen.leased_in(part.id, from_offset, to_offset);
    IF p_dry THEN status := 'would_delete'; RETURN; END IF;
    status := 'deleted';
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
-- sidecar's own watermark, independently of segments. A dry step only
-- counts, from p_from. next_offset: the sidecar watermark after the step.
CREATE OR REPLACE FUNCTION queen.sidecar_step(p_runner text, p_partition uuid, p_batch integer, p_now timestamptz,
                                   p_dry boolean, p_from bigint,
                                   OUT status text, OUT purged integer, OUT next_offset bigint, OUT more boolean)
LANGUAGE plpgsql AS $$
DECLARE
    began  record;
    part   queen.log_partitions%ROWTYPE;
    opts   jsonb;
    cutoff timestamptz;
    start  bigint;
BEGIN
    more := false; purged := 0;
    began := queen.step_begin(p_runner, p_partition, p_dry);
    IF began.status IS NOT NULL THEN status := began.status; RETURN; END IF;
    part := began.part; opts := began.opts;
    cutoff := p_now - make_interval(secs => (queen.retention_windows(opts)).ack_window);
    start := CASE WHEN p_dry THEN greatest(coalesce(p_from, part.txns_start), part.txns_start) ELSE part.txns_start END;
    SELECT max(t.base_offset + length(t.hashes) / 16), count(*) INTO next_offset, purged
      FROM (SELECT t.base_offset, t.hashes FROM queen.log_txns t
             WHERE t.partition_id = part.id AND t.base_offset >= start AND t.created_at < cutoff
             ORDER BY t.base_offset LIMIT p_batch) t;
    status := 'idle';
    IF purged = 0 THEN next_offset := start; RETURN; END IF;
    more := purged >= p_batch;
    IF p_dry THEN status := 'would_purge'; RETURN; END IF;
    DELETE FROM queen.log_txns t WHERE t.partition_id = part.id AND t.base_offset >= start AND t.base_offset < next_offset;
    UPDATE queen.log_partitions SET txns_start = next_offset WHERE id = part.id;
    status := 'purged';
    PERFORM queen.reschedule(part.id, opts, part.retention_check_at);
END $$;

-- Recomputes a partition's schedule from its first retained segment and
-- first sidecar row. p_not_before (or NULL) holds retention back: for a
-- partition whose data is old enough but pinned by a consumer group.
CREATE OR REPLACE FUNCTION queen.reschedule(p_partition uuid, opts jsonb, p_not_before timestamptz) RETURNS void
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

-- Deletes (or, dry, counts) at most p_batch partitions that are empty (no
-- segments, no dead letters, no in-flight lease) and untouched (no push, no
-- consumer-group activity) for p_days. Queues are never removed here.
-- more: a whole batch was taken, so more may be waiting.
CREATE OR REPLACE FUNCTION queen.partition_cleanup(p_runner text, p_days integer, p_batch integer, p_now timestamptz,
                                        p_dry boolean, OUT status text, OUT removed integer, OUT more boolean)
LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz := p_now - make_interval(days => p_days);
    doomed uuid[];
BEGIN
    removed := 0; more := false;
    IF NOT p_dry AND NOT queen.retention_owns(p_runner) THEN status := 'busy'; RETURN; END IF;
    SELECT array_agg(d.id) INTO doomed FROM (
        SELECT p.id FROM queen.log_partitions p
         WHERE p.empty_since < cutoff AND p.last_offset < p.log_start
           AND coalesce(p.last_write_at, p.created_at) < cutoff
           AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = p.id)
           AND NOT EXISTS (SELECT 1 FROM queen.log_dlq d WHERE d.partition_id = p.id)
           AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c WHERE c.partition_id = p.id
                            AND (c.lease_expires > p_now OR c.last_activity_at >= cutoff))
         ORDER BY p.empty_since LIMIT p_batch
           FOR UPDATE SKIP LOCKED) d;
    removed := coalesce(cardinality(doomed), 0);
    more := removed >= p_batch;
    status := CASE WHEN removed = 0 THEN 'idle' WHEN p_dry THEN 'would_remove' ELSE 'removed' END;
    IF p_dry OR removed = 0 THEN RETURN; END IF;
    DELETE FROM queen.log_txns t WHERE t.partition_id = ANY (doomed);   -- hash rows outlive segments
    DELETE FROM queen.log_partitions p WHERE p.id = ANY (doomed);
END $$;

-- The ready set of a wide queue (queen.log_ready): which partitions hold
-- messages a group has not consumed, so a pop does not scan them all.

-- A queue-wide pop over the group's ready set: 018's pop loop, fed by the
-- set (least recently served first) instead of every partition.
CREATE OR REPLACE FUNCTION queen.pop_ready(p_queue text, p_namespace text, p_task text,
                                p_group text, p_batch integer, p_partitions integer,
                                p_auto_ack boolean, p_subscription text, p_lease uuid)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    opts      jsonb;
    from_ts   timestamptz;
    looked_up boolean := false;
    remaining integer := p_batch;
    claimed   integer := 0;
    cand      record;
    part      record;
    cur       record;
    span      record;
BEGIN
    SELECT q.options INTO opts FROM queen.queues q
     WHERE q.name = p_queue AND (p_namespace IS NULL OR q.namespace = p_namespace)
       AND (p_task IS NULL OR q.task = p_task);
    IF NOT FOUND THEN RETURN; END IF;
    -- The partition and the cursor are read by key for each row the walk
    -- reaches, not joined in the walk's query: a plan made while the group
    -- had few cursors could read them all per row.
    FOR cand IN
        SELECT r.partition_id AS id, r.version FROM queen.log_ready r
         WHERE r.consumer_group = p_group AND r.queue = p_queue
         ORDER BY r.served_at NULLS FIRST, r.born_at
    LOOP
        SELECT p.name, p.last_offset, p.log_start INTO part FROM queen.log_partitions p WHERE p.id = cand.id;
        IF NOT FOUND THEN   -- the partition was deleted after it was marked
            DELETE FROM queen.log_ready r WHERE r.consumer_group = p_group AND r.partition_id = cand.id;
            CONTINUE;
        END IF;
        SELECT c.committed, c.lease_expires INTO cur FROM queen.log_consumers c
         WHERE c.partition_id = cand.id AND c.consumer_group = p_group;
        IF queen.ready_spent(part.last_offset, part.log_start, FOUND, cur.committed) THEN
            PERFORM queen.ready_drop(p_group, cand.id, cand.version);
            CONTINUE;
        END IF;
        CONTINUE WHEN cur.lease_expires > now();
        -- (A partition another pop is making the group's cursor on is
        -- passed over by queen.lock_cursor, without waiting.)
        IF NOT looked_up THEN
            from_ts := queen.subscription_start(p_group, p_queue, p_subscription);
            looked_up := true;
        END IF;
        span := queen.claim(cand.id, p_group, from_ts, opts, remaining, p_auto_ack, p_lease);
        CONTINUE WHEN span.cursor_to IS NULL;
        PERFORM queen.ready_served(p_group, cand.id);
        RETURN QUERY
            SELECT p_queue, cand.id, part.name, span.cursor_from, span.cursor_to,
                   s.base_offset, s.created_at, s.blob
              FROM queen.log_segments s
             WHERE s.partition_id = cand.id AND s.base_offset <= span.cursor_to
               AND s.base_offset >= coalesce((SELECT max(s2.base_offset) FROM queen.log_segments s2
                                               WHERE s2.partition_id = cand.id
                                                 AND s2.base_offset <= span.cursor_from + 1), 0)
             ORDER BY s.base_offset;
        remaining := remaining - (span.cursor_to - span.cursor_from)::integer;
        claimed := claimed + 1;
        EXIT WHEN claimed >= p_partitions OR remaining <= 0;
    END LOOP;
END $$;

-- Whether a queue is wide enough for its pops to walk ready sets: more than
-- 256 partitions. Below that, scanning and sorting every partition (018's
-- pop) costs less than the set's upkeep: measured with pgbench at 10
-- partitions, 4 clients, the set's walk served about half the pops a
-- second that the scan did, and the served-time touch of each claim leaves
-- a dead row version behind in a table of ten rows. An index probe of at
-- most 257 entries; PL/pgSQL because a SQL function with this sub-select
-- is not inlined, and planning it on every pop cost 40-60 us (measured).
CREATE OR REPLACE FUNCTION queen.queue_is_wide(p_queue text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    -- In the index's order: a session's generic plan of a bare EXISTS
    -- scanned the whole table when another queue held most of its rows.
    RETURN EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.queue = p_queue
                    ORDER BY p.queue, p.name OFFSET 256 LIMIT 1);
END $$;

-- 031's reconcile, taking the scans row before the refill touches the set.
CREATE OR REPLACE FUNCTION queen.ready_reconcile(p_group text, p_queue text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    st     queen.log_ready_scans%ROWTYPE;
    top    bigint;
    flight xid8[];
    parts  uuid[];
    refill boolean := false;
BEGIN
    IF NOT queen.queue_is_wide(p_queue) THEN RETURN; END IF;   -- its pops scan (queen.pop)
    SELECT * INTO st FROM queen.log_ready_scans WHERE consumer_group = p_group AND queue = p_queue;
    IF NOT FOUND THEN PERFORM queen.ready_fill(p_group, p_queue, true); RETURN; END IF;
    IF st.filled_at < now() - interval '60 s' THEN   -- one pop's reconcile at a time refills; the others go on
        refill := pg_try_advisory_xact_lock(hashtext('silt.refill'), hashtext(p_group || '/' || p_queue));
    END IF;
    IF NOT refill
       AND NOT EXISTS (SELECT 1 FROM queen.log_writes w WHERE w.queue = p_queue AND w.id > st.seen_id)
       AND NOT EXISTS (SELECT 1 FROM queen.log_writes w WHERE w.writer = ANY (st.in_flight) AND w.queue = p_queue) THEN
        RETURN;   -- nothing new (the usual case when consumers lag): two index probes and no lock
    END IF;
    SELECT * INTO st FROM queen.log_ready_scans WHERE consumer_group = p_group AND queue = p_queue FOR UPDATE;
    IF NOT FOUND THEN RETURN; END IF;   -- the group was deleted meanwhile: its next pop fills
    IF refill THEN PERFORM queen.ready_fill(p_group, p_queue, false); END IF;
    WITH look AS MATERIALIZED (SELECT pg_current_snapshot() AS s),
    seen AS MATERIALIZED (
        SELECT w.id, w.partition_ids FROM queen.log_writes w WHERE w.queue = p_queue AND w.id > st.seen_id
        UNION
        SELECT w.id, w.partition_ids FROM queen.log_writes w WHERE w.writer = ANY (st.in_flight) AND w.queue = p_queue)
    SELECT greatest(st.seen_id, (SELECT max(seen.id) FROM seen)),
           coalesce((SELECT array_agg(x) FROM look, pg_snapshot_xip(look.s) AS x), '{}'),
           (SELECT array_agg(u.pid) FROM seen, unnest(seen.partition_ids) AS u(pid))
      INTO top, flight, parts;
    IF parts IS NOT NULL THEN PERFORM queen.ready_mark(p_group, p_queue, parts); END IF;
    UPDATE queen.log_ready_scans SET seen_id = top, in_flight = flight
     WHERE consumer_group = p_group AND queue = p_queue;
END $$;

-- Fills the group's set from the queue's partitions (every one the group has
-- something in, in partition order like every mark), leaving rows already
-- there as they are. A first fill (p_first) records its look as the scans
-- row's start, serialised per group with the group's deletion
-- (queen.group_delete), which empties the set; a refill only notes its time.
CREATE OR REPLACE FUNCTION queen.ready_fill(p_group text, p_queue text, p_first boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    top    bigint;
    flight xid8[];
    added  bigint;
BEGIN
    IF p_first THEN
        PERFORM pg_advisory_xact_lock(hashtext('silt.ready'), hashtext(p_group));
        IF NOT EXISTS (SELECT 1 FROM queen.queues WHERE name = p_queue)
           OR EXISTS (SELECT 1 FROM queen.log_ready_scans   -- filled while this waited
                       WHERE consumer_group = p_group AND queue = p_queue) THEN
            RETURN;
        END IF;
    END IF;
    WITH look AS MATERIALIZED (SELECT pg_current_snapshot() AS s),
    filled AS (
        INSERT INTO queen.log_ready (consumer_group, queue, partition_id, served_at, born_at)
        SELECT p_group, p_queue, p.id, c.last_activity_at, p.created_at
          FROM queen.log_partitions p
          LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
         WHERE p.queue = p_queue
           AND NOT queen.ready_spent(p.last_offset, p.log_start, c.partition_id IS NOT NULL, c.committed)
         ORDER BY p.id
        ON CONFLICT DO NOTHING
        RETURNING 1)
    SELECT coalesce((SELECT max(w.id) FROM queen.log_writes w WHERE w.queue = p_queue), 0),
           coalesce((SELECT array_agg(x) FROM look, pg_snapshot_xip(look.s) AS x), '{}'),
           (SELECT count(*) FROM filled)
      INTO top, flight, added;
    -- The walk must follow log_ready_walk's order; a plan made while the
    -- statistics said the set was empty reads the whole set and sorts it
    -- (50 ms a pop at 100,000 rows).
    PERFORM queen.analyze_if_grown('queen.log_ready', added);
    IF p_first THEN
        INSERT INTO queen.log_ready_scans (consumer_group, queue, seen_id, in_flight, filled_at)
        VALUES (p_group, p_queue, top, flight, now())
        ON CONFLICT (consumer_group, queue) DO UPDATE SET filled_at = excluded.filled_at;
    ELSE
        UPDATE queen.log_ready_scans SET filled_at = now() WHERE consumer_group = p_group AND queue = p_queue;
    END IF;
END $$;

-- Marks partitions ready for a group (a new row, or a row's version bumped).
-- In partition order, so two marking transactions never wait on each other
-- in a cycle.
CREATE OR REPLACE FUNCTION queen.ready_mark(p_group text, p_queue text, p_partitions uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO queen.log_ready AS r (consumer_group, queue, partition_id, served_at, born_at)
    SELECT p_group, p_queue, p.id,
           (SELECT c.last_activity_at FROM queen.log_consumers c   -- by key, whatever the statistics say
             WHERE c.partition_id = p.id AND c.consumer_group = p_group), p.created_at
      FROM (SELECT DISTINCT x.pid FROM unnest(p_partitions) AS x(pid)) u
      JOIN queen.log_partitions p ON p.id = u.pid
     ORDER BY p.id
    ON CONFLICT (consumer_group, partition_id) DO UPDATE SET version = r.version + 1;
END $$;

-- Whether the group has nothing left in a partition: its cursor at the end,
-- or nothing retained there for a partition it has no cursor on.
CREATE OR REPLACE FUNCTION queen.ready_spent(p_last bigint, p_log_start bigint, p_has_cursor boolean, p_committed bigint)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_has_cursor THEN greatest(p_committed, p_log_start - 1) >= p_last
                ELSE p_last < p_log_start END
$$;

-- Drops a spent partition from the group's set, unless the row is held by
-- another transaction, was marked since the pop read it (p_version), or is
-- no longer spent as this statement sees it.
CREATE OR REPLACE FUNCTION queen.ready_drop(p_group text, p_partition uuid, p_version integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_ready r
     WHERE r.ctid = (SELECT h.ctid FROM queen.log_ready h
                      WHERE h.consumer_group = p_group AND h.partition_id = p_partition AND h.version = p_version
                        FOR UPDATE SKIP LOCKED)
       AND NOT EXISTS (SELECT 1 FROM queen.log_partitions p
                        CROSS JOIN LATERAL (SELECT count(*) > 0 AS has_cursor, max(c.committed) AS committed
                                              FROM queen.log_consumers c
                                             WHERE c.partition_id = p_partition AND c.consumer_group = p_group) c
                        WHERE p.id = p_partition
                          AND NOT queen.ready_spent(p.last_offset, p.log_start, c.has_cursor, c.committed));
END $$;

-- A claim sends the partition to the back of the line (unless another
-- transaction holds its row: then it keeps its place this once).
CREATE OR REPLACE FUNCTION queen.ready_served(p_group text, p_partition uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE queen.log_ready r SET served_at = now()
     WHERE r.ctid = (SELECT h.ctid FROM queen.log_ready h
                      WHERE h.consumer_group = p_group AND h.partition_id = p_partition
                        FOR UPDATE SKIP LOCKED);
END $$;

-- Upkeep, run by the retention pass's cleanup step. A group that has not
-- popped a queue for 10 minutes (an active one refills every minute) loses
-- its scans row there, so its write rows can go; its next pop fills. Write
-- rows every group of their queue has taken in, and no group's look still
-- waits on, are not needed again; they are kept 5 minutes whatever, as a
-- first fill in progress has not recorded its look yet. Returns the write
-- rows removed.
CREATE OR REPLACE FUNCTION queen.log_writes_prune() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    DELETE FROM queen.log_ready_scans WHERE filled_at < now() - interval '10 minutes';
    DELETE FROM queen.log_writes w
     WHERE w.created_at < now() - interval '5 minutes'
       AND w.id <= coalesce((SELECT min(s.seen_id) FROM queen.log_ready_scans s WHERE s.queue = w.queue),
                            w.id)
       AND NOT EXISTS (SELECT 1 FROM queen.log_ready_scans s WHERE s.queue = w.queue AND w.writer = ANY (s.in_flight));
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

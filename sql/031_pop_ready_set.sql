-- 031: a pop finds a deliverable partition without reading every partition.
--
-- queen.pop (018) chose among all the queue's partitions, joined to the
-- group's cursors and sorted by when each was last served, on every pop: at
-- 100,000 partitions one pop cost over half a second. Now a queue-wide pop
-- walks the group's ready set: one row per partition that may have
-- something for the group (queen.log_ready), in the order they were last
-- served, and stops at the first it can claim. Pops of one partition and
-- discovery pops (by namespace or task, across queues) keep 018's scan.
--
-- How the set stays whole without pushes touching it: every flush writes
-- one row per queue to queen.log_writes (which partitions it appended to,
-- and its transaction id). Before a queue-wide pop claims, a reconcile, in
-- a transaction of its own, adds to the group's set the partitions of the
-- write rows it has not taken in yet. What it has taken in is kept per
-- group and queue (queen.log_ready_scans) as the highest write row id it
-- saw and the transactions in flight when it looked: a row it did not see
-- either has a higher id or was written by one of those (a row id is drawn
-- after its writer's transaction id, so a writer that starts after a look
-- draws a higher id than any the look saw). A long transaction elsewhere
-- therefore costs a lookup by transaction id, not a rescan.
--
-- A pop removes a partition from the set when it finds the group has
-- nothing left there (cursor at the end or past the retained log). Every
-- path that can give the group something there again re-marks it: the
-- reconcile for writes, the seek for cursors moved back, the claim itself
-- (touching its served time). A mark bumps the row's version, and the
-- removal names the version it read, so a mark between the pop's read and
-- its removal keeps the row. Removals and touches skip rows another
-- transaction holds and never wait on them; only the reconcile waits (on
-- them, briefly), which keeps the lock graph free of cycles. The first
-- pop of a group on a queue fills the set from the partitions, and one
-- reconcile a minute fills it again, whatever the set says: a safety net
-- (cursors edited by hand, a set damaged by a bug) at the cost of one scan
-- of the queue a minute per group.

CREATE TABLE queen.log_writes (
    id            bigserial PRIMARY KEY,
    queue         text NOT NULL,
    writer        xid8 NOT NULL DEFAULT pg_current_xact_id(),
    partition_ids uuid[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX log_writes_queue ON queen.log_writes (queue, id);
CREATE INDEX log_writes_writer ON queen.log_writes (writer);

CREATE TABLE queen.log_ready (
    consumer_group text NOT NULL,
    queue          text NOT NULL,
    partition_id   uuid NOT NULL,
    served_at      timestamptz,                -- the group's last claim there; NULL: first in line
    born_at        timestamptz NOT NULL,       -- the partition's creation: among equals, the older first
    version        integer NOT NULL DEFAULT 0, -- bumped by every mark
    PRIMARY KEY (consumer_group, partition_id)
);
CREATE INDEX log_ready_walk ON queen.log_ready (consumer_group, queue, served_at NULLS FIRST, born_at);

CREATE TABLE queen.log_ready_scans (
    consumer_group text NOT NULL,
    queue          text NOT NULL REFERENCES queen.queues(name) ON DELETE CASCADE,
    seen_id        bigint NOT NULL,            -- highest log_writes id taken in
    in_flight      xid8[] NOT NULL,            -- transactions running at that look
    filled_at      timestamptz NOT NULL,       -- the last fill from the partitions
    PRIMARY KEY (consumer_group, queue)
);

-- Existing groups start with a fill at their first pop: no scans row yet.

-- ---- Writes ---------------------------------------------------------------

-- 018's append_segments, plus the flush's write rows (one per queue).
CREATE OR REPLACE FUNCTION queen.append_segments(p_queues text[], p_partitions text[], p_counts integer[],
                                                 p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                                 now_ts timestamptz)
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH w AS MATERIALIZED (   -- each queue's windows, once per flush rather than per partition
        SELECT qq.name, queen.rules_window(qq.options) AS rules, (queen.retention_windows(qq.options)).ack_window AS ack
          FROM queen.queues qq WHERE qq.name = ANY (p_queues)),
    x AS (
        SELECT u.i, u.q, u.p, u.c, u.len,
               (sum(u.len) OVER (ORDER BY u.i) - u.len)::integer AS blob_at,
               (sum(u.c) OVER (ORDER BY u.i) - u.c)::integer AS frame_at
          FROM unnest(p_queues, p_partitions, p_counts, p_blob_lens) WITH ORDINALITY AS u(q, p, c, len, i)),
    upd AS (
        UPDATE queen.log_partitions lp
           SET last_offset = lp.last_offset + x.c, last_write_at = now_ts, empty_since = NULL,
               oldest_at = coalesce(lp.oldest_at, now_ts),
               retention_check_at = coalesce(lp.retention_check_at, now_ts + make_interval(secs => w.rules)),
               sidecar_check_at = coalesce(lp.sidecar_check_at, now_ts + make_interval(secs => w.ack))
          FROM x JOIN w ON w.name = x.q
         WHERE lp.queue = x.q AND lp.name = x.p
        RETURNING x.i, x.q, lp.id, lp.last_offset - x.c + 1 AS base, x.c, x.len, x.blob_at, x.frame_at),
    seg AS (
        INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at, blob)
        SELECT upd.id, upd.base, upd.base + upd.c - 1, now_ts, substring(p_blobs FROM upd.blob_at + 1 FOR upd.len)
          FROM upd),
    txn AS (
        INSERT INTO queen.log_txns (partition_id, base_offset, created_at, hashes, message_ids)
        SELECT upd.id, upd.base, now_ts, substring(p_hashes FROM upd.frame_at * 16 + 1 FOR upd.c * 16),
               substring(p_ids FROM upd.frame_at * 16 + 1 FOR upd.c * 16)
          FROM upd),
    wrote AS (
        INSERT INTO queen.log_writes (queue, partition_ids)
        SELECT upd.q, array_agg(upd.id) FROM upd GROUP BY upd.q)
    SELECT (upd.i - 1)::integer, upd.id, upd.base, now_ts FROM upd;
END $$;

-- ---- The set ----------------------------------------------------------------

-- Whether a queue is wide enough for its pops to walk ready sets: more than
-- 256 partitions. Below that, scanning and sorting every partition (018's
-- pop) costs less than the set's upkeep: measured with pgbench at 10
-- partitions, 4 clients, the set's walk served about half the pops a
-- second that the scan did, and the served-time touch of each claim leaves
-- a dead row version behind in a table of ten rows. An index probe of at
-- most 257 entries; PL/pgSQL because a SQL function with this sub-select
-- is not inlined, and planning it on every pop cost 40-60 us (measured).
CREATE FUNCTION queen.queue_is_wide(p_queue text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    -- In the index's order: a session's generic plan of a bare EXISTS
    -- scanned the whole table when another queue held most of its rows.
    RETURN EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.queue = p_queue
                    ORDER BY p.queue, p.name OFFSET 256 LIMIT 1);
END $$;


-- Whether the group has nothing left in a partition: its cursor at the end,
-- or nothing retained there for a partition it has no cursor on.
CREATE FUNCTION queen.ready_spent(p_last bigint, p_log_start bigint, p_has_cursor boolean, p_committed bigint)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_has_cursor THEN greatest(p_committed, p_log_start - 1) >= p_last
                ELSE p_last < p_log_start END
$$;

-- Marks partitions ready for a group (a new row, or a row's version bumped).
-- In partition order, so two marking transactions never wait on each other
-- in a cycle.
CREATE FUNCTION queen.ready_mark(p_group text, p_queue text, p_partitions uuid[]) RETURNS void
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

-- Fills the group's set from the queue's partitions (every one the group has
-- something in, in partition order like every mark), leaving rows already
-- there as they are. A first fill (p_first) records its look as the scans
-- row's start, serialised per group with the group's deletion
-- (queen.group_delete), which empties the set; a refill only notes its time.
CREATE FUNCTION queen.ready_fill(p_group text, p_queue text, p_first boolean) RETURNS void
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

-- Takes in the writes the group's set has not seen. Sent by a queue-wide pop
-- in a transaction of its own just before the claim, so the scans row is
-- held only for this. Nothing new (the usual case when consumers lag):
-- two index probes and no lock. The minute's refill runs in one pop's
-- reconcile at a time (a try-lock: the others go on) and holds nothing
-- another pop waits for unless it finds rows missing.
CREATE FUNCTION queen.ready_reconcile(p_group text, p_queue text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    st     queen.log_ready_scans%ROWTYPE;
    top    bigint;
    flight xid8[];
    parts  uuid[];
BEGIN
    IF NOT queen.queue_is_wide(p_queue) THEN RETURN; END IF;   -- its pops scan (queen.pop)
    SELECT * INTO st FROM queen.log_ready_scans WHERE consumer_group = p_group AND queue = p_queue;
    IF NOT FOUND THEN PERFORM queen.ready_fill(p_group, p_queue, true); RETURN; END IF;
    IF st.filled_at < now() - interval '60 s'
       AND pg_try_advisory_xact_lock(hashtext('silt.refill'), hashtext(p_group || '/' || p_queue)) THEN
        PERFORM queen.ready_fill(p_group, p_queue, false);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM queen.log_writes w WHERE w.queue = p_queue AND w.id > st.seen_id)
       AND NOT EXISTS (SELECT 1 FROM queen.log_writes w WHERE w.writer = ANY (st.in_flight) AND w.queue = p_queue) THEN
        RETURN;
    END IF;
    SELECT * INTO st FROM queen.log_ready_scans WHERE consumer_group = p_group AND queue = p_queue FOR UPDATE;
    IF NOT FOUND THEN RETURN; END IF;   -- the group was deleted meanwhile: its next pop fills
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

-- Drops a spent partition from the group's set, unless the row is held by
-- another transaction, was marked since the pop read it (p_version), or is
-- no longer spent as this statement sees it.
CREATE FUNCTION queen.ready_drop(p_group text, p_partition uuid, p_version integer) RETURNS void
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
CREATE FUNCTION queen.ready_served(p_group text, p_partition uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE queen.log_ready r SET served_at = now()
     WHERE r.ctid = (SELECT h.ctid FROM queen.log_ready h
                      WHERE h.consumer_group = p_group AND h.partition_id = p_partition
                        FOR UPDATE SKIP LOCKED);
END $$;

-- ---- The pop ----------------------------------------------------------------

-- A queue-wide pop over the group's ready set: 018's pop loop, fed by the
-- set (least recently served first) instead of every partition.
CREATE FUNCTION queen.pop_ready(p_queue text, p_namespace text, p_task text,
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
        -- A partition the group has no cursor on yet: another pop making
        -- that cursor would hold this one until it commits; take the next.
        CONTINUE WHEN cur.committed IS NULL
                  AND NOT pg_try_advisory_xact_lock(hashtext(p_group), hashtext(cand.id::text));
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

-- 018's pop: queue-wide pops of a wide queue go to the ready set; the
-- rest (narrow queues, one partition, discovery) scan as before.
CREATE OR REPLACE FUNCTION queen.pop(p_queue text, p_partition text, p_namespace text, p_task text,
                                     p_group text, p_batch integer, p_partitions integer,
                                     p_auto_ack boolean, p_subscription text, p_lease uuid)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    remaining integer := p_batch;
    claimed   integer := 0;
    cands     refcursor;
    cand      record;
    span      record;
BEGIN
    IF p_queue IS NOT NULL AND p_partition IS NULL AND queen.queue_is_wide(p_queue) THEN
        RETURN QUERY SELECT * FROM queen.pop_ready(p_queue, p_namespace, p_task, p_group, p_batch, p_partitions,
                                                   p_auto_ack, p_subscription, p_lease);
        RETURN;
    END IF;
    -- Two statements, not one with (p_queue IS NULL OR p.queue = p_queue):
    -- a session's generic plan of that form cannot use the queue's index,
    -- and scanned every partition of every queue (19 ms a pop of a small
    -- queue beside a queue of 100,000 partitions).
    IF p_queue IS NOT NULL THEN
        OPEN cands FOR
            SELECT p.id, p.name, p.queue, q.options FROM queen.log_partitions p
              JOIN queen.queues q ON q.name = p.queue
              LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
             WHERE p.queue = p_queue AND (p_partition IS NULL OR p.name = p_partition)
               AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
               AND p.last_offset >= p.log_start
               AND (c.partition_id IS NULL OR (p.last_offset > c.committed
                    AND (c.lease_expires IS NULL OR c.lease_expires <= now())))
             ORDER BY c.last_activity_at NULLS FIRST;
    ELSE
        OPEN cands FOR
            SELECT p.id, p.name, p.queue, q.options FROM queen.log_partitions p
              JOIN queen.queues q ON q.name = p.queue
              LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
             WHERE (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
               AND p.last_offset >= p.log_start
               AND (c.partition_id IS NULL OR (p.last_offset > c.committed
                    AND (c.lease_expires IS NULL OR c.lease_expires <= now())))
             ORDER BY c.last_activity_at NULLS FIRST;
    END IF;
    LOOP   -- no limit: partitions that cannot deliver yet (a window, a delay, a cursor
           -- another pop holds) must not hide one that can; rows are fetched as the loop goes
        FETCH cands INTO cand;
        EXIT WHEN NOT FOUND;
        span := queen.claim(cand.id, p_group, queen.subscription_start(p_group, cand.queue, p_subscription),
                            cand.options, remaining, p_auto_ack, p_lease);
        CONTINUE WHEN span.cursor_to IS NULL;
        RETURN QUERY
            SELECT cand.queue, cand.id, cand.name, span.cursor_from, span.cursor_to,
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
    CLOSE cands;
END $$;

-- When something the pop could not take falls due, for one partition (029's
-- expression, per partition, so both ways of asking share it).
CREATE FUNCTION queen.partition_wake_at(p queen.log_partitions, opts jsonb, c_committed bigint,
                                        c_lease_expires timestamptz, p_seen timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT least(
               CASE WHEN c_lease_expires > p_seen THEN c_lease_expires END,
               CASE WHEN (opts->>'windowBuffer')::integer > 0
                         AND p.last_write_at + make_interval(secs => (opts->>'windowBuffer')::integer) > p_seen
                    THEN p.last_write_at + make_interval(secs => (opts->>'windowBuffer')::integer) END,
               CASE WHEN (opts->>'delayedProcessing')::integer > 0 THEN
                   (SELECT s.created_at + make_interval(secs => (opts->>'delayedProcessing')::integer)
                      FROM queen.log_segments s
                     WHERE s.partition_id = p.id AND s.end_offset > coalesce(c_committed, p.log_start - 1)
                       AND s.created_at + make_interval(secs => (opts->>'delayedProcessing')::integer) > p_seen
                     ORDER BY s.base_offset LIMIT 1) END)
$$;

-- 029's pop_wake_at: a queue-wide pop reads its group's ready set (and
-- looks again at once when writes it has not taken in are there); the rest,
-- and a group with no set yet, scan as before.
CREATE OR REPLACE FUNCTION queen.pop_wake_at(p_queue text, p_partition text, p_namespace text, p_task text,
                                             p_group text, p_seen timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE
-- A cursor is found by its key (partition, group), never through every
-- cursor of the group, whatever stale statistics make that look cost.
SET enable_bitmapscan = off
AS $$
DECLARE
    st queen.log_ready_scans%ROWTYPE;
BEGIN
    IF p_queue IS NOT NULL AND p_partition IS NULL AND queen.queue_is_wide(p_queue) THEN
        SELECT * INTO st FROM queen.log_ready_scans WHERE consumer_group = p_group AND queue = p_queue;
    END IF;
    IF st.consumer_group IS NULL AND p_queue IS NOT NULL THEN   -- a narrow queue, a partition, no set yet
        RETURN (SELECT min(queen.partition_wake_at(p, q.options, c.committed, c.lease_expires, p_seen))
                  FROM queen.log_partitions p
                  JOIN queen.queues q ON q.name = p.queue
                  LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
                 WHERE p.queue = p_queue AND (p_partition IS NULL OR p.name = p_partition)
                   AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
                   AND p.last_offset >= p.log_start
                   AND (c.partition_id IS NULL OR p.last_offset > c.committed));
    END IF;
    IF st.consumer_group IS NULL THEN   -- a discovery pop (its own statement: see queen.pop)
        RETURN (SELECT min(queen.partition_wake_at(p, q.options, c.committed, c.lease_expires, p_seen))
                  FROM queen.log_partitions p
                  JOIN queen.queues q ON q.name = p.queue
                  LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
                 WHERE (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
                   AND p.last_offset >= p.log_start
                   AND (c.partition_id IS NULL OR p.last_offset > c.committed));
    END IF;
    IF EXISTS (SELECT 1 FROM queen.log_writes w WHERE w.queue = p_queue AND w.id > st.seen_id)
       OR EXISTS (SELECT 1 FROM queen.log_writes w WHERE w.writer = ANY (st.in_flight) AND w.queue = p_queue) THEN
        RETURN p_seen;   -- written since the pop's reconcile: look again
    END IF;
    RETURN (SELECT min(queen.partition_wake_at(p, q.options, c.committed, c.lease_expires, p_seen))
              FROM queen.log_ready r
              JOIN queen.log_partitions p ON p.id = r.partition_id
              JOIN queen.queues q ON q.name = p.queue
                                 AND (p_namespace IS NULL OR q.namespace = p_namespace)
                                 AND (p_task IS NULL OR q.task = p_task)
              LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
             WHERE r.consumer_group = p_group AND r.queue = p_queue
               AND p.last_offset >= p.log_start
               AND (c.partition_id IS NULL OR p.last_offset > c.committed));
END $$;

-- ---- Cursors moved or removed -----------------------------------------------

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

-- 018's group_delete, emptying the group's set there too: with its cursors
-- gone it may have something in any partition again, so its next pop fills.
CREATE OR REPLACE FUNCTION queen.group_delete(p_group text, p_queue text, p_metadata boolean) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('silt.ready'), hashtext(p_group));
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

-- ---- Deletion and upkeep ----------------------------------------------------

-- 018's triggers, taking the set's rows and the write rows with them.
CREATE OR REPLACE FUNCTION queen.partitions_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_segments s USING gone g WHERE s.partition_id = g.id;
    DELETE FROM queen.log_txns t USING gone g WHERE t.partition_id = g.id;
    DELETE FROM queen.log_ready r USING gone g WHERE r.partition_id = g.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION queen.queues_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_dlq d USING gone g WHERE d.queue = g.name;
    DELETE FROM queen.log_writes w USING gone g WHERE w.queue = g.name;
    RETURN NULL;
END $$;

-- Upkeep, run by the retention pass's cleanup step. A group that has not
-- popped a queue for 10 minutes (an active one refills every minute) loses
-- its scans row there, so its write rows can go; its next pop fills. Write
-- rows every group of their queue has taken in, and no group's look still
-- waits on, are not needed again; they are kept 5 minutes whatever, as a
-- first fill in progress has not recorded its look yet. Returns the write
-- rows removed.
CREATE FUNCTION queen.log_writes_prune() RETURNS integer LANGUAGE plpgsql AS $$
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

-- ---- Plans that do not wait for autovacuum ---------------------------------
--
-- A session plans its statements once and keeps the plan. A plan made while
-- the partitions table was small (a sequential scan of a few rows) stayed
-- after a queue grew to 100,000 partitions, until autovacuum's analyze
-- replaced it: push batch 1 fell from 3,900 to 430 msg/s and pop+ack on a
-- small queue beside it from 20,000 to 4,800 (docs/performance.md). Setting
-- the planner per function (SET enable_seqscan = off) fixed the plans but
-- cost a pop 40% in pgbench, so instead whoever makes rows in bulk has the
-- table analyzed when it has more than doubled since its statistics, and
-- every session's plans of it are made again at their next use.
-- p_added: rows this transaction has just made (not counted in the
-- statistics views until it commits).
CREATE FUNCTION queen.analyze_if_grown(p_table regclass, p_added bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    live bigint;
    known real;
BEGIN
    live := pg_stat_get_live_tuples(p_table);   -- the statistics view's column, without the view's joins
    SELECT c.reltuples INTO known FROM pg_class c WHERE c.oid = p_table;
    IF coalesce(live, 0) + p_added > 2 * greatest(known, 0) + 1000
       AND pg_try_advisory_xact_lock(hashtext('silt.analyze'), p_table::oid::integer) THEN
        EXECUTE format('ANALYZE %s', p_table);
    END IF;
END $$;

-- 018's lock_partitions, analyzing the partitions when their creation has
-- outgrown the statistics.
CREATE OR REPLACE FUNCTION queen.lock_partitions(p_queues text[], p_partitions text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n      integer := array_length(p_queues, 1);
    locked integer;
    made   integer;
BEGIN
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM queen.log_partitions lp
          JOIN unnest(p_queues, p_partitions) AS x(q, p) ON lp.queue = x.q AND lp.name = x.p
         ORDER BY lp.queue, lp.name FOR UPDATE OF lp) l;
    IF locked = n THEN RETURN locked; END IF;
    -- Creating is rare; one creator at a time keeps concurrent flushes from
    -- waiting on each other's uncommitted partition rows in a cycle.
    PERFORM pg_advisory_xact_lock(7365697);
    INSERT INTO queen.queues (name, options)
    SELECT DISTINCT x.q, queen.default_options() FROM unnest(p_queues) AS x(q) ON CONFLICT DO NOTHING;
    INSERT INTO queen.log_partitions (queue, name)
    SELECT x.q, x.p FROM unnest(p_queues, p_partitions) AS x(q, p) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS made = ROW_COUNT;
    PERFORM queen.analyze_if_grown('queen.log_partitions', made);
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM queen.log_partitions lp
          JOIN unnest(p_queues, p_partitions) AS x(q, p) ON lp.queue = x.q AND lp.name = x.p
         ORDER BY lp.queue, lp.name FOR UPDATE OF lp) l;
    RETURN locked;
END $$;

-- 018's lock_cursor, analyzing the cursors when their creation has
-- outgrown the statistics (a group meeting a queue of 100,000 partitions
-- makes a cursor at each claim; a stale plan of the cursors' table then
-- read all of that group's cursors for each partition a pop of a small
-- queue looked at).
CREATE OR REPLACE FUNCTION queen.lock_cursor(p_partition uuid, p_group text, p_from timestamptz)
RETURNS queen.log_consumers LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c queen.log_consumers%ROWTYPE;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE SKIP LOCKED;
    IF FOUND THEN RETURN c; END IF;
    INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
    VALUES (p_partition, p_group, queen.seed_cursor(p_partition, p_from))
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN RETURN NULL; END IF;
    PERFORM queen.analyze_if_grown('queen.log_consumers', 1);
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    RETURN c;
END $$;

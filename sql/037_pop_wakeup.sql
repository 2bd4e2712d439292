-- 037: one lock order for a group's ready set (issue 32).
--
-- The ready set (031) is written under two kinds of lock: the group's scans
-- row (queen.log_ready_scans) and the set's rows (queen.log_ready). A
-- reconcile that took writes in locked the scans row and then marked rows
-- in partition order. The minute's refill, run by one pop's reconcile,
-- inserted the rows it found missing first and locked the scans row after
-- (its filled_at, then the same FOR UPDATE). A refill that inserted a row a
-- marking reconcile was about to mark waited for that reconcile's scans
-- row while the reconcile waited for the refill's uncommitted row: a cycle,
-- broken by PostgreSQL aborting one of them ("deadlock detected"). The pop
-- behind the aborted reconcile then walked a set missing the writes it
-- should have taken in and could answer 204 with messages there; and while
-- the refill stayed due, the next pop's refill met the next mark.
-- Deleting a group (queen.group_delete) had the same inversion: the set's
-- rows, in no particular order, then the scans rows.
--
-- The order now, for everything that writes the set: the group's advisory
-- lock where it is taken (a first fill, a group's deletion), then its scans
-- rows in queue order, then the set's rows in partition order
-- (queen.ready_mark, queen.ready_fill). Pops touch the set's rows only
-- with SKIP LOCKED and never wait on them, and seeks mark in partition
-- order holding no scans row, so no cycle of waits can form. The refill now
-- runs under the scans row: a reconcile of the same group and queue that
-- has writes to take in waits for it (once a minute, the length of one fill
-- of the queue), as a refill waits for a mark in progress.
--
-- Redefines queen.ready_reconcile and queen.group_delete (031); nothing
-- else changes.

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

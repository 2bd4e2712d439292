-- Row-delete sweeps of the task engine's small tables.

-- Whether this transaction may sweep: false while another server's batch
-- runs (it will finish the round).
CREATE OR REPLACE FUNCTION tasks.sweep_lock() RETURNS boolean LANGUAGE sql AS $$
    SELECT pg_try_advisory_xact_lock(hashtextextended('silt.task_sweep', 0))
$$;

-- Deletes up to p_batch terminal workflows (COMPLETED, FAILED, CANCELLED,
-- EXPIRED) that finished more than p_hours ago, with their nodes and any
-- crashed-worker evidence still in the outbox (both cascade), so a stalled
-- outbox never holds retention up. A workflow whose node task is still
-- live (a cancelled node whose worker has not yet stopped) is kept until
-- that task ends. Returns how many were deleted; -1: another server is
-- sweeping.
CREATE OR REPLACE FUNCTION tasks.sweep_workflows(p_hours integer, p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    IF NOT tasks.sweep_lock() THEN RETURN -1; END IF;
    DELETE FROM horsies_workflows w
     WHERE w.id IN (SELECT o.id FROM horsies_workflows o
                     WHERE o.finished_at < now() - make_interval(hours => p_hours)
                       AND o.status IN ('COMPLETED', 'FAILED', 'CANCELLED', 'EXPIRED')
                       AND NOT EXISTS (SELECT 1 FROM horsies_workflow_tasks n JOIN horsies_tasks t ON t.id = n.task_id
                                        WHERE n.workflow_id = o.id)
                     ORDER BY o.finished_at LIMIT p_batch FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- Deletes up to p_batch worker-state snapshots older than p_hours, and
-- then registrations of workers not seen for as long (a worker that comes
-- back registers again). Returns how many rows; -1: another server is
-- sweeping.
CREATE OR REPLACE FUNCTION tasks.sweep_worker_states(p_hours integer, p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz := now() - make_interval(hours => p_hours);
    n      integer;
    m      integer := 0;
BEGIN
    IF NOT tasks.sweep_lock() THEN RETURN -1; END IF;
    DELETE FROM horsies_worker_states s
     WHERE s.ctid = ANY (ARRAY(SELECT o.ctid FROM horsies_worker_states o WHERE o.snapshot_at < cutoff
                                LIMIT p_batch));
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n < p_batch THEN
        DELETE FROM horsies_workers w
         WHERE w.worker_id IN (SELECT o.worker_id FROM horsies_workers o WHERE o.last_seen_at < cutoff
                                ORDER BY o.last_seen_at LIMIT p_batch - n FOR UPDATE SKIP LOCKED);
        GET DIAGNOSTICS m = ROW_COUNT;
    END IF;
    RETURN n + m;
END $$;

-- Expires up to p_batch workflows PAUSED for more than p_after_s seconds
-- (since the pause: a resume clears paused_at): EXPIRED with
-- WORKFLOW_EXPIRED, the rest as a cancel. Returns how many; -1: another
-- server is sweeping.
CREATE OR REPLACE FUNCTION tasks.expire_paused_workflows(p_after_s integer, p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz := now() - make_interval(secs => p_after_s);
    ids    uuid[];
    w      horsies_workflows;
    n      integer := 0;
BEGIN
    IF NOT tasks.sweep_lock() THEN RETURN -1; END IF;
    ids := ARRAY(SELECT o.id FROM horsies_workflows o WHERE o.status = 'PAUSED' AND o.paused_at < cutoff
                  ORDER BY o.paused_at LIMIT p_batch);
    PERFORM tasks.workflows_lock(ids);
    FOR w IN SELECT * FROM horsies_workflows o WHERE o.id = ANY (ids) ORDER BY o.id LOOP
        CONTINUE WHEN w.status <> 'PAUSED' OR w.paused_at >= cutoff;   -- resumed meanwhile
        PERFORM tasks.workflow_stop(w.id, 'EXPIRED', 'WORKFLOW_EXPIRED',
                                    'paused since ' || to_char(w.paused_at AT TIME ZONE 'UTC',
                                                               'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                                    || ', longer than paused_workflow_auto_cancel_after');
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;

-- Deletes up to p_batch keys of tasks.unique_keys that hold nothing any
-- more (migration 044): a period over for p_after_s seconds or more, or a
-- "while live" key whose task ended. A send would take such a row over;
-- the sweep keeps the table near the size of the keys held. Compare and
-- delete on the holder read: a send that took the row over meanwhile
-- keeps it. Returns how many; -1: another server is sweeping.
CREATE OR REPLACE FUNCTION tasks.sweep_unique_keys(p_after_s integer, p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    IF NOT tasks.sweep_lock() THEN RETURN -1; END IF;
    WITH free AS MATERIALIZED (
        SELECT k.task_name, k.scope, k.task_id FROM tasks.unique_keys k
         WHERE k.expires_at <= now() - make_interval(secs => p_after_s)
            OR (k.expires_at IS NULL AND NOT EXISTS (SELECT 1 FROM horsies_tasks t WHERE t.id = k.task_id))
         LIMIT p_batch)
    DELETE FROM tasks.unique_keys k USING free f
     WHERE k.task_name = f.task_name AND k.scope = f.scope AND k.task_id = f.task_id
       AND (k.expires_at IS NULL OR k.expires_at <= now());
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

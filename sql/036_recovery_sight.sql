-- ==== Recovery does not count time it could not see (issue 30) ====
--
-- Recovery failed a RUNNING task WORKER_CRASHED once its last stored
-- heartbeat was older than running_stale_after_ms. While PostgreSQL (or
-- every server) is down, no heartbeat can be stored, so the first pass
-- after an outage longer than the threshold failed every task that ran
-- through it, although its worker was alive and still heartbeating into
-- the void.
--
-- Recovery now keeps its own clock of sight: the time of its last pass and
-- the moment it could see again. Sight restarts when the server running
-- the pass says its previous pass failed (the database was unreachable:
-- it was blind), and when a pass comes much later than the check interval
-- says (more than twice the interval, and at least five seconds more:
-- nobody could run recovery meanwhile, e.g. no server was running). A task
-- is stale only when both its last heartbeat and the restart of sight are
-- older than the threshold. A worker that really died is still failed, one
-- threshold (plus a check interval) after recovery could see again.

CREATE TABLE tasks.recovery_sight (
    only_row     boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    last_pass_at timestamptz NOT NULL,   -- the last recovery pass that committed
    seeing_since timestamptz NOT NULL    -- passes have come regularly since then
);

DROP FUNCTION tasks.recover_if_owner(integer, integer);
DROP FUNCTION tasks.recover(integer, integer);

-- One recovery pass (the maintenance owner's): stale CLAIMED back to
-- PENDING; stale RUNNING failed with WORKER_CRASHED; RUNNING past its
-- timeout failed with TASK_TIMEOUT (both retried when the policy retries
-- that code); PENDING past good_until EXPIRED. A heartbeat is missing only
-- since p_seeing_since (see tasks.recovery_sight). Returns one row per task
-- it moved: id, what happened and the status afterwards.
CREATE FUNCTION tasks.recover(p_claimed_stale_ms integer, p_running_stale_ms integer, p_seeing_since timestamptz)
RETURNS TABLE (id uuid, action text, status text, queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t horsies_tasks;
BEGIN
    RETURN QUERY
        UPDATE horsies_tasks x
           SET status = 'PENDING', worker_id = NULL, claim_id = NULL, claimed_at = NULL, last_heartbeat_at = NULL
         WHERE x.id IN (SELECT c.id FROM horsies_tasks c WHERE c.status = 'CLAIMED'
                         AND greatest(c.last_heartbeat_at, p_seeing_since)
                             < now() - make_interval(secs => p_claimed_stale_ms / 1000.0)
                         FOR UPDATE SKIP LOCKED)
        RETURNING x.id, 'requeued stale claim'::text, 'PENDING'::text, x.queue_name;
    FOR t IN SELECT * FROM horsies_tasks c WHERE c.status = 'RUNNING'
                AND greatest(c.last_heartbeat_at, p_seeing_since)
                    < now() - make_interval(secs => p_running_stale_ms / 1000.0)
                FOR UPDATE SKIP LOCKED LOOP
        id := t.id; action := 'WORKER_CRASHED'; queue := t.queue_name;
        status := tasks.fail_running(t, 'WORKER_CRASHED', 'no runner heartbeat since ' || t.last_heartbeat_at);
        RETURN NEXT;
    END LOOP;
    FOR t IN SELECT * FROM horsies_tasks c WHERE c.status = 'RUNNING' AND c.timeout_ms IS NOT NULL
                AND c.started_at + make_interval(secs => c.timeout_ms / 1000.0) < now()
                FOR UPDATE SKIP LOCKED LOOP
        id := t.id; action := 'TASK_TIMEOUT'; queue := t.queue_name;
        status := tasks.fail_running(t, 'TASK_TIMEOUT', 'running longer than ' || t.timeout_ms || ' ms');
        RETURN NEXT;
    END LOOP;
    FOR t IN SELECT * FROM horsies_tasks c WHERE c.status = 'PENDING' AND c.good_until < now()
                FOR UPDATE SKIP LOCKED LOOP
        PERFORM tasks.terminalize(ARRAY[t.id], 'EXPIRED', NULL, 'EXPIRED', 'not started before good_until');
        id := t.id; action := 'EXPIRED'; status := 'EXPIRED'; queue := t.queue_name;
        RETURN NEXT;
    END LOOP;
END $$;

-- Records this pass in the clock of sight and returns since when recovery
-- has seen without a gap: now, when the caller was blind before this pass
-- or the last pass came later than p_check_ms allows; since ever on the
-- first pass of a database (nothing was missed).
CREATE FUNCTION tasks.recovery_seeing_since(p_check_ms integer, p_was_blind boolean) RETURNS timestamptz
LANGUAGE sql AS $$
    INSERT INTO tasks.recovery_sight AS s (last_pass_at, seeing_since)
    VALUES (now(), CASE WHEN p_was_blind THEN now() ELSE '-infinity' END)
    ON CONFLICT (only_row) DO UPDATE
       SET last_pass_at = now(),
           seeing_since = CASE WHEN p_was_blind OR s.last_pass_at
                                    < now() - make_interval(secs => greatest(2 * p_check_ms, p_check_ms + 5000) / 1000.0)
                               THEN now() ELSE s.seeing_since END
    RETURNING seeing_since
$$;

-- A recovery pass by the maintenance owner: whichever server takes the
-- advisory lock first in a round does it, the others return nothing.
-- Recovery records node ends in the outbox (see history_advances_workflow).
-- p_check_ms is the server's check_interval_ms, p_was_blind whether its
-- previous pass failed; servers of the previous version, still running
-- beside this one while they are replaced, call with two arguments.
CREATE FUNCTION tasks.recover_if_owner(p_claimed_stale_ms integer, p_running_stale_ms integer,
                                       p_check_ms integer DEFAULT 30000, p_was_blind boolean DEFAULT false)
RETURNS TABLE (id uuid, action text, status text, queue text) LANGUAGE plpgsql AS $$
BEGIN
    IF pg_try_advisory_xact_lock(hashtextextended('silt.task_recovery', 0)) THEN
        PERFORM set_config('silt.via_outbox', 'on', true);
        RETURN QUERY SELECT * FROM tasks.recover(p_claimed_stale_ms, p_running_stale_ms,
                                                 tasks.recovery_seeing_since(p_check_ms, p_was_blind));
        PERFORM set_config('silt.via_outbox', 'off', true);
    END IF;
END $$;

-- When the earliest delayed PENDING task of these queues becomes claimable
-- (NULL: none), so a parked claimer looks again at that moment rather than
-- at its next periodic look. Tasks already due are not counted: one that
-- is due but not claimable (locked by another claimer, or its queue at its
-- cap) would otherwise have a parked claimer look again at once, forever.
CREATE OR REPLACE FUNCTION tasks.next_run_at(p_queues text[]) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT min(run_at) FROM horsies_tasks
     WHERE queue_name = ANY (p_queues) AND status = 'PENDING' AND run_at > now()
$$;

-- A heartbeat answers each (task, claim) it names, in the order named: a
-- worker that names a task twice, under an old claim (an end it still
-- holds) and the current one, hears 'lost' for the old. 019's answered by
-- task id alone, so both heard the current claim's state.
CREATE OR REPLACE FUNCTION tasks.heartbeat(p_worker text, p_ids uuid[], p_claims uuid[])
RETURNS TABLE (id uuid, state text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    -- Rows locked in id order, as every batch that ends tasks locks them, so
    -- a heartbeat and an end of the same tasks never wait on each other in a
    -- circle.
    PERFORM 1 FROM horsies_tasks t WHERE t.id = ANY (p_ids) ORDER BY t.id FOR UPDATE;
    RETURN QUERY
    WITH named AS (SELECT u.id, u.claim, u.ord FROM unnest(p_ids, p_claims) WITH ORDINALITY AS u(id, claim, ord)),
    held AS (
        UPDATE horsies_tasks t SET last_heartbeat_at = now()
          FROM named n WHERE t.id = n.id AND t.claim_id = n.claim AND t.worker_id = p_worker
        RETURNING t.id, t.claim_id, t.status, t.cancel_requested),
    beats AS (
        INSERT INTO horsies_heartbeats (task_id, worker_id, role)
        SELECT h.id, p_worker, CASE WHEN h.status = 'RUNNING' THEN 'runner' ELSE 'claimer' END FROM held h)
    SELECT n.id, CASE WHEN h.id IS NULL THEN 'lost' WHEN h.cancel_requested THEN 'cancelled' ELSE 'ok' END
      FROM named n LEFT JOIN held h ON h.id = n.id AND h.claim_id = n.claim ORDER BY n.ord;
    UPDATE horsies_workers SET last_seen_at = now() WHERE worker_id = p_worker;
    INSERT INTO horsies_worker_states (worker_id, hostname, pid, queues, concurrency, claimed, running)
    SELECT w.worker_id, w.hostname, w.pid, w.queues, w.concurrency,
           (SELECT count(*) FROM horsies_tasks t WHERE t.worker_id = p_worker AND t.status = 'CLAIMED'),
           (SELECT count(*) FROM horsies_tasks t WHERE t.worker_id = p_worker AND t.status = 'RUNNING')
      FROM horsies_workers w WHERE w.worker_id = p_worker;
END $$;

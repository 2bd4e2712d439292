-- Recovery of tasks whose worker stopped heartbeating.

-- A recovery pass by the maintenance owner: whichever server takes the
-- advisory lock first in a round does it, the others return nothing.
-- Recovery records node ends in the outbox (see tasks.nodes_entered_history).
-- p_check_ms is the server's check_interval_ms, p_was_blind whether its
-- previous pass failed; servers of the previous version, still running
-- beside this one while they are replaced, call with two arguments.
CREATE OR REPLACE FUNCTION tasks.recover_if_owner(p_claimed_stale_ms integer, p_running_stale_ms integer,
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

-- Records this pass in the clock of sight and returns since when recovery
-- has seen without a gap: now, when the caller was blind before this pass
-- or the last pass came later than p_check_ms allows; since ever on the
-- first pass of a database (nothing was missed).
CREATE OR REPLACE FUNCTION tasks.recovery_seeing_since(p_check_ms integer, p_was_blind boolean) RETURNS timestamptz
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

-- One recovery pass (the maintenance owner's): stale CLAIMED back to
-- PENDING; stale RUNNING failed with WORKER_CRASHED; RUNNING past its
-- timeout failed with TASK_TIMEOUT (both retried when the policy retries
-- that code); PENDING past good_until EXPIRED. A heartbeat is missing only
-- since p_seeing_since (see tasks.recovery_sight). Returns one row per task
-- it moved: id, what happened and the status afterwards.
CREATE OR REPLACE FUNCTION tasks.recover(p_claimed_stale_ms integer, p_running_stale_ms integer, p_seeing_since timestamptz)
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

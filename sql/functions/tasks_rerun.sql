-- Rerunning finished tasks: a terminal task (FAILED, CANCELLED, EXPIRED;
-- COMPLETED when asked) is sent again as a new task that names it
-- (rerun_of), with its name, queue, args, priority, retry policy, timeout,
-- retention class and rate key unless the request overrides them. A task is rerun
-- at most once: its rerun carries the idempotency key tasks.rerun_key(id),
-- so a request made again (a client's retry, a bulk rerun repeated) gets
-- the rerun already made (created false) and sends nothing, and two made at
-- once send one. To run it again, rerun the rerun. A workflow node's task
-- is rerun one at a time, into its node: the workflow goes on from there
-- (tasks.node_reopen).

CREATE OR REPLACE FUNCTION tasks.rerun_key(p_id uuid) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'rerun:' || p_id::text
$$;

-- Sends the reruns of the history records p_ids (checked rerunnable by the
-- caller) through tasks.send, each override that is not NULL replacing the
-- original's value (p_args a JSON text; p_retry true: the policy given
-- replaces the original's whole). One row per record, in p_ids order.
CREATE OR REPLACE FUNCTION tasks.rerun_send(p_ids uuid[], p_name text, p_queue text, p_args text,
        p_priority integer, p_timeout integer, p_retry boolean, p_max_retries integer, p_delays text,
        p_base integer, p_cap integer, p_jitter real, p_retry_on text, p_class text)
RETURNS TABLE (idx integer, rerun_of uuid, id uuid, created boolean, queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s record;
BEGIN
    SELECT array_agg(h.id ORDER BY u.ord) AS originals, array_agg(tasks.uuid7() ORDER BY u.ord) AS ids,
           array_agg(coalesce(p_name, h.task_name) ORDER BY u.ord) AS names,
           array_agg(coalesce(p_queue, h.queue_name) ORDER BY u.ord) AS queues,
           array_agg(coalesce(p_args, h.args::text) ORDER BY u.ord) AS args,
           array_agg(coalesce(p_priority, h.priority) ORDER BY u.ord) AS priorities,
           array_agg(coalesce(p_timeout, h.timeout_ms) ORDER BY u.ord) AS timeouts,
           array_agg(CASE WHEN p_retry THEN coalesce(p_max_retries, 0) ELSE h.max_retries END ORDER BY u.ord) AS retries,
           array_agg(CASE WHEN p_retry THEN p_delays ELSE h.retry_delays_ms::text END ORDER BY u.ord) AS delays,
           array_agg(CASE WHEN p_retry THEN p_base ELSE h.retry_base_ms END ORDER BY u.ord) AS bases,
           array_agg(CASE WHEN p_retry THEN p_cap ELSE h.retry_cap_ms END ORDER BY u.ord) AS caps,
           array_agg(CASE WHEN p_retry THEN coalesce(p_jitter, 0) ELSE coalesce(h.retry_jitter, 0) END
                     ORDER BY u.ord) AS jitters,
           array_agg(CASE WHEN p_retry THEN p_retry_on ELSE h.retry_on::text END ORDER BY u.ord) AS retry_on,
           array_agg(tasks.rerun_key(h.id) ORDER BY u.ord) AS keys,
           array_agg(coalesce(p_class, h.retention_class_key) ORDER BY u.ord) AS classes,
           array_agg(h.rate_key ORDER BY u.ord) AS rate_keys
      INTO s
      FROM unnest(p_ids) WITH ORDINALITY AS u(id, ord)
      JOIN horsies_task_history h ON h.id = u.id AND h.finished_at >= tasks.history_floor(u.id);
    RETURN QUERY
        SELECT x.idx, s.originals[x.idx + 1], x.id, x.created, s.queues[x.idx + 1]
          FROM tasks.send(s.ids, s.names, s.queues, s.args, s.priorities, NULL, NULL, NULL, s.timeouts, s.retries,
                          s.delays, s.bases, s.caps, s.jitters, s.retry_on, s.keys, s.classes, s.originals,
                          s.rate_keys) x
         ORDER BY x.idx;
END $$;

-- One task's rerun. status is the task's (NULL: no such task, neither live
-- nor in history); for a workflow node's task, workflow_id and
-- workflow_status are its workflow's. refused says why it is not rerun (id
-- NULL): 'live' (it has not ended), 'completed' (COMPLETED, p_completed
-- false), or for a node's task tasks.node_refusal's reason. created is
-- false when it had been rerun already: id is that rerun.
CREATE OR REPLACE FUNCTION tasks.rerun(p_id uuid, p_completed boolean, p_name text, p_queue text, p_args text,
        p_priority integer, p_timeout integer, p_retry boolean, p_max_retries integer, p_delays text,
        p_base integer, p_cap integer, p_jitter real, p_retry_on text, p_class text)
RETURNS TABLE (status text, workflow_id uuid, workflow_status text, refused text, id uuid, created boolean,
               queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    st   text;
    wf   uuid;
    wst  text;
    node text;
    prior uuid;
    why  text;
    live boolean;
    r    record;
BEGIN
    SELECT t.status, t.workflow_id INTO st, wf FROM horsies_tasks t WHERE t.id = p_id;
    live := st IS NOT NULL;
    IF NOT live THEN
        SELECT h.status, h.workflow_id INTO st, wf FROM horsies_task_history h
         WHERE h.id = p_id AND h.finished_at >= tasks.history_floor(p_id);
    END IF;
    IF wf IS NOT NULL AND NOT live AND st <> 'COMPLETED' THEN
        PERFORM tasks.workflows_lock(ARRAY[wf]);   -- one rerun of a node at a time, ordered with its ends
        SELECT w.status INTO wst FROM horsies_workflows w WHERE w.id = wf;
        SELECT k.task_id INTO prior FROM horsies_task_idempotency k WHERE k.idempotency_key = tasks.rerun_key(p_id);
        IF prior IS NOT NULL THEN   -- rerun already
            RETURN QUERY SELECT st, wf, wst, NULL::text, prior, false, NULL::text;
            RETURN;
        END IF;
        SELECT n.node_id, n.status, n.args, n.args_from,
               EXISTS (SELECT 1 FROM horsies_workflow_tasks p
                        WHERE p.workflow_id = wf AND p.node_id = ANY (n.waits_for)
                          AND p.status IN ('PENDING', 'READY', 'ENQUEUED')) AS waiting
          INTO r FROM horsies_workflow_tasks n WHERE n.task_id = p_id;
        node := r.node_id;
        why := tasks.node_refusal(wst, r.status, r.waiting);
        IF why IS NULL AND p_args IS NULL AND r.args_from IS NOT NULL THEN   -- its predecessors' results as now
            p_args := tasks.node_args(wf, r.args, r.args_from)::text;
        END IF;
    ELSIF wf IS NOT NULL AND NOT live THEN
        why := 'node_completed';
    ELSIF st IS NOT NULL THEN
        why := CASE WHEN live THEN 'live' WHEN st = 'COMPLETED' AND NOT p_completed THEN 'completed' END;
    END IF;
    IF st IS NULL OR why IS NOT NULL THEN
        RETURN QUERY SELECT st, wf, wst, why, NULL::uuid, NULL::boolean, NULL::text;
        RETURN;
    END IF;
    SELECT s.id, s.created, s.queue INTO r
      FROM tasks.rerun_send(ARRAY[p_id], p_name, p_queue, p_args, p_priority, p_timeout, p_retry, p_max_retries,
                            p_delays, p_base, p_cap, p_jitter, p_retry_on, p_class) s;
    IF node IS NOT NULL AND r.created THEN
        UPDATE horsies_tasks t SET workflow_id = wf, workflow_node = node WHERE t.id = r.id;
        PERFORM tasks.node_reopen(wf, node, r.id);
        SELECT w.status INTO wst FROM horsies_workflows w WHERE w.id = wf;
    END IF;
    RETURN QUERY SELECT st, wf, wst, NULL::text, r.id, r.created, r.queue;
END $$;

-- Why a workflow node's task that ended other than COMPLETED (a COMPLETED
-- node's dependents ran on its result: it stays) is not rerun into its
-- node, or NULL: it may be. p_workflow is its workflow's status (NULL: the
-- record is gone), p_node its node's (NULL: it is not the node's current
-- task), p_waiting whether a predecessor of the node has not ended (a
-- rerun upstream reopened it). A node runs again only after it FAILED, or
-- was SKIPPED by its task's cancel, in a workflow still RUNNING, PAUSED or
-- FAILED, once every predecessor has ended; an ENQUEUED node has not taken
-- its task's end yet (recovery's outbox).
CREATE OR REPLACE FUNCTION tasks.node_refusal(p_workflow text, p_node text, p_waiting boolean)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_workflow IS NULL THEN 'workflow_gone'
        WHEN p_workflow NOT IN ('RUNNING', 'PAUSED', 'FAILED') THEN 'workflow_ended'
        WHEN p_node IS NULL THEN 'not_current'
        WHEN p_node = 'ENQUEUED' THEN 'node_open'
        WHEN p_waiting THEN 'waiting'
    END
$$;

-- The records a bulk rerun takes, oldest id first, at most p_limit: ended
-- FAILED, CANCELLED or EXPIRED (COMPLETED too with p_completed, or when
-- p_status names it), matching every filter given (NULL: any), not a
-- workflow node's, and not rerun already, so a bulk rerun made again goes
-- on with the records the last one left.
CREATE OR REPLACE FUNCTION tasks.rerun_candidates(p_queue text, p_name text, p_code text, p_status text,
        p_after timestamptz, p_before timestamptz, p_completed boolean, p_limit integer)
RETURNS TABLE (id uuid) LANGUAGE sql STABLE AS $$
    SELECT h.id FROM horsies_task_history h
     WHERE (h.status IN ('FAILED', 'CANCELLED', 'EXPIRED') OR p_completed OR p_status = 'COMPLETED')
       AND (p_status IS NULL OR h.status = p_status)
       AND (p_queue IS NULL OR h.queue_name = p_queue)
       AND (p_name IS NULL OR h.task_name = p_name)
       AND (p_code IS NULL OR h.error_code = p_code)
       AND (p_after IS NULL OR h.finished_at >= p_after)
       AND (p_before IS NULL OR h.finished_at < p_before)
       AND h.workflow_id IS NULL
       AND NOT EXISTS (SELECT 1 FROM horsies_task_idempotency k WHERE k.idempotency_key = tasks.rerun_key(h.id))
     ORDER BY h.id LIMIT p_limit
$$;

-- A bulk rerun: the reruns of up to p_limit candidates (one row each, with
-- more: further candidates are left for the next request).
CREATE OR REPLACE FUNCTION tasks.rerun_many(p_queue text, p_name text, p_code text, p_status text,
        p_after timestamptz, p_before timestamptz, p_completed boolean, p_limit integer, p_priority integer,
        p_timeout integer, p_retry boolean, p_max_retries integer, p_delays text, p_base integer, p_cap integer,
        p_jitter real, p_retry_on text, p_class text)
RETURNS TABLE (rerun_of uuid, id uuid, created boolean, queue text, more boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    ids uuid[];
BEGIN
    ids := ARRAY(SELECT c.id FROM tasks.rerun_candidates(p_queue, p_name, p_code, p_status, p_after, p_before,
                                                         p_completed, p_limit + 1) c);
    RETURN QUERY SELECT r.rerun_of, r.id, r.created, r.queue, cardinality(ids) > p_limit
                   FROM tasks.rerun_send(ids[1:p_limit], NULL, NULL, NULL, p_priority, p_timeout, p_retry,
                                         p_max_retries, p_delays, p_base, p_cap, p_jitter, p_retry_on, p_class) r;
END $$;

-- 020: workflows on the task engine (docs/workflows.md).
--
-- A workflow is a DAG of nodes; each node runs one task. A node advances
-- in the transaction that makes its task terminal (tasks.terminalize and
-- the set-based completions of tasks.finish_many call tasks.node_ended), or,
-- when recovery ended the task (a crashed worker, a timeout), through the
-- outbox horsies_workflow_phase2_pending, applied by the maintenance owner.
-- A node moves only when its current task_id ends, so a completion is never
-- applied twice.

-- ==== Records ===============================================================

CREATE TABLE horsies_workflows (
    id            uuid PRIMARY KEY,
    name          text NOT NULL,
    status        text NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'PAUSED',
                                                  'CANCELLED', 'EXPIRED')),
    on_error      text NOT NULL CHECK (on_error IN ('FAIL', 'PAUSE')),
    output_node   text,                       -- NULL: every sink node
    open_nodes    integer NOT NULL DEFAULT 0, -- nodes not yet COMPLETED, FAILED or SKIPPED
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    paused_at     timestamptz,
    finished_at   timestamptz,
    result        json,                       -- the output node's
    error_code    text,
    error_message text
);
CREATE INDEX horsies_workflows_status ON horsies_workflows (status, id);

CREATE TABLE horsies_workflow_tasks (
    workflow_id       uuid NOT NULL REFERENCES horsies_workflows (id) ON DELETE CASCADE,
    node_id           text NOT NULL,
    task_name         text NOT NULL,
    queue_name        text NOT NULL,
    args              json NOT NULL,
    priority          integer NOT NULL,
    timeout_ms        integer,
    max_retries       integer NOT NULL DEFAULT 0,
    retry_delays_ms   integer[],
    retry_base_ms     integer,
    retry_cap_ms      integer,
    retry_jitter      real NOT NULL DEFAULT 0,
    retry_on          text[],
    good_until        timestamptz,
    waits_for         text[] NOT NULL DEFAULT '{}',
    join_kind         text NOT NULL DEFAULT 'all' CHECK (join_kind IN ('all', 'any', 'quorum')),
    min_success       integer,
    allow_failed_deps boolean NOT NULL DEFAULT false,
    deps_done         integer NOT NULL DEFAULT 0,   -- predecessors COMPLETED so far
    deps_failed       integer NOT NULL DEFAULT 0,   -- predecessors FAILED or SKIPPED so far
    next_nodes        text[] NOT NULL DEFAULT '{}', -- the nodes that wait for this one (set at create)
    args_from         jsonb,                  -- {"parameter": "predecessor node id"}
    status            text NOT NULL DEFAULT 'PENDING'
                      CHECK (status IN ('PENDING', 'READY', 'ENQUEUED', 'RUNNING', 'COMPLETED', 'FAILED', 'SKIPPED')),
    task_id           uuid,                   -- its task, once enqueued
    result            json,
    error_code        text,
    error_message     text,
    finished_at       timestamptz,
    PRIMARY KEY (workflow_id, node_id)
);
CREATE UNIQUE INDEX horsies_workflow_tasks_task ON horsies_workflow_tasks (task_id);
CREATE INDEX horsies_workflow_tasks_ready ON horsies_workflow_tasks (workflow_id) WHERE status = 'READY';

-- Crashed-worker progression evidence: a node task that recovery ended,
-- waiting for the maintenance owner to advance its workflow.
CREATE TABLE horsies_workflow_phase2_pending (
    task_id       uuid PRIMARY KEY,
    workflow_id   uuid NOT NULL REFERENCES horsies_workflows (id) ON DELETE CASCADE,
    node_id       text NOT NULL,
    task_status   text NOT NULL,
    error_code    text,
    error_message text,
    created_at    timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE horsies_tasks ADD COLUMN workflow_id uuid, ADD COLUMN workflow_node text;
ALTER TABLE horsies_task_history ADD COLUMN workflow_id uuid, ADD COLUMN workflow_node text;

-- A UUIDv7 made in SQL (PostgreSQL 15 has none): 48 bits of Unix
-- milliseconds, then random bits with the version and variant set.
CREATE FUNCTION tasks.uuid7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                  PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                  FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;

-- ==== Advancement ===========================================================

-- Enqueues a READY node: its task goes into horsies_tasks with its own args
-- and, for each argsFrom parameter, the named predecessor's result.
CREATE FUNCTION tasks.enqueue_node(n horsies_workflow_tasks) RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
    id   uuid := tasks.uuid7();
    args json := n.args;
BEGIN
    IF n.args_from IS NOT NULL THEN
        SELECT (n.args::jsonb || coalesce(jsonb_object_agg(f.key, coalesce(p.result::jsonb, 'null'::jsonb)), '{}'))::json
          INTO args
          FROM jsonb_each_text(n.args_from) f
          JOIN horsies_workflow_tasks p ON p.workflow_id = n.workflow_id AND p.node_id = f.value;
    END IF;
    INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, good_until, timeout_ms, max_retries,
                               retry_delays_ms, retry_base_ms, retry_cap_ms, retry_jitter, retry_on,
                               workflow_id, workflow_node)
    VALUES (id, n.task_name, n.queue_name, args, n.priority, 'PENDING', n.good_until, n.timeout_ms, n.max_retries,
            n.retry_delays_ms, n.retry_base_ms, n.retry_cap_ms, n.retry_jitter, n.retry_on,
            n.workflow_id, n.node_id);
    UPDATE horsies_workflow_tasks SET status = 'ENQUEUED', task_id = id
     WHERE workflow_id = n.workflow_id AND node_id = n.node_id;
    -- Claimers must hear of it, and the server that ends this transaction
    -- cannot tell (it sees a task end, not what it enqueued): a NOTIFY, in
    -- the transactions that enqueue nodes only (once per queue each).
    PERFORM pg_notify('silt_tasks', 'sent:' || n.queue_name);
    RETURN id;
END $$;

-- What a PENDING node's join says now, from its counts of predecessors
-- ended (kept by tasks.node_terminal, so no predecessor is read): 'ready',
-- 'skip' or 'wait'.
CREATE FUNCTION tasks.join_verdict(n horsies_workflow_tasks) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN cardinality(n.waits_for) = 0 THEN 'ready'
        WHEN n.join_kind = 'all' AND n.allow_failed_deps THEN CASE WHEN open = 0 THEN 'ready' ELSE 'wait' END
        WHEN n.join_kind = 'all' THEN CASE WHEN n.deps_failed > 0 THEN 'skip' WHEN open = 0 THEN 'ready' ELSE 'wait' END
        WHEN n.join_kind = 'any' THEN CASE WHEN n.deps_done > 0 THEN 'ready' WHEN open = 0 THEN 'skip' ELSE 'wait' END
        ELSE CASE WHEN n.deps_done >= n.min_success THEN 'ready'
                  WHEN n.deps_done + open < n.min_success THEN 'skip' ELSE 'wait' END
    END
    FROM (SELECT cardinality(n.waits_for) - n.deps_done - n.deps_failed AS open) c
$$;

-- A workflow whose every node ended completes when its output node (or,
-- with none named, every sink) completed, and fails otherwise.
CREATE FUNCTION tasks.workflow_finish(w horsies_workflows) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    outcome text;
BEGIN
    outcome := CASE WHEN NOT EXISTS (
            SELECT 1 FROM horsies_workflow_tasks o WHERE o.workflow_id = w.id AND o.status <> 'COMPLETED'
               AND (o.node_id = w.output_node OR (w.output_node IS NULL AND NOT EXISTS (
                    SELECT 1 FROM horsies_workflow_tasks s WHERE s.workflow_id = w.id AND o.node_id = ANY (s.waits_for)))))
        THEN 'COMPLETED' ELSE 'FAILED' END;
    UPDATE horsies_workflows SET status = outcome, finished_at = now(),
           result = (SELECT o.result FROM horsies_workflow_tasks o WHERE o.workflow_id = w.id AND o.node_id = w.output_node)
     WHERE id = w.id;
    PERFORM pg_notify('silt_tasks', 'done:' || w.id);   -- its waiters (GET ?wait), once per workflow
    RETURN outcome;
END $$;

-- Enqueues the workflow's READY nodes, unless it is paused.
CREATE FUNCTION tasks.workflow_enqueue_ready(w horsies_workflows) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    n horsies_workflow_tasks;
BEGIN
    IF w.status <> 'RUNNING' THEN RETURN; END IF;
    FOR n IN SELECT * FROM horsies_workflow_tasks WHERE workflow_id = w.id AND status = 'READY' ORDER BY node_id LOOP
        PERFORM tasks.enqueue_node(n);
    END LOOP;
END $$;

-- Node p_node of workflow w just ended (status p_status): it counts for
-- its successors, whose joins decide (a skip ends its node in turn), and
-- the workflow's open count drops. Work per end: its successors only.
CREATE FUNCTION tasks.node_terminal(w horsies_workflows, p_node text, p_status text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    n       horsies_workflow_tasks;
    verdict text;
    nexts   text[];
BEGIN
    UPDATE horsies_workflows SET open_nodes = open_nodes - 1 WHERE id = w.id;
    SELECT e.next_nodes INTO nexts FROM horsies_workflow_tasks e WHERE e.workflow_id = w.id AND e.node_id = p_node;
    IF cardinality(nexts) = 0 THEN RETURN; END IF;
    FOR n IN UPDATE horsies_workflow_tasks s
                SET deps_done = s.deps_done + CASE WHEN p_status = 'COMPLETED' THEN 1 ELSE 0 END,
                    deps_failed = s.deps_failed + CASE WHEN p_status = 'COMPLETED' THEN 0 ELSE 1 END
              WHERE s.workflow_id = w.id AND s.node_id = ANY (nexts) AND s.status = 'PENDING'
              RETURNING s.* LOOP
        verdict := tasks.join_verdict(n);
        CONTINUE WHEN verdict = 'wait';
        IF verdict = 'ready' THEN
            UPDATE horsies_workflow_tasks SET status = 'READY' WHERE workflow_id = w.id AND node_id = n.node_id;
        ELSE
            UPDATE horsies_workflow_tasks SET status = 'SKIPPED', finished_at = now()
             WHERE workflow_id = w.id AND node_id = n.node_id;
            PERFORM tasks.node_terminal(w, n.node_id, 'SKIPPED');   -- skips propagate
        END IF;
    END LOOP;
END $$;

-- Starts (or resumes) a workflow: RUNNING, its READY nodes (those without
-- predecessors, at start) enqueued; ended at once when nothing is open.
CREATE FUNCTION tasks.workflow_settle(p_workflow uuid) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    w horsies_workflows;
BEGIN
    SELECT * INTO w FROM horsies_workflows WHERE id = p_workflow FOR UPDATE;
    IF w.status NOT IN ('PENDING', 'RUNNING') THEN RETURN w.status; END IF;
    IF w.status = 'PENDING' THEN
        UPDATE horsies_workflow_tasks SET status = 'READY'
         WHERE workflow_id = p_workflow AND status = 'PENDING' AND cardinality(waits_for) = 0;
        UPDATE horsies_workflows SET status = 'RUNNING', started_at = now(),
               open_nodes = (SELECT count(*) FROM horsies_workflow_tasks WHERE workflow_id = p_workflow)
         WHERE id = p_workflow RETURNING * INTO w;
    END IF;
    IF w.open_nodes = 0 THEN RETURN tasks.workflow_finish(w); END IF;
    PERFORM tasks.workflow_enqueue_ready(w);
    RETURN w.status;
END $$;

-- The node whose task this was takes the task's end (COMPLETED, FAILED,
-- SKIPPED for a cancelled task), then its successors and its workflow
-- move. Nothing moves when the node's current task is another one or it
-- ended already: a completion is never applied twice.
CREATE FUNCTION tasks.node_ended(p_task uuid, p_task_status text, p_result json, p_code text, p_message text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    wf   uuid;
    node text;
    st   text;
    w    horsies_workflows;
BEGIN
    SELECT workflow_id INTO wf FROM horsies_workflow_tasks WHERE task_id = p_task;
    IF wf IS NULL THEN RETURN; END IF;
    SELECT * INTO w FROM horsies_workflows WHERE id = wf FOR UPDATE;   -- one ending at a time per workflow
    UPDATE horsies_workflow_tasks
       SET status = CASE p_task_status WHEN 'COMPLETED' THEN 'COMPLETED' WHEN 'CANCELLED' THEN 'SKIPPED' ELSE 'FAILED' END,
           result = p_result, error_code = p_code, error_message = p_message, finished_at = now()
     WHERE task_id = p_task AND status IN ('ENQUEUED', 'RUNNING')
    RETURNING node_id, status INTO node, st;
    IF node IS NULL THEN RETURN; END IF;
    PERFORM tasks.node_terminal(w, node, st);
    SELECT * INTO w FROM horsies_workflows WHERE id = wf;
    IF w.status NOT IN ('RUNNING', 'PAUSED') THEN RETURN; END IF;   -- cancelled meanwhile: nothing more
    IF w.on_error = 'PAUSE' AND w.status = 'RUNNING' AND st = 'FAILED' THEN
        UPDATE horsies_workflows SET status = 'PAUSED', paused_at = now() WHERE id = wf RETURNING * INTO w;
    END IF;
    IF w.open_nodes = 0 AND w.status = 'RUNNING' THEN PERFORM tasks.workflow_finish(w); RETURN; END IF;
    PERFORM tasks.workflow_enqueue_ready(w);
END $$;

-- ==== Hooks into the task engine ============================================
--
-- Tasks know nothing of workflows: these triggers connect them, and cost a
-- plain task one index probe when it ends.

-- A node task's history row names its workflow and node (the live row is
-- gone by the time the row is written, so they are found by task id).
CREATE FUNCTION tasks.history_names_node() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT w.workflow_id, w.node_id INTO NEW.workflow_id, NEW.workflow_node
      FROM horsies_workflow_tasks w WHERE w.task_id = NEW.id;
    RETURN NEW;
END $$;
CREATE TRIGGER history_names_node BEFORE INSERT ON horsies_task_history
    FOR EACH ROW EXECUTE FUNCTION tasks.history_names_node();

-- A node task ended: its workflow advances in the same transaction, unless
-- recovery ended it (a crashed worker, a timeout: recovery sets
-- silt.via_outbox), when the evidence waits in the outbox for the
-- maintenance owner.
CREATE FUNCTION tasks.history_advances_workflow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('silt.via_outbox', true) = 'on' THEN
        INSERT INTO horsies_workflow_phase2_pending (task_id, workflow_id, node_id, task_status, error_code, error_message)
        VALUES (NEW.id, NEW.workflow_id, NEW.workflow_node, NEW.status, NEW.error_code, NEW.error_message)
        ON CONFLICT (task_id) DO NOTHING;
    ELSE
        PERFORM tasks.node_ended(NEW.id, NEW.status, NEW.result, NEW.error_code, NEW.error_message);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER history_advances_workflow AFTER INSERT ON horsies_task_history
    FOR EACH ROW WHEN (NEW.workflow_id IS NOT NULL) EXECUTE FUNCTION tasks.history_advances_workflow();

-- A node shows its task's live state: RUNNING once started, ENQUEUED again
-- when a retry sends it back to PENDING.
CREATE FUNCTION tasks.task_moves_node() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE horsies_workflow_tasks
       SET status = CASE WHEN NEW.status = 'RUNNING' THEN 'RUNNING' ELSE 'ENQUEUED' END
     WHERE task_id = NEW.id AND status IN ('ENQUEUED', 'RUNNING');
    RETURN NULL;
END $$;
CREATE TRIGGER task_moves_node AFTER UPDATE OF status ON horsies_tasks
    FOR EACH ROW WHEN (NEW.workflow_id IS NOT NULL AND NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION tasks.task_moves_node();

-- Recovery records node ends in the outbox (see history_advances_workflow).
CREATE OR REPLACE FUNCTION tasks.recover_if_owner(p_claimed_stale_ms integer, p_running_stale_ms integer)
RETURNS TABLE (id uuid, action text, status text, queue text) LANGUAGE plpgsql AS $$
BEGIN
    IF pg_try_advisory_xact_lock(hashtextextended('silt.task_recovery', 0)) THEN
        PERFORM set_config('silt.via_outbox', 'on', true);
        RETURN QUERY SELECT * FROM tasks.recover(p_claimed_stale_ms, p_running_stale_ms);
        PERFORM set_config('silt.via_outbox', 'off', true);
    END IF;
END $$;

-- The maintenance owner applies the outbox, each row once (deleted as it
-- is applied; a node whose task is no longer current ignores it). Returns
-- the workflows it advanced.
CREATE FUNCTION tasks.apply_outbox(p_limit integer) RETURNS TABLE (workflow_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
    e horsies_workflow_phase2_pending;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended('silt.task_recovery', 0)) THEN RETURN; END IF;
    FOR e IN DELETE FROM horsies_workflow_phase2_pending o
              WHERE o.task_id IN (SELECT p.task_id FROM horsies_workflow_phase2_pending p
                                   ORDER BY p.created_at LIMIT p_limit FOR UPDATE SKIP LOCKED)
              RETURNING o.* LOOP
        PERFORM tasks.node_ended(e.task_id, e.task_status, NULL, e.error_code, e.error_message);
        workflow_id := e.workflow_id;
        RETURN NEXT;
    END LOOP;
END $$;

CREATE OR REPLACE VIEW tasks.all_tasks AS
    SELECT id, task_name, queue_name, args, priority, status, sent_at, enqueued_at, run_at, good_until,
           timeout_ms, max_retries, retry_count, attempt, idempotency_key, retention_class_key, worker_id,
           claimed_at, started_at, NULL::timestamptz AS finished_at, cancel_requested,
           NULL::json AS result, last_error_code AS error_code, last_error_message AS error_message,
           workflow_id, workflow_node
      FROM horsies_tasks
    UNION ALL
    SELECT id, task_name, queue_name, args, priority, status, sent_at, enqueued_at, NULL, good_until,
           NULL, max_retries, retry_count, attempt, idempotency_key, retention_class_key, worker_id,
           claimed_at, started_at, finished_at, false, result, error_code, error_message,
           workflow_id, workflow_node
      FROM horsies_task_history;

-- ==== Starting and controlling ==============================================

-- A workflow and its nodes' shape (parallel arrays, one element per node;
-- waits as array literals, argsFrom as JSON objects). The nodes' task
-- options follow in tasks.workflow_options, then tasks.workflow_settle
-- starts it: the three in one transaction.
CREATE FUNCTION tasks.workflow_create(p_id uuid, p_name text, p_on_error text, p_output text,
                                      p_nodes text[], p_tasks text[], p_queues text[], p_args text[],
                                      p_waits text[], p_joins text[], p_min integer[], p_allow boolean[],
                                      p_args_from text[])
RETURNS void LANGUAGE sql AS $$
    INSERT INTO horsies_workflows (id, name, status, on_error, output_node)
    VALUES (p_id, p_name, 'PENDING', p_on_error, p_output);
    INSERT INTO horsies_workflow_tasks (workflow_id, node_id, task_name, queue_name, args, priority, waits_for,
                                        join_kind, min_success, allow_failed_deps, args_from)
    SELECT p_id, u.node, u.task, u.queue, u.args::json, 100, coalesce(u.waits::text[], '{}'), u.join_kind,
           u.min, u.allow, u.args_from::jsonb
      FROM unnest(p_nodes, p_tasks, p_queues, p_args, p_waits, p_joins, p_min, p_allow, p_args_from)
           AS u(node, task, queue, args, waits, join_kind, min, allow, args_from);
    UPDATE horsies_workflow_tasks n SET next_nodes = x.nexts
      FROM (SELECT dep, array_agg(s.node_id ORDER BY s.node_id) AS nexts
              FROM horsies_workflow_tasks s, unnest(s.waits_for) AS dep
             WHERE s.workflow_id = p_id GROUP BY dep) x
     WHERE n.workflow_id = p_id AND n.node_id = x.dep;
$$;

CREATE FUNCTION tasks.workflow_options(p_id uuid, p_nodes text[], p_priorities integer[], p_timeouts integer[],
                                       p_max_retries integer[], p_retry_delays text[], p_bases integer[],
                                       p_caps integer[], p_jitters real[], p_retry_on text[],
                                       p_good_until timestamptz[])
RETURNS void LANGUAGE sql AS $$
    UPDATE horsies_workflow_tasks w
       SET priority = u.priority, timeout_ms = u.timeout, max_retries = u.retries,
           retry_delays_ms = u.delays::integer[], retry_base_ms = u.base, retry_cap_ms = u.cap,
           retry_jitter = u.jitter, retry_on = u.retry_on::text[], good_until = u.good_until
      FROM unnest(p_nodes, p_priorities, p_timeouts, p_max_retries, p_retry_delays, p_bases, p_caps, p_jitters,
                  p_retry_on, p_good_until)
           AS u(node, priority, timeout, retries, delays, base, cap, jitter, retry_on, good_until)
     WHERE w.workflow_id = p_id AND w.node_id = u.node;
$$;

-- pause, resume, cancel. Returns the status afterwards (NULL: no such
-- workflow); a finished workflow is left as it is.
CREATE FUNCTION tasks.workflow_control(p_id uuid, p_action text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    w horsies_workflows;
    t uuid;
BEGIN
    SELECT * INTO w FROM horsies_workflows WHERE id = p_id FOR UPDATE;
    IF w.id IS NULL THEN RETURN NULL; END IF;
    IF w.status NOT IN ('PENDING', 'RUNNING', 'PAUSED') THEN RETURN w.status; END IF;
    IF p_action = 'pause' THEN
        UPDATE horsies_workflows SET status = 'PAUSED', paused_at = now() WHERE id = p_id;
        RETURN 'PAUSED';
    ELSIF p_action = 'resume' THEN
        UPDATE horsies_workflows SET status = 'RUNNING', paused_at = NULL WHERE id = p_id;
        RETURN tasks.workflow_settle(p_id);
    END IF;
    -- cancel: what has not started is skipped, what runs is told
    UPDATE horsies_workflows SET status = 'CANCELLED', finished_at = now() WHERE id = p_id;
    PERFORM pg_notify('silt_tasks', 'done:' || p_id);
    UPDATE horsies_workflow_tasks SET status = 'SKIPPED', finished_at = now()
     WHERE workflow_id = p_id AND status IN ('PENDING', 'READY');
    FOR t IN SELECT task_id FROM horsies_workflow_tasks WHERE workflow_id = p_id AND status IN ('ENQUEUED', 'RUNNING')
              ORDER BY task_id LOOP
        PERFORM tasks.cancel(t);
    END LOOP;
    RETURN 'CANCELLED';
END $$;

-- ==== Schedules =============================================================

-- Where each schedule of silt.conf stands: the last slot it fired (or
-- passed over, catching up by skipping), the same for every server.
CREATE TABLE horsies_schedule_state (
    schedule_name text PRIMARY KEY,
    last_slot     timestamptz NOT NULL,
    last_fired_at timestamptz,
    last_task_id  uuid,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Fires one slot of a schedule (p_fire; false passes over it), once across
-- any number of servers: the state moves from an earlier slot to this one
-- and the task is inserted in the same transaction, so the server that
-- loses the race changes nothing. Returns the task id (NULL: passed over,
-- or the slot was already taken).
CREATE FUNCTION tasks.schedule_fire(p_name text, p_slot timestamptz, p_fire boolean, p_task text, p_queue text,
                                    p_args text, p_priority integer)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    id uuid := CASE WHEN p_fire THEN tasks.uuid7() END;
BEGIN
    INSERT INTO horsies_schedule_state AS s (schedule_name, last_slot, last_fired_at, last_task_id)
    VALUES (p_name, p_slot, CASE WHEN p_fire THEN now() END, id)
    ON CONFLICT (schedule_name) DO UPDATE
       SET last_slot = excluded.last_slot, updated_at = now(),
           last_fired_at = CASE WHEN p_fire THEN now() ELSE s.last_fired_at END,
           last_task_id = CASE WHEN p_fire THEN excluded.last_task_id ELSE s.last_task_id END
     WHERE s.last_slot < excluded.last_slot;
    IF NOT FOUND OR NOT p_fire THEN RETURN NULL; END IF;
    INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status)
    VALUES (id, p_task, p_queue, p_args::json, p_priority, 'PENDING');
    RETURN id;
END $$;

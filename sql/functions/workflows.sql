-- Workflows: nodes started, joined and finished as their tasks end.

-- A workflow and its nodes (parallel arrays, one element per node; waits
-- as array literals, argsFrom as JSON objects, retry delays and retryOn as
-- array literals), each node written once with the successors that wait
-- for it, then started (tasks.workflow_settle). Returns its status.
CREATE OR REPLACE FUNCTION tasks.workflow_create(p_id uuid, p_name text, p_on_error text, p_output text,
                                      p_nodes text[], p_tasks text[], p_queues text[], p_args text[],
                                      p_waits text[], p_joins text[], p_min integer[], p_allow boolean[],
                                      p_args_from text[], p_priorities integer[], p_timeouts integer[],
                                      p_max_retries integer[], p_retry_delays text[], p_bases integer[],
                                      p_caps integer[], p_jitters real[], p_retry_on text[],
                                      p_good_until timestamptz[], p_classes text[])
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO horsies_workflows (id, name, status, on_error, output_node)
    VALUES (p_id, p_name, 'PENDING', p_on_error, p_output);
    WITH node AS (
        SELECT u.*, coalesce(u.waits::text[], '{}') AS waits_for
          FROM unnest(p_nodes, p_tasks, p_queues, p_args, p_waits, p_joins, p_min, p_allow, p_args_from,
                      p_priorities, p_timeouts, p_max_retries, p_retry_delays, p_bases, p_caps, p_jitters,
                      p_retry_on, p_good_until, p_classes)
               AS u(node, task, queue, args, waits, join_kind, min, allow, args_from, priority, timeout, retries,
                    delays, base, cap, jitter, retry_on, good_until, class)),
    nexts AS (
        SELECT dep, array_agg(n.node ORDER BY n.node) AS next_nodes
          FROM node n, unnest(n.waits_for) AS dep GROUP BY dep)
    INSERT INTO horsies_workflow_tasks (workflow_id, node_id, task_name, queue_name, args, priority, timeout_ms,
                                        max_retries, retry_delays_ms, retry_base_ms, retry_cap_ms, retry_jitter,
                                        retry_on, good_until, retention_class_key, waits_for, join_kind,
                                        min_success, allow_failed_deps, next_nodes, args_from)
    SELECT p_id, n.node, n.task, n.queue, n.args::json, n.priority, n.timeout, n.retries, n.delays::integer[],
           n.base, n.cap, n.jitter, n.retry_on::text[], n.good_until, n.class, n.waits_for, n.join_kind, n.min,
           n.allow, coalesce(x.next_nodes, '{}'), n.args_from::jsonb
      FROM node n LEFT JOIN nexts x ON x.dep = n.node;
    RETURN tasks.workflow_settle(p_id);
END $$;

-- Starts (or resumes) a workflow: RUNNING, and a wave of its nodes without
-- predecessors (at start) or READY (at resume) sends them; it ends at once
-- when nothing is open.
CREATE OR REPLACE FUNCTION tasks.workflow_settle(p_workflow uuid) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    w     horsies_workflows;
    nodes text[];
BEGIN
    SELECT * INTO w FROM horsies_workflows WHERE id = p_workflow FOR UPDATE;
    IF w.status NOT IN ('PENDING', 'RUNNING') THEN RETURN w.status; END IF;
    IF w.status = 'PENDING' THEN
        UPDATE horsies_workflows SET status = 'RUNNING', started_at = now(),
               open_nodes = (SELECT count(*) FROM horsies_workflow_tasks WHERE workflow_id = p_workflow)
         WHERE id = p_workflow RETURNING * INTO w;
    END IF;
    IF w.open_nodes = 0 THEN RETURN tasks.workflow_finish(w); END IF;
    nodes := ARRAY(SELECT n.node_id FROM horsies_workflow_tasks n WHERE n.workflow_id = p_workflow
                      AND (n.status = 'READY' OR (n.status = 'PENDING' AND cardinality(n.waits_for) = 0)));
    PERFORM tasks.nodes_decide(p_workflow, nodes, ARRAY[p_workflow]);
    RETURN w.status;
END $$;

-- One wave of advancement. In: for each successor of the nodes that just
-- ended, how many of them completed (ok) and how many did not (bad). Each
-- successor still PENDING (or READY, waiting for a resume) counts them
-- (one update, whatever the number of ends) and decides by its join: still
-- PENDING, SKIPPED, or, ready, sent at once while its workflow runs
-- (ENQUEUED, its task in horsies_tasks with its args and, for each argsFrom
-- parameter, the named predecessor's result) and READY while it is paused.
-- Out: the same counts for the successors of the nodes this wave skipped,
-- the next wave (NULL: none). p_running: the workflows RUNNING. The caller
-- holds the workflows' locks, so the successors read are those updated.
-- Starting a workflow is a wave too: its roots with counts of zero.
CREATE OR REPLACE FUNCTION tasks.nodes_wave(INOUT c_wf uuid[], INOUT c_node text[], INOUT c_ok integer[],
                                 INOUT c_bad integer[], p_running uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    queues text[];
    q      text;
BEGIN
    WITH decided AS (
        SELECT n.workflow_id, n.node_id, n.deps_done + c.ok AS done, n.deps_failed + c.bad AS failed,
               tasks.join_says(n.join_kind, n.allow_failed_deps, n.min_success, cardinality(n.waits_for),
                               n.deps_done + c.ok, n.deps_failed + c.bad) AS says,
               c.wf = ANY (p_running) AS running
          FROM unnest(c_wf, c_node, c_ok, c_bad) AS c(wf, node, ok, bad)
          JOIN horsies_workflow_tasks n
            ON n.workflow_id = c.wf AND n.node_id = c.node AND n.status IN ('PENDING', 'READY')),
    moved AS (
        UPDATE horsies_workflow_tasks n
           SET deps_done = d.done, deps_failed = d.failed,
               status = CASE d.says WHEN 'skip' THEN 'SKIPPED' WHEN 'wait' THEN 'PENDING'
                                    ELSE CASE WHEN d.running THEN 'ENQUEUED' ELSE 'READY' END END,
               task_id = CASE WHEN d.says = 'ready' AND d.running THEN tasks.uuid7() END,
               finished_at = CASE WHEN d.says = 'skip' THEN now() END
          FROM decided d
         WHERE n.workflow_id = d.workflow_id AND n.node_id = d.node_id
        RETURNING n.*),
    sent AS (
        INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, good_until, timeout_ms,
                                   max_retries, retry_delays_ms, retry_base_ms, retry_cap_ms, retry_jitter,
                                   retry_on, retention_class_key, workflow_id, workflow_node)
        SELECT r.task_id, r.task_name, r.queue_name,
               CASE WHEN r.args_from IS NULL THEN r.args ELSE tasks.node_args(r.workflow_id, r.args, r.args_from) END,
               r.priority, 'PENDING', r.good_until, r.timeout_ms, r.max_retries, r.retry_delays_ms,
               r.retry_base_ms, r.retry_cap_ms, r.retry_jitter, r.retry_on, r.retention_class_key, r.workflow_id,
               r.node_id
          FROM moved r WHERE r.status = 'ENQUEUED' ORDER BY r.workflow_id, r.node_id
        RETURNING queue_name),
    closed AS (   -- a skipped node is no longer open
        UPDATE horsies_workflows w SET open_nodes = w.open_nodes - k.n
          FROM (SELECT m.workflow_id, count(*) AS n FROM moved m WHERE m.status = 'SKIPPED' GROUP BY 1) k
         WHERE w.id = k.workflow_id),
    next AS (
        SELECT m.workflow_id, s.node, 0 AS ok, count(*)::integer AS bad
          FROM moved m, unnest(m.next_nodes) AS s(node) WHERE m.status = 'SKIPPED' GROUP BY 1, 2),
    wave AS (
        SELECT array_agg(workflow_id) AS wf, array_agg(node) AS node, array_agg(ok) AS ok, array_agg(bad) AS bad
          FROM next)
    SELECT w.wf, w.node, w.ok, w.bad, (SELECT array_agg(DISTINCT x.queue_name) FROM sent x)
      INTO c_wf, c_node, c_ok, c_bad, queues FROM wave w;
    -- Claimers must hear of the tasks sent, and the server that ends this
    -- transaction cannot tell (it sees tasks end, not what they sent): a
    -- NOTIFY, once per queue, in these transactions only.
    FOREACH q IN ARRAY coalesce(queues, '{}') LOOP
        PERFORM pg_notify('silt_tasks', 'sent:' || q);
    END LOOP;
END $$;

-- Nodes p_nodes of workflow p_workflow decide by their joins from the
-- counts they hold (no new end to count), and what they skip after them,
-- in waves (tasks.nodes_wave) until none is left: the start's roots, a
-- resume's READY nodes, what a rerun reopened. p_running: as nodes_wave's.
CREATE OR REPLACE FUNCTION tasks.nodes_decide(p_workflow uuid, p_nodes text[], p_running uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    c_node text[] := coalesce(p_nodes, '{}');
    c_wf   uuid[] := array_fill(p_workflow, ARRAY[cardinality(c_node)]);
    c_ok   integer[] := array_fill(0, ARRAY[cardinality(c_node)]);
    c_bad  integer[] := c_ok;
BEGIN
    WHILE cardinality(c_wf) > 0 LOOP   -- NULL: no next wave
        SELECT * INTO c_wf, c_node, c_ok, c_bad FROM tasks.nodes_wave(c_wf, c_node, c_ok, c_bad, p_running);
    END LOOP;
END $$;

-- The task args of a node with argsFrom: its own args (an object), each
-- argsFrom parameter set to the named node's result as it stands (null
-- when it has none).
CREATE OR REPLACE FUNCTION tasks.node_args(p_workflow uuid, p_args json, p_args_from jsonb) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT (p_args::jsonb || coalesce(jsonb_object_agg(f.key, coalesce(p.result::jsonb, 'null')), '{}'))::json
      FROM jsonb_each_text(p_args_from) f
      JOIN horsies_workflow_tasks p ON p.workflow_id = p_workflow AND p.node_id = f.value
$$;

-- What a PENDING node's join says, from its counts of predecessors ended:
-- 'ready', 'skip' or 'wait'. One expression, so PostgreSQL inlines it.
CREATE OR REPLACE FUNCTION tasks.join_says(p_kind text, p_allow_failed boolean, p_min integer, p_deps integer,
                                p_done integer, p_failed integer) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_deps = 0 THEN 'ready'
        WHEN p_kind = 'all' AND p_allow_failed THEN CASE WHEN p_done + p_failed = p_deps THEN 'ready' ELSE 'wait' END
        WHEN p_kind = 'all' THEN CASE WHEN p_failed > 0 THEN 'skip' WHEN p_done = p_deps THEN 'ready' ELSE 'wait' END
        WHEN p_kind = 'any' THEN CASE WHEN p_done > 0 THEN 'ready' WHEN p_done + p_failed = p_deps THEN 'skip'
                                      ELSE 'wait' END
        ELSE CASE WHEN p_done >= p_min THEN 'ready' WHEN p_deps - p_failed < p_min THEN 'skip' ELSE 'wait' END
    END
$$;

-- Node tasks ended (parallel arrays: task id, task status, result, error):
-- each node whose current task it was takes the end (COMPLETED, FAILED, or
-- SKIPPED for a cancelled task) and is no longer open; a workflow with
-- onError PAUSE pauses at a failure (before its successors decide, so
-- nothing new starts); successors decide and those ready are sent, skips
-- propagate; a running workflow with nothing open finishes. A node moves
-- only while its task is the current one and unended: a completion is
-- never applied twice.
CREATE OR REPLACE FUNCTION tasks.nodes_ended(p_tasks uuid[], p_statuses text[], p_results json[], p_codes text[],
                                  p_messages text[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    wfs     uuid[];
    running uuid[];
    c_wf   uuid[];
    c_node text[];
    c_ok   integer[];
    c_bad  integer[];
    w      horsies_workflows;
BEGIN
    -- one batch of ends at a time per workflow, locked in id order
    SELECT array_agg(x.id) INTO wfs FROM (
        SELECT f.id FROM horsies_workflows f
         WHERE f.id IN (SELECT n.workflow_id FROM horsies_workflow_tasks n WHERE n.task_id = ANY (p_tasks))
         ORDER BY f.id FOR UPDATE) x;
    IF wfs IS NULL THEN RETURN; END IF;
    WITH done AS (
        UPDATE horsies_workflow_tasks n
           SET status = CASE u.st WHEN 'COMPLETED' THEN 'COMPLETED' WHEN 'CANCELLED' THEN 'SKIPPED' ELSE 'FAILED' END,
               result = u.result, error_code = u.code, error_message = u.message, finished_at = now()
          FROM unnest(p_tasks, p_statuses, p_results, p_codes, p_messages) AS u(task, st, result, code, message)
         WHERE n.task_id = u.task AND n.status = 'ENQUEUED'
        RETURNING n.workflow_id, n.status, n.next_nodes),
    closed AS (
        UPDATE horsies_workflows f
           SET open_nodes = f.open_nodes - k.n,
               status = CASE WHEN k.failed AND f.on_error = 'PAUSE' AND f.status = 'RUNNING' THEN 'PAUSED'
                             ELSE f.status END,
               paused_at = CASE WHEN k.failed AND f.on_error = 'PAUSE' AND f.status = 'RUNNING' THEN now()
                                ELSE f.paused_at END
          FROM (SELECT d.workflow_id, count(*) AS n, bool_or(d.status = 'FAILED') AS failed FROM done d GROUP BY 1) k
         WHERE f.id = k.workflow_id),
    next AS (
        SELECT d.workflow_id, s.node, (count(*) FILTER (WHERE d.status = 'COMPLETED'))::integer AS ok,
               (count(*) FILTER (WHERE d.status <> 'COMPLETED'))::integer AS bad
          FROM done d, unnest(d.next_nodes) AS s(node) GROUP BY 1, 2)
    SELECT array_agg(workflow_id), array_agg(node), array_agg(ok), array_agg(bad) INTO c_wf, c_node, c_ok, c_bad
      FROM next;
    running := ARRAY(SELECT f.id FROM horsies_workflows f WHERE f.id = ANY (wfs) AND f.status = 'RUNNING');
    WHILE c_wf IS NOT NULL LOOP
        SELECT * INTO c_wf, c_node, c_ok, c_bad FROM tasks.nodes_wave(c_wf, c_node, c_ok, c_bad, running);
    END LOOP;
    FOR w IN SELECT * FROM horsies_workflows WHERE id = ANY (wfs) AND status = 'RUNNING' AND open_nodes = 0
              ORDER BY id LOOP
        PERFORM tasks.workflow_finish(w);
    END LOOP;
END $$;

-- A node that ended FAILED, or SKIPPED by its cancelled task, runs again
-- (a rerun of its task, tasks.rerun): p_task, already sent, becomes its
-- task (its name and queue the node's) and the node is ENQUEUED and open
-- again. What its end skipped
-- downstream (nodes without a task, skipped through it) is PENDING again;
-- those nodes and the successors still waiting recount their predecessors'
-- ends as they stand now and decide again, in waves as at a node's end, so
-- a node another failure still rules out is skipped again. A FAILED
-- workflow runs again; a PAUSED one stays paused (what becomes ready waits
-- for resume), counted as paused from now: someone is attending to it.
-- The caller holds the workflow (tasks.workflows_lock).
CREATE OR REPLACE FUNCTION tasks.node_reopen(p_workflow uuid, p_node text, p_task uuid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    below   text[];   -- skipped through the node: open again
    recount text[];   -- below, and the successors still waiting
    running uuid[];
BEGIN
    WITH RECURSIVE down(node) AS (
        SELECT s.node FROM horsies_workflow_tasks n, unnest(n.next_nodes) AS s(node)
         WHERE n.workflow_id = p_workflow AND n.node_id = p_node
        UNION
        SELECT s.node FROM down d
          JOIN horsies_workflow_tasks n ON n.workflow_id = p_workflow AND n.node_id = d.node
                                       AND n.status = 'SKIPPED' AND n.task_id IS NULL,
               unnest(n.next_nodes) AS s(node))
    SELECT array_agg(n.node_id) FILTER (WHERE n.status = 'SKIPPED'),
           array_agg(n.node_id) FILTER (WHERE n.status IN ('PENDING', 'READY', 'SKIPPED'))
      INTO below, recount
      FROM down d JOIN horsies_workflow_tasks n ON n.workflow_id = p_workflow AND n.node_id = d.node
     WHERE n.task_id IS NULL;
    UPDATE horsies_workflow_tasks n
       SET status = 'ENQUEUED', task_id = p_task, task_name = t.task_name, queue_name = t.queue_name, result = NULL,
           error_code = NULL, error_message = NULL, finished_at = NULL
      FROM horsies_tasks t
     WHERE n.workflow_id = p_workflow AND n.node_id = p_node AND t.id = p_task;
    UPDATE horsies_workflow_tasks SET status = 'PENDING', finished_at = NULL
     WHERE workflow_id = p_workflow AND node_id = ANY (below);
    UPDATE horsies_workflow_tasks n SET deps_done = c.done, deps_failed = c.failed
      FROM (SELECT r.node_id, count(*) FILTER (WHERE p.status = 'COMPLETED')::integer AS done,
                   count(*) FILTER (WHERE p.status IN ('FAILED', 'SKIPPED'))::integer AS failed
              FROM horsies_workflow_tasks r
              JOIN horsies_workflow_tasks p ON p.workflow_id = r.workflow_id AND p.node_id = ANY (r.waits_for)
             WHERE r.workflow_id = p_workflow AND r.node_id = ANY (recount) GROUP BY r.node_id) c
     WHERE n.workflow_id = p_workflow AND n.node_id = c.node_id;
    UPDATE horsies_workflows
       SET open_nodes = open_nodes + 1 + coalesce(cardinality(below), 0),
           status = CASE status WHEN 'FAILED' THEN 'RUNNING' ELSE status END,
           paused_at = CASE status WHEN 'PAUSED' THEN now() END,
           finished_at = NULL, result = NULL, error_code = NULL, error_message = NULL
     WHERE id = p_workflow;
    running := ARRAY(SELECT w.id FROM horsies_workflows w WHERE w.id = p_workflow AND w.status = 'RUNNING');
    PERFORM tasks.nodes_decide(p_workflow, recount, running);
END $$;

-- A workflow whose every node ended completes when its output node (or,
-- with none named, every sink) completed, and fails otherwise, saying why:
-- the first node that failed (its error), or the first that did not run.
CREATE OR REPLACE FUNCTION tasks.workflow_finish(w horsies_workflows) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    outcome text;
    cause   horsies_workflow_tasks;
BEGIN
    outcome := CASE WHEN NOT EXISTS (
            SELECT 1 FROM horsies_workflow_tasks o WHERE o.workflow_id = w.id AND o.status <> 'COMPLETED'
               AND (o.node_id = w.output_node OR (w.output_node IS NULL AND cardinality(o.next_nodes) = 0)))
        THEN 'COMPLETED' ELSE 'FAILED' END;
    IF outcome = 'FAILED' THEN
        SELECT * INTO cause FROM horsies_workflow_tasks c WHERE c.workflow_id = w.id AND c.status IN ('FAILED', 'SKIPPED')
         ORDER BY c.status = 'FAILED' DESC, c.finished_at, c.node_id LIMIT 1;
    END IF;
    UPDATE horsies_workflows SET status = outcome, finished_at = now(),
           result = (SELECT o.result FROM horsies_workflow_tasks o WHERE o.workflow_id = w.id AND o.node_id = w.output_node),
           error_code = CASE WHEN cause.status = 'FAILED' THEN coalesce(cause.error_code, 'NODE_FAILED')
                             WHEN cause.status = 'SKIPPED' THEN 'NODE_SKIPPED' END,
           error_message = CASE WHEN cause.status = 'FAILED'
                                THEN 'node ' || cause.node_id || ' failed' || coalesce(': ' || cause.error_message, '')
                                WHEN cause.status = 'SKIPPED' THEN 'node ' || cause.node_id || ' did not run' END
     WHERE id = w.id;
    PERFORM pg_notify('silt_tasks', 'done:' || w.id);   -- its waiters (GET ?wait), once per workflow
    RETURN outcome;
END $$;

-- Locks the workflows' live tasks, then the workflows, each in id order:
-- the order a batch of task ends takes them (tasks.finish_many), so a
-- control or an expiry never deadlocks with one.
CREATE OR REPLACE FUNCTION tasks.workflows_lock(p_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM horsies_tasks t
      WHERE t.id IN (SELECT n.task_id FROM horsies_workflow_tasks n
                      WHERE n.workflow_id = ANY (p_ids) AND n.status = 'ENQUEUED')
      ORDER BY t.id FOR UPDATE;
    PERFORM 1 FROM horsies_workflows w WHERE w.id = ANY (p_ids) ORDER BY w.id FOR UPDATE;
END $$;

-- pause, resume, cancel. Returns the status afterwards (NULL: no such
-- workflow); a finished workflow is left as it is.
CREATE OR REPLACE FUNCTION tasks.workflow_control(p_id uuid, p_action text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    w horsies_workflows;
BEGIN
    PERFORM tasks.workflows_lock(ARRAY[p_id]);
    SELECT * INTO w FROM horsies_workflows WHERE id = p_id;
    IF w.id IS NULL THEN RETURN NULL; END IF;
    IF w.status NOT IN ('PENDING', 'RUNNING', 'PAUSED') THEN RETURN w.status; END IF;
    IF p_action = 'pause' THEN
        UPDATE horsies_workflows SET status = 'PAUSED', paused_at = now() WHERE id = p_id AND status <> 'PAUSED';
        RETURN 'PAUSED';
    ELSIF p_action = 'resume' THEN
        UPDATE horsies_workflows SET status = 'RUNNING', paused_at = NULL WHERE id = p_id;
        RETURN tasks.workflow_settle(p_id);
    END IF;
    PERFORM tasks.workflow_stop(p_id, 'CANCELLED', NULL, NULL);
    RETURN 'CANCELLED';
END $$;

-- Ends a workflow that will not go on (cancel, expiry): its status p_status
-- and, for an expiry, its error; nodes that have not started are skipped,
-- tasks enqueued and not started cancelled at once (their nodes SKIPPED),
-- running ones told on their heartbeat. The caller holds the workflow's
-- tasks and then the workflow locked, in that order (see finish_many).
CREATE OR REPLACE FUNCTION tasks.workflow_stop(p_id uuid, p_status text, p_code text, p_message text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t uuid;
BEGIN
    UPDATE horsies_workflows SET status = p_status, finished_at = now(), error_code = p_code, error_message = p_message
     WHERE id = p_id;
    PERFORM pg_notify('silt_tasks', 'done:' || p_id);
    UPDATE horsies_workflow_tasks SET status = 'SKIPPED', finished_at = now()
     WHERE workflow_id = p_id AND status IN ('PENDING', 'READY');
    FOR t IN SELECT task_id FROM horsies_workflow_tasks WHERE workflow_id = p_id AND status = 'ENQUEUED'
              ORDER BY task_id LOOP
        PERFORM tasks.cancel(t);
    END LOOP;
END $$;

-- The maintenance owner applies the outbox, each row once (deleted as it
-- is applied; a node whose task is no longer current ignores it). Returns
-- the workflows it advanced.
CREATE OR REPLACE FUNCTION tasks.apply_outbox(p_limit integer) RETURNS TABLE (workflow_id uuid)
LANGUAGE plpgsql AS $$
DECLARE
    ids   uuid[];
    sts   text[];
    codes text[];
    msgs  text[];
    wfs   uuid[];
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended('silt.task_recovery', 0)) THEN RETURN; END IF;
    WITH applied AS (
        DELETE FROM horsies_workflow_phase2_pending o
         WHERE o.task_id IN (SELECT p.task_id FROM horsies_workflow_phase2_pending p
                              ORDER BY p.created_at LIMIT p_limit FOR UPDATE SKIP LOCKED)
        RETURNING o.*)
    SELECT array_agg(a.task_id), array_agg(a.task_status), array_agg(a.error_code), array_agg(a.error_message),
           array_agg(DISTINCT a.workflow_id)
      INTO ids, sts, codes, msgs, wfs FROM applied a;
    IF ids IS NULL THEN RETURN; END IF;
    PERFORM tasks.nodes_ended(ids, sts, array_fill(NULL::json, ARRAY[cardinality(ids)]), codes, msgs);
    RETURN QUERY SELECT unnest(wfs);
END $$;

-- Node tasks that entered horsies_task_history (parallel arrays, the rows'
-- values) advance their workflows in the same transaction (nodes_ended),
-- or, under recovery (silt.via_outbox), wait in the outbox, which also
-- says where the node's history lies (its class, and the day: now(), when
-- the row was written). Both writers of the history call it after their
-- insert (tasks.finish_many, tasks.terminalize) with the rows that are
-- workflow nodes, and only when there are some: a statement trigger did it
-- before, and copied every history row into its transition table.
CREATE OR REPLACE FUNCTION tasks.nodes_entered_history(p_tasks uuid[], p_statuses text[], p_results json[],
                                                       p_codes text[], p_messages text[], p_workflows uuid[],
                                                       p_nodes text[], p_classes text[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('silt.via_outbox', true) = 'on' THEN
        INSERT INTO horsies_workflow_phase2_pending (task_id, workflow_id, node_id, task_status, error_code,
                                                     error_message, history_class_key, history_finished_at)
        SELECT u.task, u.workflow, u.node, u.status, u.code, u.message, u.class, now()
          FROM unnest(p_tasks, p_workflows, p_nodes, p_statuses, p_codes, p_messages, p_classes)
               AS u(task, workflow, node, status, code, message, class)
        ON CONFLICT (task_id) DO NOTHING;
    ELSE
        PERFORM tasks.nodes_ended(p_tasks, p_statuses, p_results, p_codes, p_messages);
    END IF;
END $$;

-- Nodes as clients see them: an ENQUEUED node whose task a worker started
-- is RUNNING (read from the task, so starting a task writes nothing more;
-- a retry's task is PENDING again, and its node ENQUEUED).
CREATE OR REPLACE VIEW tasks.workflow_nodes AS
    SELECT n.workflow_id, n.node_id, n.task_name, n.queue_name,
           CASE WHEN t.status = 'RUNNING' THEN 'RUNNING' ELSE n.status END AS status,
           n.task_id, n.waits_for, n.join_kind, n.result, n.error_code, n.error_message, n.finished_at
      FROM horsies_workflow_tasks n LEFT JOIN horsies_tasks t ON t.id = n.task_id AND n.status = 'ENQUEUED';

-- Ending tasks: finish, fail, retry, cancel; and reading them back.

-- Ends a batch of running attempts (the completions and failures gathered
-- from concurrent requests): one row per item, in batch order, with the
-- task's status afterwards, or NULL where the claim is not the task's
-- running one (fenced), and its queue. Completions are set-based: the
-- rows that end leave horsies_tasks for horsies_task_history, which keeps
-- the completing attempt (its claim with the rest: horsies_task_attempts
-- reads it from there), in one statement whatever their number, and
-- those that are workflow nodes advance their workflows
-- (tasks.nodes_entered_history); failures take tasks.fail one by one (a
-- retry decision each).
--
-- Every task row a batch ends or fails is locked in id order, as every
-- heartbeat locks them (see tasks.heartbeat), then their workflows in id
-- order: two batches never wait on each other in a circle. A batch of
-- completions only is locked by its delete: an index scan of the primary
-- key for id = ANY, which visits the ids in order (a bitmap scan would
-- visit them in the table's order: bitmap scans are off here), each row
-- locked as it is deleted, and the delete checks the claim on the row as
-- it is once locked. Its workflows are locked in id order by
-- tasks.nodes_ended, after every task row. A batch with a failure locks
-- every row, and their workflows, first (tasks.fail takes one at a time).
-- No statement joins the items with the live table: a join was planned
-- from statistics that a queue draining or filling makes stale at once,
-- and once chose to read every RUNNING task for every item. Sequential
-- scans are off for the statements this function plans (a function it
-- calls keeps the plan its first caller made in the session): a plan is
-- cached for the connection's life, and one made while the table was a few
-- pages read it whole at every batch, however large dead rows had grown it
-- since (an e2e run on a new database: 215-369 sequential scans of
-- horsies_tasks, 3 with this).
-- A completion names its item by its claim: a claim id is made for one
-- task's one claim (gen_random_uuid in tasks.claim_many), so the first
-- item that reports under a claim is its report (tasks.batch_item), and a
-- repeat of it is refused like any late one.
CREATE OR REPLACE FUNCTION tasks.finish_many(p_ids uuid[], p_claims uuid[], p_outcomes text[], p_results text[],
                                  p_codes text[], p_messages text[])
RETURNS TABLE (idx integer, id uuid, status text, queue text) LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off AS $$
#variable_conflict use_column
DECLARE
    e_claims  uuid[];      -- the completions' claims, sorted, each once ...
    e_ids     uuid[];      -- ... the tasks their items name ...
    e_ords    integer[];   -- ... and those items' positions (tasks.batch_item)
    completions_only boolean := coalesce('COMPLETED' = ALL (p_outcomes), false);
    wfs       uuid[];      -- the workflows of a batch with a failure
    ks        integer[];   -- the items whose completion ended a task, sorted ...
    kq        text[];      -- ... and those tasks' queues
    n_ids     uuid[];      -- the ended tasks that are workflow nodes, ...
    n_results json[];
    n_wfs     uuid[];
    n_nodes   text[];
    n_classes text[];
    f    record;
    st   text[] := '{}';
    qs   text[] := '{}';
BEGIN
    SELECT array_agg(e.claim ORDER BY e.claim), array_agg(e.id ORDER BY e.claim), array_agg(e.ord ORDER BY e.claim)
      INTO e_claims, e_ids, e_ords
      FROM (SELECT DISTINCT ON (u.claim) u.claim, u.id, u.ord::integer
              FROM unnest(p_ids, p_claims, p_outcomes) WITH ORDINALITY AS u(id, claim, outcome, ord)
             WHERE u.outcome = 'COMPLETED' AND u.claim IS NOT NULL ORDER BY u.claim, u.ord) e;
    IF NOT completions_only THEN
        SELECT array_agg(DISTINCT l.workflow_id) FILTER (WHERE l.workflow_id IS NOT NULL) INTO wfs
          FROM (SELECT t.id, t.workflow_id FROM horsies_tasks t WHERE t.id = ANY (p_ids) ORDER BY t.id FOR UPDATE) l;
        IF wfs IS NOT NULL THEN
            PERFORM 1 FROM horsies_workflows w WHERE w.id = ANY (wfs) ORDER BY w.id FOR UPDATE;
        END IF;
    END IF;
    IF e_claims IS NOT NULL THEN
        WITH gone AS (
            DELETE FROM horsies_tasks t
             WHERE t.id = ANY (e_ids)
               AND tasks.batch_item(e_claims, e_ids, e_ords, CASE WHEN t.status = 'RUNNING' THEN t.claim_id END,
                                    t.id) IS NOT NULL
            RETURNING t.*, e_ords[width_bucket(t.claim_id, e_claims)] AS k),   -- its item (tasks.batch_item)
        kept AS (
            INSERT INTO horsies_task_history (id, task_name, queue_name, args, priority, status, sent_at,
                                              enqueued_at, good_until, max_retries, retry_count, attempt,
                                              idempotency_key, retention_class_key, worker_id, claimed_at,
                                              started_at, result, timeout_ms, retry_delays_ms, retry_base_ms,
                                              retry_cap_ms, retry_jitter, retry_on, rerun_of, workflow_id,
                                              workflow_node, progress, progress_info, progress_at, rate_key,
                                              claim_id)
            SELECT g.id, g.task_name, g.queue_name, g.args, g.priority, 'COMPLETED', g.sent_at, g.enqueued_at,
                   g.good_until, g.max_retries, g.retry_count, g.attempt, g.idempotency_key,
                   g.retention_class_key, g.worker_id, g.claimed_at, g.started_at, p_results[g.k]::json,
                   g.timeout_ms, g.retry_delays_ms, g.retry_base_ms, g.retry_cap_ms, g.retry_jitter, g.retry_on,
                   g.rerun_of, g.workflow_id, g.workflow_node, g.progress, g.progress_info, g.progress_at,
                   g.rate_key, g.claim_id
              FROM gone g)
        SELECT array_agg(g.k ORDER BY g.k), array_agg(g.queue_name ORDER BY g.k),
               array_agg(g.id) FILTER (WHERE g.workflow_id IS NOT NULL),
               array_agg(p_results[g.k]::json) FILTER (WHERE g.workflow_id IS NOT NULL),
               array_agg(g.workflow_id) FILTER (WHERE g.workflow_id IS NOT NULL),
               array_agg(g.workflow_node) FILTER (WHERE g.workflow_id IS NOT NULL),
               array_agg(g.retention_class_key) FILTER (WHERE g.workflow_id IS NOT NULL)
          INTO ks, kq, n_ids, n_results, n_wfs, n_nodes, n_classes FROM gone g;
        IF n_ids IS NOT NULL THEN
            PERFORM tasks.nodes_entered_history(n_ids, array_fill('COMPLETED'::text, ARRAY[cardinality(n_ids)]),
                                                n_results, array_fill(NULL::text, ARRAY[cardinality(n_ids)]),
                                                array_fill(NULL::text, ARRAY[cardinality(n_ids)]), n_wfs, n_nodes,
                                                n_classes);
        END IF;
    END IF;
    IF NOT completions_only THEN
        FOR f IN SELECT u.* FROM unnest(p_ids, p_claims, p_outcomes, p_codes, p_messages)
                        WITH ORDINALITY AS u(id, claim, outcome, code, message, ord)
                  WHERE u.outcome IS DISTINCT FROM 'COMPLETED' LOOP
            qs[f.ord] := (SELECT t.queue_name FROM horsies_tasks t WHERE t.id = f.id);
            st[f.ord] := tasks.fail(f.id, f.claim, f.code, f.message);
        END LOOP;
    END IF;
    -- ks is sorted: an item finds itself in it by binary search (as in
    -- tasks.batch_item), not by reading it from the start.
    RETURN QUERY
        SELECT (u.ord - 1)::integer, u.id,
               CASE WHEN u.outcome IS DISTINCT FROM 'COMPLETED' THEN st[u.ord]
                    WHEN ks[width_bucket(u.ord::integer, ks)] = u.ord THEN 'COMPLETED' END,
               CASE WHEN u.outcome IS DISTINCT FROM 'COMPLETED' THEN qs[u.ord]
                    WHEN ks[width_bucket(u.ord::integer, ks)] = u.ord THEN kq[width_bucket(u.ord::integer, ks)] END
          FROM unnest(p_ids, p_outcomes) WITH ORDINALITY AS u(id, outcome, ord) ORDER BY u.ord;
END $$;

-- The item of a batch that reports claim p_claim of task p_id: its
-- position in the batch (1-based), or NULL. p_claims holds the claims the
-- batch reports, sorted and each once (the first item naming it), p_ids the
-- tasks those items name and p_ords their positions, in that order. Found
-- by binary search (width_bucket: the last claim not above p_claim): a few
-- comparisons a row, where array_position read the batch from its start
-- (1.25 µs a row in a batch of 100). An SQL expression, inlined: each
-- width_bucket in it is a search of its own, so a row found by it learns
-- its item's place with one more search, not with a second call.
CREATE OR REPLACE FUNCTION tasks.batch_item(p_claims uuid[], p_ids uuid[], p_ords integer[], p_claim uuid, p_id uuid)
RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_claims[width_bucket(p_claim, p_claims)] = p_claim AND p_ids[width_bucket(p_claim, p_claims)] = p_id
                THEN p_ords[width_bucket(p_claim, p_claims)] END
$$;

-- A worker reports the failure of a running attempt under its claim (a
-- failure of a task whose cancel was asked ends CANCELLED). Returns the
-- task's status afterwards, or NULL when the claim is not this task's
-- running one (fenced: recovered, cancelled or finished already).
CREATE OR REPLACE FUNCTION tasks.fail(p_id uuid, p_claim uuid, p_code text, p_message text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    t horsies_tasks;
BEGIN
    SELECT * INTO t FROM horsies_tasks WHERE id = p_id AND claim_id = p_claim AND status = 'RUNNING' FOR UPDATE;
    IF t.id IS NULL THEN RETURN NULL; END IF;
    RETURN tasks.fail_running(t, p_code, p_message);
END $$;

-- Writes the record of t's running attempt, ended now with p_outcome
-- (failed or cancelled: a completion's attempt is kept in its history row).
-- While it runs, an attempt is the task row's (tasks.attempts shows it
-- from there): its record is written once, when it ends.
CREATE OR REPLACE FUNCTION tasks.end_attempt(t horsies_tasks, p_outcome text, p_code text, p_message text)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO tasks.attempt_records (task_id, attempt, worker_id, claim_id, started_at, finished_at, outcome,
                                       error_code, error_message)
    VALUES (t.id, t.attempt, t.worker_id, t.claim_id, t.started_at, now(), p_outcome, p_code, p_message)
$$;

-- The end of a running attempt, decided by the policy: t failed with p_code.
-- A task whose cancel was asked ends CANCELLED, whoever reports the failure
-- (its worker, or recovery: a crash or a timeout). Otherwise retried (back
-- to PENDING after the policy's delay) when retries remain and the policy
-- retries that code, else FAILED. Returns the new status.
CREATE OR REPLACE FUNCTION tasks.fail_running(t horsies_tasks, p_code text, p_message text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF t.cancel_requested THEN
        PERFORM tasks.end_attempt(t, 'CANCELLED', p_code, p_message);
        PERFORM tasks.terminalize(ARRAY[t.id], 'CANCELLED', NULL, 'CANCELLED', 'cancelled while running');
        RETURN 'CANCELLED';
    END IF;
    PERFORM tasks.end_attempt(t, 'FAILED', p_code, p_message);
    IF t.retry_count < t.max_retries AND (t.retry_on IS NULL OR p_code = ANY (t.retry_on)) THEN
        UPDATE horsies_tasks
           SET status = 'PENDING', retry_count = retry_count + 1, enqueued_at = now(),
               run_at = now() + make_interval(secs => tasks.retry_delay_ms(t, t.retry_count + 1) / 1000.0),
               worker_id = NULL, claim_id = NULL, claimed_at = NULL, started_at = NULL, last_heartbeat_at = NULL,
               last_error_code = p_code, last_error_message = p_message,
               progress = NULL, progress_info = NULL, progress_at = NULL   -- a report is its attempt's
         WHERE id = t.id;
        RETURN 'PENDING';
    END IF;
    PERFORM tasks.terminalize(ARRAY[t.id], 'FAILED', NULL, p_code, p_message);
    RETURN 'FAILED';
END $$;

-- The retry delay before retry n (1-based) of t, in milliseconds, jitter
-- applied: delay * (1 - jitter .. 1 + jitter).
CREATE OR REPLACE FUNCTION tasks.retry_delay_ms(t horsies_tasks, n integer) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT round(d * (1 + t.retry_jitter * (2 * random() - 1)))::bigint
      FROM (SELECT CASE
                WHEN cardinality(t.retry_delays_ms) > 0
                    THEN t.retry_delays_ms[least(n, cardinality(t.retry_delays_ms))]::float8
                WHEN t.retry_base_ms IS NOT NULL
                    THEN least(coalesce(t.retry_cap_ms, 2147483647)::float8,
                               t.retry_base_ms * power(2::float8, least(n - 1, 40)))
                ELSE 0 END AS d) x
$$;

-- Moves live tasks to history in one statement: the rows of p_ids (already
-- decided terminal) leave horsies_tasks and enter horsies_task_history with
-- the given status, result and error, keeping their retry policy and
-- timeout (a rerun copies them), the task they rerun and their last
-- progress report. Workflow nodes among them advance their workflows
-- (tasks.nodes_entered_history).
CREATE OR REPLACE FUNCTION tasks.terminalize(p_ids uuid[], p_status text, p_result json, p_code text, p_message text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n       integer;
    n_ids   uuid[];   -- the tasks that are workflow nodes, ...
    n_wfs   uuid[];
    n_nodes text[];
    n_cls   text[];
BEGIN
    WITH gone AS (DELETE FROM horsies_tasks WHERE id = ANY (p_ids) RETURNING *),
    kept AS (
        INSERT INTO horsies_task_history (id, task_name, queue_name, args, priority, status, sent_at, enqueued_at,
                                          good_until, max_retries, retry_count, attempt, idempotency_key,
                                          retention_class_key, worker_id, claimed_at, started_at, result, error_code,
                                          error_message, timeout_ms, retry_delays_ms, retry_base_ms, retry_cap_ms,
                                          retry_jitter, retry_on, rerun_of, workflow_id, workflow_node, progress,
                                          progress_info, progress_at, rate_key)
        SELECT g.id, g.task_name, g.queue_name, g.args, g.priority, p_status, g.sent_at, g.enqueued_at,
               g.good_until, g.max_retries, g.retry_count, g.attempt, g.idempotency_key,
               g.retention_class_key, g.worker_id, g.claimed_at, g.started_at, p_result, p_code, p_message,
               g.timeout_ms, g.retry_delays_ms, g.retry_base_ms, g.retry_cap_ms, g.retry_jitter, g.retry_on,
               g.rerun_of, g.workflow_id, g.workflow_node, g.progress, g.progress_info, g.progress_at, g.rate_key
          FROM gone g)
    SELECT count(*), array_agg(g.id) FILTER (WHERE g.workflow_id IS NOT NULL),
           array_agg(g.workflow_id) FILTER (WHERE g.workflow_id IS NOT NULL),
           array_agg(g.workflow_node) FILTER (WHERE g.workflow_id IS NOT NULL),
           array_agg(g.retention_class_key) FILTER (WHERE g.workflow_id IS NOT NULL)
      INTO n, n_ids, n_wfs, n_nodes, n_cls FROM gone g;
    IF n_ids IS NOT NULL THEN
        PERFORM tasks.nodes_entered_history(n_ids, array_fill(p_status, ARRAY[cardinality(n_ids)]),
                                            array_fill(p_result, ARRAY[cardinality(n_ids)]),
                                            array_fill(p_code, ARRAY[cardinality(n_ids)]),
                                            array_fill(p_message, ARRAY[cardinality(n_ids)]), n_wfs, n_nodes, n_cls);
    END IF;
    RETURN n;
END $$;

-- As 019's, reading only the leaves the task can have ended in.
CREATE OR REPLACE FUNCTION tasks.cancel(p_id uuid) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text;
BEGIN
    SELECT status INTO st FROM horsies_tasks WHERE id = p_id FOR UPDATE;
    IF st IS NULL THEN
        RETURN (SELECT h.status FROM horsies_task_history h
                 WHERE h.id = p_id AND h.finished_at >= tasks.history_floor(p_id));
    ELSIF st = 'RUNNING' THEN
        UPDATE horsies_tasks SET cancel_requested = true WHERE id = p_id;
        RETURN 'RUNNING';
    END IF;
    PERFORM tasks.terminalize(ARRAY[p_id], 'CANCELLED', NULL, 'CANCELLED', 'cancelled before it ran');
    RETURN 'CANCELLED';
END $$;

-- The earliest a task's record can have ended: its id was made when it was
-- sent, less an hour for clocks that disagree. Reads by id add
-- finished_at >= this, so PostgreSQL reads only the leaves from that day on.
CREATE OR REPLACE FUNCTION tasks.history_floor(p_id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT tasks.uuid7_time(p_id) - interval '1 hour'
$$;

CREATE OR REPLACE VIEW tasks.all_tasks AS
    SELECT id, task_name, queue_name, args, priority, status, sent_at, enqueued_at, run_at, good_until,
           timeout_ms, max_retries, retry_count, attempt, idempotency_key, retention_class_key, worker_id,
           claimed_at, started_at, NULL::timestamptz AS finished_at, cancel_requested,
           NULL::json AS result, last_error_code AS error_code, last_error_message AS error_message,
           workflow_id, workflow_node, rerun_of, progress, progress_info, progress_at, rate_key
      FROM horsies_tasks
    UNION ALL
    SELECT id, task_name, queue_name, args, priority, status, sent_at, enqueued_at, NULL, good_until,
           timeout_ms, max_retries, retry_count, attempt, idempotency_key, retention_class_key, worker_id,
           claimed_at, started_at, finished_at, false, result, error_code, error_message,
           workflow_id, workflow_node, rerun_of, progress, progress_info, progress_at, rate_key
      FROM horsies_task_history;

-- Every attempt that ended, one row each: the attempt records (attempts
-- that did not complete their task, tasks.end_attempt, and every attempt
-- that ended before migration 053), and the attempt that completed each
-- task, read from its history row (only a completion sets claim_id there).
CREATE OR REPLACE VIEW horsies_task_attempts AS
    SELECT a.task_id, a.attempt, a.worker_id, a.claim_id, a.started_at, a.finished_at, a.outcome, a.error_code,
           a.error_message
      FROM tasks.attempt_records a
    UNION ALL
    SELECT h.id, h.attempt, h.worker_id, h.claim_id, h.started_at, h.finished_at, 'COMPLETED', NULL, NULL
      FROM horsies_task_history h
     WHERE h.claim_id IS NOT NULL;

-- A task's attempts, oldest first: those that ended, as
-- horsies_task_attempts has them (an attempt ends after its task was
-- made, so no earlier than history_floor: the history leaves it can be in
-- are the only ones read), and the one running now, from the task's row.
CREATE OR REPLACE FUNCTION tasks.attempts(p_id uuid)
RETURNS TABLE (attempt integer, worker_id text, claim_id uuid, started_at timestamptz, finished_at timestamptz,
               outcome text, error_code text, error_message text)
LANGUAGE sql STABLE AS $$
    SELECT a.attempt, a.worker_id, a.claim_id, a.started_at, a.finished_at, a.outcome, a.error_code, a.error_message
      FROM horsies_task_attempts a
     WHERE a.task_id = p_id AND a.finished_at >= tasks.history_floor(p_id)
    UNION ALL
    SELECT t.attempt, t.worker_id, t.claim_id, t.started_at, NULL, NULL, NULL, NULL
      FROM horsies_tasks t
     WHERE t.id = p_id AND t.status = 'RUNNING'
     ORDER BY 1
$$;

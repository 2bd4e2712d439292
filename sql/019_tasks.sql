-- 019: the task engine's records and transitions.
--
-- Tasks are rows, not log frames: they change state. The tables carry the
-- names the Retention Config document (the second seed) and its system use,
-- on the default search path, so that its SQL works as written in psql. The
-- functions live in schema `tasks`. Every transition is one statement or one
-- function call, so it commits whole: a task leaves horsies_tasks for
-- horsies_task_history in the transaction that makes it terminal.
--
-- Nothing here sends NOTIFY: a notifying transaction holds a cluster-wide
-- lock from its commit record to the end of its commit, so every send and
-- completion would commit one after another, each waiting for the disk. The
-- server announces what changed once the commit is done (src/tasks/hub.c).
--
--   send ─► PENDING ─claim─► CLAIMED ─start─► RUNNING ─complete─► COMPLETED
--             ▲  │              │                 │ fail ──────────► FAILED
--             │  │ good_until   │ claimer stale   │ runner stale: WORKER_CRASHED
--             │  ▼              │ or released     │ past timeout: TASK_TIMEOUT
--             │ EXPIRED         ▼                 │ cancel acknowledged ► CANCELLED
--             └──────────── PENDING ◄── retry ────┘ (the policy retries the code)
--   cancel: PENDING or CLAIMED ► CANCELLED at once; RUNNING: told on its heartbeat.

CREATE SCHEMA tasks;

-- ==== Live tasks ===========================================================

-- PENDING, CLAIMED and RUNNING only. claim_id fences a claim: every call a
-- worker makes about a task names it, and a claim that recovery took back
-- (or cancel ended) no longer matches, so a late call changes nothing.
CREATE TABLE horsies_tasks (
    id                  uuid PRIMARY KEY,            -- UUIDv7, made by the server
    task_name           text NOT NULL,
    queue_name          text NOT NULL,
    args                json NOT NULL,               -- stored and returned verbatim
    priority            integer NOT NULL,            -- 1 most urgent .. 100
    status              text NOT NULL CHECK (status IN ('PENDING', 'CLAIMED', 'RUNNING')),
    sent_at             timestamptz NOT NULL DEFAULT now(),
    enqueued_at         timestamptz NOT NULL DEFAULT now(),   -- last made PENDING: send or retry
    run_at              timestamptz NOT NULL DEFAULT now(),   -- not claimed before
    good_until          timestamptz,                 -- PENDING past it: EXPIRED
    timeout_ms          integer,                     -- RUNNING longer: TASK_TIMEOUT
    max_retries         integer NOT NULL DEFAULT 0,
    retry_delays_ms     integer[],                   -- fixed delays, the last repeated ...
    retry_base_ms       integer,                     -- ... or exponential: base * 2^(n-1),
    retry_cap_ms        integer,                     --     at most cap
    retry_jitter        real NOT NULL DEFAULT 0,     -- delay * (1 ± jitter), 0..1
    retry_on            text[],                      -- error codes that retry; NULL: every code
    retry_count         integer NOT NULL DEFAULT 0,  -- retries used
    idempotency_key     text,
    retention_class_key text NOT NULL DEFAULT 'standard_30d',
    attempt             integer NOT NULL DEFAULT 0,  -- attempts started
    worker_id           text,
    claim_id            uuid,
    claimed_at          timestamptz,
    started_at          timestamptz,
    last_heartbeat_at   timestamptz,                 -- claimer's while CLAIMED, runner's while RUNNING
    cancel_requested    boolean NOT NULL DEFAULT false,
    last_error_code     text,
    last_error_message  text
);
-- Every task is inserted, updated once or twice and deleted within seconds:
-- the table turns over its whole content many times a minute. Vacuum it
-- after a fixed number of dead rows rather than a fraction of a table that
-- is small by design, and without the cost-based pauses, so claims do not
-- wade through dead versions.
ALTER TABLE horsies_tasks SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
                               autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0,
                               autovacuum_analyze_threshold = 50000);
-- The claim order: priority, then enqueue time, among the queue's PENDING.
CREATE INDEX horsies_tasks_ready ON horsies_tasks (queue_name, priority, enqueued_at) WHERE status = 'PENDING';
-- What recovery and the concurrency cap look at. Nothing else indexes the
-- live table: every index is written on every send, claim and end.
CREATE INDEX horsies_tasks_held ON horsies_tasks (queue_name, status) WHERE status <> 'PENDING';

-- ==== Terminal records =====================================================

-- COMPLETED, FAILED, CANCELLED, EXPIRED. A plain table for now; the
-- retention of task records partitions it by retention class.
CREATE TABLE horsies_task_history (
    id                  uuid PRIMARY KEY,
    task_name           text NOT NULL,
    queue_name          text NOT NULL,
    args                json NOT NULL,
    priority            integer NOT NULL,
    status              text NOT NULL CHECK (status IN ('COMPLETED', 'FAILED', 'CANCELLED', 'EXPIRED')),
    sent_at             timestamptz NOT NULL,
    enqueued_at         timestamptz NOT NULL,
    good_until          timestamptz,
    max_retries         integer NOT NULL,
    retry_count         integer NOT NULL,
    attempt             integer NOT NULL,
    idempotency_key     text,
    retention_class_key text NOT NULL,
    worker_id           text,
    claimed_at          timestamptz,
    started_at          timestamptz,
    finished_at         timestamptz NOT NULL DEFAULT now(),
    result              json,                        -- COMPLETED: what the worker returned
    error_code          text,
    error_message       text
);
CREATE INDEX horsies_task_history_status ON horsies_task_history (status, queue_name, id);

-- A second send with the same key returns the first task, live or finished.
CREATE TABLE horsies_task_idempotency (
    idempotency_key text PRIMARY KEY,
    task_id         uuid NOT NULL
);

-- One row per attempt, from its start; outcome NULL while it runs.
CREATE TABLE horsies_task_attempts (
    task_id       uuid NOT NULL,
    attempt       integer NOT NULL,
    worker_id     text NOT NULL,
    claim_id      uuid NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    outcome       text CHECK (outcome IN ('COMPLETED', 'FAILED', 'CANCELLED')),
    error_code    text,
    error_message text,
    PRIMARY KEY (task_id, attempt)
);
ALTER TABLE horsies_task_attempts SET (fillfactor = 80, autovacuum_vacuum_cost_delay = 0);   -- room for the HOT end of an attempt

-- Claimer heartbeats (a worker holding a task it has not started) and runner
-- heartbeats (a task running), one row each.
CREATE TABLE horsies_heartbeats (
    task_id   uuid NOT NULL,
    worker_id text NOT NULL,
    role      text NOT NULL CHECK (role IN ('claimer', 'runner')),
    sent_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX horsies_heartbeats_task ON horsies_heartbeats (task_id, sent_at);

-- Workers as they registered, and their periodic snapshots.
CREATE TABLE horsies_workers (
    worker_id     text PRIMARY KEY,
    hostname      text NOT NULL,
    pid           integer NOT NULL,
    queues        text[] NOT NULL,
    concurrency   integer NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE horsies_worker_states (
    worker_id   text NOT NULL,
    snapshot_at timestamptz NOT NULL DEFAULT now(),
    hostname    text NOT NULL,
    pid         integer NOT NULL,
    queues      text[] NOT NULL,
    concurrency integer NOT NULL,
    claimed     integer NOT NULL,   -- tasks it held claimed
    running     integer NOT NULL    -- tasks it ran
);
CREATE INDEX horsies_worker_states_worker ON horsies_worker_states (worker_id, snapshot_at);

-- ==== Sending ==============================================================

-- The retry delay before retry n (1-based) of t, in milliseconds, jitter
-- applied: delay * (1 - jitter .. 1 + jitter).
CREATE FUNCTION tasks.retry_delay_ms(t horsies_tasks, n integer) RETURNS bigint
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

-- Sends a batch: one row per item of the parallel arrays (idx from 0).
-- created is false when the item's idempotency key named an earlier task,
-- whose id is returned instead.
CREATE FUNCTION tasks.send(p_ids uuid[], p_names text[], p_queues text[], p_args text[],
                           p_priorities integer[], p_run_at timestamptz[], p_delays_ms bigint[],
                           p_good_until timestamptz[], p_timeouts integer[], p_max_retries integer[],
                           p_retry_delays text[], p_bases integer[], p_caps integer[], p_jitters real[],
                           p_retry_on text[], p_keys text[])
RETURNS TABLE (idx integer, id uuid, created boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    -- The first send of each key wins (in this batch: the first item). A
    -- concurrent send of the same key is waited for, then seen by the
    -- statements below (each takes a new snapshot).
    INSERT INTO horsies_task_idempotency (idempotency_key, task_id)
    SELECT DISTINCT ON (u.key) u.key, u.id FROM unnest(p_keys, p_ids) WITH ORDINALITY AS u(key, id, ord)
     WHERE u.key IS NOT NULL ORDER BY u.key, u.ord
    ON CONFLICT DO NOTHING;
    INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, run_at, good_until,
                               timeout_ms, max_retries, retry_delays_ms, retry_base_ms, retry_cap_ms,
                               retry_jitter, retry_on, idempotency_key)
    SELECT u.id, u.name, u.queue, u.args::json, u.priority, 'PENDING',
           coalesce(u.run_at, now() + make_interval(secs => coalesce(u.delay, 0) / 1000.0)), u.good_until,
           u.timeout, u.retries, u.delays::integer[], u.base, u.cap, u.jitter, u.retry_on::text[], u.key
      FROM unnest(p_ids, p_names, p_queues, p_args, p_priorities, p_run_at, p_delays_ms, p_good_until,
                  p_timeouts, p_max_retries, p_retry_delays, p_bases, p_caps, p_jitters, p_retry_on, p_keys)
           AS u(id, name, queue, args, priority, run_at, delay, good_until, timeout, retries,
                delays, base, cap, jitter, retry_on, key)
      LEFT JOIN horsies_task_idempotency k ON k.idempotency_key = u.key
     WHERE u.key IS NULL OR k.task_id = u.id;
    RETURN QUERY
        SELECT (u.ord - 1)::integer, coalesce(k.task_id, u.id), u.key IS NULL OR k.task_id = u.id
          FROM unnest(p_ids, p_keys) WITH ORDINALITY AS u(id, key, ord)
          LEFT JOIN horsies_task_idempotency k ON k.idempotency_key = u.key
         ORDER BY u.ord;
END $$;

-- ==== Claiming =============================================================

-- Claims up to p_max tasks for worker p_worker from p_queues, taken in the
-- order given (the server orders them by their declared priority, most
-- urgent first), and within a queue by task priority, then enqueue time. A
-- queue with a cap (p_caps[i] > 0) never has more than that many CLAIMED or
-- RUNNING across the cluster: claimers of a capped queue take turns on a
-- transaction-scoped advisory lock (every capped queue's lock first, in name
-- order, so two claimers never wait on each other in a circle), count, and
-- take what is left. SKIP LOCKED: concurrent claimers never wait on each
-- other's rows and never take the same task. p_start starts what it takes.
CREATE FUNCTION tasks.claim(p_worker text, p_queues text[], p_caps integer[], p_max integer,
                            p_start boolean DEFAULT false)
RETURNS SETOF horsies_tasks LANGUAGE plpgsql AS $$
DECLARE
    q      record;
    room   integer;
    left_n integer := p_max;
    got    integer;
BEGIN
    FOR q IN SELECT u.queue FROM unnest(p_queues, p_caps) AS u(queue, cap) WHERE u.cap > 0 ORDER BY u.queue LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended('silt.task_queue:' || q.queue, 0));
    END LOOP;
    FOR q IN SELECT u.queue, u.cap FROM unnest(p_queues, p_caps) WITH ORDINALITY AS u(queue, cap, ord) ORDER BY u.ord LOOP
        EXIT WHEN left_n <= 0;
        room := left_n;
        IF q.cap > 0 THEN
            SELECT q.cap - count(*) INTO room FROM horsies_tasks t
             WHERE t.queue_name = q.queue AND t.status <> 'PENDING';
            room := least(room, left_n);
        END IF;
        CONTINUE WHEN room <= 0;
        RETURN QUERY
            WITH taken AS (
                UPDATE horsies_tasks t
                   SET status = CASE WHEN p_start THEN 'RUNNING' ELSE 'CLAIMED' END, worker_id = p_worker,
                       claim_id = gen_random_uuid(), claimed_at = now(), last_heartbeat_at = now(),
                       attempt = t.attempt + CASE WHEN p_start THEN 1 ELSE 0 END,
                       started_at = CASE WHEN p_start THEN now() END
                 WHERE t.id IN (SELECT c.id FROM horsies_tasks c
                                 WHERE c.queue_name = q.queue AND c.status = 'PENDING' AND c.run_at <= now()
                                   AND (c.good_until IS NULL OR c.good_until >= now())   -- expired: recovery's
                                 ORDER BY c.priority, c.enqueued_at
                                 LIMIT room FOR UPDATE SKIP LOCKED)
                RETURNING t.*),
            attempts AS (   -- started with the claim: the attempt and first runner heartbeat commit with it
                INSERT INTO horsies_task_attempts (task_id, attempt, worker_id, claim_id)
                SELECT k.id, k.attempt, p_worker, k.claim_id FROM taken k WHERE p_start),
            beats AS (
                INSERT INTO horsies_heartbeats (task_id, worker_id, role)
                SELECT k.id, p_worker, 'runner' FROM taken k WHERE p_start)
            SELECT * FROM taken;
        GET DIAGNOSTICS got = ROW_COUNT;
        left_n := left_n - got;
    END LOOP;
END $$;

-- The claims of concurrent requests, gathered: one tasks.claim per request,
-- in request order, in one transaction. One statement at a time takes from
-- a queue's head, instead of several claimers each stepping over the rows
-- the others hold locked. p_queues and p_caps hold array literals, one per
-- request.
CREATE FUNCTION tasks.claim_many(p_workers text[], p_queues text[], p_caps text[], p_max integer[],
                                 p_start boolean[])
RETURNS TABLE (idx integer, id uuid, task_name text, queue_name text, args json, priority integer,
               claim_id uuid, attempt integer, retry_count integer, timeout_ms integer, status text)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    -- Every capped queue of every request, locked once in name order before
    -- any claim: two batches never hold one queue's lock while waiting for
    -- another's.
    FOR r IN SELECT DISTINCT x.queue FROM unnest(p_queues, p_caps) AS u(queues, caps),
                    unnest(u.queues::text[], u.caps::integer[]) AS x(queue, cap)
              WHERE x.cap > 0 ORDER BY x.queue LOOP
        PERFORM pg_advisory_xact_lock(hashtextextended('silt.task_queue:' || r.queue, 0));
    END LOOP;
    FOR r IN SELECT u.* FROM unnest(p_workers, p_queues, p_caps, p_max, p_start)
                    WITH ORDINALITY AS u(worker, queues, caps, max, start, ord) LOOP
        RETURN QUERY SELECT (r.ord - 1)::integer, c.id, c.task_name, c.queue_name, c.args, c.priority, c.claim_id,
                            c.attempt, c.retry_count, c.timeout_ms, c.status
                       FROM tasks.claim(r.worker, r.queues::text[], r.caps::integer[], r.max, r.start) c;
    END LOOP;
END $$;

-- When the earliest PENDING task of these queues becomes claimable (NULL:
-- none), so a parked claimer knows when to look again for a delayed task.
CREATE FUNCTION tasks.next_run_at(p_queues text[]) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT min(run_at) FROM horsies_tasks WHERE queue_name = ANY (p_queues) AND status = 'PENDING'
$$;

-- ==== Running ==============================================================

-- CLAIMED -> RUNNING under the claim; the attempt row and the first runner
-- heartbeat commit with the transition. NULL when the claim is not (or no
-- longer) this task's: the caller answers 409.
CREATE FUNCTION tasks.start(p_id uuid, p_claim uuid) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    t horsies_tasks;
BEGIN
    UPDATE horsies_tasks SET status = 'RUNNING', attempt = attempt + 1, started_at = now(), last_heartbeat_at = now()
     WHERE id = p_id AND claim_id = p_claim AND status = 'CLAIMED'
    RETURNING * INTO t;
    IF t.id IS NULL THEN RETURN NULL; END IF;
    INSERT INTO horsies_task_attempts (task_id, attempt, worker_id, claim_id) VALUES (t.id, t.attempt, t.worker_id, p_claim);
    INSERT INTO horsies_heartbeats (task_id, worker_id, role) VALUES (t.id, t.worker_id, 'runner');
    RETURN t.attempt;
END $$;

-- Heartbeats of one worker: a row per task it still holds under the named
-- claim (the role its state calls for), and a snapshot of the worker. Returns
-- each task named with what the worker must know: 'ok', 'cancelled' (stop
-- it: cancel was asked) or 'lost' (the claim is no longer yours: drop it).
CREATE FUNCTION tasks.heartbeat(p_worker text, p_ids uuid[], p_claims uuid[])
RETURNS TABLE (id uuid, state text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    -- Rows locked in id order, as every batch that ends tasks locks them, so
    -- a heartbeat and an end of the same tasks never wait on each other in a
    -- circle.
    PERFORM 1 FROM horsies_tasks t WHERE t.id = ANY (p_ids) ORDER BY t.id FOR UPDATE;
    RETURN QUERY
    WITH named AS (SELECT u.id, u.claim FROM unnest(p_ids, p_claims) AS u(id, claim)),
    held AS (
        UPDATE horsies_tasks t SET last_heartbeat_at = now()
          FROM named n WHERE t.id = n.id AND t.claim_id = n.claim AND t.worker_id = p_worker
        RETURNING t.id, t.status, t.cancel_requested),
    beats AS (
        INSERT INTO horsies_heartbeats (task_id, worker_id, role)
        SELECT h.id, p_worker, CASE WHEN h.status = 'RUNNING' THEN 'runner' ELSE 'claimer' END FROM held h)
    SELECT n.id, CASE WHEN h.id IS NULL THEN 'lost' WHEN h.cancel_requested THEN 'cancelled' ELSE 'ok' END
      FROM named n LEFT JOIN held h ON h.id = n.id;
    UPDATE horsies_workers SET last_seen_at = now() WHERE worker_id = p_worker;
    INSERT INTO horsies_worker_states (worker_id, hostname, pid, queues, concurrency, claimed, running)
    SELECT w.worker_id, w.hostname, w.pid, w.queues, w.concurrency,
           (SELECT count(*) FROM horsies_tasks t WHERE t.worker_id = p_worker AND t.status = 'CLAIMED'),
           (SELECT count(*) FROM horsies_tasks t WHERE t.worker_id = p_worker AND t.status = 'RUNNING')
      FROM horsies_workers w WHERE w.worker_id = p_worker;
END $$;

-- ==== Finishing ============================================================

-- Moves live tasks to history in one statement: the rows of p_ids (already
-- decided terminal) leave horsies_tasks and enter horsies_task_history with
-- the given status, result and error.
CREATE FUNCTION tasks.terminalize(p_ids uuid[], p_status text, p_result json, p_code text, p_message text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    WITH gone AS (DELETE FROM horsies_tasks WHERE id = ANY (p_ids) RETURNING *)
    INSERT INTO horsies_task_history (id, task_name, queue_name, args, priority, status, sent_at, enqueued_at,
                                      good_until, max_retries, retry_count, attempt, idempotency_key,
                                      retention_class_key, worker_id, claimed_at, started_at, result, error_code,
                                      error_message)
    SELECT g.id, g.task_name, g.queue_name, g.args, g.priority, p_status, g.sent_at, g.enqueued_at,
           g.good_until, g.max_retries, g.retry_count, g.attempt, g.idempotency_key,
           g.retention_class_key, g.worker_id, g.claimed_at, g.started_at, p_result, p_code, p_message
      FROM gone g;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- The end of a running attempt, decided by the policy: t failed with p_code.
-- A task whose cancel was asked ends CANCELLED, whoever reports the failure
-- (its worker, or recovery: a crash or a timeout). Otherwise retried (back
-- to PENDING after the policy's delay) when retries remain and the policy
-- retries that code, else FAILED. Returns the new status.
CREATE FUNCTION tasks.fail_running(t horsies_tasks, p_code text, p_message text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF t.cancel_requested THEN
        UPDATE horsies_task_attempts SET finished_at = now(), outcome = 'CANCELLED', error_code = p_code,
               error_message = p_message WHERE task_id = t.id AND attempt = t.attempt;
        PERFORM tasks.terminalize(ARRAY[t.id], 'CANCELLED', NULL, 'CANCELLED', 'cancelled while running');
        RETURN 'CANCELLED';
    END IF;
    UPDATE horsies_task_attempts SET finished_at = now(), outcome = 'FAILED', error_code = p_code, error_message = p_message
     WHERE task_id = t.id AND attempt = t.attempt;
    IF t.retry_count < t.max_retries AND (t.retry_on IS NULL OR p_code = ANY (t.retry_on)) THEN
        UPDATE horsies_tasks
           SET status = 'PENDING', retry_count = retry_count + 1, enqueued_at = now(),
               run_at = now() + make_interval(secs => tasks.retry_delay_ms(t, t.retry_count + 1) / 1000.0),
               worker_id = NULL, claim_id = NULL, claimed_at = NULL, started_at = NULL, last_heartbeat_at = NULL,
               last_error_code = p_code, last_error_message = p_message
         WHERE id = t.id;
        RETURN 'PENDING';
    END IF;
    PERFORM tasks.terminalize(ARRAY[t.id], 'FAILED', NULL, p_code, p_message);
    RETURN 'FAILED';
END $$;

-- A worker reports the end of a running attempt under its claim:
-- p_outcome 'COMPLETED' (with p_result) or 'FAILED' (with a code and a
-- message; a failure of a task whose cancel was asked ends CANCELLED).
-- Returns the task's status afterwards, or NULL when the claim is not this
-- task's running one (fenced: recovered, cancelled or finished already).
CREATE FUNCTION tasks.finish(p_id uuid, p_claim uuid, p_outcome text, p_result json, p_code text, p_message text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    t horsies_tasks;
BEGIN
    SELECT * INTO t FROM horsies_tasks WHERE id = p_id AND claim_id = p_claim AND status = 'RUNNING' FOR UPDATE;
    IF t.id IS NULL THEN RETURN NULL; END IF;
    IF p_outcome = 'COMPLETED' THEN
        UPDATE horsies_task_attempts SET finished_at = now(), outcome = 'COMPLETED'
         WHERE task_id = t.id AND attempt = t.attempt;
        PERFORM tasks.terminalize(ARRAY[t.id], 'COMPLETED', p_result, NULL, NULL);
        RETURN 'COMPLETED';
    END IF;
    RETURN tasks.fail_running(t, p_code, p_message);
END $$;

-- Ends a batch of running attempts (the completions and failures gathered
-- from concurrent requests): one row per item, in batch order, with the
-- task's status afterwards, or NULL where the claim is not the task's
-- running one (fenced), and its queue. Completions are set-based: their attempts end, and
-- they leave horsies_tasks for horsies_task_history, in three statements
-- whatever their number; failures take tasks.finish one by one (a retry
-- decision each).
CREATE FUNCTION tasks.finish_many(p_ids uuid[], p_claims uuid[], p_outcomes text[], p_results text[],
                                  p_codes text[], p_messages text[])
RETURNS TABLE (idx integer, id uuid, status text, queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    done uuid[];
    dq   text[];
    f    record;
    k    integer;
    st   text[] := array_fill(NULL::text, ARRAY[cardinality(p_ids)]);
    qs   text[] := array_fill(NULL::text, ARRAY[cardinality(p_ids)]);
BEGIN
    PERFORM 1 FROM horsies_tasks t WHERE t.id = ANY (p_ids) ORDER BY t.id FOR UPDATE;   -- see tasks.heartbeat
    WITH items AS (
        SELECT u.id, u.claim, u.result, u.ord FROM unnest(p_ids, p_claims, p_outcomes, p_results)
               WITH ORDINALITY AS u(id, claim, outcome, result, ord) WHERE u.outcome = 'COMPLETED'),
    gone AS (
        DELETE FROM horsies_tasks t USING items i
         WHERE t.id = i.id AND t.claim_id = i.claim AND t.status = 'RUNNING'
        RETURNING t.*, i.result AS item_result),
    ended AS (
        UPDATE horsies_task_attempts a SET finished_at = now(), outcome = 'COMPLETED'
          FROM gone g WHERE a.task_id = g.id AND a.attempt = g.attempt),
    kept AS (
        INSERT INTO horsies_task_history (id, task_name, queue_name, args, priority, status, sent_at, enqueued_at,
                                          good_until, max_retries, retry_count, attempt, idempotency_key,
                                          retention_class_key, worker_id, claimed_at, started_at, result)
        SELECT g.id, g.task_name, g.queue_name, g.args, g.priority, 'COMPLETED', g.sent_at, g.enqueued_at,
               g.good_until, g.max_retries, g.retry_count, g.attempt, g.idempotency_key,
               g.retention_class_key, g.worker_id, g.claimed_at, g.started_at, g.item_result::json
          FROM gone g RETURNING id, queue_name)
    SELECT array_agg(x.id), array_agg(x.queue_name) INTO done, dq FROM kept x;
    FOR f IN SELECT u.* FROM unnest(p_ids, p_claims, p_outcomes, p_codes, p_messages)
                    WITH ORDINALITY AS u(id, claim, outcome, code, message, ord) LOOP
        IF f.outcome = 'COMPLETED' THEN
            k := array_position(done, f.id);
            IF k IS NOT NULL THEN   -- the first report of it only: a repeat is refused like any late one
                st[f.ord] := 'COMPLETED'; qs[f.ord] := dq[k]; done[k] := NULL;
            END IF;
        ELSE
            qs[f.ord] := (SELECT t.queue_name FROM horsies_tasks t WHERE t.id = f.id);
            st[f.ord] := tasks.finish(f.id, f.claim, 'FAILED', NULL, f.code, f.message);
        END IF;
    END LOOP;
    RETURN QUERY SELECT (k - 1)::integer, p_ids[k], st[k], qs[k] FROM generate_subscripts(p_ids, 1) k ORDER BY k;
END $$;

-- Hands claimed-but-unstarted tasks back (a worker stopping): PENDING again,
-- claimable at once. Returns how many went back, per queue.
CREATE FUNCTION tasks.release(p_worker text, p_ids uuid[], p_claims uuid[])
RETURNS TABLE (queue text, released bigint) LANGUAGE sql AS $$
    WITH back AS (
        UPDATE horsies_tasks t
           SET status = 'PENDING', worker_id = NULL, claim_id = NULL, claimed_at = NULL, last_heartbeat_at = NULL
          FROM unnest(p_ids, p_claims) AS u(id, claim)
         WHERE t.id = u.id AND t.claim_id = u.claim AND t.worker_id = p_worker AND t.status = 'CLAIMED'
        RETURNING t.queue_name)
    SELECT queue_name, count(*) FROM back GROUP BY queue_name
$$;

-- Takes back what a claim took for a client that was gone before the reply
-- reached it: the tasks go back to PENDING as if never claimed (a start
-- made by the claim itself is undone with its attempt row), so nobody's
-- retries are spent on a reply nobody read. Returns how many, per queue.
CREATE FUNCTION tasks.unclaim(p_ids uuid[], p_claims uuid[])
RETURNS TABLE (queue text, released bigint) LANGUAGE sql AS $$
    WITH mine AS (
        SELECT t.id, t.attempt, t.status FROM horsies_tasks t, unnest(p_ids, p_claims) AS u(id, claim)
         WHERE t.id = u.id AND t.claim_id = u.claim AND t.status IN ('CLAIMED', 'RUNNING')
         ORDER BY t.id FOR UPDATE OF t),
    undone AS (
        DELETE FROM horsies_task_attempts a USING mine m
         WHERE m.status = 'RUNNING' AND a.task_id = m.id AND a.attempt = m.attempt),
    back AS (
        UPDATE horsies_tasks t
           SET status = 'PENDING', attempt = t.attempt - CASE WHEN m.status = 'RUNNING' THEN 1 ELSE 0 END,
               worker_id = NULL, claim_id = NULL, claimed_at = NULL, started_at = NULL, last_heartbeat_at = NULL
          FROM mine m WHERE t.id = m.id
        RETURNING t.queue_name)
    SELECT queue_name, count(*) FROM back GROUP BY queue_name
$$;

-- Cancel: PENDING or CLAIMED (not started) end CANCELLED at once; RUNNING is
-- marked, and its worker learns it on its next heartbeat. Returns the status
-- afterwards ('CANCELLED', or 'RUNNING' with the cancel pending), the
-- terminal status of a task already finished, or NULL for no such task.
CREATE FUNCTION tasks.cancel(p_id uuid) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text;
BEGIN
    SELECT status INTO st FROM horsies_tasks WHERE id = p_id FOR UPDATE;
    IF st IS NULL THEN
        RETURN (SELECT h.status FROM horsies_task_history h WHERE h.id = p_id);
    ELSIF st = 'RUNNING' THEN
        UPDATE horsies_tasks SET cancel_requested = true WHERE id = p_id;
        RETURN 'RUNNING';
    END IF;
    PERFORM tasks.terminalize(ARRAY[p_id], 'CANCELLED', NULL, 'CANCELLED', 'cancelled before it ran');
    RETURN 'CANCELLED';
END $$;

-- ==== Recovery =============================================================

-- One recovery pass (the maintenance owner's): stale CLAIMED back to
-- PENDING; stale RUNNING failed with WORKER_CRASHED; RUNNING past its
-- timeout failed with TASK_TIMEOUT (both retried when the policy retries
-- that code); PENDING past good_until EXPIRED. Returns one row per task it
-- moved: id, what happened and the status afterwards.
CREATE FUNCTION tasks.recover(p_claimed_stale_ms integer, p_running_stale_ms integer)
RETURNS TABLE (id uuid, action text, status text, queue text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t horsies_tasks;
BEGIN
    RETURN QUERY
        UPDATE horsies_tasks x
           SET status = 'PENDING', worker_id = NULL, claim_id = NULL, claimed_at = NULL, last_heartbeat_at = NULL
         WHERE x.id IN (SELECT c.id FROM horsies_tasks c WHERE c.status = 'CLAIMED'
                         AND c.last_heartbeat_at < now() - make_interval(secs => p_claimed_stale_ms / 1000.0)
                         FOR UPDATE SKIP LOCKED)
        RETURNING x.id, 'requeued stale claim'::text, 'PENDING'::text, x.queue_name;
    FOR t IN SELECT * FROM horsies_tasks c WHERE c.status = 'RUNNING'
                AND c.last_heartbeat_at < now() - make_interval(secs => p_running_stale_ms / 1000.0)
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

-- ==== Reading ==============================================================

-- One task, live or finished, in one shape (history columns NULL while live).
CREATE VIEW tasks.all_tasks AS
    SELECT id, task_name, queue_name, args, priority, status, sent_at, enqueued_at, run_at, good_until,
           timeout_ms, max_retries, retry_count, attempt, idempotency_key, retention_class_key, worker_id,
           claimed_at, started_at, NULL::timestamptz AS finished_at, cancel_requested,
           NULL::json AS result, last_error_code AS error_code, last_error_message AS error_message
      FROM horsies_tasks
    UNION ALL
    SELECT id, task_name, queue_name, args, priority, status, sent_at, enqueued_at, NULL, good_until,
           NULL, max_retries, retry_count, attempt, idempotency_key, retention_class_key, worker_id,
           claimed_at, started_at, finished_at, false, result, error_code, error_message
      FROM horsies_task_history;

-- A recovery pass by the maintenance owner: whichever server takes the
-- advisory lock first in a round does it, the others return nothing.
CREATE FUNCTION tasks.recover_if_owner(p_claimed_stale_ms integer, p_running_stale_ms integer)
RETURNS TABLE (id uuid, action text, status text, queue text) LANGUAGE plpgsql AS $$
BEGIN
    IF pg_try_advisory_xact_lock(hashtextextended('silt.task_recovery', 0)) THEN
        RETURN QUERY SELECT * FROM tasks.recover(p_claimed_stale_ms, p_running_stale_ms);
    END IF;
END $$;

-- Registers (or re-registers) a worker.
CREATE FUNCTION tasks.register_worker(p_worker text, p_hostname text, p_pid integer, p_queues text[],
                                      p_concurrency integer) RETURNS timestamptz
LANGUAGE sql AS $$
    INSERT INTO horsies_workers (worker_id, hostname, pid, queues, concurrency)
    VALUES (p_worker, p_hostname, p_pid, p_queues, p_concurrency)
    ON CONFLICT (worker_id) DO UPDATE
       SET hostname = excluded.hostname, pid = excluded.pid, queues = excluded.queues,
           concurrency = excluded.concurrency, last_seen_at = now()
    RETURNING registered_at
$$;

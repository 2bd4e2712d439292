-- Sending tasks.

-- A UUIDv7 made in SQL (PostgreSQL 15 has none): 48 bits of Unix
-- milliseconds, then random bits with the version and variant set.
CREATE OR REPLACE FUNCTION tasks.uuid7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                  PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                  FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;

-- The creation time a UUIDv7 carries (every task id is one); -infinity for
-- any other uuid, which then bounds nothing.
CREATE OR REPLACE FUNCTION tasks.uuid7_time(p_id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN substr(p_id::text, 15, 1) = '7'
                THEN to_timestamp(('x' || lpad(substr(replace(p_id::text, '-', ''), 1, 12), 16, '0'))::bit(64)::bigint
                                  / 1000.0)
                ELSE '-infinity'::timestamptz END
$$;

-- Sends a batch, one element per task in each array. p_rerun_of names the
-- task each one reruns (tasks_rerun.sql), NULL for a plain send; p_rate_keys
-- holds each task's rateKey (NULL: none; tasks.claim_rated counts them). A
-- NULL element takes silt's default, here for every sender: a priority the
-- queue's (tasks.send_queues, else 100), a class the queue's mapping (else
-- standard_30d; 'forever' keeps the record for ever), a backoff's cap a
-- day, args JSON null, a delay, maxRetries or jitter 0. What a client
-- sends is checked first (tasks.enqueue). p_scopes, p_unique_for_ms and
-- p_on_conflict are the tasks' uniqueness (tasks.unique_hold), NULL
-- arrays when no task of the batch has any: such a batch takes the same
-- statements as before uniqueness existed. changed is NULL for a task sent
-- without uniqueness; else whether this send changed the task it got back.
-- A batch without idempotency keys (most are) reads and writes nothing of
-- horsies_task_idempotency: its tasks are all created.
CREATE OR REPLACE FUNCTION tasks.send(p_ids uuid[], p_names text[], p_queues text[], p_args text[],
                           p_priorities integer[], p_run_at timestamptz[], p_delays_ms bigint[],
                           p_good_until timestamptz[], p_timeouts integer[], p_max_retries integer[],
                           p_retry_delays text[], p_bases integer[], p_caps integer[], p_jitters real[],
                           p_retry_on text[], p_keys text[], p_classes text[], p_rerun_of uuid[] DEFAULT NULL,
                           p_rate_keys text[] DEFAULT NULL, p_scopes text[] DEFAULT NULL,
                           p_unique_for_ms bigint[] DEFAULT NULL, p_on_conflict text[] DEFAULT NULL)
RETURNS TABLE (idx integer, id uuid, created boolean, changed boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    keyed   boolean := coalesce(cardinality(array_remove(p_keys, NULL)), 0) > 0;
    refused uuid[];       -- tasks not inserted: their key is another task's
    changed_at bigint[];  -- ordinals of the sends that changed the holder
BEGIN
    IF keyed THEN
        refused := tasks.idempotency_hold(p_ids, p_keys);
    END IF;
    IF p_scopes IS NOT NULL THEN
        refused := refused || tasks.unique_hold(p_ids, p_names, p_scopes, p_unique_for_ms);
    END IF;
    INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, run_at, good_until,
                               timeout_ms, max_retries, retry_delays_ms, retry_base_ms, retry_cap_ms,
                               retry_jitter, retry_on, idempotency_key, retention_class_key, rerun_of, rate_key)
    WITH q AS MATERIALIZED (SELECT * FROM tasks.batch_queues(p_queues))
    SELECT u.id, u.name, u.queue, coalesce(u.args, 'null')::json, coalesce(u.priority, q.priority, 100),
           'PENDING', coalesce(u.run_at, now() + make_interval(secs => coalesce(u.delay, 0) / 1000.0)),
           u.good_until, u.timeout, coalesce(u.retries, 0), u.delays::integer[], u.base,
           CASE WHEN u.base IS NOT NULL THEN coalesce(u.cap, 86400000) END, coalesce(u.jitter, 0),
           u.retry_on::text[], u.key, coalesce(u.class, q.retention_class, 'standard_30d'), u.rerun_of, u.rate_key
      FROM unnest(p_ids, p_names, p_queues, p_args, p_priorities, p_run_at, p_delays_ms, p_good_until,
                  p_timeouts, p_max_retries, p_retry_delays, p_bases, p_caps, p_jitters, p_retry_on, p_keys,
                  p_classes, p_rerun_of, p_rate_keys) WITH ORDINALITY
           AS u(id, name, queue, args, priority, run_at, delay, good_until, timeout, retries,
                delays, base, cap, jitter, retry_on, key, class, rerun_of, rate_key, ord)
      LEFT JOIN q ON q.queue = u.queue
     WHERE refused IS NULL OR u.id <> ALL (refused)
     ORDER BY u.ord;   -- in batch order: a claim takes equal priority and enqueued_at in index (insertion) order
    IF NOT keyed AND p_scopes IS NULL THEN
        RETURN QUERY SELECT (u.ord - 1)::integer, u.id, true, NULL::boolean
                       FROM unnest(p_ids) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord;
        RETURN;
    END IF;
    IF p_scopes IS NULL THEN
        RETURN QUERY
            SELECT (u.ord - 1)::integer, coalesce(k.task_id, u.id), u.key IS NULL OR k.task_id = u.id, NULL::boolean
              FROM unnest(p_ids, p_keys) WITH ORDINALITY AS u(id, key, ord)
              LEFT JOIN horsies_task_idempotency k ON k.idempotency_key = u.key
             ORDER BY u.ord;
        RETURN;
    END IF;
    changed_at := tasks.unique_change(p_ids, p_names, p_args, p_run_at, p_delays_ms, p_scopes, p_on_conflict, refused);
    RETURN QUERY
        SELECT (u.ord - 1)::integer, coalesce(k.task_id, h.task_id, u.id),
               (u.key IS NULL OR k.task_id = u.id) AND (u.scope IS NULL OR h.task_id = u.id),
               CASE WHEN u.scope IS NOT NULL THEN u.ord = ANY (changed_at) END
          FROM unnest(p_ids, p_keys, p_names, p_scopes) WITH ORDINALITY AS u(id, key, name, scope, ord)
          LEFT JOIN horsies_task_idempotency k ON k.idempotency_key = u.key
          LEFT JOIN tasks.unique_keys h ON h.task_name = u.name AND h.scope = u.scope
         ORDER BY u.ord;
END $$;

-- Holds the idempotency keys of a batch (p_keys: NULL for a task without
-- one): the first send of each key wins (in this batch: the first item).
-- A concurrent send of the same key is waited for, then seen by the second
-- statement (each takes a new snapshot). Returns the ids of the tasks that
-- must not be inserted: their key is not theirs.
CREATE OR REPLACE FUNCTION tasks.idempotency_hold(p_ids uuid[], p_keys text[]) RETURNS uuid[]
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO horsies_task_idempotency (idempotency_key, task_id)
    SELECT DISTINCT ON (u.key) u.key, u.id FROM unnest(p_keys, p_ids) WITH ORDINALITY AS u(key, id, ord)
     WHERE u.key IS NOT NULL ORDER BY u.key, u.ord
    ON CONFLICT DO NOTHING;
    RETURN ARRAY(SELECT u.id FROM unnest(p_keys, p_ids) AS u(key, id)
                  WHERE u.key IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM horsies_task_idempotency k
                                     WHERE k.idempotency_key = u.key AND k.task_id = u.id));
END $$;

-- ---- Uniqueness (migration 046) ----
--
-- A task sent with "unique" holds its key, a row of tasks.unique_keys
-- (task name, scope), for a period (expires_at) or while it is live
-- (expires_at NULL: while its row is in horsies_tasks). The row is the
-- lock between servers: whoever inserts it first holds the key, a
-- concurrent insert waits for that transaction and then finds the row.
-- A row whose period ended or whose task ended is taken over by the next
-- send of its key, compare-and-swap on the holder that send saw, so of two
-- sends taking over one key only one succeeds (the other finds the new
-- holder when PostgreSQL re-checks the locked row). Each step is its own
-- statement: each sees what committed before it (READ COMMITTED), where
-- one statement's subquery would still see the key's old holder.

-- Holds the keys of a batch's tasks (p_scopes NULL: no uniqueness; the
-- first task of a key in the batch holds it). Returns the ids of the tasks
-- that must not be inserted: their key is held by another task.
CREATE OR REPLACE FUNCTION tasks.unique_hold(p_ids uuid[], p_names text[], p_scopes text[], p_for_ms bigint[])
RETURNS uuid[] LANGUAGE plpgsql AS $$
DECLARE
    missing boolean;
BEGIN
    FOR attempt IN 1 .. 3 LOOP   -- a free row the sweep deleted between the two steps: once more
        INSERT INTO tasks.unique_keys AS h (task_name, scope, task_id, expires_at)
        SELECT DISTINCT ON (u.name, u.scope) u.name, u.scope, u.id,
               now() + make_interval(secs => u.for_ms / 1000.0)
          FROM unnest(p_names, p_scopes, p_ids, p_for_ms) WITH ORDINALITY AS u(name, scope, id, for_ms, ord)
         WHERE u.scope IS NOT NULL
         ORDER BY u.name, u.scope, u.ord
        ON CONFLICT DO NOTHING;
        WITH first AS (
            SELECT DISTINCT ON (u.name, u.scope) u.name, u.scope, u.id, u.for_ms
              FROM unnest(p_names, p_scopes, p_ids, p_for_ms) WITH ORDINALITY AS u(name, scope, id, for_ms, ord)
             WHERE u.scope IS NOT NULL
             ORDER BY u.name, u.scope, u.ord),
        free AS MATERIALIZED (
            SELECT f.name, f.scope, f.id, f.for_ms, h.task_id AS holder
              FROM first f JOIN tasks.unique_keys h ON h.task_name = f.name AND h.scope = f.scope
             WHERE h.task_id <> f.id
               AND (h.expires_at <= now()
                    OR (h.expires_at IS NULL AND NOT EXISTS (SELECT 1 FROM horsies_tasks t WHERE t.id = h.task_id))))
        UPDATE tasks.unique_keys h
           SET task_id = f.id, expires_at = now() + make_interval(secs => f.for_ms / 1000.0), held_at = now()
          FROM free f
         WHERE h.task_name = f.name AND h.scope = f.scope AND h.task_id = f.holder;
        SELECT EXISTS (SELECT 1 FROM unnest(p_names, p_scopes) AS u(name, scope)
                        WHERE u.scope IS NOT NULL
                          AND NOT EXISTS (SELECT 1 FROM tasks.unique_keys h
                                           WHERE h.task_name = u.name AND h.scope = u.scope))
          INTO missing;
        EXIT WHEN NOT missing;
    END LOOP;
    IF missing THEN   -- the sweep kept deleting what was free: never seen, but not a task without its key
        RAISE EXCEPTION 'a unique key of this send kept changing hands: send again' USING ERRCODE = '40001';
    END IF;
    RETURN ARRAY(SELECT u.id FROM unnest(p_ids, p_names, p_scopes) AS u(id, name, scope)
                   LEFT JOIN tasks.unique_keys h ON h.task_name = u.name AND h.scope = u.scope
                  WHERE u.scope IS NOT NULL AND h.task_id IS DISTINCT FROM u.id);
END $$;

-- Applies onConflict of the refused sends to the tasks holding their keys:
-- "replace" gives the holder the send's args, "debounce" its run time (its
-- runAt, else now plus its delayMs), only while the holder is PENDING and
-- has never started (attempt 0); otherwise it stays as it is, as with
-- "existing". Of several sends of one key in a batch, the last applies.
-- Returns the ordinals (from 1) of the sends that changed their holder.
CREATE OR REPLACE FUNCTION tasks.unique_change(p_ids uuid[], p_names text[], p_args text[], p_run_at timestamptz[],
                                               p_delays_ms bigint[], p_scopes text[], p_on_conflict text[],
                                               p_refused uuid[]) RETURNS bigint[]
LANGUAGE sql AS $$
    WITH c AS (
        SELECT DISTINCT ON (u.name, u.scope) u.ord, h.task_id, u.on_conflict, u.args,
               coalesce(u.run_at, now() + make_interval(secs => coalesce(u.delay, 0) / 1000.0)) AS run_at
          FROM unnest(p_ids, p_names, p_args, p_run_at, p_delays_ms, p_scopes, p_on_conflict) WITH ORDINALITY
               AS u(id, name, args, run_at, delay, scope, on_conflict, ord)
          JOIN tasks.unique_keys h ON h.task_name = u.name AND h.scope = u.scope
         WHERE u.on_conflict IN ('replace', 'debounce') AND u.id = ANY (p_refused)
         ORDER BY u.name, u.scope, u.ord DESC),
    done AS (
        UPDATE horsies_tasks t
           SET args = CASE WHEN c.on_conflict = 'replace' THEN coalesce(c.args, 'null')::json ELSE t.args END,
               run_at = CASE WHEN c.on_conflict = 'debounce' THEN c.run_at ELSE t.run_at END
          FROM c
         WHERE t.id = c.task_id AND t.status = 'PENDING' AND t.attempt = 0
        RETURNING c.ord)
    SELECT coalesce(array_agg(done.ord), '{}') FROM done
$$;

-- ---- The rules of a send ------------------------------------------------------
--
-- Every send by a client goes through tasks.enqueue: POST /api/v1/tasks
-- (src/api/tasks.c, gathered into one call per flush) and the SQL API
-- (sql_api.sql). It checks each task and sends the batch through
-- tasks.send, which gives a task its queue's priority and retention class
-- when the send names none. What they read of silt.conf is in
-- tasks.send_settings and tasks.send_queues (migration 045), written at
-- each server's start.

-- The rows of tasks.send_queues that a batch's queues name, each read once:
-- a batch names one or a few queues, and a join of its tasks with the
-- table probed its key once a task (twice a send: the check, the insert).
-- Inlined (an SQL function of one SELECT) into its callers' CTEs.
CREATE OR REPLACE FUNCTION tasks.batch_queues(p_queues text[]) RETURNS SETOF tasks.send_queues
LANGUAGE sql STABLE AS $$
    SELECT * FROM tasks.send_queues q WHERE q.queue = ANY (p_queues)
$$;

-- Stores a server's silt.conf settings of sends (src/tasks/send_settings.c),
-- replacing what was there. p_queues with p_declared, p_priorities and
-- p_classes: one element per queue the file names.
CREATE OR REPLACE FUNCTION tasks.send_settings_store(p_queues text[], p_declared boolean[], p_priorities integer[],
                                                     p_classes text[], p_queues_declared boolean,
                                                     p_class_keys text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('silt.send_settings'));   -- servers starting together
    INSERT INTO tasks.send_settings (queues_declared, class_keys) VALUES (p_queues_declared, p_class_keys)
    ON CONFLICT (only_row) DO UPDATE
       SET queues_declared = excluded.queues_declared, class_keys = excluded.class_keys, updated_at = now();
    DELETE FROM tasks.send_queues q WHERE q.queue <> ALL (p_queues);
    INSERT INTO tasks.send_queues (queue, declared, priority, retention_class)
    SELECT u.q, u.d, u.p, u.c FROM unnest(p_queues, p_declared, p_priorities, p_classes) AS u(q, d, p, c)
    ON CONFLICT (queue) DO UPDATE
       SET declared = excluded.declared, priority = excluded.priority, retention_class = excluded.retention_class;
END $$;

-- The first problem of a retry policy's lists, as send_problem's, or NULL.
CREATE OR REPLACE FUNCTION tasks.send_lists_problem(p_delays integer[], p_retry_on text[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_delays IS NOT NULL AND coalesce(cardinality(p_delays), 0) NOT BETWEEN 1 AND 20
            THEN 'retry.delaysMs|retry.delaysMs must be an array of 1 to 20 integers'
        WHEN EXISTS (SELECT 1 FROM unnest(p_delays) AS d WHERE d IS NULL OR d NOT BETWEEN 0 AND 86400000)
            THEN 'retry.delaysMs|retry.delaysMs must hold integers from 0 to 86400000'
        WHEN p_retry_on IS NOT NULL AND coalesce(cardinality(p_retry_on), 0) NOT BETWEEN 1 AND 16
            THEN 'retry.retryOn|retry.retryOn must be an array of 1 to 16 error codes'
        WHEN EXISTS (SELECT 1 FROM unnest(p_retry_on) AS c WHERE coalesce(char_length(c), 0) NOT BETWEEN 1 AND 64)
            THEN 'retry.retryOn|retry.retryOn must hold non-empty strings of at most 64 characters'
    END
$$;

-- The first problem of one task to send, as "field|message" in the words
-- of POST /api/v1/tasks's 400 (docs/tasks.md), or NULL. The settings are
-- tasks.send_settings's; p_declared the queue's row's (NULL: silt.conf
-- names no such queue). No subquery: the planner inlines it into
-- tasks.enqueue's one pass over a batch (a call per task cost a send of
-- 1,000 as much again in PostgreSQL); the lists' elements are looked at
-- in a call of their own, only when a task has lists.
CREATE OR REPLACE FUNCTION tasks.send_problem(p_name text, p_queue text, p_priority integer, p_run_at timestamptz,
                                              p_delay bigint, p_timeout integer, p_retries integer,
                                              p_delays integer[], p_base integer, p_cap integer, p_jitter real,
                                              p_retry_on text[], p_key text, p_class text,
                                              p_queues_declared boolean, p_declared boolean, p_class_keys text[])
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN p_name IS NULL THEN 'name|name is required'
        WHEN p_name = '' THEN 'name|name must be a non-empty string'
        WHEN octet_length(p_name) > 255 THEN 'name|name is longer than 255 bytes'
        WHEN p_queue IS NULL THEN 'queue|queue is required'
        WHEN p_queue = '' THEN 'queue|queue must be a non-empty string'
        WHEN octet_length(p_queue) > 255 THEN 'queue|queue is longer than 255 bytes'
        WHEN p_queues_declared AND p_declared IS NOT TRUE
            THEN format('queue|queue "%s" is not declared in the configuration file', p_queue)
        WHEN p_priority NOT BETWEEN 1 AND 100 THEN 'priority|priority must be an integer from 1 to 100'
        WHEN p_delay NOT BETWEEN 0 AND 31622400000 THEN 'delayMs|delayMs must be an integer from 0 to 31622400000'
        WHEN p_run_at IS NOT NULL AND p_delay > 0 THEN 'runAt|runAt and delayMs cannot both be given'
        WHEN p_timeout NOT BETWEEN 1 AND 86400000 THEN 'timeoutMs|timeoutMs must be an integer from 1 to 86400000'
        WHEN p_retries NOT BETWEEN 0 AND 20 THEN 'maxRetries|maxRetries must be an integer from 0 to 20'
        WHEN (p_delays IS NOT NULL OR p_retry_on IS NOT NULL) AND tasks.send_lists_problem(p_delays, p_retry_on) IS NOT NULL
            THEN tasks.send_lists_problem(p_delays, p_retry_on)
        WHEN NOT (p_jitter BETWEEN 0 AND 1) THEN 'retry.jitter|retry.jitter must be a number from 0 to 1'
        WHEN p_base IS NOT NULL AND p_delays IS NOT NULL
            THEN 'retry.backoff|retry.backoff and retry.delaysMs cannot both be given'
        WHEN p_base NOT BETWEEN 1 AND 86400000 THEN 'baseMs|baseMs must be an integer from 1 to 86400000'
        WHEN p_cap NOT BETWEEN 1 AND 86400000 THEN 'capMs|capMs must be an integer from 1 to 86400000'
        WHEN p_cap IS NOT NULL AND p_base IS NULL THEN 'retry.backoff.baseMs|retry.backoff.baseMs is required'
        WHEN p_cap < p_base THEN 'retry.backoff.capMs|retry.backoff.capMs must be at least baseMs'
        WHEN p_key = '' THEN 'idempotencyKey|idempotencyKey must be a non-empty string'
        WHEN octet_length(p_key) > 200 THEN 'idempotencyKey|idempotencyKey must be at most 200 characters'
        WHEN p_class = 'heartbeats' THEN 'retentionClassKey|retention class heartbeats is silt''s own, for '
                                         'heartbeat partitions: a task cannot use it'
        WHEN p_class <> ALL (p_class_keys)
            THEN format('retentionClassKey|unknown retention class %s: this server''s silt.conf knows %s',
                        p_class, array_to_string(p_class_keys, ', '))
    END
$$;

-- The first problem of a task's "unique" object (docs/tasks.md,
-- "Uniqueness"), as send_problem's "field|message", or NULL. p_key is the
-- task's idempotencyKey: the two cannot be combined.
CREATE OR REPLACE FUNCTION tasks.unique_problem(p_spec json, p_key text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN json_typeof(p_spec) = 'null' THEN NULL
        WHEN json_typeof(p_spec) <> 'object' THEN 'unique|unique must be an object'
        WHEN EXISTS (SELECT 1 FROM json_object_keys(p_spec) k
                      WHERE k <> ALL (ARRAY['key', 'byArgs', 'forMs', 'while', 'onConflict']))
            THEN (SELECT format('unique.%s|unknown field "%s" in unique', k, k) FROM json_object_keys(p_spec) k
                   WHERE k <> ALL (ARRAY['key', 'byArgs', 'forMs', 'while', 'onConflict']) LIMIT 1)
        WHEN p_key IS NOT NULL THEN 'unique|unique and idempotencyKey cannot both be given'
        WHEN p_spec -> 'key' IS NOT NULL AND p_spec -> 'byArgs' IS NOT NULL
            THEN 'unique|unique.key and unique.byArgs cannot both be given'
        WHEN p_spec -> 'key' IS NULL AND p_spec -> 'byArgs' IS NULL
            THEN 'unique|unique needs unique.key or unique.byArgs'
        WHEN p_spec -> 'key' IS NOT NULL AND (json_typeof(p_spec -> 'key') <> 'string' OR p_spec ->> 'key' = ''
                                              OR octet_length(p_spec ->> 'key') > 200)
            THEN 'unique.key|unique.key must be a non-empty string of at most 200 bytes'
        WHEN p_spec -> 'byArgs' IS NOT NULL AND (p_spec -> 'byArgs')::text <> 'true'
            THEN 'unique.byArgs|unique.byArgs must be true'
        WHEN p_spec -> 'forMs' IS NOT NULL AND p_spec -> 'while' IS NOT NULL
            THEN 'unique.while|unique.forMs and unique.while cannot both be given'
        WHEN p_spec -> 'forMs' IS NOT NULL AND ((p_spec -> 'forMs')::text !~ '^[0-9]{1,12}$'
                                                OR (p_spec ->> 'forMs')::bigint NOT BETWEEN 1 AND 31622400000)
            THEN 'unique.forMs|unique.forMs must be an integer from 1 to 31622400000'
        WHEN p_spec -> 'while' IS NOT NULL AND (p_spec -> 'while')::text <> '"live"'
            THEN 'unique.while|unique.while must be "live"'
        WHEN p_spec -> 'onConflict' IS NOT NULL
             AND (p_spec -> 'onConflict')::text NOT IN ('"existing"', '"replace"', '"debounce"')
            THEN 'unique.onConflict|unique.onConflict must be "existing", "replace" or "debounce"'
        WHEN p_spec ->> 'onConflict' = 'replace' AND p_spec -> 'byArgs' IS NOT NULL
            THEN 'unique.onConflict|unique.onConflict "replace" needs unique.key: with byArgs the args are the key'
    END
$$;

-- The scope of a checked "unique" object within its task name (NULL:
-- none): its key, or its args compared as jsonb (so neither the order of
-- an object's members nor white space nor 1.0 against 1 tells two apart;
-- of duplicate members the last counts), hashed to bound the key's size.
CREATE OR REPLACE FUNCTION tasks.unique_scope(p_spec json, p_args text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_spec IS NULL OR json_typeof(p_spec) = 'null' THEN NULL
        WHEN p_spec -> 'key' IS NOT NULL THEN 'key:' || (p_spec ->> 'key')
        ELSE 'args:' || md5(coalesce(p_args, 'null')::jsonb::text)
    END
$$;

-- Checks a batch and sends it through tasks.send (which gives each task
-- the defaults it does not name): one element per task in each array, as
-- tasks.send's; p_unique holds each task's "unique" object as JSON text
-- (NULL or JSON null: none), checked and turned into tasks.send's
-- uniqueness arrays only when some task has one. The first task with a problem raises 22023 with its
-- message (prefixed "tasks[i]: " when p_batch) and DETAIL
-- "<index>:<field>" (0-based, the HTTP path's field for its 400), and
-- nothing is written. Rows as tasks.send's. Any array but p_ids may come
-- as NULL for one of NULLs (the server sends an option no task of the
-- batch sets that way: gather_nulls_as_null): here and in tasks.send they
-- are read only through unnest of several arrays, which pads a NULL one
-- with NULLs, or by tests that take NULL as "none".
CREATE OR REPLACE FUNCTION tasks.enqueue(p_ids uuid[], p_names text[], p_queues text[], p_args text[],
                                         p_priorities integer[], p_run_at timestamptz[], p_delays_ms bigint[],
                                         p_good_until timestamptz[], p_timeouts integer[], p_max_retries integer[],
                                         p_retry_delays text[], p_bases integer[], p_caps integer[],
                                         p_jitters real[], p_retry_on text[], p_keys text[], p_classes text[],
                                         p_unique text[], p_batch boolean, p_rate_keys text[] DEFAULT NULL)
RETURNS TABLE (idx integer, id uuid, created boolean, changed boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s       tasks.send_settings;
    problem text;
    at      bigint;
    scopes  text[];     -- uniqueness: NULL when no task of the batch has any
    for_ms  bigint[];
    on_conflict text[];
BEGIN
    SELECT * INTO s FROM tasks.send_settings;
    IF NOT FOUND THEN   -- no server has started on this database: silt.conf's defaults
        s := ROW(true, false, ARRAY['standard_30d', 'forever'], now());
    END IF;
    WITH q AS MATERIALIZED (SELECT * FROM tasks.batch_queues(p_queues))
    SELECT u.ord, p.problem INTO at, problem
      FROM unnest(p_names, p_queues, p_priorities, p_run_at, p_delays_ms, p_timeouts, p_max_retries, p_retry_delays,
                  p_bases, p_caps, p_jitters, p_retry_on, p_keys, p_classes)
           WITH ORDINALITY AS u(name, queue, priority, run_at, delay, timeout, retries, delays, base, cap, jitter,
                                retry_on, key, class, ord)
      LEFT JOIN q ON q.queue = u.queue
     CROSS JOIN LATERAL (SELECT tasks.send_problem(u.name, u.queue, u.priority, u.run_at, u.delay, u.timeout,
                                                   u.retries, u.delays::integer[], u.base, u.cap, u.jitter,
                                                   u.retry_on::text[], u.key, u.class, s.queues_declared,
                                                   q.declared, s.class_keys) AS problem) p
     WHERE p.problem IS NOT NULL
     ORDER BY u.ord
     LIMIT 1;
    IF at IS NULL AND p_unique IS NOT NULL AND cardinality(array_remove(p_unique, NULL)) > 0 THEN
        SELECT u.ord, tasks.unique_problem(u.spec::json, u.key) INTO at, problem
          FROM unnest(p_unique, p_keys) WITH ORDINALITY AS u(spec, key, ord)
         WHERE u.spec IS NOT NULL AND tasks.unique_problem(u.spec::json, u.key) IS NOT NULL
         ORDER BY u.ord
         LIMIT 1;
        SELECT array_agg(tasks.unique_scope(u.spec::json, u.args) ORDER BY u.ord),
               array_agg((u.spec::json ->> 'forMs')::bigint ORDER BY u.ord),
               array_agg(coalesce(u.spec::json ->> 'onConflict', 'existing') ORDER BY u.ord)
          INTO scopes, for_ms, on_conflict
          FROM unnest(p_unique, p_args) WITH ORDINALITY AS u(spec, args, ord)
         WHERE at IS NULL;
        IF at IS NULL AND NOT EXISTS (SELECT 1 FROM unnest(scopes) c WHERE c IS NOT NULL) THEN
            scopes := NULL;   -- every "unique" was JSON null
        END IF;
    END IF;
    IF at IS NOT NULL THEN
        RAISE EXCEPTION '%', (CASE WHEN p_batch THEN format('tasks[%s]: ', at - 1) ELSE '' END)
                             || substr(problem, strpos(problem, '|') + 1)
              USING ERRCODE = '22023', DETAIL = (at - 1) || ':' || split_part(problem, '|', 1);
    END IF;
    RETURN QUERY SELECT * FROM tasks.send(p_ids, p_names, p_queues, p_args, p_priorities, p_run_at, p_delays_ms,
                                          p_good_until, p_timeouts, p_max_retries, p_retry_delays, p_bases, p_caps,
                                          p_jitters, p_retry_on, p_keys, p_classes, NULL, p_rate_keys, scopes,
                                          for_ms, on_conflict);
END $$;

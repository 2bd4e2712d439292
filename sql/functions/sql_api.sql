-- The SQL API (docs/sql-api.md): what an application calls inside its own
-- transaction to send tasks. A task sent exists exactly when that
-- transaction commits. The rules are tasks.enqueue's, the same that POST
-- /api/v1/tasks follows; a bad argument raises 22023 with the words of
-- the HTTP 400, and nothing is written. The wake-up of parked claims on
-- every server is a NOTIFY on silt_tasks made in the caller's transaction,
-- so PostgreSQL delivers it at the commit, and never after a rollback.
--
-- The public functions are SECURITY DEFINER with a fixed search_path: the
-- role silt_producer (migration 045) may call them and nothing else; the
-- grants close this file, after every function is made.

-- Tells every server that queues got work ("<origin> sent:<queue>", as
-- servers tell each other: src/tasks/hub.c; "sql" is no server's origin).
CREATE OR REPLACE FUNCTION tasks.api_announce(p_queues text[]) RETURNS void LANGUAGE sql AS $$
    SELECT pg_notify('silt_tasks', 'sql sent:' || q) FROM (SELECT DISTINCT unnest(p_queues) AS q) d WHERE q IS NOT NULL
$$;

-- One task. NULL arguments take the same defaults as absent fields over
-- HTTP: the queue's priority (else 100), claimable now, no retries, the
-- queue's retention class (else standard_30d; 'forever' keeps it for
-- ever). Returns its id; with an idempotency_key sent before, the id of
-- the task that key named, and nothing is written. The unique_*
-- arguments are the members of HTTP's "unique" object (key, byArgs,
-- forMs, while, onConflict): with a unique key held, the id of the task
-- holding it (changed as unique_on_conflict says).
CREATE OR REPLACE FUNCTION tasks.send_task(name text, queue text, args json DEFAULT NULL,
                                           priority integer DEFAULT NULL, delay_ms bigint DEFAULT NULL,
                                           run_at timestamptz DEFAULT NULL, good_until timestamptz DEFAULT NULL,
                                           timeout_ms integer DEFAULT NULL, max_retries integer DEFAULT NULL,
                                           retry_delays_ms integer[] DEFAULT NULL,
                                           backoff_base_ms integer DEFAULT NULL, backoff_cap_ms integer DEFAULT NULL,
                                           jitter real DEFAULT NULL, retry_on text[] DEFAULT NULL,
                                           idempotency_key text DEFAULT NULL, retention_class_key text DEFAULT NULL,
                                           unique_key text DEFAULT NULL, unique_by_args boolean DEFAULT NULL,
                                           unique_for_ms bigint DEFAULT NULL, unique_while text DEFAULT NULL,
                                           unique_on_conflict text DEFAULT NULL)
RETURNS uuid LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    sent   uuid;
    uniq   json;
BEGIN
    IF num_nonnulls(unique_key, unique_by_args, unique_for_ms, unique_while, unique_on_conflict) > 0 THEN
        uniq := json_strip_nulls(json_build_object('key', unique_key, 'byArgs', unique_by_args,
                                                   'forMs', unique_for_ms, 'while', unique_while,
                                                   'onConflict', unique_on_conflict));
    END IF;
    SELECT e.id INTO sent
      FROM tasks.enqueue(ARRAY[tasks.uuid7()], ARRAY[send_task.name], ARRAY[send_task.queue],
                         ARRAY[send_task.args::text], ARRAY[send_task.priority], ARRAY[send_task.run_at],
                         ARRAY[send_task.delay_ms], ARRAY[send_task.good_until], ARRAY[send_task.timeout_ms],
                         ARRAY[send_task.max_retries], ARRAY[send_task.retry_delays_ms::text],
                         ARRAY[send_task.backoff_base_ms], ARRAY[send_task.backoff_cap_ms], ARRAY[send_task.jitter],
                         ARRAY[send_task.retry_on::text], ARRAY[send_task.idempotency_key],
                         ARRAY[send_task.retention_class_key], ARRAY[uniq::text], false) e;
    PERFORM tasks.api_announce(ARRAY[send_task.queue]);
    RETURN sent;
END $$;

-- ---- The batch form: a JSON array of tasks in POST /api/v1/tasks's shape ----

-- An integer member of a task object, as the HTTP body's is read: absent
-- or null is NULL; anything but an integer from lo to hi raises.
CREATE OR REPLACE FUNCTION tasks.api_json_int(o json, key text, lo bigint, hi bigint, at text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v json := o -> key;
BEGIN
    IF v IS NULL OR json_typeof(v) = 'null' THEN RETURN NULL; END IF;
    IF json_typeof(v) <> 'number' OR v::text !~ '^-?[0-9]{1,19}$' OR v::text::numeric NOT BETWEEN lo AND hi THEN
        RAISE EXCEPTION '%', format('%s%s must be an integer from %s to %s', at, key, lo, hi) USING ERRCODE = '22023';
    END IF;
    RETURN v::text::bigint;
END $$;

-- A string member: absent or null is NULL; else a non-empty string.
CREATE OR REPLACE FUNCTION tasks.api_json_text(o json, key text, at text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v json := o -> key;
BEGIN
    IF v IS NULL OR json_typeof(v) = 'null' THEN RETURN NULL; END IF;
    IF json_typeof(v) <> 'string' OR v::text = '""' THEN
        RAISE EXCEPTION '%', format('%s%s must be a non-empty string', at, key) USING ERRCODE = '22023';
    END IF;
    RETURN o ->> key;
END $$;

-- A time member: an ISO 8601 timestamp with its zone, as HTTP accepts.
CREATE OR REPLACE FUNCTION tasks.api_json_time(o json, key text, at text) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v text := tasks.api_json_text(o, key, at);
BEGIN
    IF v IS NULL THEN RETURN NULL; END IF;
    IF v !~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})$' THEN
        RAISE EXCEPTION '%', format('%s%s must be an ISO 8601 timestamp, e.g. 2026-12-01T07:04:30.501Z', at, key)
              USING ERRCODE = '22023';
    END IF;
    RETURN v::timestamptz;
END $$;

-- An object's members are all of known: a misspelt one would leave its
-- default in force without a word.
CREATE OR REPLACE FUNCTION tasks.api_json_known(o json, known text[], what text, at text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    k text;
BEGIN
    SELECT j INTO k FROM json_object_keys(o) AS j WHERE j <> ALL (known) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '%unknown field "%" in %', at, k, what USING ERRCODE = '22023';
    END IF;
END $$;

-- A list member of retry: absent or null, or an array of 1 to 20 (16) elements.
CREATE OR REPLACE FUNCTION tasks.api_json_list(o json, key text, field text, shape text, at text) RETURNS json
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v json := o -> key;
BEGIN
    IF v IS NULL OR json_typeof(v) = 'null' THEN RETURN NULL; END IF;
    IF json_typeof(v) <> 'array' THEN
        RAISE EXCEPTION '%', format('%s%s must be %s', at, field, shape) USING ERRCODE = '22023';
    END IF;
    RETURN v;
END $$;

-- One task object of the batch as tasks.enqueue's elements (its retry
-- policy's lists as array literals); ranges are enqueue's to check.
CREATE OR REPLACE FUNCTION tasks.api_json_task(t json, at text,
    OUT name text, OUT queue text, OUT args text, OUT priority integer, OUT run_at timestamptz,
    OUT delay_ms bigint, OUT good_until timestamptz, OUT timeout_ms integer, OUT max_retries integer,
    OUT retry_delays text, OUT base_ms integer, OUT cap_ms integer, OUT jitter real, OUT retry_on text,
    OUT idempotency_key text, OUT retention_class text, OUT uniq text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    r json;
    b json;
    l json;
BEGIN
    IF json_typeof(t) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION '%task must be an object', at USING ERRCODE = '22023';
    END IF;
    PERFORM tasks.api_json_known(t, ARRAY['name', 'queue', 'args', 'priority', 'delayMs', 'runAt', 'goodUntil',
                                          'timeoutMs', 'retry', 'idempotencyKey', 'retentionClassKey', 'unique'],
                                    'a task', at);
    name := tasks.api_json_text(t, 'name', at);
    queue := tasks.api_json_text(t, 'queue', at);
    args := (t -> 'args')::text;
    uniq := (t -> 'unique')::text;   -- checked by tasks.enqueue
    priority := tasks.api_json_int(t, 'priority', 1, 100, at);
    delay_ms := tasks.api_json_int(t, 'delayMs', 0, 31622400000, at);
    run_at := tasks.api_json_time(t, 'runAt', at);
    good_until := tasks.api_json_time(t, 'goodUntil', at);
    timeout_ms := tasks.api_json_int(t, 'timeoutMs', 1, 86400000, at);
    idempotency_key := tasks.api_json_text(t, 'idempotencyKey', at);
    retention_class := CASE WHEN t -> 'retentionClassKey' IS NULL THEN NULL
                            WHEN json_typeof(t -> 'retentionClassKey') = 'null' THEN 'forever'
                            WHEN json_typeof(t -> 'retentionClassKey') = 'string' THEN t ->> 'retentionClassKey' END;
    IF t -> 'retentionClassKey' IS NOT NULL AND retention_class IS NULL THEN
        RAISE EXCEPTION '%retentionClassKey must be a retention class key or null', at USING ERRCODE = '22023';
    END IF;
    r := t -> 'retry';
    IF r IS NULL OR json_typeof(r) = 'null' THEN RETURN; END IF;
    IF json_typeof(r) <> 'object' THEN RAISE EXCEPTION '%retry must be an object', at USING ERRCODE = '22023'; END IF;
    PERFORM tasks.api_json_known(r, ARRAY['maxRetries', 'delaysMs', 'backoff', 'jitter', 'retryOn'], 'retry', at);
    max_retries := tasks.api_json_int(r, 'maxRetries', 0, 20, at);
    l := tasks.api_json_list(r, 'delaysMs', 'retry.delaysMs', 'an array of 1 to 20 integers', at);
    IF l IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM json_array_elements(l) e WHERE json_typeof(e) <> 'number' OR e::text !~ '^-?[0-9]{1,9}$') THEN
            RAISE EXCEPTION '%retry.delaysMs must hold integers from 0 to 86400000', at USING ERRCODE = '22023';
        END IF;
        retry_delays := (SELECT coalesce(array_agg(e::text::integer), '{}') FROM json_array_elements(l) e)::text;
    END IF;
    l := tasks.api_json_list(r, 'retryOn', 'retry.retryOn', 'an array of 1 to 16 error codes', at);
    IF l IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM json_array_elements(l) e WHERE json_typeof(e) <> 'string') THEN
            RAISE EXCEPTION '%retry.retryOn must hold non-empty strings of at most 64 characters', at
                  USING ERRCODE = '22023';
        END IF;
        retry_on := (SELECT coalesce(array_agg(e), '{}') FROM json_array_elements_text(l) e)::text;
    END IF;
    IF r -> 'jitter' IS NOT NULL AND json_typeof(r -> 'jitter') <> 'null' THEN
        IF json_typeof(r -> 'jitter') <> 'number' THEN
            RAISE EXCEPTION '%retry.jitter must be a number from 0 to 1', at USING ERRCODE = '22023';
        END IF;
        jitter := CASE WHEN (r ->> 'jitter')::numeric BETWEEN 0 AND 1 THEN (r ->> 'jitter')::real ELSE 2 END;
    END IF;
    b := r -> 'backoff';
    IF b IS NULL OR json_typeof(b) = 'null' THEN RETURN; END IF;
    IF json_typeof(b) <> 'object' THEN
        RAISE EXCEPTION '%retry.backoff must be an object', at USING ERRCODE = '22023';
    END IF;
    PERFORM tasks.api_json_known(b, ARRAY['baseMs', 'capMs'], 'retry.backoff', at);
    base_ms := tasks.api_json_int(b, 'baseMs', 1, 86400000, at);
    cap_ms := tasks.api_json_int(b, 'capMs', 1, 86400000, at);
    IF base_ms IS NULL THEN
        RAISE EXCEPTION '%retry.backoff.baseMs is required', at USING ERRCODE = '22023';
    END IF;
END $$;

-- A batch: a JSON array of 1 to 1,000 task objects, each as the body of
-- POST /api/v1/tasks takes it (docs/tasks.md). One row per task in its
-- order: its id and whether it was created (false: its idempotencyKey
-- or its unique key named an earlier task, whose id it is; within the
-- batch the first item with a key wins), and for a task sent with
-- "unique" whether the send changed that task (onConflict "replace" or
-- "debounce"; NULL without "unique"). A bad task raises naming it ("tasks[2]: ...") and
-- nothing of the batch is written.
CREATE OR REPLACE FUNCTION tasks.send_tasks(tasks json)
RETURNS TABLE (id uuid, created boolean, changed boolean) LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    n   integer;
    ids uuid[];
BEGIN
    IF json_typeof(send_tasks.tasks) IS DISTINCT FROM 'array' THEN n := 0;
    ELSE n := json_array_length(send_tasks.tasks); END IF;
    IF n NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'tasks must be an array of 1 to 1000 tasks' USING ERRCODE = '22023';
    END IF;
    -- in batch order, as a list by id shows sends (two made in one
    -- millisecond are ordered by their random bits)
    ids := ARRAY(SELECT tasks.uuid7() AS i FROM generate_series(1, n) ORDER BY i);
    RETURN QUERY
    WITH t AS MATERIALIZED (
        SELECT e.ord, (tasks.api_json_task(e.t, format('tasks[%s]: ', e.ord - 1))).*
          FROM json_array_elements(send_tasks.tasks) WITH ORDINALITY AS e(t, ord)),
    a AS MATERIALIZED (
        SELECT ids, array_agg(t.name ORDER BY t.ord) AS names,
               array_agg(t.queue ORDER BY t.ord) AS queues, array_agg(t.args ORDER BY t.ord) AS args,
               array_agg(t.priority ORDER BY t.ord) AS priorities, array_agg(t.run_at ORDER BY t.ord) AS run_at,
               array_agg(t.delay_ms ORDER BY t.ord) AS delays, array_agg(t.good_until ORDER BY t.ord) AS good_until,
               array_agg(t.timeout_ms ORDER BY t.ord) AS timeouts, array_agg(t.max_retries ORDER BY t.ord) AS retries,
               array_agg(t.retry_delays ORDER BY t.ord) AS retry_delays, array_agg(t.base_ms ORDER BY t.ord) AS bases,
               array_agg(t.cap_ms ORDER BY t.ord) AS caps, array_agg(t.jitter ORDER BY t.ord) AS jitters,
               array_agg(t.retry_on ORDER BY t.ord) AS retry_on, array_agg(t.idempotency_key ORDER BY t.ord) AS keys,
               array_agg(t.retention_class ORDER BY t.ord) AS classes, array_agg(t.uniq ORDER BY t.ord) AS uniq
          FROM t),
    sent AS MATERIALIZED (
        SELECT s.idx, s.id, s.created, s.changed
          FROM a, tasks.enqueue(a.ids, a.names, a.queues, a.args, a.priorities, a.run_at, a.delays, a.good_until,
                                a.timeouts, a.retries, a.retry_delays, a.bases, a.caps, a.jitters, a.retry_on, a.keys,
                                a.classes, a.uniq, true) s)
    SELECT sent.id, sent.created, sent.changed FROM sent ORDER BY sent.idx;
    PERFORM tasks.api_announce(ARRAY(SELECT e ->> 'queue' FROM json_array_elements(send_tasks.tasks) e));
END $$;

-- ---- Who may call what ----
--
-- Functions are made executable by everyone (PUBLIC): silt's are not
-- meant for anyone but the server's own role, which owns them. Revoked
-- here for every function of both schemas, after the whole bundle, so a
-- function added later is covered too; silt_producer gets the public API:
-- sending tasks, and pushing messages (sql/functions/sql_push.sql).
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA tasks, queen FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tasks.send_task(text, text, json, integer, bigint, timestamptz, timestamptz, integer,
                                          integer, integer[], integer, integer, real, text[], text, text, text, boolean,
                                          bigint, text, text),
                          tasks.send_tasks(json),
                          queen.push(text, text, json, text, text),   -- sql/functions/sql_push.sql
                          queen.push_many(json)
   TO silt_producer;

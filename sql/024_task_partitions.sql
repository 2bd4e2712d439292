-- 024: terminal task records and heartbeats age by partition drop (the
-- Retention Config document, "What ages by what" and "Partition coverage";
-- docs/retention.md, second table).
--
-- horsies_task_history is LIST-partitioned by retention class. Each finite
-- class has its own parent, horsies_task_history_<key>, RANGE-partitioned
-- by terminal time into daily leaves (UTC days) named
-- horsies_task_history_<key>_YYYY_MM_DD, each with two indexes, <leaf>_id_idx
-- and <leaf>_enqueued_idx. The forever class is one plain child that is
-- never dropped. horsies_heartbeats is RANGE-partitioned into hourly leaves
-- horsies_heartbeats_YYYY_MM_DD_HH. Every leaf silt makes is written in the
-- leaf catalog; a pass (src/tasks/partition_pass.c) keeps the leaves of
-- today and history_leaf_horizon_days days ahead (heartbeat_leaf_horizon_hours
-- hours for heartbeats) and drops those whose day plus their class's
-- duration has passed: DETACH ... CONCURRENTLY, then DROP.
--
-- Leaves are made detached and then attached (SHARE UPDATE EXCLUSIVE on the
-- class parent, which writers of the class do not wait for) with a CHECK
-- that implies the whole partition constraint, so the attach scans nothing.
-- There is no DEFAULT partition: it would forbid DETACH CONCURRENTLY.

-- ==== The leaf catalog ======================================================

-- Every leaf silt made and has not dropped. A row whose relation is gone
-- (dropped outside silt) is an absent leaf: kept as evidence until an
-- operator deletes it.
CREATE TABLE horsies_task_history_leaf_catalog (
    leaf_name    text PRIMARY KEY,
    parent_name  text NOT NULL,
    class_key    text NOT NULL,
    lower_anchor timestamptz NOT NULL,
    upper_anchor timestamptz NOT NULL CHECK (lower_anchor < upper_anchor),
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX horsies_task_history_leaf_catalog_class ON horsies_task_history_leaf_catalog (class_key, lower_anchor);

-- The passes, newest last: what each did (the report the run route
-- answers) and whether it was healthy. The coverage surface of any server
-- reads the newest; the pass keeps the last 1,000.
CREATE TABLE horsies_retention_passes (
    id          bigserial PRIMARY KEY,
    runner      text NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    outcome     text NOT NULL CHECK (outcome IN ('ok', 'incomplete', 'failed')),
    report      json NOT NULL
);

-- Where the history of a node task ended by recovery lies, so that a leaf
-- holding unconsumed crashed-worker evidence is not dropped under it.
ALTER TABLE horsies_workflow_phase2_pending ADD COLUMN history_class_key text,
                                            ADD COLUMN history_finished_at timestamptz;

-- The heartbeat class: its duration is the heartbeat window, set by each
-- pass from the recovery thresholds (nothing snapshots it, so it may move).
ALTER TABLE horsies_retention_classes DROP CONSTRAINT horsies_retention_classes_origin_check,
    ADD CONSTRAINT horsies_retention_classes_origin_check CHECK (origin IN ('silt', 'declared', 'mapping', 'heartbeats'));

-- ==== Names and bounds ======================================================

-- The creation time a UUIDv7 carries (every task id is one); -infinity for
-- any other uuid, which then bounds nothing.
CREATE FUNCTION tasks.uuid7_time(p_id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN substr(p_id::text, 15, 1) = '7'
                THEN to_timestamp(('x' || lpad(substr(replace(p_id::text, '-', ''), 1, 12), 16, '0'))::bit(64)::bigint
                                  / 1000.0)
                ELSE '-infinity'::timestamptz END
$$;

-- The earliest a task's record can have ended: its id was made when it was
-- sent, less an hour for clocks that disagree. Reads by id add
-- finished_at >= this, so PostgreSQL reads only the leaves from that day on.
CREATE FUNCTION tasks.history_floor(p_id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT tasks.uuid7_time(p_id) - interval '1 hour'
$$;

CREATE FUNCTION tasks.class_parent_name(p_class text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'horsies_task_history_' || p_class
$$;

CREATE FUNCTION tasks.history_leaf_name(p_class text, p_day date) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'horsies_task_history_' || p_class || '_' || to_char(p_day, 'YYYY_MM_DD')
$$;

CREATE FUNCTION tasks.heartbeat_leaf_name(p_hour timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'horsies_heartbeats_' || to_char(p_hour AT TIME ZONE 'UTC', 'YYYY_MM_DD_HH24')
$$;

-- ==== Making leaves =========================================================

-- A leaf of p_parent for [p_lower, p_upper): made detached, checked, indexed,
-- attached, cataloged, in the caller's transaction. p_key_check is the rest
-- of the partition constraint the CHECK must imply (the class, for history).
CREATE FUNCTION tasks.leaf_make(p_class text, p_parent text, p_leaf text, p_like text, p_column text,
                                p_lower timestamptz, p_upper timestamptz, p_key_check text, p_indexes text[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    ix text;
BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', p_leaf, p_like);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%s%I IS NOT NULL AND %I >= %L AND %I < %L)',
                   p_leaf, p_leaf || '_bounds', p_key_check, p_column, p_column, p_lower, p_column, p_upper);
    FOREACH ix IN ARRAY p_indexes LOOP
        EXECUTE format('CREATE INDEX %I ON %I (%s)', p_leaf || '_' || split_part(ix, ':', 1), p_leaf,
                       split_part(ix, ':', 2));
    END LOOP;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', p_parent, p_leaf, p_lower, p_upper);
    INSERT INTO horsies_task_history_leaf_catalog (leaf_name, parent_name, class_key, lower_anchor, upper_anchor)
    VALUES (p_leaf, p_parent, p_class, p_lower, p_upper);
END $$;

-- A leaf's indexes, those missing made again (an index dropped by hand):
-- 'repaired' when one was, else 'exists'. p_indexes: 'suffix:columns'.
CREATE FUNCTION tasks.leaf_indexes_repair(p_leaf text, p_indexes text[]) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    ix   text;
    made boolean := false;
BEGIN
    FOREACH ix IN ARRAY p_indexes LOOP
        IF to_regclass(p_leaf || '_' || split_part(ix, ':', 1)) IS NULL THEN
            EXECUTE format('CREATE INDEX %I ON %I (%s)', p_leaf || '_' || split_part(ix, ':', 1), p_leaf,
                           split_part(ix, ':', 2));
            made := true;
        END IF;
    END LOOP;
    RETURN CASE WHEN made THEN 'repaired' ELSE 'exists' END;
END $$;

-- What a cataloged leaf whose relation is gone stops: an exception naming
-- it and the operator's way out.
CREATE FUNCTION tasks.leaf_absent(p_leaf text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'cataloged leaf % has no relation: after confirming the loss, delete its catalog row '
                    '(DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name = ''%'';)', p_leaf, p_leaf
          USING ERRCODE = 'object_not_in_prerequisite_state';
END $$;

-- A class's own parent (RANGE by terminal time), or for forever its one
-- leaf; made once, when the class is registered. A forever leaf that is
-- cataloged but gone is not made again: like a lost leaf inside the
-- horizon, it waits for the operator's DELETE of its catalog row.
CREATE FUNCTION tasks.class_parent_ensure(p_class text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    parent text := tasks.class_parent_name(p_class);
BEGIN
    IF p_class = 'heartbeats' OR to_regclass(parent) IS NOT NULL THEN RETURN; END IF;
    IF p_class = 'forever' THEN
        IF EXISTS (SELECT 1 FROM horsies_task_history_leaf_catalog WHERE leaf_name = parent) THEN RETURN; END IF;
        EXECUTE format('CREATE TABLE %I (LIKE horsies_task_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', parent);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (retention_class_key IS NOT NULL AND '
                       'retention_class_key = %L)', parent, parent || '_bounds', p_class);
        PERFORM tasks.leaf_indexes_repair(parent, ARRAY['id_idx:id', 'enqueued_idx:enqueued_at']);
        INSERT INTO horsies_task_history_leaf_catalog (leaf_name, parent_name, class_key, lower_anchor, upper_anchor)
        VALUES (parent, 'horsies_task_history', p_class, '-infinity', 'infinity');
    ELSE
        EXECUTE format('CREATE TABLE %I (LIKE horsies_task_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS) '
                       'PARTITION BY RANGE (finished_at)', parent);
    END IF;
    EXECUTE format('ALTER TABLE horsies_task_history ATTACH PARTITION %I FOR VALUES IN (%L)', parent, p_class);
END $$;

-- The forever class's one leaf: 'created', 'exists' or 'repaired' (an
-- index made again), or the exception of a cataloged leaf that is gone.
CREATE FUNCTION tasks.forever_leaf_ensure() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    leaf text := tasks.class_parent_name('forever');
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('silt.retention_class:forever', 0));
    IF to_regclass(leaf) IS NULL AND EXISTS (SELECT 1 FROM horsies_task_history_leaf_catalog WHERE leaf_name = leaf)
    THEN
        PERFORM tasks.leaf_absent(leaf);
    ELSIF to_regclass(leaf) IS NULL THEN
        PERFORM tasks.class_parent_ensure('forever');
        RETURN 'created';
    END IF;
    RETURN tasks.leaf_indexes_repair(leaf, ARRAY['id_idx:id', 'enqueued_idx:enqueued_at']);
END $$;

-- The history leaf of p_class for UTC day p_day: 'created', 'exists',
-- 'repaired' (an index made again), 'uncataloged' (a relation whose
-- catalog row an operator deleted: left alone, it is on its way out, and
-- made again once it is dropped), or an exception naming why it cannot be
-- made (cataloged, but the relation is gone). Also how tests and
-- operators make a past day's leaf.
CREATE FUNCTION tasks.history_leaf_ensure(p_class text, p_day date) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    leaf      text := tasks.history_leaf_name(p_class, p_day);
    cataloged boolean;
    lo        timestamptz := p_day::timestamp AT TIME ZONE 'UTC';
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('silt.retention_class:' || p_class, 0));
    PERFORM tasks.class_parent_ensure(p_class);
    cataloged := EXISTS (SELECT 1 FROM horsies_task_history_leaf_catalog WHERE leaf_name = leaf);
    IF cataloged AND to_regclass(leaf) IS NOT NULL THEN
        RETURN tasks.leaf_indexes_repair(leaf, ARRAY['id_idx:id', 'enqueued_idx:enqueued_at']);
    END IF;
    IF cataloged THEN PERFORM tasks.leaf_absent(leaf); END IF;
    IF to_regclass(leaf) IS NOT NULL THEN RETURN 'uncataloged'; END IF;
    PERFORM tasks.leaf_make(p_class, tasks.class_parent_name(p_class), leaf, 'horsies_task_history', 'finished_at',
                            lo, lo + interval '1 day', format('retention_class_key = %L AND ', p_class),
                            ARRAY['id_idx:id', 'enqueued_idx:enqueued_at']);
    RETURN 'created';
END $$;

-- The heartbeat leaf of the UTC hour starting at p_hour: 'created' or 'exists'.
CREATE FUNCTION tasks.heartbeat_leaf_ensure(p_hour timestamptz) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    leaf text := tasks.heartbeat_leaf_name(p_hour);
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('silt.retention_class:heartbeats', 0));
    IF to_regclass(leaf) IS NOT NULL THEN RETURN 'exists'; END IF;
    DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name = leaf;   -- a lost hour is simply made again
    PERFORM tasks.leaf_make('heartbeats', 'horsies_heartbeats', leaf, 'horsies_heartbeats', 'sent_at',
                            p_hour, p_hour + interval '1 hour', '', ARRAY['task_idx:task_id, sent_at']);
    RETURN 'created';
END $$;

-- ==== The history, partitioned ==============================================

DROP VIEW tasks.all_tasks;
ALTER TABLE horsies_task_history RENAME TO horsies_task_history_unpartitioned;
CREATE TABLE horsies_task_history (LIKE horsies_task_history_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY LIST (retention_class_key);

-- The rows kept so far, each into its class's leaf of the day it ended
-- (forever's into its one leaf): standard_30d for most, and whatever class
-- a send chose since classes came (022). silt's own classes are registered
-- with them; another class keeps its rows and is dropped once a server
-- registers it. Leaves past their class's duration are dropped by the
-- first pass, not here: a migration deletes nothing.
DO $$
DECLARE
    c record;
BEGIN
    IF EXISTS (SELECT 1 FROM horsies_task_history_unpartitioned) THEN
        INSERT INTO horsies_retention_classes (class_key, duration_s, origin)
        VALUES ('standard_30d', 30 * 86400, 'silt'), ('forever', NULL, 'silt') ON CONFLICT (class_key) DO NOTHING;
        FOR c IN SELECT DISTINCT retention_class_key AS class_key, (finished_at AT TIME ZONE 'UTC')::date AS day
                   FROM horsies_task_history_unpartitioned LOOP
            IF c.class_key = 'forever' THEN PERFORM tasks.forever_leaf_ensure();
            ELSE PERFORM tasks.history_leaf_ensure(c.class_key, c.day);
            END IF;
        END LOOP;
        INSERT INTO horsies_task_history SELECT * FROM horsies_task_history_unpartitioned;
    END IF;
END $$;
DROP TABLE horsies_task_history_unpartitioned;

-- 020's triggers, on the new parent (after the copy: the rows kept were
-- already named and advanced).
CREATE TRIGGER history_names_node BEFORE INSERT ON horsies_task_history
    FOR EACH ROW EXECUTE FUNCTION tasks.history_names_node();

-- As 020's, and the outbox row also says where the node's history lies.
CREATE OR REPLACE FUNCTION tasks.history_advances_workflows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ids   uuid[];
    sts   text[];
    res   json[];
    codes text[];
    msgs  text[];
BEGIN
    SELECT array_agg(e.id), array_agg(e.status), array_agg(e.result), array_agg(e.error_code),
           array_agg(e.error_message)
      INTO ids, sts, res, codes, msgs FROM ended e WHERE e.workflow_id IS NOT NULL;
    IF ids IS NULL THEN RETURN NULL; END IF;
    IF current_setting('silt.via_outbox', true) = 'on' THEN
        INSERT INTO horsies_workflow_phase2_pending (task_id, workflow_id, node_id, task_status, error_code,
                                                     error_message, history_class_key, history_finished_at)
        SELECT e.id, e.workflow_id, e.workflow_node, e.status, e.error_code, e.error_message,
               e.retention_class_key, e.finished_at
          FROM ended e WHERE e.workflow_id IS NOT NULL
        ON CONFLICT (task_id) DO NOTHING;
    ELSE
        PERFORM tasks.nodes_ended(ids, sts, res, codes, msgs);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER history_advances_workflows AFTER INSERT ON horsies_task_history
    REFERENCING NEW TABLE AS ended FOR EACH STATEMENT EXECUTE FUNCTION tasks.history_advances_workflows();


CREATE VIEW tasks.all_tasks AS
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

-- ==== Heartbeats, partitioned ===============================================

ALTER TABLE horsies_heartbeats RENAME TO horsies_heartbeats_unpartitioned;
ALTER INDEX horsies_heartbeats_task RENAME TO horsies_heartbeats_unpartitioned_task;
CREATE TABLE horsies_heartbeats (LIKE horsies_heartbeats_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (sent_at);
DO $$
DECLARE
    h timestamptz;
BEGIN
    FOR h IN SELECT DISTINCT date_trunc('hour', sent_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
               FROM horsies_heartbeats_unpartitioned LOOP
        PERFORM tasks.heartbeat_leaf_ensure(h);
    END LOOP;
    INSERT INTO horsies_heartbeats SELECT * FROM horsies_heartbeats_unpartitioned;
END $$;
DROP TABLE horsies_heartbeats_unpartitioned;

-- ==== Registration ==========================================================

-- As 023's, and each class registered gets its parent. p_all_or_none: a
-- server's start registers all or nothing (a conflict refuses the start);
-- a pass registers every class that does not conflict, so that one
-- conflicting class stays contained to itself.
DROP FUNCTION tasks.register_classes(text[], bigint[], text[]);
CREATE FUNCTION tasks.register_classes(p_keys text[], p_durations bigint[], p_origins text[], p_all_or_none boolean)
RETURNS TABLE (class_key text, registered_s bigint, declared_s bigint) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    k text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('silt.retention_classes', 0));
    RETURN QUERY
        SELECT c.class_key, c.duration_s, u.d
          FROM unnest(p_keys, p_durations) AS u(k, d) JOIN horsies_retention_classes c ON c.class_key = u.k
         WHERE c.duration_s IS DISTINCT FROM u.d ORDER BY c.class_key COLLATE "C";
    IF FOUND AND p_all_or_none THEN RETURN; END IF;
    INSERT INTO horsies_retention_classes (class_key, duration_s, origin)
    SELECT u.k, u.d, u.o FROM unnest(p_keys, p_durations, p_origins) AS u(k, d, o)
    ON CONFLICT (class_key) DO NOTHING;
    -- every class's lock first, in key order, then the parents: a coverage
    -- beside it takes a class's lock before the root's, never the reverse
    PERFORM pg_advisory_xact_lock(hashtextextended('silt.retention_class:' || keys.k, 0))
       FROM (SELECT DISTINCT u COLLATE "C" AS k FROM unnest(p_keys) AS u ORDER BY 1) keys;
    FOR k IN SELECT r.class_key FROM horsies_retention_classes r WHERE r.class_key = ANY (p_keys)
              ORDER BY r.class_key COLLATE "C" LOOP
        PERFORM tasks.class_parent_ensure(k);
    END LOOP;
END $$;

-- ==== The pass ==============================================================

-- Coverage, one transaction per class (a class's new leaves hold about
-- ten locks each until it commits; all classes at once could fill the lock
-- table). The classes in key order, by byte: every registered class but
-- heartbeats.
CREATE FUNCTION tasks.partition_classes() RETURNS SETOF text LANGUAGE sql STABLE AS $$
    SELECT class_key FROM horsies_retention_classes WHERE class_key <> 'heartbeats' ORDER BY class_key COLLATE "C"
$$;

-- One class's leaves: today and p_days days ahead for a finite class, the
-- one leaf of forever, each leaf's indexes checked. A class that cannot be
-- served fails alone. Returns a row per leaf made ('created'), per leaf
-- whose index was made again ('repaired'), or the class's failure
-- ('failed', with the reason).
CREATE FUNCTION tasks.partition_cover_class(p_class text, p_days integer)
RETURNS TABLE (what text, name text, reason text) LANGUAGE plpgsql AS $$
DECLARE
    today date := (now() AT TIME ZONE 'UTC')::date;
    made  text[] := '{}';
    fixed text[] := '{}';
    got   text;
    d     integer;
    leaf  text;
BEGIN
    IF (SELECT r.duration_s IS NULL FROM horsies_retention_classes r WHERE r.class_key = p_class) THEN
        got := tasks.forever_leaf_ensure();   -- forever: one leaf
        leaf := tasks.class_parent_name(p_class);
        IF got = 'created' THEN made := made || leaf; END IF;
        IF got = 'repaired' THEN fixed := fixed || leaf; END IF;
    ELSE
        FOR d IN 0 .. p_days LOOP
            got := tasks.history_leaf_ensure(p_class, today + d);
            leaf := tasks.history_leaf_name(p_class, today + d);
            IF got = 'created' THEN made := made || leaf; END IF;
            IF got = 'repaired' THEN fixed := fixed || leaf; END IF;
        END LOOP;
    END IF;
    RETURN QUERY SELECT 'created', u, NULL::text FROM unnest(made) u
                 UNION ALL SELECT 'repaired', u, NULL::text FROM unnest(fixed) u;
EXCEPTION WHEN OTHERS THEN
    RETURN QUERY SELECT 'failed', p_class, SQLERRM;
END $$;

-- The heartbeat window recorded as the heartbeats class's duration, and
-- the heartbeat hours from this one to p_hours ahead; rows as above.
CREATE FUNCTION tasks.partition_cover_heartbeats(p_hours integer, p_window_s bigint)
RETURNS TABLE (what text, name text, reason text) LANGUAGE plpgsql AS $$
DECLARE
    hour0 timestamptz := date_trunc('hour', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    made  text[] := '{}';
    h     integer;
BEGIN
    INSERT INTO horsies_retention_classes AS r (class_key, duration_s, origin)
    VALUES ('heartbeats', p_window_s, 'heartbeats')
    ON CONFLICT (class_key) DO UPDATE SET duration_s = EXCLUDED.duration_s
     WHERE r.duration_s IS DISTINCT FROM EXCLUDED.duration_s;
    FOR h IN 0 .. p_hours LOOP
        IF tasks.heartbeat_leaf_ensure(hour0 + make_interval(hours => h)) = 'created' THEN
            made := made || tasks.heartbeat_leaf_name(hour0 + make_interval(hours => h));
        END IF;
    END LOOP;
    RETURN QUERY SELECT 'created', u, NULL::text FROM unnest(made) u;
EXCEPTION WHEN OTHERS THEN
    RETURN QUERY SELECT 'failed', 'heartbeats'::text, SQLERRM;
END $$;

-- Detaches a timed-out DETACH CONCURRENTLY left pending, so that the other
-- leaves of its parent can be detached: each under p_timeout_ms of lock
-- wait. Returns a row per pending leaf: its class and, when it could not
-- be finalized, why.
CREATE FUNCTION tasks.partition_finalize(p_timeout_ms integer)
RETURNS TABLE (leaf_name text, class_key text, reason text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    c record;
BEGIN
    PERFORM set_config('lock_timeout', p_timeout_ms::text, true);
    FOR c IN SELECT k.leaf_name, k.parent_name, k.class_key
               FROM horsies_task_history_leaf_catalog k JOIN pg_inherits i ON i.inhrelid = to_regclass(k.leaf_name)
              WHERE i.inhdetachpending ORDER BY k.class_key COLLATE "C", k.lower_anchor LOOP
        BEGIN
            EXECUTE format('ALTER TABLE %I DETACH PARTITION %I FINALIZE', c.parent_name, c.leaf_name);
            RETURN QUERY SELECT c.leaf_name, c.class_key, NULL::text;
        EXCEPTION WHEN OTHERS THEN
            RETURN QUERY SELECT c.leaf_name, c.class_key, 'finalizing its detach: ' || SQLERRM;
        END;
    END LOOP;
END $$;

-- Leaves whose day (or hour) plus their class's duration has passed,
-- oldest first within each class, in key order: each with its parent,
-- whether it is still attached or its detach still pending (one the
-- finalize step could not complete: already refused), and how much unconsumed crashed-worker
-- evidence in the outbox still points into it (a pinned leaf is not
-- dropped until that evidence is applied).
CREATE FUNCTION tasks.partition_expired()
RETURNS TABLE (leaf_name text, parent_name text, class_key text, attached boolean, pending boolean, pinned bigint)
LANGUAGE sql STABLE AS $$
    SELECT k.leaf_name, k.parent_name, k.class_key,
           EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = to_regclass(k.leaf_name) AND NOT i.inhdetachpending),
           EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = to_regclass(k.leaf_name) AND i.inhdetachpending),
           (SELECT count(*) FROM horsies_workflow_phase2_pending p
             WHERE p.history_class_key = k.class_key AND p.history_finished_at >= k.lower_anchor
               AND p.history_finished_at < k.upper_anchor)
      FROM horsies_task_history_leaf_catalog k JOIN horsies_retention_classes r ON r.class_key = k.class_key
     WHERE r.duration_s IS NOT NULL
       AND k.upper_anchor + make_interval(secs => r.duration_s) <= now()
       AND to_regclass(k.leaf_name) IS NOT NULL
     ORDER BY k.class_key COLLATE "C", k.lower_anchor
$$;

-- Drops a detached leaf and its catalog row. The idempotency keys and the
-- attempts of the tasks it held go with it (a key is free again once its
-- task's record is gone). Refuses a leaf that is still attached.
CREATE FUNCTION tasks.leaf_drop(p_leaf text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    k horsies_task_history_leaf_catalog;
BEGIN
    SELECT * INTO k FROM horsies_task_history_leaf_catalog WHERE leaf_name = p_leaf FOR UPDATE;
    IF NOT FOUND OR to_regclass(p_leaf) IS NULL THEN RETURN; END IF;
    IF EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = to_regclass(p_leaf)) THEN
        RAISE EXCEPTION 'leaf % is still attached', p_leaf USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF k.parent_name <> 'horsies_heartbeats' THEN
        EXECUTE format('DELETE FROM horsies_task_idempotency i USING %I h '
                       'WHERE h.idempotency_key IS NOT NULL AND i.idempotency_key = h.idempotency_key '
                       'AND i.task_id = h.id', p_leaf);
        EXECUTE format('DELETE FROM horsies_task_attempts a USING %I h WHERE a.task_id = h.id', p_leaf);
    END IF;
    EXECUTE format('DROP TABLE %I', p_leaf);
    DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name = p_leaf;
END $$;

-- Cataloged leaves whose relation is gone (dropped outside silt), in name
-- order.
CREATE FUNCTION tasks.partition_absent() RETURNS text[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(leaf_name ORDER BY leaf_name COLLATE "C"), '{}')
      FROM horsies_task_history_leaf_catalog WHERE to_regclass(leaf_name) IS NULL
$$;

-- Leaves attached under a class parent or horsies_heartbeats that the
-- catalog does not name (an operator part way through removing one, or a
-- table attached by hand): silt neither covers nor drops them, so the pass
-- names them.
CREATE FUNCTION tasks.partition_uncataloged() RETURNS SETOF text LANGUAGE sql STABLE AS $$
    SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent IN (SELECT to_regclass(tasks.class_parent_name(r.class_key)) FROM horsies_retention_classes r
                            WHERE r.duration_s IS NOT NULL AND r.class_key <> 'heartbeats'
                           UNION ALL SELECT 'horsies_heartbeats'::regclass)
       AND NOT EXISTS (SELECT 1 FROM horsies_task_history_leaf_catalog k WHERE k.leaf_name = c.relname)
     ORDER BY c.relname COLLATE "C"
$$;

-- Records a pass and keeps the last 1,000.
CREATE FUNCTION tasks.partition_pass_record(p_runner text, p_started timestamptz, p_outcome text, p_report json)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO horsies_retention_passes (runner, started_at, outcome, report)
    VALUES (p_runner, p_started, p_outcome, p_report);
    DELETE FROM horsies_retention_passes
     WHERE id <= (SELECT max(id) - 1000 FROM horsies_retention_passes);
$$;

-- ==== What operators see ====================================================

-- Every class with its leaves: how many, their bytes, the oldest day, and
-- the records they hold as the statistics count them (n_live_tup: counted
-- as rows are written, without a scan; a daily leaf can hold millions).
CREATE FUNCTION tasks.retention_classes()
RETURNS TABLE (class_key text, duration_s bigint, origin text, registered_at timestamptz, leaves bigint,
               bytes bigint, records bigint, oldest timestamptz, next_drop timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT r.class_key, r.duration_s, r.origin, r.registered_at,
           count(k.leaf_name) FILTER (WHERE to_regclass(k.leaf_name) IS NOT NULL),
           coalesce(sum(pg_total_relation_size(to_regclass(k.leaf_name))), 0)::bigint,
           coalesce(sum(st.n_live_tup), 0)::bigint,
           min(k.lower_anchor) FILTER (WHERE k.lower_anchor > '-infinity'),
           min(k.upper_anchor + make_interval(secs => r.duration_s))
      FROM horsies_retention_classes r
      LEFT JOIN horsies_task_history_leaf_catalog k ON k.class_key = r.class_key
      LEFT JOIN pg_stat_user_tables st ON st.relid = to_regclass(k.leaf_name)
     GROUP BY r.class_key, r.duration_s, r.origin, r.registered_at
     ORDER BY r.class_key COLLATE "C"
$$;

-- Every cataloged leaf (of one class, or all): its span, size, when it
-- drops and its state: attached, detach_pending, detached or absent.
CREATE FUNCTION tasks.retention_leaves(p_class text)
RETURNS TABLE (leaf_name text, class_key text, day text, lower_anchor timestamptz, upper_anchor timestamptz,
               bytes bigint, drops_at timestamptz, state text)
LANGUAGE sql STABLE AS $$
    SELECT k.leaf_name, k.class_key,
           CASE WHEN k.lower_anchor > '-infinity' THEN to_char(k.lower_anchor AT TIME ZONE 'UTC', 'YYYY-MM-DD') END,
           k.lower_anchor, k.upper_anchor,
           pg_total_relation_size(to_regclass(k.leaf_name)),
           k.upper_anchor + make_interval(secs => r.duration_s),
           CASE WHEN to_regclass(k.leaf_name) IS NULL THEN 'absent'
                WHEN i.inhdetachpending THEN 'detach_pending'
                WHEN i.inhrelid IS NULL THEN 'detached'
                ELSE 'attached' END
      FROM horsies_task_history_leaf_catalog k
      LEFT JOIN horsies_retention_classes r ON r.class_key = k.class_key
      LEFT JOIN pg_inherits i ON i.inhrelid = to_regclass(k.leaf_name)
     WHERE p_class IS NULL OR k.class_key = p_class
     ORDER BY k.class_key COLLATE "C", k.lower_anchor
$$;

-- The newest pass, and what the catalog says now.
CREATE FUNCTION tasks.retention_coverage()
RETURNS TABLE (pass_id bigint, runner text, started_at timestamptz, finished_at timestamptz, outcome text,
               report json, absent jsonb, history_through timestamptz, heartbeats_through timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT p.id, p.runner, p.started_at, p.finished_at, p.outcome, p.report, to_jsonb(tasks.partition_absent()),
           (SELECT min(m.upper) FROM (SELECT max(k.upper_anchor) AS upper
                                        FROM horsies_retention_classes r
                                        LEFT JOIN horsies_task_history_leaf_catalog k
                                          ON k.class_key = r.class_key AND to_regclass(k.leaf_name) IS NOT NULL
                                       WHERE r.duration_s IS NOT NULL AND r.class_key <> 'heartbeats'
                                       GROUP BY r.class_key) m),
           (SELECT max(k.upper_anchor) FROM horsies_task_history_leaf_catalog k
             WHERE k.class_key = 'heartbeats' AND to_regclass(k.leaf_name) IS NOT NULL)
      FROM (SELECT 1) one
      LEFT JOIN LATERAL (SELECT * FROM horsies_retention_passes ORDER BY id DESC LIMIT 1) p ON true
$$;

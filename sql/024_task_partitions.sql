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
-- duration has passed: DETACH ... CONCURRENTLY, then DROP (its functions
-- and the operators' views are in 025).
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

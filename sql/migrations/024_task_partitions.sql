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

-- ==== Leaves for the rows kept so far =======================================

-- The leaves the rows an earlier version kept are moved into, made as this
-- version's partition pass made them. In pg_temp, gone when the migration's
-- session ends: a migration never calls a function of sql/functions, whose
-- later definitions may expect a schema this migration has not reached.

-- A leaf of p_parent for [p_lower, p_upper): made detached, checked,
-- indexed, attached and cataloged. p_indexes: 'suffix:columns'.
CREATE FUNCTION pg_temp.m024_leaf(p_class text, p_parent text, p_leaf text, p_like text, p_column text,
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

-- A class's parent (RANGE by terminal time), or for forever its one leaf,
-- unless made already.
CREATE FUNCTION pg_temp.m024_class_parent(p_class text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    parent text := 'horsies_task_history_' || p_class;
BEGIN
    IF to_regclass(parent) IS NOT NULL THEN RETURN; END IF;
    IF p_class = 'forever' THEN
        EXECUTE format('CREATE TABLE %I (LIKE horsies_task_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', parent);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (retention_class_key IS NOT NULL AND '
                       'retention_class_key = %L)', parent, parent || '_bounds', p_class);
        EXECUTE format('CREATE INDEX %I ON %I (id)', parent || '_id_idx', parent);
        EXECUTE format('CREATE INDEX %I ON %I (enqueued_at)', parent || '_enqueued_idx', parent);
        INSERT INTO horsies_task_history_leaf_catalog (leaf_name, parent_name, class_key, lower_anchor, upper_anchor)
        VALUES (parent, 'horsies_task_history', p_class, '-infinity', 'infinity');
    ELSE
        EXECUTE format('CREATE TABLE %I (LIKE horsies_task_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS) '
                       'PARTITION BY RANGE (finished_at)', parent);
    END IF;
    EXECUTE format('ALTER TABLE horsies_task_history ATTACH PARTITION %I FOR VALUES IN (%L)', parent, p_class);
END $$;

-- ==== The history, partitioned ==============================================

DROP VIEW IF EXISTS tasks.all_tasks;

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
            PERFORM pg_temp.m024_class_parent(c.class_key);
            IF c.class_key <> 'forever' THEN
                PERFORM pg_temp.m024_leaf(c.class_key, 'horsies_task_history_' || c.class_key,
                                          'horsies_task_history_' || c.class_key || '_' || to_char(c.day, 'YYYY_MM_DD'),
                                          'horsies_task_history', 'finished_at', c.day::timestamp AT TIME ZONE 'UTC',
                                          (c.day + 1)::timestamp AT TIME ZONE 'UTC',
                                          format('retention_class_key = %L AND ', c.class_key),
                                          ARRAY['id_idx:id', 'enqueued_idx:enqueued_at']);
            END IF;
        END LOOP;
        INSERT INTO horsies_task_history SELECT * FROM horsies_task_history_unpartitioned;
    END IF;
END $$;

DROP TABLE horsies_task_history_unpartitioned;

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
        PERFORM pg_temp.m024_leaf('heartbeats', 'horsies_heartbeats',
                                  'horsies_heartbeats_' || to_char(h AT TIME ZONE 'UTC', 'YYYY_MM_DD_HH24'),
                                  'horsies_heartbeats', 'sent_at', h, h + interval '1 hour', '',
                                  ARRAY['task_idx:task_id, sent_at']);
    END LOOP;
    INSERT INTO horsies_heartbeats SELECT * FROM horsies_heartbeats_unpartitioned;
END $$;

DROP TABLE horsies_heartbeats_unpartitioned;

-- ==== Registration ==========================================================

-- As 023's, and each class registered gets its parent. p_all_or_none: a
-- server's start registers all or nothing (a conflict refuses the start);
-- a pass registers every class that does not conflict, so that one
-- conflicting class stays contained to itself.
DROP FUNCTION IF EXISTS tasks.register_classes(text[], bigint[], text[]);

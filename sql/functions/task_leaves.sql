-- Retention classes and the leaves of task history and heartbeats.

CREATE OR REPLACE FUNCTION tasks.register_classes(p_keys text[], p_durations bigint[], p_origins text[], p_all_or_none boolean)
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

CREATE OR REPLACE FUNCTION tasks.class_parent_name(p_class text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'horsies_task_history_' || p_class
$$;

CREATE OR REPLACE FUNCTION tasks.history_leaf_name(p_class text, p_day date) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'horsies_task_history_' || p_class || '_' || to_char(p_day, 'YYYY_MM_DD')
$$;

CREATE OR REPLACE FUNCTION tasks.heartbeat_leaf_name(p_hour timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT 'horsies_heartbeats_' || to_char(p_hour AT TIME ZONE 'UTC', 'YYYY_MM_DD_HH24')
$$;

-- A class's own parent (RANGE by terminal time), or for forever its one
-- leaf; made once, when the class is registered. A forever leaf that is
-- cataloged but gone is not made again: like a lost leaf inside the
-- horizon, it waits for the operator's DELETE of its catalog row.
CREATE OR REPLACE FUNCTION tasks.class_parent_ensure(p_class text) RETURNS void LANGUAGE plpgsql AS $$
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

-- A leaf of p_parent for [p_lower, p_upper): made detached, checked, indexed,
-- attached, cataloged, in the caller's transaction. p_key_check is the rest
-- of the partition constraint the CHECK must imply (the class, for history).
CREATE OR REPLACE FUNCTION tasks.leaf_make(p_class text, p_parent text, p_leaf text, p_like text, p_column text,
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
CREATE OR REPLACE FUNCTION tasks.leaf_indexes_repair(p_leaf text, p_indexes text[]) RETURNS text LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION tasks.leaf_absent(p_leaf text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'cataloged leaf % has no relation: after confirming the loss, delete its catalog row '
                    '(DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name = ''%'';)', p_leaf, p_leaf
          USING ERRCODE = 'object_not_in_prerequisite_state';
END $$;

-- The forever class's one leaf: 'created', 'exists' or 'repaired' (an
-- index made again), or the exception of a cataloged leaf that is gone.
CREATE OR REPLACE FUNCTION tasks.forever_leaf_ensure() RETURNS text LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION tasks.history_leaf_ensure(p_class text, p_day date) RETURNS text LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION tasks.heartbeat_leaf_ensure(p_hour timestamptz) RETURNS text LANGUAGE plpgsql AS $$
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

-- Drops a detached leaf and its catalog row. The idempotency keys and the
-- attempts of the tasks it held go with it (a key is free again once its
-- task's record is gone). Refuses a leaf that is still attached.
CREATE OR REPLACE FUNCTION tasks.leaf_drop(p_leaf text) RETURNS void LANGUAGE plpgsql AS $$
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
        EXECUTE format('DELETE FROM tasks.attempt_records a USING %I h WHERE a.task_id = h.id', p_leaf);
    END IF;
    EXECUTE format('DROP TABLE %I', p_leaf);
    DELETE FROM horsies_task_history_leaf_catalog WHERE leaf_name = p_leaf;
END $$;

-- The partition pass: leaves made ahead, expired ones dropped, coverage read.

-- Coverage, one transaction per class (a class's new leaves hold about
-- ten locks each until it commits; all classes at once could fill the lock
-- table). The classes in key order, by byte: every registered class but
-- heartbeats.
CREATE OR REPLACE FUNCTION tasks.partition_classes() RETURNS SETOF text LANGUAGE sql STABLE AS $$
    SELECT class_key FROM horsies_retention_classes WHERE class_key <> 'heartbeats' ORDER BY class_key COLLATE "C"
$$;

-- One class's leaves: today and p_days days ahead for a finite class, the
-- one leaf of forever, each leaf's indexes checked. A class that cannot be
-- served fails alone. Returns a row per leaf made ('created'), per leaf
-- whose index was made again ('repaired'), or the class's failure
-- ('failed', with the reason).
CREATE OR REPLACE FUNCTION tasks.partition_cover_class(p_class text, p_days integer)
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
CREATE OR REPLACE FUNCTION tasks.partition_cover_heartbeats(p_hours integer, p_window_s bigint)
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
CREATE OR REPLACE FUNCTION tasks.partition_finalize(p_timeout_ms integer)
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
CREATE OR REPLACE FUNCTION tasks.partition_expired()
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

-- Cataloged leaves whose relation is gone (dropped outside silt), in name
-- order.
CREATE OR REPLACE FUNCTION tasks.partition_absent() RETURNS text[] LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(leaf_name ORDER BY leaf_name COLLATE "C"), '{}')
      FROM horsies_task_history_leaf_catalog WHERE to_regclass(leaf_name) IS NULL
$$;

-- Leaves attached under a class parent or horsies_heartbeats that the
-- catalog does not name (an operator part way through removing one, or a
-- table attached by hand): silt neither covers nor drops them, so the pass
-- names them.
CREATE OR REPLACE FUNCTION tasks.partition_uncataloged() RETURNS SETOF text LANGUAGE sql STABLE AS $$
    SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent IN (SELECT to_regclass(tasks.class_parent_name(r.class_key)) FROM horsies_retention_classes r
                            WHERE r.duration_s IS NOT NULL AND r.class_key <> 'heartbeats'
                           UNION ALL SELECT 'horsies_heartbeats'::regclass)
       AND NOT EXISTS (SELECT 1 FROM horsies_task_history_leaf_catalog k WHERE k.leaf_name = c.relname)
     ORDER BY c.relname COLLATE "C"
$$;

-- Records a pass and keeps the last 1,000.
CREATE OR REPLACE FUNCTION tasks.partition_pass_record(p_runner text, p_started timestamptz, p_outcome text, p_report json)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO horsies_retention_passes (runner, started_at, outcome, report)
    VALUES (p_runner, p_started, p_outcome, p_report);
    DELETE FROM horsies_retention_passes
     WHERE id <= (SELECT max(id) - 1000 FROM horsies_retention_passes);
$$;

-- Every class with its leaves: how many, their bytes, the oldest day, and
-- the records they hold as the statistics count them (n_live_tup: counted
-- as rows are written, without a scan; a daily leaf can hold millions).
CREATE OR REPLACE FUNCTION tasks.retention_classes()
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
CREATE OR REPLACE FUNCTION tasks.retention_leaves(p_class text)
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
CREATE OR REPLACE FUNCTION tasks.retention_coverage()
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

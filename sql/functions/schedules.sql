-- Schedules: their definitions (tasks.schedules: silt.conf's, written at
-- each server's start, and those made through the API) and one slot fired
-- once across servers (horsies_schedule_state).

-- Fires one slot of a schedule (p_fire; false passes over it), once across
-- any number of servers: the state moves from an earlier slot to this one
-- and the task is inserted in the same transaction, so the server that
-- loses the race changes nothing. p_version: the version of an API
-- schedule's definition the caller read (NULL for silt.conf's, which each
-- server fires from its own file). The row is held shared while the slot
-- is taken, so a change, pause or delete waits for a fire in flight and no
-- fire from the old definition commits after it. Returns the task id
-- (NULL: passed over, the slot already taken, or the definition gone).
CREATE OR REPLACE FUNCTION tasks.schedule_fire(p_name text, p_slot timestamptz, p_fire boolean, p_task text, p_queue text,
                                    p_args text, p_priority integer, p_class text, p_version bigint)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    id uuid := CASE WHEN p_fire THEN tasks.uuid7() END;
BEGIN
    IF p_version IS NOT NULL THEN
        PERFORM 1 FROM tasks.schedules d
          WHERE d.name = p_name AND d.origin = 'api' AND d.version = p_version AND d.paused_at IS NULL
          FOR SHARE;
        IF NOT FOUND THEN RETURN NULL; END IF;
    END IF;
    INSERT INTO horsies_schedule_state AS s (schedule_name, last_slot, last_fired_at, last_task_id)
    VALUES (p_name, p_slot, CASE WHEN p_fire THEN now() END, id)
    ON CONFLICT (schedule_name) DO UPDATE
       SET last_slot = excluded.last_slot, updated_at = now(),
           last_fired_at = CASE WHEN p_fire THEN now() ELSE s.last_fired_at END,
           last_task_id = CASE WHEN p_fire THEN excluded.last_task_id ELSE s.last_task_id END
     WHERE s.last_slot < excluded.last_slot;
    IF NOT FOUND OR NOT p_fire THEN RETURN NULL; END IF;
    INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, retention_class_key)
    VALUES (id, p_task, p_queue, p_args::json, p_priority, 'PENDING', p_class);
    RETURN id;
END $$;

-- The schedules (p_name NULL) or one, with where each stands.
CREATE OR REPLACE FUNCTION tasks.schedule_list(p_name text)
RETURNS TABLE (name text, origin text, cron text, timezone text, task_name text, queue_name text, args json,
               catch_up integer, priority integer, retention_class_key text, paused_at timestamptz, version bigint,
               created_at timestamptz, updated_at timestamptz, last_slot timestamptz, last_fired_at timestamptz,
               last_task_id uuid)
LANGUAGE sql STABLE AS $$
    SELECT d.name, d.origin, d.cron, d.timezone, d.task_name, d.queue_name, d.args, d.catch_up, d.priority,
           d.retention_class_key, d.paused_at, d.version, d.created_at, d.updated_at,
           s.last_slot, s.last_fired_at, s.last_task_id
      FROM tasks.schedules d LEFT JOIN horsies_schedule_state s ON s.schedule_name = d.name
     WHERE p_name IS NULL OR d.name = p_name
     ORDER BY d.name
$$;

-- Nothing before now is owed: a schedule created, resumed or given another
-- cron or timezone goes on from its first slot after now.
CREATE OR REPLACE FUNCTION tasks.schedule_start_from_now(p_name text)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO horsies_schedule_state AS s (schedule_name, last_slot) VALUES (p_name, now())
    ON CONFLICT (schedule_name) DO UPDATE SET last_slot = greatest(s.last_slot, now()), updated_at = now()
$$;

-- An API schedule (the caller checked every field). 'created', or
-- 'exists' (the name is taken, by either origin) with nothing written.
CREATE OR REPLACE FUNCTION tasks.schedule_create(p_name text, p_cron text, p_timezone text, p_task text, p_queue text,
                                      p_args text, p_catch_up integer, p_priority integer, p_class text,
                                      p_paused boolean)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tasks.schedules (name, origin, cron, timezone, task_name, queue_name, args, catch_up, priority,
                                 retention_class_key, paused_at)
    VALUES (p_name, 'api', p_cron, p_timezone, p_task, p_queue, p_args::json, p_catch_up, p_priority, p_class,
            CASE WHEN p_paused THEN now() END)
    ON CONFLICT (name) DO NOTHING;
    IF NOT FOUND THEN RETURN 'exists'; END IF;
    PERFORM tasks.schedule_start_from_now(p_name);
    RETURN 'created';
END $$;

-- The API schedule p_name, locked for a change: 'ok', 'not_found', or
-- 'config' (silt.conf's: the API changes nothing of it).
CREATE OR REPLACE FUNCTION tasks.schedule_lock(p_name text)
RETURNS text LANGUAGE sql AS $$
    SELECT coalesce((SELECT CASE d.origin WHEN 'api' THEN 'ok' ELSE 'config' END
                       FROM tasks.schedules d WHERE d.name = p_name FOR UPDATE), 'not_found')
$$;

-- Changes the fields p_set names (column names; the others keep their
-- value, and a NULL priority or class given means the default). A new
-- cron or timezone starts from now. 'changed', or schedule_lock's refusal.
CREATE OR REPLACE FUNCTION tasks.schedule_change(p_name text, p_set text[], p_cron text, p_timezone text, p_task text,
                                      p_queue text, p_args text, p_catch_up integer, p_priority integer,
                                      p_class text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    outcome text := tasks.schedule_lock(p_name);
    moved boolean;
BEGIN
    IF outcome <> 'ok' THEN RETURN outcome; END IF;
    UPDATE tasks.schedules d SET
        cron = CASE WHEN 'cron' = ANY (p_set) THEN p_cron ELSE d.cron END,
        timezone = CASE WHEN 'timezone' = ANY (p_set) THEN p_timezone ELSE d.timezone END,
        task_name = CASE WHEN 'task_name' = ANY (p_set) THEN p_task ELSE d.task_name END,
        queue_name = CASE WHEN 'queue_name' = ANY (p_set) THEN p_queue ELSE d.queue_name END,
        args = CASE WHEN 'args' = ANY (p_set) THEN p_args::json ELSE d.args END,
        catch_up = CASE WHEN 'catch_up' = ANY (p_set) THEN p_catch_up ELSE d.catch_up END,
        priority = CASE WHEN 'priority' = ANY (p_set) THEN p_priority ELSE d.priority END,
        retention_class_key = CASE WHEN 'retention_class_key' = ANY (p_set) THEN p_class ELSE d.retention_class_key END,
        version = d.version + 1, updated_at = now()
     WHERE d.name = p_name
    RETURNING ('cron' = ANY (p_set) OR 'timezone' = ANY (p_set)) INTO moved;
    IF moved THEN PERFORM tasks.schedule_start_from_now(p_name); END IF;
    RETURN 'changed';
END $$;

-- Pauses (p_pause) or resumes an API schedule. A paused schedule fires
-- nothing; a resumed one goes on from its first slot after now, so the
-- slots of the pause are skipped whatever its catch_up. 'changed',
-- 'unchanged' (it was already so), or schedule_lock's refusal.
CREATE OR REPLACE FUNCTION tasks.schedule_pause(p_name text, p_pause boolean)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    outcome text := tasks.schedule_lock(p_name);
BEGIN
    IF outcome <> 'ok' THEN RETURN outcome; END IF;
    UPDATE tasks.schedules d
       SET paused_at = CASE WHEN p_pause THEN now() END, version = d.version + 1, updated_at = now()
     WHERE d.name = p_name AND (d.paused_at IS NULL) = p_pause;
    IF NOT FOUND THEN RETURN 'unchanged'; END IF;
    IF NOT p_pause THEN PERFORM tasks.schedule_start_from_now(p_name); END IF;
    RETURN 'changed';
END $$;

-- Deletes an API schedule and where it stood: 'deleted', or
-- schedule_lock's refusal.
CREATE OR REPLACE FUNCTION tasks.schedule_delete(p_name text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    outcome text := tasks.schedule_lock(p_name);
BEGIN
    IF outcome <> 'ok' THEN RETURN outcome; END IF;
    DELETE FROM tasks.schedules d WHERE d.name = p_name;
    DELETE FROM horsies_schedule_state s WHERE s.schedule_name = p_name;
    RETURN 'deleted';
END $$;

-- A starting server's silt.conf schedules, written as origin 'config'
-- rows (the arrays are parallel, one element per schedule); config rows
-- its file no longer declares are deleted (every server is given the same
-- file). A name an API schedule had is taken over by the file: its row
-- becomes the file's, and the names so taken are returned.
CREATE OR REPLACE FUNCTION tasks.schedules_declare(p_names text[], p_crons text[], p_zones text[], p_tasks text[],
                                        p_queues text[], p_args text[], p_catch_ups integer[],
                                        p_priorities integer[], p_classes text[])
RETURNS TABLE (taken text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    DELETE FROM tasks.schedules d WHERE d.origin = 'config' AND d.name <> ALL (p_names);
    RETURN QUERY
    WITH api AS (SELECT d.name FROM tasks.schedules d WHERE d.origin = 'api' AND d.name = ANY (p_names)),
         written AS (
        INSERT INTO tasks.schedules AS d (name, origin, cron, timezone, task_name, queue_name, args, catch_up,
                                          priority, retention_class_key)
        SELECT f.name, 'config', f.cron, f.zone, f.task, f.queue, f.args::json, f.catch_up, f.priority, f.class
          FROM unnest(p_names, p_crons, p_zones, p_tasks, p_queues, p_args, p_catch_ups, p_priorities, p_classes)
               AS f(name, cron, zone, task, queue, args, catch_up, priority, class)
        ON CONFLICT (name) DO UPDATE
           SET origin = 'config', cron = excluded.cron, timezone = excluded.timezone, task_name = excluded.task_name,
               queue_name = excluded.queue_name, args = excluded.args, catch_up = excluded.catch_up,
               priority = excluded.priority, retention_class_key = excluded.retention_class_key, paused_at = NULL,
               version = d.version + 1, updated_at = now()
         WHERE (d.origin, d.cron, d.timezone, d.task_name, d.queue_name, d.args::text, d.catch_up, d.priority,
                d.retention_class_key, d.paused_at)
               IS DISTINCT FROM ('config', excluded.cron, excluded.timezone, excluded.task_name, excluded.queue_name,
                                 excluded.args::text, excluded.catch_up, excluded.priority,
                                 excluded.retention_class_key, NULL::timestamptz)
        RETURNING 1)
    SELECT api.name FROM api;
END $$;

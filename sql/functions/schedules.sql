-- Schedules: one slot fired once.

-- Fires one slot of a schedule (p_fire; false passes over it), once across
-- any number of servers: the state moves from an earlier slot to this one
-- and the task is inserted in the same transaction, so the server that
-- loses the race changes nothing. Returns the task id (NULL: passed over,
-- or the slot was already taken).
CREATE OR REPLACE FUNCTION tasks.schedule_fire(p_name text, p_slot timestamptz, p_fire boolean, p_task text, p_queue text,
                                    p_args text, p_priority integer, p_class text)
RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    id uuid := CASE WHEN p_fire THEN tasks.uuid7() END;
BEGIN
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

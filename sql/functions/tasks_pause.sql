-- Pausing a task queue: a paused queue accepts sends and hands nothing out
-- (tasks.claim_many leaves it out, tasks_claim.sql); tasks already claimed
-- or running finish. The state is the queue's row in tasks.paused_queues,
-- shared by every server and kept across restarts; resuming deletes it.

-- Pauses (p_pause) or resumes p_queue; returns its state afterwards and
-- whether this call changed it. A pause takes the queue's pause lock
-- exclusively, which every claim of the queue holds shared while it reads
-- whether the queue is paused: the pause waits for the claims already
-- reading it, and no claim takes from the queue once the pause committed.
CREATE OR REPLACE FUNCTION tasks.queue_pause(p_queue text, p_pause boolean)
RETURNS TABLE (queue_name text, paused boolean, paused_at timestamptz, changed boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    n integer;
BEGIN
    IF p_pause THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('silt.task_pause:' || p_queue, 0));
        INSERT INTO tasks.paused_queues (queue_name) VALUES (p_queue) ON CONFLICT DO NOTHING;
    ELSE
        DELETE FROM tasks.paused_queues p WHERE p.queue_name = p_queue;
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN QUERY SELECT p_queue, p.queue_name IS NOT NULL, p.paused_at, n > 0
                   FROM (SELECT 1) one LEFT JOIN tasks.paused_queues p ON p.queue_name = p_queue;
END $$;

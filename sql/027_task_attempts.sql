-- 027: what GET /api/v1/tasks/:id/attempts reads (src/api/tasks.c, the
-- dashboard's task page): one task's attempts, oldest first. An attempt row
-- is written when its claim starts it (019) and ended with its outcome; the
-- partition pass deletes a leaf's attempts with the leaf (025), so a task
-- whose record is gone has no attempts left either. Whether the task exists
-- at all is the task read's question (tasks.all_tasks, as GET
-- /api/v1/tasks/:id asks it): a task that never started has none here.
CREATE FUNCTION tasks.attempts(p_id uuid)
RETURNS TABLE (attempt integer, worker_id text, claim_id uuid, started_at timestamptz, finished_at timestamptz,
               outcome text, error_code text, error_message text)
LANGUAGE sql STABLE AS $$
    SELECT a.attempt, a.worker_id, a.claim_id, a.started_at, a.finished_at, a.outcome, a.error_code, a.error_message
      FROM horsies_task_attempts a
     WHERE a.task_id = p_id
     ORDER BY a.attempt
$$;

-- 027: what GET /api/v1/tasks/:id/attempts reads (src/api/tasks.c, the
-- dashboard's task page): one task's attempts, oldest first. An attempt row
-- is written when its claim starts it (019) and ended with its outcome; the
-- partition pass deletes a leaf's attempts with the leaf (025), so a task
-- whose record is gone has no attempts left either. Whether the task exists
-- at all is the task read's question (tasks.all_tasks, as GET
-- /api/v1/tasks/:id asks it): a task that never started has none here.

-- Nothing but functions: they live in sql/functions/ now (docs/schema.md).

-- ==== A workflow node's task is rerun into its node (issue 34) ====
--
-- tasks.rerun answers why a task is not rerun (refused) and its workflow's
-- status, where it answered only the task's status and workflow: its
-- result's columns changed, so the old definition goes.
DROP FUNCTION IF EXISTS tasks.rerun(uuid, boolean, text, text, text, integer, integer, boolean, integer, text,
                                    integer, integer, real, text, text);

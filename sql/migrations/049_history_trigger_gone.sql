-- ==== The history's writers advance workflows themselves (issue 35) ====
--
-- tasks.finish_many and tasks.terminalize, the two writers of
-- horsies_task_history, hand the workflow nodes among the rows they wrote to
-- tasks.nodes_entered_history; the statement trigger that did it copied
-- every row, a workflow's or not, into its transition table.
DROP TRIGGER IF EXISTS history_advances_workflows ON horsies_task_history;
DROP FUNCTION IF EXISTS tasks.history_advances_workflows();

-- ==== A task's attempt row is written once, when the attempt ends (issue 35) ====
--
-- A running attempt is the task row's (attempt, worker, claim, started_at);
-- tasks.end_attempt writes its row when it ends, and tasks.attempts shows
-- the running one from the task row. The rows the earlier start wrote for
-- attempts still running go: their end writes them whole. (Servers sharing
-- a database upgrade together: an older server would still write them.)
DELETE FROM horsies_task_attempts a
 USING horsies_tasks t
 WHERE a.task_id = t.id AND a.attempt = t.attempt AND t.status = 'RUNNING' AND a.outcome IS NULL;
-- Nothing updates an attempt's row any more: no room kept for updates.
ALTER TABLE horsies_task_attempts SET (fillfactor = 100);

-- A history row copies its workflow and node from the live row (both
-- writers, tasks.finish_many and tasks.terminalize), so the per-row trigger
-- that looked them up goes.
DROP TRIGGER IF EXISTS history_names_node ON horsies_task_history;
DROP FUNCTION IF EXISTS tasks.history_names_node();

-- tasks.finish_many does the work of finish_many_tasks itself (one lock of
-- the rows, not two), and tasks.fail replaces tasks.finish, which only
-- ever failed an attempt.
DROP FUNCTION IF EXISTS tasks.finish_many_tasks(uuid[], uuid[], text[], text[], text[], text[]);
DROP FUNCTION IF EXISTS tasks.finish(uuid, uuid, text, json, text, text);

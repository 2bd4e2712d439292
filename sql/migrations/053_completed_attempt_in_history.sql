-- ==== The attempt that completes a task is kept in its history row (issue 35) ====
--
-- A completion wrote its attempt twice: an attempt row, and the history row
-- that already holds the attempt's number, worker, start and end. The
-- history row now keeps the attempt's claim as well (claim_id: set by a
-- completion, tasks.finish_many, and by nothing else), and the attempt rows
-- move to tasks.attempt_records: the attempts that did not complete their
-- task, and every attempt that ended before this migration.
-- horsies_task_attempts is now a view of both (sql/functions/tasks_finish.sql),
-- one row per attempt that ended, as before.
ALTER TABLE horsies_task_history ADD COLUMN claim_id uuid;

ALTER TABLE horsies_task_attempts SET SCHEMA tasks;
ALTER TABLE tasks.horsies_task_attempts RENAME TO attempt_records;
ALTER INDEX tasks.horsies_task_attempts_pkey RENAME TO attempt_records_pkey;

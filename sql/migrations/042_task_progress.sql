-- ==== Progress of a running task (issue 34, point 7) ====
--
-- A running task's worker reports how far it is with its heartbeat: a
-- number (progress), a small JSON value (progress_info, at most 4 KiB,
-- bounded by the server before it is written) or both, and when it last
-- did (progress_at). The live row holds the latest report; the history
-- record keeps the last one its attempt made, so a finished task shows
-- where it ended. NULL: nothing reported.
ALTER TABLE horsies_tasks
    ADD COLUMN progress double precision,
    ADD COLUMN progress_info json,
    ADD COLUMN progress_at timestamptz;
ALTER TABLE horsies_task_history
    ADD COLUMN progress double precision,
    ADD COLUMN progress_info json,
    ADD COLUMN progress_at timestamptz;

-- tasks.heartbeat takes each task's report beside its claim.
DROP FUNCTION IF EXISTS tasks.heartbeat(text, uuid[], uuid[]);

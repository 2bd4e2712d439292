-- ==== Pausing a task queue; rerunning a finished task (issue 34, points 3-4) ====
--
-- A paused queue accepts sends and hands nothing out: tasks.claim skips
-- the queues listed here, in the claim statement itself (no query of its
-- own per claim). The row is the state, shared by every server and kept
-- across restarts; resuming deletes it.
CREATE TABLE tasks.paused_queues (
    queue_name text PRIMARY KEY,
    paused_at  timestamptz NOT NULL DEFAULT now()
);

-- A rerun is a new task naming the one it reruns. It copies the original's
-- retry policy and timeout, which history did not keep until now: a
-- record that ended before this migration reruns with its maxRetries and
-- no delays, no retryOn list and no timeout.
ALTER TABLE horsies_tasks ADD COLUMN rerun_of uuid;
ALTER TABLE horsies_task_history
    ADD COLUMN timeout_ms integer,
    ADD COLUMN retry_delays_ms integer[],
    ADD COLUMN retry_base_ms integer,
    ADD COLUMN retry_cap_ms integer,
    ADD COLUMN retry_jitter real,
    ADD COLUMN retry_on text[],
    ADD COLUMN rerun_of uuid;

-- tasks.send takes the reruns' originals (p_rerun_of, optional: callers of
-- the 17 arrays are unchanged).
DROP FUNCTION IF EXISTS tasks.send(uuid[], text[], text[], text[], integer[], timestamptz[], bigint[], timestamptz[],
                                   integer[], integer[], text[], integer[], integer[], real[], text[], text[], text[]);

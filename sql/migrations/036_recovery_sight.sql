-- ==== Recovery does not count time it could not see (issue 30) ====
--
-- Recovery failed a RUNNING task WORKER_CRASHED once its last stored
-- heartbeat was older than running_stale_after_ms. While PostgreSQL (or
-- every server) is down, no heartbeat can be stored, so the first pass
-- after an outage longer than the threshold failed every task that ran
-- through it, although its worker was alive and still heartbeating into
-- the void.
--
-- Recovery now keeps its own clock of sight: the time of its last pass and
-- the moment it could see again. Sight restarts when the server running
-- the pass says its previous pass failed (the database was unreachable:
-- it was blind), and when a pass comes much later than the check interval
-- says (more than twice the interval, and at least five seconds more:
-- nobody could run recovery meanwhile, e.g. no server was running). A task
-- is stale only when both its last heartbeat and the restart of sight are
-- older than the threshold. A worker that really died is still failed, one
-- threshold (plus a check interval) after recovery could see again.

CREATE TABLE tasks.recovery_sight (
    only_row     boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    last_pass_at timestamptz NOT NULL,   -- the last recovery pass that committed
    seeing_since timestamptz NOT NULL    -- passes have come regularly since then
);

DROP FUNCTION IF EXISTS tasks.recover_if_owner(integer, integer);

DROP FUNCTION IF EXISTS tasks.recover(integer, integer);

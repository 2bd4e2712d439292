-- ==== Schedules at run time (issue 34, point 6) ==============================
--
-- Every schedule's definition, whichever way it came: origin 'config' rows
-- are written from silt.conf at each server's start (tasks.schedules_declare)
-- and cannot be changed through the API; origin 'api' rows are created,
-- changed, paused and deleted only through it. Where a schedule stands (the
-- last slot taken) stays in horsies_schedule_state, keyed by the same name.
CREATE TABLE tasks.schedules (
    name                text PRIMARY KEY,
    origin              text NOT NULL CHECK (origin IN ('config', 'api')),
    cron                text NOT NULL,
    timezone            text NOT NULL DEFAULT 'UTC',
    task_name           text NOT NULL,
    queue_name          text NOT NULL,
    args                json NOT NULL DEFAULT 'null',   -- as the client or silt.conf wrote it
    catch_up            integer NOT NULL DEFAULT 0 CHECK (catch_up BETWEEN 0 AND 1000),   -- 0: skip
    priority            integer CHECK (priority BETWEEN 1 AND 100),   -- NULL: the queue's
    retention_class_key text,              -- NULL: the queue's mapping, else standard_30d
    paused_at           timestamptz,       -- NULL: running
    version             bigint NOT NULL DEFAULT 1,   -- bumped by every change: a fire names the one it read
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- tasks.schedule_fire takes the version of the definition the scheduler
-- read (p_version), so a fire from a changed, paused or deleted definition
-- is refused in the database.
DROP FUNCTION IF EXISTS tasks.schedule_fire(text, timestamptz, boolean, text, text, text, integer, text);

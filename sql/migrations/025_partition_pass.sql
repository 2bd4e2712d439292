-- 025: the partition pass's functions (src/tasks/partition_pass.c) and
-- what operators see of task-record retention (src/api/task_retention.c):
-- coverage one class per transaction, finalizing pending detaches, the
-- leaves due to drop and their drop, absent and uncataloged leaves, the
-- record of each pass, and the classes, leaves and coverage surfaces. The
-- partitioned tables, the leaf catalog and the making of leaves are 024's.

-- The passes, newest last: what each did (the report the run route
-- answers) and whether it was healthy. The coverage surface of any server
-- reads the newest; the pass keeps the last 1,000.
CREATE TABLE horsies_retention_passes (
    id          bigserial PRIMARY KEY,
    runner      text NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    outcome     text NOT NULL CHECK (outcome IN ('ok', 'incomplete', 'failed')),
    report      json NOT NULL
);

-- ==== The pass ==============================================================

-- ==== What operators see ====================================================

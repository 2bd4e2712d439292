-- 020: workflows on the task engine (docs/workflows.md).
--
-- A workflow is a DAG of nodes; each node runs one task. A node advances
-- in the transaction that makes its task terminal (a trigger on the
-- history rows those transactions write calls tasks.nodes_ended), or,
-- when recovery ended the task (a crashed worker, a timeout), through the
-- outbox horsies_workflow_phase2_pending, applied by the maintenance owner.
-- A node moves only when its current task_id ends, so a completion is never
-- applied twice.

-- ==== Records ===============================================================

CREATE TABLE horsies_workflows (
    id            uuid PRIMARY KEY,
    name          text NOT NULL,
    status        text NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'PAUSED',
                                                  'CANCELLED', 'EXPIRED')),
    on_error      text NOT NULL CHECK (on_error IN ('FAIL', 'PAUSE')),
    output_node   text,                       -- NULL: every sink node
    open_nodes    integer NOT NULL DEFAULT 0, -- nodes not yet COMPLETED, FAILED or SKIPPED
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    paused_at     timestamptz,
    finished_at   timestamptz,
    result        json,                       -- the output node's
    error_code    text,
    error_message text
);

CREATE INDEX horsies_workflows_status ON horsies_workflows (status, id);

CREATE TABLE horsies_workflow_tasks (
    workflow_id       uuid NOT NULL REFERENCES horsies_workflows (id) ON DELETE CASCADE,
    node_id           text NOT NULL,
    task_name         text NOT NULL,
    queue_name        text NOT NULL,
    args              json NOT NULL,
    priority          integer NOT NULL,
    timeout_ms        integer,
    max_retries       integer NOT NULL DEFAULT 0,
    retry_delays_ms   integer[],
    retry_base_ms     integer,
    retry_cap_ms      integer,
    retry_jitter      real NOT NULL DEFAULT 0,
    retry_on          text[],
    good_until        timestamptz,
    retention_class_key text NOT NULL,       -- resolved when the workflow was accepted (its enqueue)
    waits_for         text[] NOT NULL DEFAULT '{}',
    join_kind         text NOT NULL DEFAULT 'all' CHECK (join_kind IN ('all', 'any', 'quorum')),
    min_success       integer,
    allow_failed_deps boolean NOT NULL DEFAULT false,
    deps_done         integer NOT NULL DEFAULT 0,   -- predecessors COMPLETED so far
    deps_failed       integer NOT NULL DEFAULT 0,   -- predecessors FAILED or SKIPPED so far
    next_nodes        text[] NOT NULL DEFAULT '{}', -- the nodes that wait for this one (set at create)
    args_from         jsonb,                  -- {"parameter": "predecessor node id"}
    status            text NOT NULL DEFAULT 'PENDING'
                      -- RUNNING is shown (tasks.workflow_nodes), not stored
                      CHECK (status IN ('PENDING', 'READY', 'ENQUEUED', 'COMPLETED', 'FAILED', 'SKIPPED')),
    task_id           uuid,                   -- its task, once enqueued
    result            json,
    error_code        text,
    error_message     text,
    finished_at       timestamptz,
    PRIMARY KEY (workflow_id, node_id)
);

CREATE UNIQUE INDEX horsies_workflow_tasks_task ON horsies_workflow_tasks (task_id) WHERE task_id IS NOT NULL;

-- Crashed-worker progression evidence: a node task that recovery ended,
-- waiting for the maintenance owner to advance its workflow.
CREATE TABLE horsies_workflow_phase2_pending (
    task_id       uuid PRIMARY KEY,
    workflow_id   uuid NOT NULL REFERENCES horsies_workflows (id) ON DELETE CASCADE,
    node_id       text NOT NULL,
    task_status   text NOT NULL,
    error_code    text,
    error_message text,
    created_at    timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE horsies_tasks ADD COLUMN workflow_id uuid, ADD COLUMN workflow_node text;

ALTER TABLE horsies_task_history ADD COLUMN workflow_id uuid, ADD COLUMN workflow_node text;

-- ==== Advancement ===========================================================
--
-- Set-based: the node tasks a statement ended (a finish batch ends many)
-- advance together, so each hot row (the workflow's open count, a fan-in
-- node's counters) is written once per wave of ends rather than once per
-- node, and workflows are locked once, in id order.

-- Renamed: tasks.finish_many_tasks (sql/functions/).
DROP FUNCTION IF EXISTS tasks.finish_many(uuid[], uuid[], text[], text[], text[], text[]);

-- ==== Hooks into the task engine ============================================
--
-- Tasks know nothing of workflows: these triggers connect them, and cost a
-- plain task one index probe when it ends.

-- ==== Schedules =============================================================

-- Where each schedule of silt.conf stands: the last slot it fired (or
-- passed over, catching up by skipping), the same for every server.
CREATE TABLE horsies_schedule_state (
    schedule_name text PRIMARY KEY,
    last_slot     timestamptz NOT NULL,
    last_fired_at timestamptz,
    last_task_id  uuid,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- 019: the task engine's records and transitions.
--
-- Tasks are rows, not log frames: they change state. The tables carry the
-- names the Retention Config document (the second seed) and its system use,
-- on the default search path, so that its SQL works as written in psql. The
-- functions live in schema `tasks`. Every transition is one statement or one
-- function call, so it commits whole: a task leaves horsies_tasks for
-- horsies_task_history in the transaction that makes it terminal.
--
-- Nothing here sends NOTIFY: a notifying transaction holds a cluster-wide
-- lock from its commit record to the end of its commit, so every send and
-- completion would commit one after another, each waiting for the disk. The
-- server announces what changed once the commit is done (src/tasks/hub.c).
--
--   send ─► PENDING ─claim─► CLAIMED ─start─► RUNNING ─complete─► COMPLETED
--             ▲  │              │                 │ fail ──────────► FAILED
--             │  │ good_until   │ claimer stale   │ runner stale: WORKER_CRASHED
--             │  ▼              │ or released     │ past timeout: TASK_TIMEOUT
--             │ EXPIRED         ▼                 │ cancel acknowledged ► CANCELLED
--             └──────────── PENDING ◄── retry ────┘ (the policy retries the code)
--   cancel: PENDING or CLAIMED ► CANCELLED at once; RUNNING: told on its heartbeat.

CREATE SCHEMA tasks;

-- ==== Live tasks ===========================================================

-- PENDING, CLAIMED and RUNNING only. claim_id fences a claim: every call a
-- worker makes about a task names it, and a claim that recovery took back
-- (or cancel ended) no longer matches, so a late call changes nothing.
CREATE TABLE horsies_tasks (
    id                  uuid PRIMARY KEY,            -- UUIDv7, made by the server
    task_name           text NOT NULL,
    queue_name          text NOT NULL,
    args                json NOT NULL,               -- stored and returned verbatim
    priority            integer NOT NULL,            -- 1 most urgent .. 100
    status              text NOT NULL CHECK (status IN ('PENDING', 'CLAIMED', 'RUNNING')),
    sent_at             timestamptz NOT NULL DEFAULT now(),
    enqueued_at         timestamptz NOT NULL DEFAULT now(),   -- last made PENDING: send or retry
    run_at              timestamptz NOT NULL DEFAULT now(),   -- not claimed before
    good_until          timestamptz,                 -- PENDING past it: EXPIRED
    timeout_ms          integer,                     -- RUNNING longer: TASK_TIMEOUT
    max_retries         integer NOT NULL DEFAULT 0,
    retry_delays_ms     integer[],                   -- fixed delays, the last repeated ...
    retry_base_ms       integer,                     -- ... or exponential: base * 2^(n-1),
    retry_cap_ms        integer,                     --     at most cap
    retry_jitter        real NOT NULL DEFAULT 0,     -- delay * (1 ± jitter), 0..1
    retry_on            text[],                      -- error codes that retry; NULL: every code
    retry_count         integer NOT NULL DEFAULT 0,  -- retries used
    idempotency_key     text,
    retention_class_key text NOT NULL DEFAULT 'standard_30d',
    attempt             integer NOT NULL DEFAULT 0,  -- attempts started
    worker_id           text,
    claim_id            uuid,
    claimed_at          timestamptz,
    started_at          timestamptz,
    last_heartbeat_at   timestamptz,                 -- claimer's while CLAIMED, runner's while RUNNING
    cancel_requested    boolean NOT NULL DEFAULT false,
    last_error_code     text,
    last_error_message  text
);

-- Every task is inserted, updated once or twice and deleted within seconds:
-- the table turns over its whole content many times a minute. Vacuum it
-- after a fixed number of dead rows rather than a fraction of a table that
-- is small by design, and without the cost-based pauses, so claims do not
-- wade through dead versions.
ALTER TABLE horsies_tasks SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
                               autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0,
                               autovacuum_analyze_threshold = 50000);

-- The claim order: priority, then enqueue time, among the queue's PENDING.
CREATE INDEX horsies_tasks_ready ON horsies_tasks (queue_name, priority, enqueued_at) WHERE status = 'PENDING';

-- What recovery and the concurrency cap look at. Nothing else indexes the
-- live table: every index is written on every send, claim and end.
CREATE INDEX horsies_tasks_held ON horsies_tasks (queue_name, status) WHERE status <> 'PENDING';

-- ==== Terminal records =====================================================

-- COMPLETED, FAILED, CANCELLED, EXPIRED. A plain table for now; the
-- retention of task records partitions it by retention class.
CREATE TABLE horsies_task_history (
    id                  uuid PRIMARY KEY,
    task_name           text NOT NULL,
    queue_name          text NOT NULL,
    args                json NOT NULL,
    priority            integer NOT NULL,
    status              text NOT NULL CHECK (status IN ('COMPLETED', 'FAILED', 'CANCELLED', 'EXPIRED')),
    sent_at             timestamptz NOT NULL,
    enqueued_at         timestamptz NOT NULL,
    good_until          timestamptz,
    max_retries         integer NOT NULL,
    retry_count         integer NOT NULL,
    attempt             integer NOT NULL,
    idempotency_key     text,
    retention_class_key text NOT NULL,
    worker_id           text,
    claimed_at          timestamptz,
    started_at          timestamptz,
    finished_at         timestamptz NOT NULL DEFAULT now(),
    result              json,                        -- COMPLETED: what the worker returned
    error_code          text,
    error_message       text
);

CREATE INDEX horsies_task_history_status ON horsies_task_history (status, queue_name, id);

-- A second send with the same key returns the first task, live or finished.
CREATE TABLE horsies_task_idempotency (
    idempotency_key text PRIMARY KEY,
    task_id         uuid NOT NULL
);

-- One row per attempt, from its start; outcome NULL while it runs.
CREATE TABLE horsies_task_attempts (
    task_id       uuid NOT NULL,
    attempt       integer NOT NULL,
    worker_id     text NOT NULL,
    claim_id      uuid NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    outcome       text CHECK (outcome IN ('COMPLETED', 'FAILED', 'CANCELLED')),
    error_code    text,
    error_message text,
    PRIMARY KEY (task_id, attempt)
);

ALTER TABLE horsies_task_attempts SET (fillfactor = 80, autovacuum_vacuum_cost_delay = 0);

   -- room for the HOT end of an attempt

-- Claimer heartbeats (a worker holding a task it has not started) and runner
-- heartbeats (a task running), one row each.
CREATE TABLE horsies_heartbeats (
    task_id   uuid NOT NULL,
    worker_id text NOT NULL,
    role      text NOT NULL CHECK (role IN ('claimer', 'runner')),
    sent_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX horsies_heartbeats_task ON horsies_heartbeats (task_id, sent_at);

-- Workers as they registered, and their periodic snapshots.
CREATE TABLE horsies_workers (
    worker_id     text PRIMARY KEY,
    hostname      text NOT NULL,
    pid           integer NOT NULL,
    queues        text[] NOT NULL,
    concurrency   integer NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE horsies_worker_states (
    worker_id   text NOT NULL,
    snapshot_at timestamptz NOT NULL DEFAULT now(),
    hostname    text NOT NULL,
    pid         integer NOT NULL,
    queues      text[] NOT NULL,
    concurrency integer NOT NULL,
    claimed     integer NOT NULL,   -- tasks it held claimed
    running     integer NOT NULL    -- tasks it ran
);

CREATE INDEX horsies_worker_states_worker ON horsies_worker_states (worker_id, snapshot_at);

-- ==== Transactional enqueue: the SQL API (issue 34, point 1) ====
--
-- Applications send tasks inside their own transactions through public
-- functions (sql/functions/sql_api.sql). The rules a send follows read
-- silt.conf (the declared queues, each queue's priority and retention
-- class, the class keys a send may name): every server writes them here
-- at start (tasks.send_settings_store), so the one function that applies
-- them (tasks.enqueue) serves POST /api/v1/tasks and the SQL API alike.
-- Servers that share a database share a configuration (docs/operations.md):
-- the last one started wrote what is here.

-- One row, once a server has started (before that, tasks.enqueue takes
-- these defaults): what applies to every queue.
CREATE TABLE tasks.send_settings (
    only_row        boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    queues_declared boolean NOT NULL DEFAULT false,   -- silt.conf declares [queue.*]: only those take sends
    class_keys      text[] NOT NULL DEFAULT ARRAY['standard_30d', 'forever'],   -- keys a send may name, in
                                                                                -- the order the 400 lists them
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Each queue silt.conf names: declared ([queue.NAME]) or mapped to a class
-- (queue_retention.NAME), or both.
CREATE TABLE tasks.send_queues (
    queue           text PRIMARY KEY,
    declared        boolean NOT NULL,
    priority        integer NOT NULL,   -- its [queue.NAME] priority; 100 when only mapped
    retention_class text                -- its queue_retention class key; NULL: none (standard_30d)
);

-- The role an application's own role is granted to send: it may call the
-- public functions and nothing else (their grants are made where they are
-- defined, after every migration: sql/functions/sql_api.sql). Roles belong
-- to the cluster, not the database: a second silt database in the same
-- cluster finds it made.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'silt_producer') THEN
        CREATE ROLE silt_producer NOLOGIN;
    END IF;
EXCEPTION WHEN unique_violation OR duplicate_object THEN
    NULL;   -- made meanwhile by the migration of another database of the cluster (roles are the cluster's)
END $$;
GRANT USAGE ON SCHEMA tasks TO silt_producer;

-- The bridge from the migrations 001-018 that the baseline (018_schema.sql)
-- replaced: a database made by those files, at version 13 or later, gets
-- what the baseline has and it lacks, and then counts as at the baseline.
-- `silt migrate` runs this only for such a database (versions below 18
-- recorded), before the migrations after the baseline, in their
-- transaction (src/db/migrate.c).
--
-- Their tables are the baseline's, column for column, up to what 014-018
-- added (maintenance mode's buffer, traces) and the ack's row types the
-- baseline took on later. Their functions are not the baseline's (other
-- arguments, other results), so every one goes: the function files made
-- after the migrations put back today's, and the triggers and view that
-- depended on them.

-- 015: rows whose partition or queue was deleted behind the back.
DELETE FROM queen.log_segments s WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = s.partition_id);
DELETE FROM queen.log_txns t WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = t.partition_id);
DELETE FROM queen.log_dlq d WHERE NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.name = d.queue);

-- 017: maintenance mode.
CREATE TABLE IF NOT EXISTS queen.system_state (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO queen.system_state (key, value) VALUES ('maintenance_mode', '{"enabled": false, "draining": false}')
    ON CONFLICT (key) DO NOTHING;
CREATE TABLE IF NOT EXISTS queen.push_buffer (
    id           bigserial PRIMARY KEY,
    partition_id uuid NOT NULL REFERENCES queen.log_partitions(id) ON DELETE CASCADE,
    messages     integer NOT NULL,
    blob         bytea NOT NULL,
    hashes       bytea NOT NULL,
    message_ids  bytea NOT NULL,
    buffered_at  timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS push_buffer_partition ON queen.push_buffer (partition_id);
CREATE TABLE IF NOT EXISTS queen.push_buffer_txns (
    partition_id uuid NOT NULL,
    hash         bytea NOT NULL,
    message_id   bytea NOT NULL,
    buffer_id    bigint NOT NULL REFERENCES queen.push_buffer(id) ON DELETE CASCADE,
    buffered_at  timestamptz NOT NULL,
    PRIMARY KEY (partition_id, hash)
);
CREATE INDEX IF NOT EXISTS push_buffer_txns_buffer ON queen.push_buffer_txns (buffer_id);

-- 018: traces.
CREATE TABLE IF NOT EXISTS queen.message_traces (
    id             uuid PRIMARY KEY,
    partition_id   uuid NOT NULL REFERENCES queen.log_partitions(id) ON DELETE CASCADE,
    message_offset bigint NOT NULL,
    transaction_id text NOT NULL,
    consumer_group text NOT NULL,
    event_type     text NOT NULL,
    data           json NOT NULL,
    worker_id      text,
    created_at     timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS message_traces_message ON queen.message_traces (partition_id, transaction_id, created_at);
CREATE INDEX IF NOT EXISTS message_traces_offset ON queen.message_traces (partition_id, message_offset);
CREATE TABLE IF NOT EXISTS queen.message_trace_names (
    trace_id   uuid NOT NULL REFERENCES queen.message_traces(id) ON DELETE CASCADE,
    trace_name text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (trace_id, trace_name)
);
CREATE INDEX IF NOT EXISTS message_trace_names_name ON queen.message_trace_names (trace_name, created_at DESC);

-- Every function (and with it the triggers and view that call one), then
-- the ack's row types as the baseline has them.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace LOOP
        EXECUTE format('DROP FUNCTION %s CASCADE', f);
    END LOOP;
END $$;
DROP VIEW IF EXISTS queen.group_cursors;
DROP TYPE IF EXISTS queen.ack_item, queen.ack_resolved, queen.ack_result;
CREATE TYPE queen.ack_item AS (
    idx integer, consumer_group text, partition_id uuid, hash bytea, status text, lease_id uuid
);
CREATE TYPE queen.ack_resolved AS (idx integer, status text, off bigint, error text, noop boolean);
CREATE TYPE queen.ack_result AS (
    idx integer, success boolean, error text, lease_released boolean, dlq boolean,
    noop boolean, dropped boolean, dlq_offset bigint, dlq_base bigint,
    dlq_created timestamptz, dlq_blob bytea
);

-- 001_schema: the message log's tables (see docs/architecture.md).
-- Offsets are per partition, starting at 0; a cursor value c means every
-- offset <= c is committed, so a fresh cursor is -1.

CREATE TABLE queen.queues (
    name        text PRIMARY KEY,
    namespace   text,
    task        text,
    options     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE queen.log_partitions (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    queue         text NOT NULL REFERENCES queen.queues(name) ON DELETE CASCADE,
    name          text NOT NULL,
    last_offset   bigint NOT NULL DEFAULT -1,   -- offset allocator: highest offset written
    log_start     bigint NOT NULL DEFAULT 0,    -- retention watermark: offsets below are gone
    txns_start    bigint NOT NULL DEFAULT 0,    -- sidecar watermark
    last_write_at timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue, name)
);

-- One row per flushed batch of a partition: frames concatenated, zstd-compressed.
CREATE TABLE queen.log_segments (
    partition_id uuid NOT NULL REFERENCES queen.log_partitions(id) ON DELETE CASCADE,
    base_offset  bigint NOT NULL,
    end_offset   bigint NOT NULL,
    created_at   timestamptz NOT NULL,          -- commit time of the whole segment
    blob         bytea NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);
ALTER TABLE queen.log_segments ALTER COLUMN blob SET STORAGE EXTERNAL; -- already compressed

-- The hash sidecar: per segment, the xxh3-128 of each frame's transactionId and
-- the frame's message id (16 bytes each, frame order). Dedup and ack
-- resolution read it; it expires on its own watermark (txns_start).
CREATE TABLE queen.log_txns (
    partition_id uuid NOT NULL REFERENCES queen.log_partitions(id) ON DELETE CASCADE,
    base_offset  bigint NOT NULL,
    created_at   timestamptz NOT NULL,
    hashes       bytea NOT NULL,
    message_ids  bytea NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);

CREATE TABLE queen.log_consumers (
    partition_id    uuid NOT NULL REFERENCES queen.log_partitions(id) ON DELETE CASCADE,
    consumer_group  text NOT NULL,
    committed       bigint NOT NULL,            -- highest committed offset (-1: none)
    lease_end       bigint,                     -- leased span is (committed, lease_end]
    lease_id        uuid,
    lease_expires   timestamptz,
    retry_count     integer NOT NULL DEFAULT 0, -- failed acks charged at the cursor
    total_consumed  bigint NOT NULL DEFAULT 0,
    last_activity_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, consumer_group)
);
CREATE INDEX log_consumers_lease ON queen.log_consumers (lease_id) WHERE lease_id IS NOT NULL;

-- How a group's cursor is seeded in each partition of a queue, remembered per
-- queue so partitions created later are seeded the same way.
CREATE TABLE queen.subscriptions (
    consumer_group text NOT NULL,
    queue          text NOT NULL REFERENCES queen.queues(name) ON DELETE CASCADE,
    from_ts        timestamptz,                -- NULL: from the oldest retained message
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, queue)
);

-- Dead letters: a full copy of the message. No foreign key to segments or
-- partitions on purpose: retention never touches it.
CREATE TABLE queen.log_dlq (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    queue           text NOT NULL,
    partition_id    uuid NOT NULL,
    partition       text NOT NULL,
    consumer_group  text NOT NULL,
    message_offset  bigint NOT NULL,
    message_id      uuid NOT NULL,
    transaction_id  text NOT NULL,
    trace_id        uuid,
    payload         bytea NOT NULL,             -- the payload bytes exactly as pushed
    error_message   text,
    retry_count     integer NOT NULL,
    created_at      timestamptz NOT NULL,       -- the message's createdAt
    failed_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX log_dlq_queue ON queen.log_dlq (queue, failed_at);
CREATE INDEX log_dlq_partition ON queen.log_dlq (partition_id, transaction_id);

CREATE TABLE queen.retention_history (
    id              bigserial PRIMARY KEY,
    partition_id    uuid NOT NULL,
    queue           text NOT NULL,
    partition       text NOT NULL,
    rule            text NOT NULL CHECK (rule IN ('retention', 'completed_retention', 'max_wait_time_eviction')),
    from_offset     bigint NOT NULL,
    to_offset       bigint NOT NULL,
    offsets_dropped bigint NOT NULL,
    leased_dropped  bigint NOT NULL DEFAULT 0,
    executed_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX retention_history_time ON queen.retention_history (executed_at);

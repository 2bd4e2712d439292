-- 018_schema: silt's schema, whole and current, to be read top to bottom.
--
-- It replaced the migrations 001-018 of silt's first development and carries
-- the last of their numbers: a database that ran them has version 18
-- recorded and skips this file; a fresh database runs it. Every change after
-- it is a new numbered file (019_...), and a file once applied is never
-- edited (docs/development.md, "The schema").
--
-- Sections, in order: queues and options; partitions and the log; consumer
-- groups; push and dedup; pop and leases; ack; dead letters; transactions;
-- retention; deletion; maintenance mode; traces; administration.
--
-- The hot path is one round trip per call (push_flush, pop, ack,
-- dead_letter): C does HTTP, framing, compression, hashing and encryption;
-- these functions do locking and bookkeeping under the partition or cursor
-- row lock. Offsets are per partition, starting at 0; a cursor value c means
-- every offset <= c is committed, so a fresh cursor is -1.
--
-- SQLSTATEs the C side acts on: SLD01 duplicate transactionIds, SLE01
-- plaintext for an encrypted queue, SLL01 a required lease is not held,
-- SLA01 an ack inside a transaction failed, SLQ01 dead-letter copies needed,
-- SLN01 no such dead letter. Advisory lock keys: 0x73696c74 (session)
-- migrations (src/db/migrate.c); 7365696 a retention pass; 7365697
-- partition creation; 7365698 the push-buffer drain (transaction-level).

-- ==== Queues and options ===================================================

-- A queue: its name, the tags discovery pops match (namespace, task), and
-- the /configure option set (docs/api.md), always complete: a queue created
-- by a push gets the defaults.
CREATE TABLE queen.queues (
    name        text PRIMARY KEY,
    namespace   text,
    task        text,
    options     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- ==== Partitions and the log ===============================================
--
-- A partition is a sequence of offsets in a queue, created by the first push
-- to it. Its messages are stored as segments: one row per flushed batch,
-- beside a sidecar row of the batch's transactionId hashes.

CREATE TABLE queen.log_partitions (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    queue              text NOT NULL REFERENCES queen.queues(name) ON DELETE CASCADE,
    name               text NOT NULL,
    last_offset        bigint NOT NULL DEFAULT -1,   -- offset allocator: highest offset written
    log_start          bigint NOT NULL DEFAULT 0,    -- retention watermark: offsets below are gone
    txns_start         bigint NOT NULL DEFAULT 0,    -- sidecar watermark
    last_write_at      timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    -- retention's schedule (see Retention):
    oldest_at          timestamptz,   -- commit time of the first retained segment
    retention_check_at timestamptz,   -- NULL: no rule can delete anything yet
    sidecar_check_at   timestamptz,   -- NULL: no sidecar rows
    empty_since        timestamptz,   -- emptied by retention: its last push (NULL again at its next push)
    UNIQUE (queue, name)
) WITH (fillfactor = 50);

   -- room for heap-only updates
-- Every push updates its partitions' rows. No index may cover a column every
-- push changes (last_offset, last_write_at), so that pushes stay heap-only
-- updates of the row. Passes take due partitions from the first two indexes,
-- oldest first; partition cleanup takes its candidates from the third.
CREATE INDEX log_partitions_retention_due ON queen.log_partitions (retention_check_at)
    WHERE retention_check_at IS NOT NULL;

CREATE INDEX log_partitions_sidecar_due ON queen.log_partitions (sidecar_check_at)
    WHERE sidecar_check_at IS NOT NULL;

CREATE INDEX log_partitions_empty ON queen.log_partitions (empty_since) WHERE empty_since IS NOT NULL;

-- One row per flushed batch of a partition: its frames concatenated and
-- compressed together (zstd). Offsets and created_at are assigned under the
-- partition row lock, so created_at never decreases with offset.
--
-- Neither this table nor log_txns has a foreign key to log_partitions: a
-- flush writes a segment and a sidecar row per partition, and the keys'
-- trigger call per row dominated flushes touching thousands of partitions.
-- Statement-level triggers on the rare deletes of partitions do what the keys
-- would have done (see Deletion); pushes never delete, so the hot path pays
-- nothing.
CREATE TABLE queen.log_segments (
    partition_id uuid NOT NULL,
    base_offset  bigint NOT NULL,
    end_offset   bigint NOT NULL,
    created_at   timestamptz NOT NULL,          -- commit time of the whole segment
    blob         bytea NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);

ALTER TABLE queen.log_segments ALTER COLUMN blob SET STORAGE EXTERNAL;

 -- already compressed

-- The hash sidecar: per segment, the xxh3-128 of each frame's transactionId and
-- the frame's message id (16 bytes each, frame order). Dedup and ack
-- resolution read it; it expires on its own watermark (txns_start).
CREATE TABLE queen.log_txns (
    partition_id uuid NOT NULL,
    base_offset  bigint NOT NULL,
    created_at   timestamptz NOT NULL,
    hashes       bytea NOT NULL,
    message_ids  bytea NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);

-- ==== Consumer groups ======================================================

-- A group's cursor on a partition: what it has committed and what it leases.
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

-- ==== Push and dedup =======================================================
--
-- A flush is one call, push_flush, for every partition it touches. Its
-- partitions arrive as parallel arrays (sorted by queue, partition), their
-- segment blobs concatenated in one bytea; they are locked in that order,
-- checked, and written with set-based statements. The same UPDATE starts the
-- retention schedule of a partition that was empty. While maintenance mode is
-- on, the flush goes to the push buffer instead (see Maintenance mode).
--
-- Encryption at rest is done in C (AES-256-GCM, src/streams/encryption.h)
-- before a payload gets here. The schema refuses plaintext for a queue with
-- encryptionEnabled (SLE01), so a server that has not learned yet that the
-- queue encrypts (it was switched on through another server) seals the
-- payloads and retries rather than store plaintext.

-- ==== Pop and leases =======================================================
--
-- A pop claims (committed, end] of a partition for one consumer group under a
-- lease, or commits it at once with autoAck.

-- ==== Ack ==================================================================
--
-- Acknowledgement is an offset commit. transactionIds arrive as xxh3-128
-- hashes and resolve to offsets through the sidecar; the cursor then moves
-- per the ack contract (docs/api.md, "The rules").

-- How queen.ack receives a batch (see "Between C and SQL" in
-- docs/architecture.md): one typed array per field, parallel, the hashes
-- concatenated in one bytea (16 bytes per item). queen.ack_items turns them
-- into one row per item, once; everything below works on those rows.
-- status is 'completed', 'failed', 'retry' or 'dlq'; lease_id is NULL when
-- the client gave none; idx is the item's place in the request, from 0.
CREATE TYPE queen.ack_item AS (
    idx integer, consumer_group text, partition_id uuid, hash bytea, status text, lease_id uuid
);

-- Where one item stands once resolved: its offset (NULL: none), the error
-- that ends it, or noop (completed at or below the cursor: nothing to do).
-- An item succeeds when it has no error.
CREATE TYPE queen.ack_resolved AS (idx integer, status text, off bigint, error text, noop boolean);

-- Per-item outcome rows of queen.ack, in request order within a partition;
-- dlq_* columns are set when the item's message must be copied to the
-- dead-letter queue by the caller (the payload is inside a compressed
-- segment that only C can read).
CREATE TYPE queen.ack_result AS (
    idx integer, success boolean, error text, lease_released boolean, dlq boolean,
    noop boolean, dropped boolean, dlq_offset bigint, dlq_base bigint,
    dlq_created timestamptz, dlq_blob bytea
);

-- ==== Dead letters =========================================================

-- Dead letters: a full copy of the message. No foreign key to segments or
-- partitions on purpose: retention never touches it (but a deleted queue
-- takes its dead letters along, see Deletion).
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
    failed_at       timestamptz NOT NULL DEFAULT now(),
    encrypted       boolean NOT NULL DEFAULT false   -- payload sealed (the queue's encryptionEnabled)
);

CREATE INDEX log_dlq_queue ON queen.log_dlq (queue, failed_at);

CREATE INDEX log_dlq_partition ON queen.log_dlq (partition_id, transaction_id);

-- ==== Transactions =========================================================
--
-- The parts of POST /api/v1/transaction that must fail loudly. Inside a
-- transaction every failure raises, so the whole transaction (its pushes
-- included) rolls back and the client learns why.

-- ==== Retention ============================================================
--
-- The log retention engine (docs/retention.md). Every rule deletes whole
-- segments from the front of a partition and moves its watermark
-- (log_start). The work is done in bounded steps: one step locks one
-- partition row, deletes at most a batch of segments, records what it did
-- in retention_history, and commits.
--
-- Finding work reads a schedule, never every partition: each partition
-- carries the time its oldest segment can first fall under a rule
-- (retention_check_at) and the time its oldest sidecar row leaves the ack
-- window (sidecar_check_at). A push into an empty partition sets them, a
-- step moves them on, a partition pinned by a consumer group is looked at
-- again a pass later, and changing a queue's options or removing cursors
-- reschedules its partitions. A pass takes the due ones from an index,
-- oldest first.
--
-- Reports, dry runs and explain say exactly what a pass does:
-- * A deletion's rule is decided by the whole partition, not by the batch a
--   step happens to look at: each rule's boundary is found exactly (a binary
--   search over the offset index when it lies beyond the step's batch), so
--   the same data is attributed to the same rule whatever
--   RETENTION_BATCH_SIZE is.
-- * Leased offsets are counted for every rule, as offsets (the union of the
--   groups' leased spans), not as (offset, group) pairs.
-- * Dry runs simulate a whole pass: a step can start from a simulated
--   watermark (p_from) instead of the partition's own, for segments and for
--   the sidecar, and partition cleanup can count instead of delete.
-- * Explain reads the same plan and the same schedule as a pass, and its
--   notes name the rule that keeps the oldest data and when it goes.

-- One row per deleting step.
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

-- Which server runs the current pass: one runner per pass across replicas.
CREATE TABLE queen.retention_runner (
    id           integer PRIMARY KEY CHECK (id = 1),
    runner       text NOT NULL,
    lease_until  timestamptz NOT NULL
);

INSERT INTO queen.retention_runner VALUES (1, '', '-infinity');

-- ==== Deletion =============================================================
--
-- A queue or partition deleted by plain SQL (`DELETE FROM queen.queues
-- WHERE name LIKE 'test-%'`, as operators and test harnesses do) leaves
-- nothing behind: cursors and subscriptions go by foreign key, and
-- statement-level triggers take what has no key (segments and sidecar rows,
-- see Partitions and the log; dead letters). DELETE of a queue through the
-- API is that same DELETE (queen.queue_delete).

-- ==== Maintenance mode =====================================================
--
-- Maintenance mode, as Queen's POST /api/v1/system/maintenance. While it is
-- on, pushes are accepted and held in queen.push_buffer, encoded exactly as
-- they would be written to the log, and answered "buffered". When it is
-- turned off the buffer drains into the log in the order it was filled;
-- pushes that arrive while it drains queue behind it, so a partition's order
-- is the order of its pushes. The switch is a row of queen.system_state
-- (Queen's table and key), so every server on the database follows it at
-- its next flush.

CREATE TABLE queen.system_state (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- draining: turned off, but the buffer has not emptied yet.
INSERT INTO queen.system_state (key, value) VALUES ('maintenance_mode', '{"enabled": false, "draining": false}');

-- One row per partition of a buffered flush: the segment as push_flush would
-- have written it.
CREATE TABLE queen.push_buffer (
    id           bigserial PRIMARY KEY,
    partition_id uuid NOT NULL REFERENCES queen.log_partitions(id) ON DELETE CASCADE,
    messages     integer NOT NULL,
    blob         bytea NOT NULL,
    hashes       bytea NOT NULL,
    message_ids  bytea NOT NULL,
    buffered_at  timestamptz NOT NULL
);

CREATE INDEX push_buffer_partition ON queen.push_buffer (partition_id);

-- The transactionIds of buffered messages, so that a repeat pushed during
-- maintenance is a duplicate there too (the log's sidecar cannot see them).
CREATE TABLE queen.push_buffer_txns (
    partition_id uuid NOT NULL,
    hash         bytea NOT NULL,
    message_id   bytea NOT NULL,
    buffer_id    bigint NOT NULL REFERENCES queen.push_buffer(id) ON DELETE CASCADE,
    buffered_at  timestamptz NOT NULL,
    PRIMARY KEY (partition_id, hash)
);

CREATE INDEX push_buffer_txns_buffer ON queen.push_buffer_txns (buffer_id);

-- ==== Traces ===============================================================
--
-- Message traces, as Queen's JavaScript client records them
-- (message.trace({traceName, eventType, data}) posts to /api/v1/traces): a
-- consumer notes named events against a message, read back per message and
-- per trace name. A trace lives exactly as long as the message it describes:
-- retention that deletes a message's segment deletes its traces in the same
-- statement (a statement-level trigger, nothing on the push path), and a
-- deleted partition or queue takes its traces along.

CREATE TABLE queen.message_traces (
    id             uuid PRIMARY KEY,
    partition_id   uuid NOT NULL REFERENCES queen.log_partitions(id) ON DELETE CASCADE,
    message_offset bigint NOT NULL,
    transaction_id text NOT NULL,
    consumer_group text NOT NULL,
    event_type     text NOT NULL,
    data           json NOT NULL,   -- the client's bytes, as a payload is kept
    worker_id      text,
    created_at     timestamptz NOT NULL
);

CREATE INDEX message_traces_message ON queen.message_traces (partition_id, transaction_id, created_at);

CREATE INDEX message_traces_offset ON queen.message_traces (partition_id, message_offset);

CREATE TABLE queen.message_trace_names (
    trace_id   uuid NOT NULL REFERENCES queen.message_traces(id) ON DELETE CASCADE,
    trace_name text NOT NULL,
    created_at timestamptz NOT NULL,   -- the trace's, so a name's newest come first from the index
    PRIMARY KEY (trace_id, trace_name)
);

CREATE INDEX message_trace_names_name ON queen.message_trace_names (trace_name, created_at DESC);

-- ==== Administration =======================================================
--
-- Queue and consumer-group administration. These are not on the hot path,
-- so they build their JSON replies in SQL.

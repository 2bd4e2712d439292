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

-- The options a queue has until /configure says otherwise.
CREATE FUNCTION queen.default_options() RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT '{"leaseTime": 300, "retryLimit": 3, "retryDelay": 1000, "priority": 0,
             "ttl": 3600, "maxSize": 0, "deadLetterQueue": true,
             "dlqAfterMaxRetries": true, "delayedProcessing": 0, "windowBuffer": 0,
             "retentionEnabled": false, "retentionSeconds": 0,
             "completedRetentionSeconds": 0, "maxWaitTimeSeconds": 0,
             "dedupWindowSeconds": 3600, "encryptionEnabled": false}'::jsonb
$$;

-- Creates or updates a queue. p_patch holds only the options given; a key
-- given as null returns to its default. Tags change only when given.
CREATE FUNCTION queen.configure(p_queue text, p_namespace text, p_task text, p_patch jsonb,
                                OUT namespace text, OUT task text, OUT options jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    defaults jsonb := queen.default_options();
    reset    text[];
BEGIN
    SELECT coalesce(array_agg(key), '{}') INTO reset
      FROM jsonb_each(p_patch) WHERE jsonb_typeof(value) = 'null';
    INSERT INTO queen.queues AS q (name, namespace, task, options)
    VALUES (p_queue, p_namespace, p_task, defaults || jsonb_strip_nulls(p_patch))
    ON CONFLICT (name) DO UPDATE SET
        namespace = coalesce(p_namespace, q.namespace),
        task = coalesce(p_task, q.task),
        options = defaults || (q.options - reset) || jsonb_strip_nulls(p_patch)
    RETURNING q.namespace, q.task, q.options INTO namespace, task, options;
END $$;


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
) WITH (fillfactor = 50);   -- room for heap-only updates
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
ALTER TABLE queen.log_segments ALTER COLUMN blob SET STORAGE EXTERNAL; -- already compressed

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

-- Index (0-based) of the 16-byte hash h among the aligned 16-byte entries of
-- hashes, or -1. position() may match across an entry boundary, so misaligned
-- hits are skipped.
CREATE FUNCTION queen.hash_index(hashes bytea, h bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    base integer := 0;
    pos  integer;
BEGIN
    LOOP
        pos := position(h IN substring(hashes FROM base + 1));
        IF pos = 0 THEN RETURN -1; END IF;
        IF (base + pos - 1) % 16 = 0 THEN RETURN (base + pos - 1) / 16; END IF;
        base := base + pos;
    END LOOP;
END $$;


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

-- Frames of p_hashes already pushed to the partition inside the window:
-- "frame:message-id-hex,..." or NULL. Walks sidecar rows newest first and stops
-- at the window's edge (created_at never decreases with offset).
CREATE FUNCTION queen.find_duplicates(p_partition uuid, p_txns_start bigint,
                                      p_cutoff timestamptz, p_hashes bytea)
RETURNS text LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    r      record;
    n      integer := length(p_hashes) / 16;
    found  integer;
    seen   boolean[] := array_fill(false, ARRAY[n]);
    result text;
BEGIN
    FOR r IN SELECT t.created_at, t.hashes, t.message_ids FROM queen.log_txns t
             WHERE t.partition_id = p_partition AND t.base_offset >= p_txns_start
             ORDER BY t.base_offset DESC
    LOOP
        EXIT WHEN r.created_at < p_cutoff;
        FOR i IN 0 .. n - 1 LOOP
            CONTINUE WHEN seen[i + 1];
            found := queen.hash_index(r.hashes, substring(p_hashes FROM i * 16 + 1 FOR 16));
            CONTINUE WHEN found < 0;
            seen[i + 1] := true;
            result := concat_ws(',', result,
                i || ':' || encode(substring(r.message_ids FROM found * 16 + 1 FOR 16), 'hex'));
        END LOOP;
    END LOOP;
    RETURN result;
END $$;

-- Locks the flush's partitions in (queue, name) order, creating missing
-- queues and partitions first. Returns how many exist after.
CREATE FUNCTION queen.lock_partitions(p_queues text[], p_partitions text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n      integer := array_length(p_queues, 1);
    locked integer;
BEGIN
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM queen.log_partitions lp
          JOIN unnest(p_queues, p_partitions) AS x(q, p) ON lp.queue = x.q AND lp.name = x.p
         ORDER BY lp.queue, lp.name FOR UPDATE OF lp) l;
    IF locked = n THEN RETURN locked; END IF;
    -- Creating is rare; one creator at a time keeps concurrent flushes from
    -- waiting on each other's uncommitted partition rows in a cycle.
    PERFORM pg_advisory_xact_lock(7365697);
    INSERT INTO queen.queues (name, options)
    SELECT DISTINCT x.q, queen.default_options() FROM unnest(p_queues) AS x(q) ON CONFLICT DO NOTHING;
    INSERT INTO queen.log_partitions (queue, name)
    SELECT x.q, x.p FROM unnest(p_queues, p_partitions) AS x(q, p) ON CONFLICT DO NOTHING;
    SELECT count(*) INTO locked FROM (
        SELECT 1 FROM queen.log_partitions lp
          JOIN unnest(p_queues, p_partitions) AS x(q, p) ON lp.queue = x.q AND lp.name = x.p
         ORDER BY lp.queue, lp.name FOR UPDATE OF lp) l;
    RETURN locked;
END $$;

-- Refusals that abort the whole flush: plaintext for a queue with
-- encryptionEnabled (SLE01, DETAIL the partition's index in the arrays) and
-- duplicate transactionIds inside a queue's dedupWindowSeconds (SLD01,
-- DETAIL "index|frame:message-id-hex,..."). The caller re-encodes the flush
-- without the duplicates and sends it again, so a flush stays
-- all-or-nothing.
CREATE FUNCTION queen.flush_checks(p_queues text[], p_partitions text[], p_counts integer[], p_hashes bytea,
                                   p_probe boolean[], p_encrypted boolean[], p_now timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r    record;
    dups text;
BEGIN
    SELECT x.i, x.q INTO r
      FROM unnest(p_queues, p_encrypted) WITH ORDINALITY AS x(q, enc, i)
      JOIN queen.queues qq ON qq.name = x.q
     WHERE NOT x.enc AND (qq.options->>'encryptionEnabled')::boolean
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'queue % requires encryption', r.q USING ERRCODE = 'SLE01', DETAIL = (r.i - 1)::text;
    END IF;
    IF NOT (true = ANY (p_probe)) THEN RETURN; END IF;
    FOR r IN SELECT x.i, x.c, x.first, (qq.options->>'dedupWindowSeconds')::integer AS win, lp.id, lp.txns_start
               FROM (SELECT u.*, (sum(u.c) OVER (ORDER BY u.i) - u.c)::integer AS first
                       FROM unnest(p_queues, p_partitions, p_counts, p_probe) WITH ORDINALITY AS u(q, p, c, probe, i)) x
               JOIN queen.queues qq ON qq.name = x.q
               JOIN queen.log_partitions lp ON lp.queue = x.q AND lp.name = x.p
              WHERE x.probe
    LOOP
        CONTINUE WHEN r.win <= 0;
        dups := queen.find_duplicates(r.id, r.txns_start, p_now - make_interval(secs => r.win),
                                      substring(p_hashes FROM r.first * 16 + 1 FOR r.c * 16));
        IF dups IS NOT NULL THEN
            RAISE EXCEPTION 'duplicate transaction ids' USING ERRCODE = 'SLD01', DETAIL = (r.i - 1) || '|' || dups;
        END IF;
    END LOOP;
END $$;

-- Appends one segment to each partition of a flush (locked by the caller),
-- assigning offsets and created_at under the partition row locks (so
-- created_at never decreases with offset). Rows: the partition's index in
-- the arrays (0-based), its id, the segment's base offset and commit time.
-- push_flush and the buffer drain append this way.
-- PL/pgSQL rather than SQL: its statement's plan is kept for the session,
-- where a SQL function's would be made again on every flush.
CREATE FUNCTION queen.append_segments(p_queues text[], p_partitions text[], p_counts integer[],
                                      p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                      now_ts timestamptz)
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH w AS MATERIALIZED (   -- each queue's windows, once per flush rather than per partition
        SELECT qq.name, queen.rules_window(qq.options) AS rules, (queen.retention_windows(qq.options)).ack_window AS ack
          FROM queen.queues qq WHERE qq.name = ANY (p_queues)),
    x AS (
        SELECT u.i, u.q, u.p, u.c, u.len,
               (sum(u.len) OVER (ORDER BY u.i) - u.len)::integer AS blob_at,
               (sum(u.c) OVER (ORDER BY u.i) - u.c)::integer AS frame_at
          FROM unnest(p_queues, p_partitions, p_counts, p_blob_lens) WITH ORDINALITY AS u(q, p, c, len, i)),
    upd AS (
        UPDATE queen.log_partitions lp
           SET last_offset = lp.last_offset + x.c, last_write_at = now_ts, empty_since = NULL,
               oldest_at = coalesce(lp.oldest_at, now_ts),
               retention_check_at = coalesce(lp.retention_check_at, now_ts + make_interval(secs => w.rules)),
               sidecar_check_at = coalesce(lp.sidecar_check_at, now_ts + make_interval(secs => w.ack))
          FROM x JOIN w ON w.name = x.q
         WHERE lp.queue = x.q AND lp.name = x.p
        RETURNING x.i, lp.id, lp.last_offset - x.c + 1 AS base, x.c, x.len, x.blob_at, x.frame_at),
    seg AS (
        INSERT INTO queen.log_segments (partition_id, base_offset, end_offset, created_at, blob)
        SELECT upd.id, upd.base, upd.base + upd.c - 1, now_ts, substring(p_blobs FROM upd.blob_at + 1 FOR upd.len)
          FROM upd),
    txn AS (
        INSERT INTO queen.log_txns (partition_id, base_offset, created_at, hashes, message_ids)
        SELECT upd.id, upd.base, now_ts, substring(p_hashes FROM upd.frame_at * 16 + 1 FOR upd.c * 16),
               substring(p_ids FROM upd.frame_at * 16 + 1 FOR upd.c * 16)
          FROM upd)
    SELECT (upd.i - 1)::integer, upd.id, upd.base, now_ts FROM upd;
END $$;

-- A flush: locks, checks, then appends (or, in maintenance mode, buffers).
-- Rows as append_segments; base_offset is NULL for a buffered flush.
CREATE FUNCTION queen.push_flush(p_queues text[], p_partitions text[], p_counts integer[],
                                 p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                 p_probe boolean[], p_encrypted boolean[])
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    now_ts timestamptz;
BEGIN
    PERFORM queen.lock_partitions(p_queues, p_partitions);
    now_ts := clock_timestamp();
    PERFORM queen.flush_checks(p_queues, p_partitions, p_counts, p_hashes, p_probe, p_encrypted, now_ts);
    IF queen.flush_buffers() THEN
        RETURN QUERY SELECT * FROM queen.buffer_flush(p_queues, p_partitions, p_counts, p_blobs, p_blob_lens,
                                                      p_hashes, p_ids, p_probe, now_ts);
    ELSE
        RETURN QUERY SELECT * FROM queen.append_segments(p_queues, p_partitions, p_counts, p_blobs, p_blob_lens,
                                                         p_hashes, p_ids, now_ts);
    END IF;
END $$;


-- ==== Pop and leases =======================================================
--
-- A pop claims (committed, end] of a partition for one consumer group under a
-- lease, or commits it at once with autoAck.

-- The time a group's cursors are seeded from in a queue (NULL: the oldest
-- retained message), remembered at the group's first contact with the queue.
-- p_subscription: NULL or 'all', 'now', or an ISO timestamp.
CREATE FUNCTION queen.subscription_start(p_group text, p_queue text, p_subscription text)
RETURNS timestamptz LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    ts timestamptz;
BEGIN
    IF p_group = '__QUEUE_MODE__' THEN RETURN NULL; END IF;
    SELECT s.from_ts INTO ts FROM queen.subscriptions s
     WHERE s.consumer_group = p_group AND s.queue = p_queue;
    IF FOUND THEN RETURN ts; END IF;
    ts := CASE WHEN p_subscription IS NULL OR p_subscription = 'all' THEN NULL
               WHEN p_subscription = 'now' THEN now()
               ELSE p_subscription::timestamptz END;
    INSERT INTO queen.subscriptions (consumer_group, queue, from_ts)
    VALUES (p_group, p_queue, ts) ON CONFLICT DO NOTHING;
    SELECT s.from_ts INTO ts FROM queen.subscriptions s
     WHERE s.consumer_group = p_group AND s.queue = p_queue;
    RETURN ts;
END $$;

-- Where a new cursor starts: before the first retained segment committed at or
-- after p_from, at the watermark when p_from is NULL, at the end when no
-- segment is that new. Lookups start at the watermark.
CREATE FUNCTION queen.seed_cursor(p_partition uuid, p_from timestamptz) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    part queen.log_partitions%ROWTYPE;
    first_base bigint;
BEGIN
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    IF p_from IS NULL THEN RETURN part.log_start - 1; END IF;
    SELECT s.base_offset INTO first_base FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset >= part.log_start
       AND s.created_at >= p_from
     ORDER BY s.base_offset LIMIT 1;
    RETURN coalesce(first_base - 1, part.last_offset);
END $$;

-- Locks the group's cursor on a partition, creating it from the subscription
-- on first contact. NULL when another session holds it.
CREATE FUNCTION queen.lock_cursor(p_partition uuid, p_group text, p_from timestamptz)
RETURNS queen.log_consumers LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c queen.log_consumers%ROWTYPE;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE SKIP LOCKED;
    IF FOUND THEN RETURN c; END IF;
    INSERT INTO queen.log_consumers (partition_id, consumer_group, committed)
    VALUES (p_partition, p_group, queen.seed_cursor(p_partition, p_from))
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN RETURN NULL; END IF;
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    RETURN c;
END $$;

-- Highest offset a pop may hand out now: the partition's end, held back by
-- windowBuffer (nothing while the newest message is too young) and
-- delayedProcessing (only segments old enough). -1 means nothing.
CREATE FUNCTION queen.deliverable_end(part queen.log_partitions, opts jsonb) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    win   integer := (opts->>'windowBuffer')::integer;
    delay integer := (opts->>'delayedProcessing')::integer;
    ready bigint;
BEGIN
    IF win > 0 AND part.last_write_at > now() - make_interval(secs => win) THEN RETURN -1; END IF;
    IF delay <= 0 THEN RETURN part.last_offset; END IF;
    SELECT s.end_offset INTO ready FROM queen.log_segments s
     WHERE s.partition_id = part.id AND s.created_at <= now() - make_interval(secs => delay)
     ORDER BY s.base_offset DESC LIMIT 1;
    RETURN coalesce(ready, -1);
END $$;

-- Claims up to p_batch offsets of one partition; NULL span when there is
-- nothing to claim (cursor held elsewhere, live lease, nothing deliverable).
CREATE FUNCTION queen.claim(p_partition uuid, p_group text, p_from timestamptz, opts jsonb,
                            p_batch integer, p_auto_ack boolean, p_lease uuid,
                            OUT cursor_from bigint, OUT cursor_to bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    part  queen.log_partitions%ROWTYPE;
    c     queen.log_consumers%ROWTYPE;
BEGIN
    c := queen.lock_cursor(p_partition, p_group, p_from);
    IF c.partition_id IS NULL OR c.lease_expires > now() THEN RETURN; END IF;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    cursor_from := greatest(c.committed, part.log_start - 1);
    cursor_to := least(cursor_from + p_batch, queen.deliverable_end(part, opts));
    IF cursor_to <= cursor_from THEN cursor_to := NULL; RETURN; END IF;
    IF p_auto_ack THEN
        UPDATE queen.log_consumers SET committed = cursor_to, retry_count = 0,
               total_consumed = total_consumed + (cursor_to - cursor_from),
               lease_id = NULL, lease_end = NULL, lease_expires = NULL, last_activity_at = now()
         WHERE partition_id = p_partition AND consumer_group = p_group;
    ELSE
        UPDATE queen.log_consumers SET committed = cursor_from, lease_id = p_lease,
               lease_end = cursor_to, last_activity_at = now(),
               lease_expires = now() + make_interval(secs => (opts->>'leaseTime')::integer)
         WHERE partition_id = p_partition AND consumer_group = p_group;
    END IF;
END $$;

-- One pop: claims partitions with something deliverable, least recently
-- served first, of one queue (or one partition of it) or, with p_queue NULL,
-- of any queue whose tags match p_namespace and p_task (a discovery pop). Up
-- to p_partitions partitions under one lease, p_batch offsets in total.
-- Returns the segments covering each claimed span, one row each, in offset
-- order.
CREATE FUNCTION queen.pop(p_queue text, p_partition text, p_namespace text, p_task text,
                          p_group text, p_batch integer, p_partitions integer,
                          p_auto_ack boolean, p_subscription text, p_lease uuid)
RETURNS TABLE (queue text, partition_id uuid, partition text, cursor_from bigint, cursor_to bigint,
               seg_base bigint, seg_created timestamptz, seg_blob bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    remaining integer := p_batch;
    claimed   integer := 0;
    cand      record;
    span      record;
BEGIN
    FOR cand IN
        SELECT p.id, p.name, p.queue, q.options FROM queen.log_partitions p
          JOIN queen.queues q ON q.name = p.queue
          LEFT JOIN queen.log_consumers c ON c.partition_id = p.id AND c.consumer_group = p_group
         WHERE (p_queue IS NULL OR p.queue = p_queue) AND (p_partition IS NULL OR p.name = p_partition)
           AND (p_namespace IS NULL OR q.namespace = p_namespace) AND (p_task IS NULL OR q.task = p_task)
           AND p.last_offset >= p.log_start
           AND (c.partition_id IS NULL OR (p.last_offset > c.committed
                AND (c.lease_expires IS NULL OR c.lease_expires <= now())))
         ORDER BY c.last_activity_at NULLS FIRST
    LOOP   -- no limit: partitions that cannot deliver yet (a window, a delay, a cursor
           -- another pop holds) must not hide one that can; rows are fetched as the loop goes
        span := queen.claim(cand.id, p_group, queen.subscription_start(p_group, cand.queue, p_subscription),
                            cand.options, remaining, p_auto_ack, p_lease);
        CONTINUE WHEN span.cursor_to IS NULL;
        RETURN QUERY
            SELECT cand.queue, cand.id, cand.name, span.cursor_from, span.cursor_to,
                   s.base_offset, s.created_at, s.blob
              FROM queen.log_segments s
             WHERE s.partition_id = cand.id AND s.base_offset <= span.cursor_to
               AND s.base_offset >= coalesce((SELECT max(s2.base_offset) FROM queen.log_segments s2
                                               WHERE s2.partition_id = cand.id
                                                 AND s2.base_offset <= span.cursor_from + 1), 0)
             ORDER BY s.base_offset;
        remaining := remaining - (span.cursor_to - span.cursor_from)::integer;
        claimed := claimed + 1;
        EXIT WHEN claimed >= p_partitions OR remaining <= 0;
    END LOOP;
END $$;

-- Renews every partition lease held under p_lease to at least now + p_seconds.
CREATE FUNCTION queen.extend_lease(p_lease uuid, p_seconds integer,
                                   OUT renewed integer, OUT expires_at timestamptz)
LANGUAGE sql AS $$
    WITH renewed AS (
        UPDATE queen.log_consumers
           SET lease_expires = greatest(lease_expires, now() + make_interval(secs => p_seconds)),
               last_activity_at = now()
         WHERE lease_id = p_lease AND lease_expires > now()
        RETURNING lease_expires)
    SELECT count(*)::integer, max(lease_expires) FROM renewed
$$;


-- ==== Ack ==================================================================
--
-- Acknowledgement is an offset commit. transactionIds arrive as xxh3-128
-- hashes and resolve to offsets through the sidecar; the cursor then moves
-- per the ack contract (docs/api.md, "The rules").

-- Offset of the frame whose hash is p_hash among sidecar rows with base
-- offsets in [p_lo, p_hi], searching newest first; NULL when absent.
CREATE FUNCTION queen.resolve_offset(p_partition uuid, p_lo bigint, p_hi bigint, p_hash bytea)
RETURNS bigint LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    r record;
    i integer;
BEGIN
    FOR r IN SELECT t.base_offset, t.hashes FROM queen.log_txns t
             WHERE t.partition_id = p_partition AND t.base_offset BETWEEN p_lo AND p_hi
             ORDER BY t.base_offset DESC
    LOOP
        i := queen.hash_index(r.hashes, p_hash);
        IF i >= 0 THEN RETURN r.base_offset + i; END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- The base offset of the sidecar row covering offset p_offset (or the lowest
-- retained one), where a search of the leased span starts.
CREATE FUNCTION queen.span_floor(p_partition uuid, p_offset bigint, p_txns_start bigint)
RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT greatest(p_txns_start, coalesce(
        (SELECT max(t.base_offset) FROM queen.log_txns t
          WHERE t.partition_id = p_partition AND t.base_offset <= p_offset), 0))
$$;

-- The segment covering p_offset, if retention has not removed it. Always one
-- row, all NULL when the segment is gone, so a caller that assigns it to a
-- record can test base IS NULL (a SQL function would return a NULL record
-- instead, and a dead-letter hand-off of a removed message would fail rather
-- than answer "dlq rejected").
CREATE FUNCTION queen.covering_segment(p_partition uuid, p_offset bigint,
                                       OUT base bigint, OUT created timestamptz, OUT blob bytea)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT s.base_offset, s.created_at, s.blob INTO base, created, blob
      FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset <= p_offset AND s.end_offset >= p_offset
       AND p_offset >= (SELECT log_start FROM queen.log_partitions WHERE id = p_partition)
     ORDER BY s.base_offset DESC LIMIT 1;
END $$;

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

CREATE FUNCTION queen.ack_items(p_groups text[], p_partitions uuid[], p_hashes bytea,
                                p_statuses text[], p_leases uuid[])
RETURNS SETOF queen.ack_item LANGUAGE sql IMMUTABLE AS $$
    SELECT (u.ord - 1)::integer, u.grp, u.pid, substring(p_hashes FROM (u.ord - 1)::integer * 16 + 1 FOR 16),
           u.status, u.lease
      FROM unnest(p_groups, p_partitions, p_statuses, p_leases) WITH ORDINALITY AS u(grp, pid, status, lease, ord)
$$;

-- Item index -> offset for the items whose hash is in (committed, lease_end]:
-- one set-based join against the span's sidecar rows for the whole batch,
-- rather than one sidecar scan per item.
CREATE FUNCTION queen.span_offsets(c queen.log_consumers, part queen.log_partitions, p_items queen.ack_item[])
RETURNS TABLE (idx integer, off bigint) LANGUAGE plpgsql STABLE AS $$
DECLARE
    lo bigint;
BEGIN
    IF c.lease_end IS NULL THEN RETURN; END IF;
    lo := queen.span_floor(part.id, c.committed + 1, part.txns_start);   -- once, so the scan is an index range
    RETURN QUERY
        SELECT it.idx, f.off
          FROM unnest(p_items) it
          JOIN (SELECT r.base_offset + k AS off, substring(r.hashes FROM k * 16 + 1 FOR 16) AS h
                  FROM queen.log_txns r,   -- only the frames inside the span, however long the segment
                       generate_series(greatest(0, c.committed + 1 - r.base_offset)::integer,
                                       least(length(r.hashes) / 16 - 1, c.lease_end - r.base_offset)::integer) AS k
                 WHERE r.partition_id = part.id AND r.base_offset BETWEEN lo AND c.lease_end) f
            ON f.h = it.hash;
END $$;

-- Where an item outside the leased span stands: below the cursor (completed:
-- a noop; otherwise already committed), above it but not leased, or nowhere.
CREATE FUNCTION queen.ack_locate(c queen.log_consumers, part queen.log_partitions,
                                 p_hash bytea, p_status text,
                                 OUT off bigint, OUT error text, OUT noop boolean)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
BEGIN
    noop := false;
    off := queen.resolve_offset(part.id, part.txns_start, greatest(c.committed, -1), p_hash);
    IF off IS NULL THEN
        error := 'unresolvable: transaction id not found in the partition';
    ELSIF off > c.committed THEN
        error := 'unresolvable: message is not leased'; off := NULL;
    ELSIF p_status = 'completed' THEN
        noop := true;
    ELSE
        error := 'already committed';
    END IF;
END $$;

-- Resolves each item of one (group, partition) to an offset: a lease named
-- must be the cursor's live one; the leased span resolves most items in one
-- join (span_offsets), and only the rest take ack_locate's search. In
-- request order.
CREATE FUNCTION queen.ack_resolve(c queen.log_consumers, part queen.log_partitions, p_items queen.ack_item[])
RETURNS SETOF queen.ack_resolved LANGUAGE plpgsql STABLE AS $$
DECLARE
    it  record;
    loc record;
    res queen.ack_resolved;
BEGIN
    FOR it IN SELECT i.idx, i.hash, i.status, i.lease_id, s.off
                FROM unnest(p_items) i LEFT JOIN queen.span_offsets(c, part, p_items) s ON s.idx = i.idx
               ORDER BY i.idx
    LOOP
        res := ROW(it.idx, it.status, NULL, NULL, false);
        IF it.lease_id IS NOT NULL AND (c.lease_id IS DISTINCT FROM it.lease_id OR c.lease_expires <= now()) THEN
            res.error := 'invalid or expired lease';
        ELSIF it.off IS NOT NULL THEN
            res.off := it.off;
        ELSE
            loc := queen.ack_locate(c, part, it.hash, it.status);
            res.off := loc.off; res.error := loc.error; res.noop := loc.noop;
        END IF;
        RETURN NEXT res;
    END LOOP;
END $$;

-- The ack contract for one (group, partition), in four steps: resolve the
-- items (ack_resolve); find the highest completed offset and the lowest
-- explicit signal (failed, retry, dlq) above the cursor; decide what that
-- signal does (retry in place, drop, or dead-letter) and where the cursor
-- goes; move the cursor. One row per item, in request order.
CREATE FUNCTION queen.ack_partition(p_group text, p_partition uuid, p_items queen.ack_item[])
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c        queen.log_consumers%ROWTYPE;
    part     queen.log_partitions%ROWTYPE;
    opts     jsonb;
    items    queen.ack_resolved[];
    done_max bigint;           -- highest offset acked completed in the span
    stop_idx integer;          -- the explicit signal with the lowest offset (its first item)
    stop_off bigint;
    stop_st  text;
    fate     text;             -- what happens to it: 'dropped' | 'dlq' | 'dlq rejected' | NULL
    seg_base bigint;           -- the segment covering stop_off, for a dead letter
    seg_at   timestamptz;
    seg_blob bytea;
    target   bigint;           -- where the cursor goes
    retries  integer;
    release  boolean := false;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    IF part.id IS NULL OR c.partition_id IS NULL THEN
        RETURN QUERY SELECT i.idx, false, CASE WHEN part.id IS NULL THEN 'unresolvable: unknown partition'
                                          ELSE 'unresolvable: the consumer group has no cursor on this partition' END,
                            false, false, false, false, NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::bytea
                       FROM unnest(p_items) i ORDER BY i.idx;
        RETURN;
    END IF;
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = part.queue;

    -- 1. Resolve. 2. What moves the cursor: only items above it without an error.
    items := ARRAY(SELECT queen.ack_resolve(c, part, p_items));
    SELECT max(i.off) INTO done_max FROM unnest(items) i
     WHERE i.error IS NULL AND i.off > c.committed AND i.status = 'completed';
    SELECT i.idx, i.off, i.status INTO stop_idx, stop_off, stop_st FROM unnest(items) i
     WHERE i.error IS NULL AND i.off > c.committed AND i.status <> 'completed'
     ORDER BY i.off, i.idx LIMIT 1;

    -- 3. Implicit ack up to the highest completed offset, never past an explicit signal.
    target := greatest(c.committed, least(coalesce(done_max, c.committed), coalesce(stop_off - 1, done_max, c.committed)));
    retries := CASE WHEN target > c.committed THEN 0 ELSE c.retry_count END;
    IF stop_st = 'retry' THEN
        release := true;
    ELSIF stop_st = 'failed' AND retries < (opts->>'retryLimit')::integer THEN
        retries := retries + 1; release := true;
    ELSIF stop_st IS NOT NULL AND NOT (coalesce((opts->>'deadLetterQueue')::boolean, true)
                                           OR coalesce((opts->>'dlqAfterMaxRetries')::boolean, true)) THEN
        fate := 'dropped'; target := stop_off; retries := 0;
    ELSIF stop_st IS NOT NULL THEN   -- the cursor stays below it; queen.dead_letter moves it
        SELECT s.base, s.created, s.blob INTO seg_base, seg_at, seg_blob
          FROM queen.covering_segment(p_partition, stop_off) s;
        IF seg_base IS NULL THEN fate := 'dlq rejected'; release := true; ELSE fate := 'dlq'; END IF;
    END IF;

    -- 4. Move the cursor.
    release := release OR target >= c.lease_end;
    UPDATE queen.log_consumers SET committed = target, retry_count = retries,
           total_consumed = total_consumed + (target - c.committed), last_activity_at = now(),
           lease_id = CASE WHEN release THEN NULL ELSE lease_id END,
           lease_end = CASE WHEN release THEN NULL ELSE lease_end END,
           lease_expires = CASE WHEN release THEN NULL ELSE lease_expires END
     WHERE partition_id = p_partition AND consumer_group = p_group;

    -- A drop marks every non-completed item of the stopping offset; a
    -- dead-letter hand-off (or its rejection) only the first of them.
    RETURN QUERY
        SELECT i.idx, i.error IS NULL AND m.mark IS DISTINCT FROM 'dlq rejected',
               CASE WHEN m.mark = 'dlq rejected' THEN m.mark ELSE i.error END,
               release, false, i.noop, m.mark IS NOT DISTINCT FROM 'dropped',
               CASE WHEN m.mark = 'dlq' THEN stop_off END, CASE WHEN m.mark = 'dlq' THEN seg_base END,
               CASE WHEN m.mark = 'dlq' THEN seg_at END, CASE WHEN m.mark = 'dlq' THEN seg_blob END
          FROM unnest(items) i,
               LATERAL (SELECT CASE WHEN i.idx = stop_idx
                                      OR (fate = 'dropped' AND i.off = stop_off AND i.status <> 'completed')
                                    THEN fate END AS mark) m
         ORDER BY i.idx;
END $$;

-- Acks a batch (the arrays of queen.ack_items). Cursors are locked in
-- (partition, group) order, so concurrent batches cannot deadlock.
CREATE FUNCTION queen.ack(p_groups text[], p_partitions uuid[], p_hashes bytea,
                          p_statuses text[], p_leases uuid[])
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
DECLARE
    k record;
BEGIN
    FOR k IN SELECT i.partition_id, i.consumer_group, array_agg(i ORDER BY i.idx) AS items
               FROM queen.ack_items(p_groups, p_partitions, p_hashes, p_statuses, p_leases) i
              GROUP BY 1, 2 ORDER BY 1, 2
    LOOP
        RETURN QUERY SELECT * FROM queen.ack_partition(k.consumer_group, k.partition_id, k.items);
    END LOOP;
END $$;


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

-- Second half of a dead-letter hand-off: stores the full copy C decoded from
-- the covering segment and moves the cursor past it (committing what the
-- leased batch held below it), unless the cursor already passed it. Returns
-- whether the lease was released, or an error.
CREATE FUNCTION queen.dead_letter(p_group text, p_partition uuid, p_offset bigint,
                                  p_message_id uuid, p_transaction_id text, p_trace_id uuid,
                                  p_payload bytea, p_encrypted boolean, p_error text, p_created timestamptz,
                                  OUT lease_released boolean, OUT error text)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c    queen.log_consumers%ROWTYPE;
    part queen.log_partitions%ROWTYPE;
BEGIN
    SELECT * INTO c FROM queen.log_consumers
     WHERE partition_id = p_partition AND consumer_group = p_group FOR UPDATE;
    IF c.partition_id IS NULL OR c.committed >= p_offset THEN
        error := 'already committed'; lease_released := false; RETURN;
    END IF;
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    INSERT INTO queen.log_dlq (queue, partition_id, partition, consumer_group, message_offset,
                               message_id, transaction_id, trace_id, payload, encrypted, error_message,
                               retry_count, created_at)
    VALUES (part.queue, p_partition, part.name, p_group, p_offset, p_message_id,
            p_transaction_id, p_trace_id, p_payload, p_encrypted, p_error, c.retry_count, p_created);
    lease_released := c.lease_end IS NULL OR p_offset >= c.lease_end;
    UPDATE queen.log_consumers SET committed = p_offset, retry_count = 0,
           total_consumed = total_consumed + (p_offset - c.committed), last_activity_at = now(),
           lease_id = CASE WHEN lease_released THEN NULL ELSE lease_id END,
           lease_end = CASE WHEN lease_released THEN NULL ELSE lease_end END,
           lease_expires = CASE WHEN lease_released THEN NULL ELSE lease_expires END
     WHERE partition_id = p_partition AND consumer_group = p_group;
END $$;

CREATE FUNCTION queen.dlq_count(p_queue text, p_group text, p_partition text) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM queen.log_dlq d
     WHERE (p_queue IS NULL OR d.queue = p_queue) AND (p_group IS NULL OR d.consumer_group = p_group)
       AND (p_partition IS NULL OR d.partition = p_partition)
$$;

-- One page, newest first; id breaks ties so pages never overlap or skip.
CREATE FUNCTION queen.dlq_page(p_queue text, p_group text, p_partition text, p_limit integer, p_offset integer)
RETURNS SETOF queen.log_dlq LANGUAGE sql STABLE AS $$
    SELECT * FROM queen.log_dlq d
     WHERE (p_queue IS NULL OR d.queue = p_queue) AND (p_group IS NULL OR d.consumer_group = p_group)
       AND (p_partition IS NULL OR d.partition = p_partition)
     ORDER BY d.failed_at DESC, d.id DESC
     LIMIT p_limit OFFSET p_offset
$$;

-- Removes a dead letter being replayed; raises when it is already gone, which
-- rolls back the replay's push in the same transaction.
CREATE FUNCTION queen.dlq_take(p_id uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_dlq WHERE id = p_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dead letter not found' USING ERRCODE = 'SLN01';
    END IF;
END $$;

-- A retained message by transactionId hash: its offset and covering segment
-- (GET /api/v1/messages/:partitionId/:transactionId).
CREATE FUNCTION queen.message_lookup(p_partition uuid, p_hash bytea,
                                     OUT queue text, OUT partition text, OUT message_offset bigint,
                                     OUT seg_base bigint, OUT seg_created timestamptz, OUT seg_blob bytea)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    part queen.log_partitions%ROWTYPE;
    seg  record;
BEGIN
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    IF NOT FOUND THEN RETURN; END IF;
    message_offset := queen.resolve_offset(part.id, part.txns_start, part.last_offset, p_hash);
    IF message_offset IS NULL THEN RETURN; END IF;
    seg := queen.covering_segment(part.id, message_offset);
    IF seg.base IS NULL THEN message_offset := NULL; RETURN; END IF;
    queue := part.queue; partition := part.name;
    seg_base := seg.base; seg_created := seg.created; seg_blob := seg.blob;
END $$;


-- ==== Transactions =========================================================
--
-- The parts of POST /api/v1/transaction that must fail loudly. Inside a
-- transaction every failure raises, so the whole transaction (its pushes
-- included) rolls back and the client learns why.

-- Every lease named must be live.
CREATE FUNCTION queen.require_leases(p_leases uuid[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    l uuid;
BEGIN
    FOREACH l IN ARRAY p_leases LOOP
        IF NOT EXISTS (SELECT 1 FROM queen.log_consumers WHERE lease_id = l AND lease_expires > now()) THEN
            RAISE EXCEPTION 'required lease % is not held', l USING ERRCODE = 'SLL01';
        END IF;
    END LOOP;
END $$;

-- The dead-letter copies C read from compressed segments for queen.tx_ack,
-- one row per copy: parallel arrays, the payloads concatenated in one bytea
-- (p_lengths bytes each, in order), as pushes send their segments.
CREATE FUNCTION queen.tx_copies(p_items integer[], p_messages uuid[], p_txns text[], p_traces uuid[],
                                p_created timestamptz[], p_encrypted boolean[], p_payloads bytea, p_lengths integer[])
RETURNS TABLE (idx integer, message_id uuid, transaction_id text, trace_id uuid, created timestamptz,
               encrypted boolean, payload bytea) LANGUAGE sql IMMUTABLE AS $$
    SELECT u.idx, u.msg, u.txn, u.trace, u.created, u.enc,
           substring(p_payloads FROM (sum(u.len) OVER (ORDER BY u.ord) - u.len)::integer + 1 FOR u.len)
      FROM unnest(p_items, p_messages, p_txns, p_traces, p_created, p_encrypted, p_lengths)
           WITH ORDINALITY AS u(idx, msg, txn, trace, created, enc, len, ord)
$$;

-- Acks inside a transaction: the arrays of queen.ack, plus each item's
-- transactionId (for the error) and the client's error text (kept with a
-- dead letter), then the dead-letter copies (queen.tx_copies). A hand-off
-- needs the message's frame, which only C can read from the compressed
-- segment: without its copy this raises SLQ01 with DETAIL
-- "<item index>:<offset>,..." naming what is needed, and the caller retries
-- the whole transaction with the copies.
CREATE FUNCTION queen.tx_ack(p_groups text[], p_partitions uuid[], p_hashes bytea, p_statuses text[],
                             p_leases uuid[], p_txns text[], p_errors text[],
                             p_copy_items integer[], p_copy_messages uuid[], p_copy_txns text[],
                             p_copy_traces uuid[], p_copy_created timestamptz[], p_copy_encrypted boolean[],
                             p_copy_payloads bytea, p_copy_lengths integer[])
RETURNS SETOF queen.ack_result LANGUAGE plpgsql AS $$
DECLARE
    r       queen.ack_result;
    copy    record;
    missing text[] := '{}';
    dl      record;
BEGIN
    FOR r IN SELECT * FROM queen.ack(p_groups, p_partitions, p_hashes, p_statuses, p_leases) LOOP
        IF NOT r.success THEN
            RAISE EXCEPTION 'ack of transactionId % failed: %', p_txns[r.idx + 1], r.error USING ERRCODE = 'SLA01';
        END IF;
        IF r.dlq_offset IS NOT NULL THEN
            SELECT * INTO copy
              FROM queen.tx_copies(p_copy_items, p_copy_messages, p_copy_txns, p_copy_traces, p_copy_created,
                                   p_copy_encrypted, p_copy_payloads, p_copy_lengths) c
             WHERE c.idx = r.idx;
            IF NOT FOUND THEN
                missing := missing || format('%s:%s', r.idx, r.dlq_offset);
                CONTINUE;
            END IF;
            dl := queen.dead_letter(p_groups[r.idx + 1], p_partitions[r.idx + 1], r.dlq_offset, copy.message_id,
                                    copy.transaction_id, copy.trace_id, copy.payload, copy.encrypted,
                                    p_errors[r.idx + 1], copy.created);
            IF dl.error IS NOT NULL THEN
                RAISE EXCEPTION 'ack of transactionId % failed: %', p_txns[r.idx + 1], dl.error USING ERRCODE = 'SLA01';
            END IF;
            r.dlq := true; r.lease_released := dl.lease_released;
            r.dlq_blob := NULL; r.dlq_offset := NULL;
        END IF;
        RETURN NEXT r;
    END LOOP;
    IF cardinality(missing) > 0 THEN
        RAISE EXCEPTION 'dead-letter copies needed' USING ERRCODE = 'SLQ01', DETAIL = array_to_string(missing, ',');
    END IF;
END $$;


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

-- Under the transaction-level advisory lock, claims (or keeps) the pass for
-- p_runner; false: another server's pass is running. A pass claims under its
-- own token, "<server>:<pass>": a release names the token, so a pass's late
-- release can never revoke the next pass's claim; a server may take over its
-- own earlier pass's claim (that pass has ended: a server runs one pass at a
-- time), so a release lost with the connection does not hold its next pass
-- back for a lease.
CREATE FUNCTION queen.retention_claim(p_runner text, p_lease_seconds integer) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(7365696) THEN RETURN false; END IF;
    UPDATE queen.retention_runner
       SET runner = p_runner, lease_until = clock_timestamp() + make_interval(secs => p_lease_seconds)
     WHERE id = 1 AND (runner = p_runner OR lease_until < clock_timestamp()
                       OR split_part(runner, ':', 1) = split_part(p_runner, ':', 1));
    RETURN FOUND;
END $$;

-- Whether p_runner holds the pass now. Steps check this without writing, so
-- one runner's steps can run side by side; the claim itself (above) is the
-- only write, at the start of a pass and when it renews.
CREATE FUNCTION queen.retention_owns(p_runner text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM queen.retention_runner
                    WHERE id = 1 AND runner = p_runner AND lease_until > clock_timestamp())
$$;

CREATE FUNCTION queen.retention_release(p_runner text) RETURNS void LANGUAGE sql AS $$
    UPDATE queen.retention_runner SET runner = '', lease_until = '-infinity' WHERE id = 1 AND runner = p_runner
$$;

-- The queue options that matter to retention, as seconds (0: off).
CREATE FUNCTION queen.retention_windows(opts jsonb, OUT retention integer, OUT completed integer,
                                        OUT max_wait integer, OUT ack_window integer)
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN (opts->>'retentionEnabled')::boolean THEN (opts->>'retentionSeconds')::integer ELSE 0 END,
           CASE WHEN (opts->>'retentionEnabled')::boolean THEN (opts->>'completedRetentionSeconds')::integer ELSE 0 END,
           (opts->>'maxWaitTimeSeconds')::integer,
           greatest((opts->>'dedupWindowSeconds')::integer, (opts->>'completedRetentionSeconds')::integer, 900)
$$;

-- The shortest window after which some rule can delete a segment (seconds),
-- NULL when no rule is on.
CREATE FUNCTION queen.rules_window(opts jsonb) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT nullif(least(nullif(w.retention, 0), nullif(w.completed, 0), nullif(w.max_wait, 0)), 0)
      FROM queen.retention_windows(opts) w
$$;

-- Recomputes a partition's schedule from its first retained segment and
-- first sidecar row. p_not_before (or NULL) holds retention back: for a
-- partition whose data is old enough but pinned by a consumer group.
CREATE FUNCTION queen.reschedule(p_partition uuid, opts jsonb, p_not_before timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    part      queen.log_partitions%ROWTYPE;
    first_seg timestamptz;
    first_txn timestamptz;
BEGIN
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    SELECT s.created_at INTO first_seg FROM queen.log_segments s
     WHERE s.partition_id = part.id AND s.base_offset >= part.log_start ORDER BY s.base_offset LIMIT 1;
    SELECT t.created_at INTO first_txn FROM queen.log_txns t
     WHERE t.partition_id = part.id AND t.base_offset >= part.txns_start ORDER BY t.base_offset LIMIT 1;
    UPDATE queen.log_partitions SET oldest_at = first_seg,
           retention_check_at = CASE WHEN first_seg IS NOT NULL AND queen.rules_window(opts) IS NOT NULL THEN
               greatest(first_seg + make_interval(secs => queen.rules_window(opts)), p_not_before) END,
           sidecar_check_at = first_txn + make_interval(secs => (queen.retention_windows(opts)).ack_window)
     WHERE id = part.id;
END $$;

-- Changing a queue's options reschedules its partitions.
CREATE FUNCTION queen.queue_options_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queen.reschedule(p.id, NEW.options, NULL) FROM queen.log_partitions p WHERE p.queue = NEW.name;
    RETURN NULL;
END $$;
CREATE TRIGGER queues_options_changed AFTER UPDATE OF options ON queen.queues
    FOR EACH ROW WHEN (OLD.options IS DISTINCT FROM NEW.options) EXECUTE FUNCTION queen.queue_options_changed();

-- A consumer group's cursors going away (the group deleted, or its queue)
-- can release the consumption cap of their partitions: schedule them for
-- the next pass instead of the recheck a pinned partition was given.
CREATE FUNCTION queen.cursors_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queen.reschedule(p.id, q.options, NULL)
       FROM (SELECT DISTINCT partition_id FROM gone) g
       JOIN queen.log_partitions p ON p.id = g.partition_id
       JOIN queen.queues q ON q.name = p.queue;
    RETURN NULL;
END $$;
CREATE TRIGGER log_consumers_removed AFTER DELETE ON queen.log_consumers
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.cursors_removed();

-- The consumption cap: the lowest committed cursor over every consumer group
-- of the partition, plus one, and how many retained offsets that group has
-- not consumed. NULL when no group has a cursor there (then nothing is
-- consumed and completed_retention deletes nothing).
CREATE FUNCTION queen.consumption_cap(p_partition uuid, OUT cap bigint, OUT pinned_by text, OUT behind bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT c.committed + 1, c.consumer_group, p.last_offset - greatest(c.committed, p.log_start - 1)
      INTO cap, pinned_by, behind
      FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
     WHERE c.partition_id = p_partition
     ORDER BY c.committed, c.consumer_group LIMIT 1;
END $$;

-- The first offset a rule keeps, searching from p_from: the base of the
-- first segment the rule does not cover. A rule covers a segment committed
-- before p_cutoff that (when p_cap is given) lies wholly below p_cap.
-- Commit times never decrease with offset, so what a rule covers is a
-- prefix, and halving [lo, hi) with one index probe each finds its end in
-- O(log n) probes however many segments it covers.
CREATE FUNCTION queen.rule_boundary(p_partition uuid, p_from bigint, p_last bigint, p_cutoff timestamptz,
                                    p_cap bigint) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    lo  bigint := p_from;
    hi  bigint := p_last + 1;
    mid bigint;
    s   record;
BEGIN
    WHILE lo < hi LOOP
        mid := lo + (hi - lo) / 2;
        SELECT g.base_offset, g.end_offset, g.created_at INTO s FROM queen.log_segments g
         WHERE g.partition_id = p_partition AND g.base_offset >= lo AND g.base_offset <= mid
         ORDER BY g.base_offset DESC LIMIT 1;
        IF NOT FOUND THEN
            lo := mid + 1;                       -- no segment starts in [lo, mid]
        ELSIF s.created_at < p_cutoff AND (p_cap IS NULL OR s.end_offset < p_cap) THEN
            lo := s.end_offset + 1;              -- covered, and so is all before it
        ELSE
            hi := s.base_offset;                 -- not covered, nor anything after it
        END IF;
    END LOOP;
    RETURN lo;
END $$;

-- What the rules delete from the front of a partition, starting at p_from
-- (its watermark, or a dry run's simulated one): each rule's boundary (the
-- first offset it keeps), the winning rule and its boundary, how many of
-- the next p_batch segments lie wholly below it, and the segment the
-- consumption cap falls inside. A segment is deletable only when all of it
-- lies below the boundary. The first p_batch + 1 segments are walked;
-- a boundary beyond them is searched for only when the winner depends on it
-- (two rules reach past the walk), or always when p_exact (explain).
CREATE FUNCTION queen.retention_plan(part queen.log_partitions, opts jsonb, p_now timestamptz, p_from bigint,
    p_batch integer, p_exact boolean,
    OUT retention_boundary bigint, OUT completed_boundary bigint, OUT max_wait_boundary bigint,
    OUT cap bigint, OUT pinned_by text, OUT behind bigint,
    OUT rule text, OUT boundary bigint, OUT segments integer, OUT straddling_base bigint,
    OUT straddling_end bigint)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_variable
DECLARE
    w      record := queen.retention_windows(opts);
    pin    record := queen.consumption_cap(part.id);
    cut_r  timestamptz;
    cut_c  timestamptz;
    cut_m  timestamptz;
    open_r boolean;
    open_c boolean;
    open_m boolean;
    walked integer := 0;
    s      record;
BEGIN
    cap := pin.cap; pinned_by := pin.pinned_by; behind := pin.behind;
    IF w.retention > 0 THEN cut_r := p_now - make_interval(secs => w.retention); END IF;
    IF w.completed > 0 AND cap IS NOT NULL THEN cut_c := p_now - make_interval(secs => w.completed); END IF;
    IF w.max_wait > 0 THEN cut_m := p_now - make_interval(secs => w.max_wait); END IF;
    open_r := cut_r IS NOT NULL; open_c := cut_c IS NOT NULL; open_m := cut_m IS NOT NULL;
    retention_boundary := p_from; completed_boundary := p_from; max_wait_boundary := p_from;
    FOR s IN SELECT g.base_offset, g.end_offset, g.created_at FROM queen.log_segments g
              WHERE g.partition_id = part.id AND g.base_offset >= p_from
              ORDER BY g.base_offset LIMIT p_batch + 1
    LOOP
        walked := walked + 1;
        IF open_r THEN
            IF s.created_at < cut_r THEN retention_boundary := s.end_offset + 1; ELSE open_r := false; END IF;
        END IF;
        IF open_c THEN
            IF s.created_at < cut_c AND s.end_offset < cap THEN completed_boundary := s.end_offset + 1;
            ELSE open_c := false; END IF;
        END IF;
        IF open_m THEN
            IF s.created_at < cut_m THEN max_wait_boundary := s.end_offset + 1; ELSE open_m := false; END IF;
        END IF;
    END LOOP;
    IF walked <= p_batch THEN open_r := false; open_c := false; open_m := false; END IF;   -- walked them all
    -- One rule reaching past the walk is beyond the others whatever its exact
    -- end; two or more are compared at their exact ends.
    IF p_exact OR open_r::int + open_c::int + open_m::int > 1 THEN
        IF open_r THEN retention_boundary := queen.rule_boundary(part.id, retention_boundary, part.last_offset, cut_r, NULL); END IF;
        IF open_c THEN completed_boundary := queen.rule_boundary(part.id, completed_boundary, part.last_offset, cut_c, cap); END IF;
        IF open_m THEN max_wait_boundary := queen.rule_boundary(part.id, max_wait_boundary, part.last_offset, cut_m, NULL); END IF;
    END IF;
    boundary := greatest(retention_boundary, completed_boundary);
    rule := CASE WHEN boundary = p_from THEN NULL
                 WHEN retention_boundary >= completed_boundary THEN 'retention'
                 ELSE 'completed_retention' END;
    IF max_wait_boundary > boundary THEN rule := 'max_wait_time_eviction'; boundary := max_wait_boundary; END IF;
    SELECT count(*) INTO segments FROM (SELECT 1 FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= p_from AND g.end_offset < boundary LIMIT p_batch) below;
    IF cap IS NOT NULL THEN
        SELECT g.base_offset, g.end_offset INTO straddling_base, straddling_end FROM queen.log_segments g
         WHERE g.partition_id = part.id AND g.base_offset >= p_from AND g.base_offset < cap
         ORDER BY g.base_offset DESC LIMIT 1;
        IF straddling_end < cap THEN straddling_base := NULL; straddling_end := NULL; END IF;
    END IF;
END $$;

-- Offsets in [p_from, p_to) inside some live lease: the union of every
-- group's leased span, so an offset two groups lease counts once.
-- (plpgsql, not sql: its plan is cached for the session instead of made
-- at every call.)
CREATE FUNCTION queen.leased_in(p_partition uuid, p_from bigint, p_to bigint) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    n bigint;
BEGIN
    SELECT coalesce(sum(upper(r) - lower(r)), 0) INTO n
      FROM unnest((SELECT range_agg(int8range(greatest(c.committed + 1, p_from), least(c.lease_end + 1, p_to)))
                     FROM queen.log_consumers c
                    WHERE c.partition_id = p_partition AND c.lease_expires > now() AND c.lease_end IS NOT NULL
                      AND greatest(c.committed + 1, p_from) < least(c.lease_end + 1, p_to))) AS r;
    RETURN n;
END $$;

-- The partition a step works on, and its queue's options: locked, once the
-- pass is known to still hold its claim, or (dry) only read. status is
-- 'busy' (the claim is gone), 'gone' (the partition is) or NULL: go on.
CREATE FUNCTION queen.step_begin(p_runner text, p_partition uuid, p_dry boolean,
                                 OUT status text, OUT part queen.log_partitions, OUT opts jsonb)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_dry THEN
        SELECT * INTO part FROM queen.log_partitions p WHERE p.id = p_partition;
    ELSE
        IF NOT queen.retention_owns(p_runner) THEN status := 'busy'; RETURN; END IF;
        SELECT * INTO part FROM queen.log_partitions p WHERE p.id = p_partition FOR UPDATE;
    END IF;
    IF NOT FOUND THEN status := 'gone'; RETURN; END IF;
    SELECT q.options INTO opts FROM queen.queues q WHERE q.name = part.queue;
END $$;

-- One step on one partition: delete at most p_batch whole segments below the
-- winning boundary, move the watermark, record it. A dry step deletes
-- nothing and starts at p_from (a dry pass's simulated watermark; NULL for
-- the real one), so a dry pass walks exactly the steps a real one would.
-- more: the step stopped at p_batch with more below the boundary.
CREATE FUNCTION queen.retention_step(p_runner text, p_partition uuid,
                                     p_batch integer, p_now timestamptz, p_dry boolean, p_recheck_seconds integer,
                                     p_from bigint,
                                     OUT status text, OUT rule text, OUT from_offset bigint,
                                     OUT to_offset bigint, OUT dropped bigint, OUT leased_dropped bigint,
                                     OUT segments integer, OUT more boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    began record;
    part  queen.log_partitions%ROWTYPE;
    opts  jsonb;
    plan  record;
    last  record;
BEGIN
    more := false;
    began := queen.step_begin(p_runner, p_partition, p_dry);
    IF began.status IS NOT NULL THEN status := began.status; RETURN; END IF;
    part := began.part; opts := began.opts;
    from_offset := CASE WHEN p_dry THEN greatest(coalesce(p_from, part.log_start), part.log_start) ELSE part.log_start END;
    plan := queen.retention_plan(part, opts, p_now, from_offset, p_batch, false);
    status := 'idle';
    IF plan.rule IS NULL OR plan.segments = 0 THEN
        -- old enough but held back (a consumption cap): look again a pass later
        IF NOT p_dry THEN PERFORM queen.reschedule(part.id, opts, p_now + make_interval(secs => p_recheck_seconds)); END IF;
        RETURN;
    END IF;
    SELECT g.end_offset INTO last FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= from_offset AND g.end_offset < plan.boundary
     ORDER BY g.base_offset LIMIT 1 OFFSET plan.segments - 1;
    rule := plan.rule; to_offset := last.end_offset + 1; segments := plan.segments;
    dropped := to_offset - from_offset;
    more := to_offset < plan.boundary;
    leased_dropped := queen.leased_in(part.id, from_offset, to_offset);
    IF p_dry THEN status := 'would_delete'; RETURN; END IF;
    status := 'deleted';
    DELETE FROM queen.log_segments g WHERE g.partition_id = part.id AND g.base_offset >= from_offset AND g.base_offset < to_offset;
    UPDATE queen.log_partitions SET log_start = to_offset,
           empty_since = CASE WHEN to_offset > part.last_offset THEN coalesce(part.last_write_at, part.created_at) END
     WHERE id = part.id;
    PERFORM queen.reschedule(part.id, opts, NULL);
    INSERT INTO queen.retention_history (partition_id, queue, partition, rule, from_offset, to_offset,
                                         offsets_dropped, leased_dropped)
    VALUES (part.id, part.queue, part.name, rule, from_offset, to_offset, dropped, leased_dropped);
END $$;

-- Purges at most p_batch sidecar rows of one partition older than the ack
-- window max(dedupWindowSeconds, completedRetentionSeconds, 900 s), on the
-- sidecar's own watermark, independently of segments. A dry step only
-- counts, from p_from. next_offset: the sidecar watermark after the step.
CREATE FUNCTION queen.sidecar_step(p_runner text, p_partition uuid, p_batch integer, p_now timestamptz,
                                   p_dry boolean, p_from bigint,
                                   OUT status text, OUT purged integer, OUT next_offset bigint, OUT more boolean)
LANGUAGE plpgsql AS $$
DECLARE
    began  record;
    part   queen.log_partitions%ROWTYPE;
    opts   jsonb;
    cutoff timestamptz;
    start  bigint;
BEGIN
    more := false; purged := 0;
    began := queen.step_begin(p_runner, p_partition, p_dry);
    IF began.status IS NOT NULL THEN status := began.status; RETURN; END IF;
    part := began.part; opts := began.opts;
    cutoff := p_now - make_interval(secs => (queen.retention_windows(opts)).ack_window);
    start := CASE WHEN p_dry THEN greatest(coalesce(p_from, part.txns_start), part.txns_start) ELSE part.txns_start END;
    SELECT max(t.base_offset + length(t.hashes) / 16), count(*) INTO next_offset, purged
      FROM (SELECT t.base_offset, t.hashes FROM queen.log_txns t
             WHERE t.partition_id = part.id AND t.base_offset >= start AND t.created_at < cutoff
             ORDER BY t.base_offset LIMIT p_batch) t;
    status := 'idle';
    IF purged = 0 THEN next_offset := start; RETURN; END IF;
    more := purged >= p_batch;
    IF p_dry THEN status := 'would_purge'; RETURN; END IF;
    DELETE FROM queen.log_txns t WHERE t.partition_id = part.id AND t.base_offset >= start AND t.base_offset < next_offset;
    UPDATE queen.log_partitions SET txns_start = next_offset WHERE id = part.id;
    status := 'purged';
    PERFORM queen.reschedule(part.id, opts, part.retention_check_at);
END $$;

-- Partitions due for a look, oldest first: two index range scans.
CREATE FUNCTION queen.retention_candidates(p_now timestamptz, p_limit integer)
RETURNS TABLE (partition_id uuid, queue text, partition text, kind text) LANGUAGE sql STABLE AS $$
    (SELECT p.id, p.queue, p.name, 'segments' FROM queen.log_partitions p
      WHERE p.retention_check_at <= p_now ORDER BY p.retention_check_at LIMIT p_limit)
    UNION ALL
    (SELECT p.id, p.queue, p.name, 'sidecar' FROM queen.log_partitions p
      WHERE p.sidecar_check_at <= p_now ORDER BY p.sidecar_check_at LIMIT p_limit)
$$;

-- Deletes (or, dry, counts) at most p_batch partitions that are empty (no
-- segments, no dead letters, no in-flight lease) and untouched (no push, no
-- consumer-group activity) for p_days. Queues are never removed here.
-- more: a whole batch was taken, so more may be waiting.
CREATE FUNCTION queen.partition_cleanup(p_runner text, p_days integer, p_batch integer, p_now timestamptz,
                                        p_dry boolean, OUT status text, OUT removed integer, OUT more boolean)
LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz := p_now - make_interval(days => p_days);
    doomed uuid[];
BEGIN
    removed := 0; more := false;
    IF NOT p_dry AND NOT queen.retention_owns(p_runner) THEN status := 'busy'; RETURN; END IF;
    SELECT array_agg(d.id) INTO doomed FROM (
        SELECT p.id FROM queen.log_partitions p
         WHERE p.empty_since < cutoff AND p.last_offset < p.log_start
           AND coalesce(p.last_write_at, p.created_at) < cutoff
           AND NOT EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = p.id)
           AND NOT EXISTS (SELECT 1 FROM queen.log_dlq d WHERE d.partition_id = p.id)
           AND NOT EXISTS (SELECT 1 FROM queen.log_consumers c WHERE c.partition_id = p.id
                            AND (c.lease_expires > p_now OR c.last_activity_at >= cutoff))
         ORDER BY p.empty_since LIMIT p_batch
           FOR UPDATE SKIP LOCKED) d;
    removed := coalesce(cardinality(doomed), 0);
    more := removed >= p_batch;
    status := CASE WHEN removed = 0 THEN 'idle' WHEN p_dry THEN 'would_remove' ELSE 'removed' END;
    IF p_dry OR removed = 0 THEN RETURN; END IF;
    DELETE FROM queen.log_txns t WHERE t.partition_id = ANY (doomed);   -- hash rows outlive segments
    DELETE FROM queen.log_partitions p WHERE p.id = ANY (doomed);
END $$;

-- ISO 8601 in UTC with milliseconds: the API's one timestamp format.
CREATE FUNCTION queen.iso_ms(ts timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- "offset 4" or "offsets 4-9", for notes.
CREATE FUNCTION queen.offset_span(p_first bigint, p_last bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_first = p_last THEN format('offset %s', p_first) ELSE format('offsets %s-%s', p_first, p_last) END
$$;

-- Why the oldest data that stays after the next pass is kept, rule by rule,
-- and when each rule lets it go.
CREATE FUNCTION queen.retention_notes(part queen.log_partitions, opts jsonb, plan record, p_due boolean)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    w     record := queen.retention_windows(opts);
    notes jsonb := '[]';
    keep  record;
BEGIN
    IF NOT (opts->>'retentionEnabled')::boolean AND ((opts->>'retentionSeconds')::integer > 0
            OR (opts->>'completedRetentionSeconds')::integer > 0) THEN
        notes := notes || to_jsonb('retention windows are set but retentionEnabled is false: they delete nothing'::text);
    END IF;
    IF (opts->>'retentionEnabled')::boolean AND w.retention = 0 AND w.completed = 0 THEN
        notes := notes || to_jsonb('retentionEnabled is true but both windows are 0: nothing is deleted by them'::text);
    END IF;
    IF w.retention = 0 AND w.completed = 0 AND w.max_wait = 0 THEN
        RETURN notes || to_jsonb('no retention rule applies to this queue: nothing is deleted'::text);
    END IF;
    IF plan.rule IS NOT NULL AND plan.boundary > part.log_start THEN
        notes := notes || to_jsonb(CASE WHEN p_due
            THEN format('the next pass deletes %s under %s', queen.offset_span(part.log_start, plan.boundary - 1), plan.rule)
            ELSE format('%s can go under %s, but this partition is next looked at %s '
                        '(a consumer group held it back when it was last checked)',
                        queen.offset_span(part.log_start, plan.boundary - 1), plan.rule,
                        queen.iso_ms(part.retention_check_at)) END);
    END IF;
    SELECT g.base_offset, g.end_offset, g.created_at INTO keep FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= coalesce(plan.boundary, part.log_start)
     ORDER BY g.base_offset LIMIT 1;
    IF NOT FOUND THEN
        RETURN notes || to_jsonb('nothing else is retained'::text);
    END IF;
    IF w.retention > 0 THEN
        notes := notes || to_jsonb(format('retentionSeconds keeps offsets from %s: segment %s-%s was committed at %s and goes at %s',
            keep.base_offset, keep.base_offset, keep.end_offset, queen.iso_ms(keep.created_at),
            queen.iso_ms(keep.created_at + make_interval(secs => w.retention))));
    END IF;
    IF w.completed > 0 AND plan.cap IS NULL THEN
        notes := notes || to_jsonb('no consumer group has a cursor on this partition: completedRetentionSeconds deletes nothing here'::text);
    ELSIF w.completed > 0 AND keep.end_offset >= plan.cap THEN
        notes := notes || to_jsonb(CASE WHEN keep.base_offset < plan.cap
            THEN format('consumer group %s has consumed up to offset %s: segment %s-%s holds its next offset and stays '
                        'with everything in it under completedRetentionSeconds until the group passes offset %s',
                        plan.pinned_by, plan.cap - 1, keep.base_offset, keep.end_offset, keep.end_offset)
            ELSE format('consumer group %s has %s retained offsets to consume: completedRetentionSeconds keeps '
                        'everything from offset %s until it consumes them', plan.pinned_by, plan.behind, keep.base_offset) END);
    ELSIF w.completed > 0 THEN
        notes := notes || to_jsonb(format('completedRetentionSeconds keeps offsets from %s (consumed): segment %s-%s '
                                          'was committed at %s and goes at %s', keep.base_offset, keep.base_offset,
            keep.end_offset, queen.iso_ms(keep.created_at), queen.iso_ms(keep.created_at + make_interval(secs => w.completed))));
    END IF;
    IF w.max_wait > 0 THEN
        notes := notes || to_jsonb(format('maxWaitTimeSeconds deletes segments older than %s s whether consumed or leased: '
            'segment %s-%s goes at %s', w.max_wait, keep.base_offset, keep.end_offset,
            queen.iso_ms(keep.created_at + make_interval(secs => w.max_wait))));
    END IF;
    RETURN notes;
END $$;

-- One partition of GET /api/v1/retention/explain: exact boundaries, and
-- what the next pass deletes, which is nothing while the schedule holds the
-- partition back (a pass only looks at partitions that are due).
CREATE FUNCTION queen.partition_explain(part queen.log_partitions, opts jsonb, p_now timestamptz) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    w    record := queen.retention_windows(opts);
    plan record := queen.retention_plan(part, opts, p_now, part.log_start, 1, true);
    due  boolean := coalesce(part.retention_check_at <= p_now, false);
    segs bigint;
BEGIN
    SELECT count(*) INTO segs FROM queen.log_segments g
     WHERE g.partition_id = part.id AND g.base_offset >= part.log_start AND g.end_offset < plan.boundary;
    RETURN jsonb_build_object(
        'partition', part.name, 'partitionId', part.id, 'watermark', part.log_start,
        'lastOffset', part.last_offset, 'retainedOffsets', part.last_offset + 1 - part.log_start,
        'oldestRetainedAt', queen.iso_ms(part.oldest_at), 'sidecarWatermark', part.txns_start,
        'nextCheckAt', queen.iso_ms(part.retention_check_at),
        'boundaries', jsonb_build_object(
            'retention', CASE WHEN w.retention > 0 THEN plan.retention_boundary END,
            'completedRetention', CASE WHEN w.completed > 0 THEN plan.completed_boundary END,
            'maxWaitTime', CASE WHEN w.max_wait > 0 THEN plan.max_wait_boundary END),
        'consumptionCap', CASE WHEN plan.cap IS NOT NULL THEN jsonb_build_object(
            'offset', plan.cap, 'pinnedBy', plan.pinned_by, 'behind', plan.behind) END,
        'straddlingSegment', CASE WHEN plan.straddling_base IS NOT NULL THEN jsonb_build_object(
            'baseOffset', plan.straddling_base, 'endOffset', plan.straddling_end) END,
        'nextPass', CASE WHEN due AND plan.rule IS NOT NULL AND segs > 0 THEN jsonb_build_object(
            'rule', plan.rule, 'fromOffset', part.log_start, 'toOffset', plan.boundary, 'boundary', plan.boundary,
            'segments', segs, 'offsets', plan.boundary - part.log_start,
            'leasedOffsets', queen.leased_in(part.id, part.log_start, plan.boundary)) END,
        'notes', queen.retention_notes(part, opts, plan, due));
END $$;

-- GET /api/v1/retention/explain: why data is still here, or why it went.
CREATE FUNCTION queen.retention_explain(p_queue text, p_partition text, p_now timestamptz) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('queue', q.name, 'options', jsonb_build_object(
               'retentionEnabled', q.options->'retentionEnabled', 'retentionSeconds', q.options->'retentionSeconds',
               'completedRetentionSeconds', q.options->'completedRetentionSeconds',
               'maxWaitTimeSeconds', q.options->'maxWaitTimeSeconds',
               'dedupWindowSeconds', q.options->'dedupWindowSeconds'),
           'ackWindowSeconds', (queen.retention_windows(q.options)).ack_window,
           'partitions', coalesce((SELECT jsonb_agg(queen.partition_explain(p, q.options, p_now) ORDER BY p.name)
                                     FROM queen.log_partitions p
                                    WHERE p.queue = q.name AND (p_partition IS NULL OR p.name = p_partition)), '[]'))
      FROM queen.queues q WHERE q.name = p_queue
$$;

-- GET /api/v1/analytics/retention: retention_history in time buckets.
CREATE FUNCTION queen.retention_analytics(p_from timestamptz, p_to timestamptz, p_queue text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    WITH span AS (
        SELECT p_from AS f, p_to AS t,
               CASE WHEN p_to - p_from <= interval '60 minutes' THEN 1
                    WHEN p_to - p_from <= interval '6 hours' THEN 5
                    WHEN p_to - p_from <= interval '24 hours' THEN 15
                    WHEN p_to - p_from <= interval '7 days' THEN 60 ELSE 360 END AS minutes),
    rows AS (
        SELECT date_bin(make_interval(mins => span.minutes), h.executed_at, span.f) AS bucket, h.rule,
               h.offsets_dropped
          FROM queen.retention_history h, span
         WHERE h.executed_at >= span.f AND h.executed_at < span.t AND (p_queue IS NULL OR h.queue = p_queue)),
    buckets AS (
        SELECT bucket,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'retention'), 0) AS r,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'completed_retention'), 0) AS c,
               coalesce(sum(offsets_dropped) FILTER (WHERE rule = 'max_wait_time_eviction'), 0) AS e,
               coalesce(sum(offsets_dropped), 0) AS total, count(*) AS events
          FROM rows GROUP BY bucket)
    SELECT jsonb_build_object(
        'timeRange', jsonb_build_object('from', queen.iso_ms(span.f), 'to', queen.iso_ms(span.t)),
        'bucketMinutes', span.minutes,
        'series', coalesce((SELECT jsonb_agg(jsonb_build_object('bucket', queen.iso_ms(bucket), 'retentionMsgs', r,
                      'completedRetentionMsgs', c, 'evictionMsgs', e, 'totalMsgs', total, 'eventCount', events)
                      ORDER BY bucket) FROM buckets), '[]'),
        'totals', jsonb_build_object(
            'retentionMsgs', coalesce((SELECT sum(r) FROM buckets), 0),
            'completedRetentionMsgs', coalesce((SELECT sum(c) FROM buckets), 0),
            'evictionMsgs', coalesce((SELECT sum(e) FROM buckets), 0),
            'totalMsgs', coalesce((SELECT sum(total) FROM buckets), 0),
            'eventCount', coalesce((SELECT sum(events) FROM buckets), 0)))
      FROM span
$$;


-- ==== Deletion =============================================================
--
-- A queue or partition deleted by plain SQL (`DELETE FROM queen.queues
-- WHERE name LIKE 'test-%'`, as operators and test harnesses do) leaves
-- nothing behind: cursors and subscriptions go by foreign key, and
-- statement-level triggers take what has no key (segments and sidecar rows,
-- see Partitions and the log; dead letters). DELETE of a queue through the
-- API is that same DELETE (queen.queue_delete).

CREATE FUNCTION queen.partitions_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_segments s USING gone g WHERE s.partition_id = g.id;
    DELETE FROM queen.log_txns t USING gone g WHERE t.partition_id = g.id;
    RETURN NULL;
END $$;
CREATE TRIGGER log_partitions_removed AFTER DELETE ON queen.log_partitions
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.partitions_removed();

-- Dead letters are copies that outlive their segments on purpose, but not
-- their queue.
CREATE FUNCTION queen.queues_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_dlq d USING gone g WHERE d.queue = g.name;
    RETURN NULL;
END $$;
CREATE TRIGGER queues_removed AFTER DELETE ON queen.queues
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.queues_removed();


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

CREATE FUNCTION queen.maintenance_value() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT value FROM queen.system_state WHERE key = 'maintenance_mode';
$$;

-- Whether a flush goes to the buffer. A flush that will buffer holds the
-- switch row FOR SHARE until it commits, so the drain cannot declare the
-- buffer empty in between (see drain_push_buffer); a flush that read "off"
-- needs no lock: nothing can be buffered while the switch says off.
CREATE FUNCTION queen.flush_buffers() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v jsonb := queen.maintenance_value();
BEGIN
    IF NOT ((v->>'enabled')::boolean OR (v->>'draining')::boolean) THEN RETURN false; END IF;
    SELECT value INTO v FROM queen.system_state WHERE key = 'maintenance_mode' FOR SHARE;
    RETURN (v->>'enabled')::boolean OR (v->>'draining')::boolean;
END $$;

-- Frames of p_hashes whose transactionId is already buffered for the
-- partition since p_cutoff: "frame:message-id-hex,..." as find_duplicates.
CREATE FUNCTION queen.buffered_duplicates(p_partition uuid, p_hashes bytea, p_cutoff timestamptz)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT string_agg(k || ':' || encode(b.message_id, 'hex'), ',' ORDER BY k)
      FROM generate_series(0, length(p_hashes) / 16 - 1) AS k
      JOIN queen.push_buffer_txns b
        ON b.partition_id = p_partition AND b.hash = substring(p_hashes FROM k * 16 + 1 FOR 16)
     WHERE b.buffered_at >= p_cutoff;
$$;

-- Holds a flush in the buffer (maintenance mode). Rows as append_segments,
-- with base_offset NULL: the messages have no offset yet.
CREATE FUNCTION queen.buffer_flush(p_queues text[], p_partitions text[], p_counts integer[],
                                   p_blobs bytea, p_blob_lens integer[], p_hashes bytea, p_ids bytea,
                                   p_probe boolean[], now_ts timestamptz)
RETURNS TABLE (idx integer, partition_id uuid, base_offset bigint, created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r    record;
    dups text;
    bid  bigint;
BEGIN
    FOR r IN SELECT x.i, lp.id, x.c, x.probe, (qq.options->>'dedupWindowSeconds')::integer AS win,
                    substring(p_blobs FROM x.blob_at + 1 FOR x.len) AS blob,
                    substring(p_hashes FROM x.frame_at * 16 + 1 FOR x.c * 16) AS hashes,
                    substring(p_ids FROM x.frame_at * 16 + 1 FOR x.c * 16) AS ids
               FROM (SELECT u.*, (sum(u.len) OVER (ORDER BY u.i) - u.len)::integer AS blob_at,
                            (sum(u.c) OVER (ORDER BY u.i) - u.c)::integer AS frame_at
                       FROM unnest(p_queues, p_partitions, p_counts, p_blob_lens, p_probe)
                            WITH ORDINALITY AS u(q, p, c, len, probe, i)) x
               JOIN queen.queues qq ON qq.name = x.q
               JOIN queen.log_partitions lp ON lp.queue = x.q AND lp.name = x.p
              ORDER BY x.i
    LOOP
        IF r.probe AND r.win > 0 THEN
            dups := queen.buffered_duplicates(r.id, r.hashes, now_ts - make_interval(secs => r.win));
            IF dups IS NOT NULL THEN
                RAISE EXCEPTION 'duplicate transaction ids' USING ERRCODE = 'SLD01', DETAIL = (r.i - 1) || '|' || dups;
            END IF;
        END IF;
        INSERT INTO queen.push_buffer (partition_id, messages, blob, hashes, message_ids, buffered_at)
        VALUES (r.id, r.c, r.blob, r.hashes, r.ids, now_ts) RETURNING id INTO bid;
        -- a push all the same: partition cleanup leaves the partition alone
        UPDATE queen.log_partitions SET last_write_at = now_ts WHERE id = r.id;
        IF r.probe THEN
            INSERT INTO queen.push_buffer_txns AS t (partition_id, hash, message_id, buffer_id, buffered_at)
            SELECT r.id, substring(r.hashes FROM k * 16 + 1 FOR 16), substring(r.ids FROM k * 16 + 1 FOR 16), bid, now_ts
              FROM generate_series(0, r.c - 1) AS k
            ON CONFLICT ON CONSTRAINT push_buffer_txns_pkey DO UPDATE   -- an expired repeat replaces the first
               SET message_id = excluded.message_id, buffer_id = excluded.buffer_id, buffered_at = excluded.buffered_at;
        END IF;
        idx := r.i - 1;
        partition_id := r.id;
        base_offset := NULL;
        created_at := now_ts;
        RETURN NEXT;
    END LOOP;
END $$;

-- The switch and what it holds.
CREATE FUNCTION queen.maintenance_status(OUT enabled boolean, OUT draining boolean, OUT buffered bigint,
                                         OUT oldest_buffered_at timestamptz, OUT updated_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT (s.value->>'enabled')::boolean, (s.value->>'draining')::boolean,
           (SELECT coalesce(sum(messages), 0) FROM queen.push_buffer),
           (SELECT min(buffered_at) FROM queen.push_buffer), s.updated_at
      FROM queen.system_state s WHERE s.key = 'maintenance_mode';
$$;

CREATE FUNCTION queen.maintenance_set(p_enabled boolean, OUT enabled boolean, OUT draining boolean,
                                      OUT buffered bigint, OUT oldest_buffered_at timestamptz,
                                      OUT updated_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE queen.system_state
       SET value = jsonb_build_object('enabled', p_enabled,
                                      'draining', NOT p_enabled AND EXISTS (SELECT 1 FROM queen.push_buffer)),
           updated_at = now()
     WHERE key = 'maintenance_mode';
    SELECT * INTO enabled, draining, buffered, oldest_buffered_at, updated_at FROM queen.maintenance_status();
END $$;

-- Moves up to p_limit buffered segments into the log, oldest first, and
-- returns the queues it appended to (with how many messages). One drainer
-- at a time across servers; nothing moves while maintenance is on. When the
-- buffer is empty the switch leaves "draining": the UPDATE waits for any
-- flush that buffered under FOR SHARE, and the buffer is looked at again
-- after it.
CREATE FUNCTION queen.drain_push_buffer(p_limit integer) RETURNS TABLE (queue text, messages bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    b     record;
    moved jsonb := '{}';
BEGIN
    IF NOT pg_try_advisory_xact_lock(7365698) THEN RETURN; END IF;
    IF (queen.maintenance_value()->>'enabled')::boolean THEN RETURN; END IF;
    FOR b IN SELECT pb.*, lp.queue AS q, lp.name AS p FROM queen.push_buffer pb
               JOIN queen.log_partitions lp ON lp.id = pb.partition_id
              ORDER BY pb.id LIMIT p_limit
    LOOP
        PERFORM queen.lock_partitions(ARRAY[b.q], ARRAY[b.p]);
        PERFORM queen.append_segments(ARRAY[b.q], ARRAY[b.p], ARRAY[b.messages], b.blob, ARRAY[length(b.blob)],
                                      b.hashes, b.message_ids, clock_timestamp());
        DELETE FROM queen.push_buffer WHERE id = b.id;
        moved := jsonb_set(moved, ARRAY[b.q], to_jsonb(coalesce((moved->>b.q)::bigint, 0) + b.messages));
    END LOOP;
    IF NOT EXISTS (SELECT 1 FROM queen.push_buffer) THEN
        UPDATE queen.system_state SET value = value || '{"draining": false}', updated_at = now()
         WHERE key = 'maintenance_mode' AND (value->>'draining')::boolean;
        IF FOUND AND EXISTS (SELECT 1 FROM queen.push_buffer) THEN
            UPDATE queen.system_state SET value = value || '{"draining": true}' WHERE key = 'maintenance_mode';
        END IF;
    END IF;
    RETURN QUERY SELECT m.key, m.value::bigint FROM jsonb_each_text(moved) AS m;
END $$;


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

CREATE FUNCTION queen.segments_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.message_traces t USING gone g
     WHERE t.partition_id = g.partition_id AND t.message_offset BETWEEN g.base_offset AND g.end_offset;
    RETURN NULL;
END $$;
CREATE TRIGGER log_segments_removed AFTER DELETE ON queen.log_segments
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.segments_removed();

-- Records one trace against the retained message with that transactionId
-- (p_hash, its xxh3-128, resolved through the sidecar as an ack is). Returns
-- false when there is no such message.
CREATE FUNCTION queen.trace_record(p_id uuid, p_partition uuid, p_hash bytea, p_txn text, p_group text,
                                   p_event text, p_data json, p_worker text, p_names json)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    part queen.log_partitions%ROWTYPE;
    off  bigint;
    now_ts timestamptz := clock_timestamp();
BEGIN
    SELECT * INTO part FROM queen.log_partitions WHERE id = p_partition;
    IF NOT FOUND THEN RETURN false; END IF;
    off := queen.resolve_offset(part.id, greatest(part.txns_start, part.log_start), part.last_offset, p_hash);
    IF off IS NULL OR off < part.log_start THEN RETURN false; END IF;
    INSERT INTO queen.message_traces (id, partition_id, message_offset, transaction_id, consumer_group,
                                      event_type, data, worker_id, created_at)
    VALUES (p_id, p_partition, off, p_txn, p_group, p_event, p_data, p_worker, now_ts);
    INSERT INTO queen.message_trace_names (trace_id, trace_name, created_at)
    SELECT DISTINCT p_id, n, now_ts FROM json_array_elements_text(p_names) AS n;
    RETURN true;
END $$;

-- A message's traces, oldest first: one row per trace and name (a trace
-- without names has one row, name NULL).
CREATE FUNCTION queen.traces_of_message(p_partition uuid, p_txn text)
RETURNS TABLE (id uuid, event_type text, data json, consumer_group text, worker_id text, created_at timestamptz,
               trace_name text)
LANGUAGE sql STABLE AS $$
    SELECT t.id, t.event_type, t.data, t.consumer_group, t.worker_id, t.created_at, n.trace_name
      FROM queen.message_traces t
      LEFT JOIN queen.message_trace_names n ON n.trace_id = t.id
     WHERE t.partition_id = p_partition AND t.transaction_id = p_txn
     ORDER BY t.created_at, t.id, n.trace_name;
$$;

-- A page of the traces carrying a name, newest first, one row per trace and
-- name, with the message's queue and partition and, on a trace's first row,
-- the segment that holds the message (for its payload).
CREATE FUNCTION queen.traces_by_name(p_name text, p_limit integer, p_offset integer)
RETURNS TABLE (id uuid, transaction_id text, partition_id uuid, event_type text, data json, consumer_group text,
               worker_id text, created_at timestamptz, queue text, partition text, trace_name text,
               message_offset bigint, seg_base bigint, seg_blob bytea)
LANGUAGE sql STABLE AS $$
    SELECT t.id, t.transaction_id, t.partition_id, t.event_type, t.data, t.consumer_group, t.worker_id,
           t.created_at, lp.queue, lp.name, n.trace_name, t.message_offset, seg.base,
           CASE WHEN row_number() OVER (PARTITION BY t.id ORDER BY n.trace_name) = 1 THEN seg.blob END
      FROM (SELECT p.trace_id FROM queen.message_trace_names p WHERE p.trace_name = p_name
             ORDER BY p.created_at DESC, p.trace_id DESC LIMIT p_limit OFFSET p_offset) pick
      JOIN queen.message_traces t ON t.id = pick.trace_id
      JOIN queen.log_partitions lp ON lp.id = t.partition_id
      JOIN queen.message_trace_names n ON n.trace_id = t.id
      LEFT JOIN LATERAL queen.covering_segment(t.partition_id, t.message_offset) seg ON true
     ORDER BY t.created_at DESC, t.id DESC, n.trace_name;
$$;

-- A page of trace names, most recently used first.
CREATE FUNCTION queen.trace_names(p_limit integer, p_offset integer)
RETURNS TABLE (trace_name text, trace_count bigint, message_count bigint, last_seen timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT n.trace_name, count(*), count(DISTINCT (t.partition_id, t.message_offset)), max(n.created_at)
      FROM queen.message_trace_names n JOIN queen.message_traces t ON t.id = n.trace_id
     GROUP BY n.trace_name
     ORDER BY max(n.created_at) DESC, n.trace_name
     LIMIT p_limit OFFSET p_offset;
$$;


-- ==== Administration =======================================================
--
-- Queue and consumer-group administration. These are not on the hot path,
-- so they build their JSON replies in SQL.

-- First offset a group has not consumed on a partition (never below the watermark).
CREATE FUNCTION queen.next_offset(part queen.log_partitions, p_committed bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(p_committed, part.log_start - 1) + 1
$$;

-- Commit time of the segment holding offset p_offset, if retained.
CREATE FUNCTION queen.offset_time(p_partition uuid, p_offset bigint) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT s.created_at FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset <= p_offset AND s.end_offset >= p_offset
     ORDER BY s.base_offset DESC LIMIT 1
$$;

-- Where a timestamp lands in a partition: just before the first retained
-- segment committed at or after p_ts. A timestamp older than the oldest
-- retained segment resolves to that segment; newer than all, to the end.
CREATE FUNCTION queen.cursor_at(part queen.log_partitions, p_ts timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT s.base_offset - 1 FROM queen.log_segments s
                      WHERE s.partition_id = part.id AND s.base_offset >= part.log_start
                        AND s.created_at >= p_ts
                      ORDER BY s.base_offset LIMIT 1), part.last_offset)
$$;

CREATE FUNCTION queen.partition_json(part queen.log_partitions) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', part.id, 'name', part.name, 'lastOffset', part.last_offset,
        'logStart', part.log_start, 'txnsStart', part.txns_start,
        'messages', part.last_offset + 1 - part.log_start,
        'segments', (SELECT count(*) FROM queen.log_segments s WHERE s.partition_id = part.id),
        'lastWriteAt', queen.iso_ms(part.last_write_at), 'createdAt', queen.iso_ms(part.created_at))
$$;

CREATE FUNCTION queen.queue_json(q queen.queues, p_detail boolean) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'name', q.name, 'namespace', q.namespace, 'task', q.task, 'createdAt', queen.iso_ms(q.created_at),
        'partitions', (SELECT count(*) FROM queen.log_partitions p WHERE p.queue = q.name),
        'messages', jsonb_build_object(
            'total', (SELECT coalesce(sum(p.last_offset + 1 - p.log_start), 0)
                        FROM queen.log_partitions p WHERE p.queue = q.name),
            'pending', (SELECT coalesce(jsonb_object_agg(g.consumer_group, g.lag), '{}')
                          FROM (SELECT c.consumer_group, sum(p.last_offset + 1 - queen.next_offset(p, c.committed)) AS lag
                                  FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
                                 WHERE p.queue = q.name GROUP BY c.consumer_group) g),
            'deadLetters', (SELECT count(*) FROM queen.log_dlq d WHERE d.queue = q.name)))
      || CASE WHEN p_detail THEN jsonb_build_object(
             'options', q.options,
             'partitionList', (SELECT coalesce(jsonb_agg(queen.partition_json(p) ORDER BY p.name), '[]')
                                 FROM queen.log_partitions p WHERE p.queue = q.name))
         ELSE '{}' END
$$;

CREATE FUNCTION queen.queue_list() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(queen.queue_json(q, false) ORDER BY q.name), '[]') FROM queen.queues q
$$;

CREATE FUNCTION queen.queue_detail(p_queue text) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT queen.queue_json(q, true) FROM queen.queues q WHERE q.name = p_queue
$$;

-- Deletes a queue and everything of it: its partitions cascade, and the
-- triggers take the rest (see Deletion). false: there was no such queue.
CREATE FUNCTION queen.queue_delete(p_queue text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.queues WHERE name = p_queue;
    RETURN FOUND;
END $$;

CREATE FUNCTION queen.overview() RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'queues', (SELECT count(*) FROM queen.queues),
        'partitions', (SELECT count(*) FROM queen.log_partitions),
        'messages', (SELECT coalesce(sum(last_offset + 1 - log_start), 0) FROM queen.log_partitions),
        'segments', (SELECT count(*) FROM queen.log_segments),
        'consumerGroups', (SELECT count(DISTINCT consumer_group) FROM queen.log_consumers),
        'activeLeases', (SELECT count(*) FROM queen.log_consumers WHERE lease_expires > now()),
        'deadLetters', (SELECT count(*) FROM queen.log_dlq),
        'lastWriteAt', queen.iso_ms((SELECT max(last_write_at) FROM queen.log_partitions)))
$$;

-- Per (group, partition): lag in offsets and age of the oldest unconsumed message.
CREATE VIEW queen.group_cursors AS
    SELECT c.consumer_group, p.queue, p.name AS partition, p.id AS partition_id,
           c.committed, c.lease_id, c.lease_end, c.lease_expires, c.retry_count,
           c.total_consumed, c.last_activity_at,
           p.last_offset + 1 - queen.next_offset(p, c.committed) AS lag,
           CASE WHEN p.last_offset >= queen.next_offset(p, c.committed)
                THEN extract(epoch FROM now() - queen.offset_time(p.id, queen.next_offset(p, c.committed)))
                ELSE 0 END AS time_lag
      FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id;

-- Stable: nothing unconsumed older than p_lagging_seconds. Lagging: older
-- backlog, but the group moved within p_dead_seconds. Dead: backlog and no
-- activity for p_dead_seconds.
CREATE FUNCTION queen.group_state(p_lag numeric, p_time_lag numeric, p_last timestamptz,
                                  p_lagging_seconds integer, p_dead_seconds integer) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_lag = 0 OR p_time_lag < p_lagging_seconds THEN 'Stable'
                WHEN p_last < now() - make_interval(secs => p_dead_seconds) THEN 'Dead'
                ELSE 'Lagging' END
$$;

CREATE FUNCTION queen.group_list(p_lagging_seconds integer, p_dead_seconds integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'name', g.consumer_group, 'queues', g.queues, 'members', g.members,
               'totalLag', g.lag, 'maxTimeLag', round(g.time_lag),
               'lastActivityAt', queen.iso_ms(g.last_activity),
               'state', queen.group_state(g.lag, g.time_lag, g.last_activity, p_lagging_seconds, p_dead_seconds))
           ORDER BY g.consumer_group), '[]')
      FROM (SELECT consumer_group, jsonb_agg(DISTINCT queue) AS queues,
                   count(*) FILTER (WHERE lease_expires > now()) AS members,
                   sum(lag) AS lag, coalesce(max(time_lag), 0) AS time_lag,
                   max(last_activity_at) AS last_activity
              FROM queen.group_cursors GROUP BY consumer_group) g
$$;

CREATE FUNCTION queen.group_detail(p_group text) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('name', p_group, 'partitions', jsonb_agg(jsonb_build_object(
               'queue', c.queue, 'partition', c.partition, 'partitionId', c.partition_id,
               'committedOffset', c.committed, 'lag', c.lag, 'timeLag', round(c.time_lag),
               'retryCount', c.retry_count, 'totalConsumed', c.total_consumed,
               'lastActivityAt', queen.iso_ms(c.last_activity_at),
               'lease', CASE WHEN c.lease_expires > now() THEN jsonb_build_object(
                   'leaseId', c.lease_id, 'leaseEnd', c.lease_end, 'expiresAt', queen.iso_ms(c.lease_expires)) END)
           ORDER BY c.queue, c.partition),
           'subscriptions', (SELECT coalesce(jsonb_agg(jsonb_build_object(
               'queue', s.queue, 'from', queen.iso_ms(s.from_ts), 'createdAt', queen.iso_ms(s.created_at)) ORDER BY s.queue), '[]')
               FROM queen.subscriptions s WHERE s.consumer_group = p_group))
      FROM queen.group_cursors c WHERE c.consumer_group = p_group
    HAVING count(*) > 0 OR EXISTS (SELECT 1 FROM queen.subscriptions s WHERE s.consumer_group = p_group)
$$;

-- Whether a consumer group has anything (cursors or a stored subscription)
-- on p_queue, or anywhere when p_queue is NULL: deleting a group that has
-- nothing there is a 404, as for a queue.
CREATE FUNCTION queen.group_known(p_group text, p_queue text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id
                    WHERE c.consumer_group = p_group AND (p_queue IS NULL OR p.queue = p_queue))
        OR EXISTS (SELECT 1 FROM queen.subscriptions s
                    WHERE s.consumer_group = p_group AND (p_queue IS NULL OR s.queue = p_queue));
END $$;

-- Drops a group's cursors (of one queue, or all), and with p_metadata its
-- stored subscriptions too. Returns the number of cursors removed.
CREATE FUNCTION queen.group_delete(p_group text, p_queue text, p_metadata boolean) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    DELETE FROM queen.log_consumers c USING queen.log_partitions p
     WHERE c.partition_id = p.id AND c.consumer_group = p_group AND (p_queue IS NULL OR p.queue = p_queue);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF p_metadata THEN
        DELETE FROM queen.subscriptions WHERE consumer_group = p_group AND (p_queue IS NULL OR queue = p_queue);
    END IF;
    RETURN n;
END $$;

CREATE FUNCTION queen.group_set_subscription(p_group text, p_ts timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    UPDATE queen.subscriptions SET from_ts = p_ts WHERE consumer_group = p_group;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- Moves a group's cursors on a queue (or one partition) to the end or to a
-- timestamp, releasing leases and resetting retry state. Partitions the group
-- never touched get a cursor. Returns the partitions moved and where.
CREATE FUNCTION queen.seek(p_group text, p_queue text, p_partition text, p_to_end boolean, p_ts timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    part   queen.log_partitions%ROWTYPE;
    target bigint;
    moved  jsonb := '[]';
BEGIN
    IF NOT EXISTS (SELECT 1 FROM queen.log_partitions
                    WHERE queue = p_queue AND (p_partition IS NULL OR name = p_partition)) THEN
        RETURN NULL;
    END IF;
    FOR part IN SELECT * FROM queen.log_partitions
                 WHERE queue = p_queue AND (p_partition IS NULL OR name = p_partition)
                 ORDER BY id FOR UPDATE
    LOOP
        target := CASE WHEN p_to_end THEN part.last_offset ELSE queen.cursor_at(part, p_ts) END;
        INSERT INTO queen.log_consumers AS c (partition_id, consumer_group, committed)
        VALUES (part.id, p_group, target)
        ON CONFLICT (partition_id, consumer_group) DO UPDATE
           SET committed = target, lease_id = NULL, lease_end = NULL, lease_expires = NULL,
               retry_count = 0, last_activity_at = now();
        moved := moved || jsonb_build_object('partition', part.name, 'partitionId', part.id,
                                             'committedOffset', target);
    END LOOP;
    RETURN jsonb_build_object('group', p_group, 'queue', p_queue, 'partitions', moved);
END $$;

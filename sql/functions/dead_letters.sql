-- Dead letters and single-message reads.

CREATE OR REPLACE FUNCTION queen.dead_letter(p_group text, p_partition uuid, p_offset bigint,
                                  p_message_id uuid, p_transaction_id text, p_trace_id uuid,
                                  p_payload bytea, p_encrypted boolean, p_error text, p_created timestamptz,
                                  p_producer_sub text,
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
                               retry_count, created_at, producer_sub)
    VALUES (part.queue, p_partition, part.name, p_group, p_offset, p_message_id,
            p_transaction_id, p_trace_id, p_payload, p_encrypted, p_error, c.retry_count, p_created,
            p_producer_sub);
    lease_released := c.lease_end IS NULL OR p_offset >= c.lease_end;
    UPDATE queen.log_consumers SET committed = p_offset, retry_count = 0,
           total_consumed = total_consumed + (p_offset - c.committed), last_activity_at = now(),
           lease_id = CASE WHEN lease_released THEN NULL ELSE lease_id END,
           lease_end = CASE WHEN lease_released THEN NULL ELSE lease_end END,
           lease_expires = CASE WHEN lease_released THEN NULL ELSE lease_expires END
     WHERE partition_id = p_partition AND consumer_group = p_group;
END $$;

CREATE OR REPLACE FUNCTION queen.dlq_count(p_queue text, p_group text, p_partition text) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM queen.log_dlq d
     WHERE (p_queue IS NULL OR d.queue = p_queue) AND (p_group IS NULL OR d.consumer_group = p_group)
       AND (p_partition IS NULL OR d.partition = p_partition)
$$;

-- One page, newest first; id breaks ties so pages never overlap or skip.
CREATE OR REPLACE FUNCTION queen.dlq_page(p_queue text, p_group text, p_partition text, p_limit integer, p_offset integer)
RETURNS SETOF queen.log_dlq LANGUAGE sql STABLE AS $$
    SELECT * FROM queen.log_dlq d
     WHERE (p_queue IS NULL OR d.queue = p_queue) AND (p_group IS NULL OR d.consumer_group = p_group)
       AND (p_partition IS NULL OR d.partition = p_partition)
     ORDER BY d.failed_at DESC, d.id DESC
     LIMIT p_limit OFFSET p_offset
$$;

-- Removes a dead letter being replayed; raises when it is already gone, which
-- rolls back the replay's push in the same transaction.
CREATE OR REPLACE FUNCTION queen.dlq_take(p_id uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_dlq WHERE id = p_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dead letter not found' USING ERRCODE = 'SLN01';
    END IF;
END $$;

-- The dead letters a bulk replay or delete picks (POST /api/v1/dlq/replay,
-- /api/v1/dlq/delete): every filter NULL-or-equal, p_error a
-- case-insensitive substring of the error, failed_at in [p_from, p_to).
-- SQL so that it inlines into each caller's query.
CREATE OR REPLACE FUNCTION queen.dlq_matching(p_queue text, p_partition text, p_group text, p_error text,
                                              p_from timestamptz, p_to timestamptz)
RETURNS SETOF queen.log_dlq LANGUAGE sql STABLE AS $$
    SELECT * FROM queen.log_dlq d
     WHERE (p_queue IS NULL OR d.queue = p_queue) AND (p_partition IS NULL OR d.partition = p_partition)
       AND (p_group IS NULL OR d.consumer_group = p_group)
       AND (p_error IS NULL OR strpos(lower(d.error_message), lower(p_error)) > 0)
       AND (p_from IS NULL OR d.failed_at >= p_from) AND (p_to IS NULL OR d.failed_at < p_to)
$$;

-- Deletes at most p_limit matching dead letters, oldest failure first; more:
-- some matching ones are left for the next call. Rows another transaction
-- holds are skipped, not waited for.
CREATE OR REPLACE FUNCTION queen.dlq_delete_matching(p_queue text, p_partition text, p_group text, p_error text,
                                                     p_from timestamptz, p_to timestamptz, p_limit integer,
                                                     OUT deleted integer, OUT more boolean)
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_dlq WHERE id IN (
        SELECT m.id FROM queen.dlq_matching(p_queue, p_partition, p_group, p_error, p_from, p_to) m
         ORDER BY m.failed_at, m.id LIMIT p_limit FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS deleted = ROW_COUNT;
    more := EXISTS (SELECT 1 FROM queen.dlq_matching(p_queue, p_partition, p_group, p_error, p_from, p_to));
END $$;

-- dlq_take for a bulk replay's dead letters: all of them or, when one is
-- gone (replayed or deleted by another call since it was read), an error
-- that rolls back the replay's pushes.
CREATE OR REPLACE FUNCTION queen.dlq_take_many(p_ids uuid[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    DELETE FROM queen.log_dlq WHERE id = ANY (p_ids);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n < cardinality(p_ids) THEN
        RAISE EXCEPTION 'dead letter not found' USING ERRCODE = 'SLN01';
    END IF;
END $$;

-- A retained message by transactionId hash: its offset and covering segment
-- (GET /api/v1/messages/:partitionId/:transactionId).
CREATE OR REPLACE FUNCTION queen.message_lookup(p_partition uuid, p_hash bytea,
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

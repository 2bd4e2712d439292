-- 009_encryption: payload encryption at rest. push_segment refuses
-- plaintext frames for a queue with encryptionEnabled (SQLSTATE SLE01), so a
-- server that has not yet learned the queue encrypts encrypts and retries
-- rather than store plaintext; dead letters record whether their payload is
-- sealed.

ALTER TABLE queen.log_dlq ADD COLUMN encrypted boolean NOT NULL DEFAULT false;

DROP FUNCTION queen.push_segment(text, text, integer, bytea, bytea, bytea, boolean);
DROP FUNCTION queen.dead_letter(text, uuid, bigint, uuid, text, uuid, bytea, text, timestamptz);

CREATE FUNCTION queen.push_segment(p_queue text, p_partition text, p_count integer,
                                   p_blob bytea, p_hashes bytea, p_ids bytea,
                                   p_probe boolean, p_encrypted boolean,
                                   OUT partition_id uuid, OUT base_offset bigint,
                                   OUT created_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    part   queen.log_partitions%ROWTYPE;
    win    integer;
    dups   text;
BEGIN
    SELECT * INTO part FROM queen.log_partitions p
     WHERE p.queue = p_queue AND p.name = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM queen.ensure_partition(p_queue, p_partition);
        SELECT * INTO part FROM queen.log_partitions p
         WHERE p.queue = p_queue AND p.name = p_partition FOR UPDATE;
    END IF;
    partition_id := part.id;
    created_at := clock_timestamp();
    IF NOT p_encrypted AND (SELECT (q.options->>'encryptionEnabled')::boolean FROM queen.queues q WHERE q.name = p_queue) THEN
        RAISE EXCEPTION 'queue % requires encryption', p_queue USING ERRCODE = 'SLE01';
    END IF;
    IF p_probe THEN
        SELECT (q.options->>'dedupWindowSeconds')::integer INTO win
          FROM queen.queues q WHERE q.name = p_queue;
        IF win > 0 THEN
            dups := queen.find_duplicates(part.id, part.txns_start,
                                          created_at - make_interval(secs => win), p_hashes);
            IF dups IS NOT NULL THEN
                RAISE EXCEPTION 'duplicate transaction ids' USING ERRCODE = 'SLD01', DETAIL = dups;
            END IF;
        END IF;
    END IF;
    base_offset := part.last_offset + 1;
    UPDATE queen.log_partitions SET last_offset = last_offset + p_count, last_write_at = created_at
     WHERE id = part.id;
    INSERT INTO queen.log_segments VALUES (part.id, base_offset, base_offset + p_count - 1, created_at, p_blob);
    INSERT INTO queen.log_txns VALUES (part.id, base_offset, created_at, p_hashes, p_ids);
END $$;


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


-- tx_ack passes the copy's "enc" flag on.
CREATE OR REPLACE FUNCTION queen.tx_ack(p_items jsonb, p_copies jsonb) RETURNS SETOF queen.ack_result
LANGUAGE plpgsql AS $$
DECLARE
    r       queen.ack_result;
    item    jsonb;
    copy    jsonb;
    missing jsonb := '[]';
    dl      record;
BEGIN
    FOR r IN SELECT * FROM queen.ack(p_items) LOOP
        item := p_items -> r.idx;
        IF NOT r.success THEN
            RAISE EXCEPTION 'ack of transactionId % failed: %', item->>'t', r.error USING ERRCODE = 'SLA01';
        END IF;
        IF r.dlq_offset IS NOT NULL THEN
            copy := p_copies -> (r.idx::text);
            IF copy IS NULL THEN
                missing := missing || jsonb_build_object('i', r.idx, 'p', item->>'p', 'o', r.dlq_offset);
                CONTINUE;
            END IF;
            dl := queen.dead_letter(item->>'g', (item->>'p')::uuid, r.dlq_offset, (copy->>'m')::uuid,
                                    copy->>'t', (copy->>'tr')::uuid, decode(copy->>'pl', 'hex'),
                                    (copy->>'enc')::boolean, item->>'e', (copy->>'c')::timestamptz);
            IF dl.error IS NOT NULL THEN
                RAISE EXCEPTION 'ack of transactionId % failed: %', item->>'t', dl.error USING ERRCODE = 'SLA01';
            END IF;
            r.dlq := true; r.lease_released := dl.lease_released;
            r.dlq_blob := NULL; r.dlq_offset := NULL;
        END IF;
        RETURN NEXT r;
    END LOOP;
    IF jsonb_array_length(missing) > 0 THEN
        RAISE EXCEPTION 'dead-letter copies needed' USING ERRCODE = 'SLQ01', DETAIL = missing::text;
    END IF;
END $$;

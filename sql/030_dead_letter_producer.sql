-- 030: a dead letter keeps its message's producerSub.
--
-- With authentication on, a push stamps the token's sub in the message's
-- frame (FRAME_HAS_SUB) and pops return it as producerSub. The dead-letter
-- hand-off copied every other part of the frame into queen.log_dlq but not
-- that one, so a dead letter, and the message its replay pushed back, no
-- longer said who produced it. The copy now carries it: C reads it from the
-- frame as it reads the rest (streams/ack.c for acks, streams/tx.c for the
-- copies of a transaction) and hands it to queen.dead_letter.
--
-- The column is nullable with no default: messages pushed without
-- authentication have no sub, and dead letters stored before this file have
-- none either (their frames may be gone), so they read as null. Adding it
-- rewrites nothing.
--
-- The three functions of the hand-off gain a parameter, so they are dropped
-- and created again (a CREATE OR REPLACE with another signature would add an
-- overload beside the old one). Their bodies are 018's but for the sub.

ALTER TABLE queen.log_dlq ADD COLUMN producer_sub text;   -- the pushing token's sub; NULL: none

-- Second half of a dead-letter hand-off: stores the full copy C decoded from
-- the covering segment and moves the cursor past it (committing what the
-- leased batch held below it), unless the cursor already passed it. Returns
-- whether the lease was released, or an error.
DROP FUNCTION queen.dead_letter(text, uuid, bigint, uuid, text, uuid, bytea, boolean, text, timestamptz);
CREATE FUNCTION queen.dead_letter(p_group text, p_partition uuid, p_offset bigint,
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

-- The dead-letter copies C read from compressed segments for queen.tx_ack,
-- one row per copy: parallel arrays (p_subs: each message's producerSub,
-- NULL when it has none), the payloads concatenated in one bytea (p_lengths
-- bytes each, in order), as pushes send their segments.
DROP FUNCTION queen.tx_copies(integer[], uuid[], text[], uuid[], timestamptz[], boolean[], bytea, integer[]);
CREATE FUNCTION queen.tx_copies(p_items integer[], p_messages uuid[], p_txns text[], p_traces uuid[],
                                p_created timestamptz[], p_encrypted boolean[], p_subs text[],
                                p_payloads bytea, p_lengths integer[])
RETURNS TABLE (idx integer, message_id uuid, transaction_id text, trace_id uuid, created timestamptz,
               encrypted boolean, producer_sub text, payload bytea) LANGUAGE sql IMMUTABLE AS $$
    SELECT u.idx, u.msg, u.txn, u.trace, u.created, u.enc, u.sub,
           substring(p_payloads FROM (sum(u.len) OVER (ORDER BY u.ord) - u.len)::integer + 1 FOR u.len)
      FROM unnest(p_items, p_messages, p_txns, p_traces, p_created, p_encrypted, p_subs, p_lengths)
           WITH ORDINALITY AS u(idx, msg, txn, trace, created, enc, sub, len, ord)
$$;

-- Acks inside a transaction: the arrays of queen.ack, plus each item's
-- transactionId (for the error) and the client's error text (kept with a
-- dead letter), then the dead-letter copies (queen.tx_copies). A hand-off
-- needs the message's frame, which only C can read from the compressed
-- segment: without its copy this raises SLQ01 with DETAIL
-- "<item index>:<offset>,..." naming what is needed, and the caller retries
-- the whole transaction with the copies.
DROP FUNCTION queen.tx_ack(text[], uuid[], bytea, text[], uuid[], text[], text[], integer[], uuid[], text[],
                           uuid[], timestamptz[], boolean[], bytea, integer[]);
CREATE FUNCTION queen.tx_ack(p_groups text[], p_partitions uuid[], p_hashes bytea, p_statuses text[],
                             p_leases uuid[], p_txns text[], p_errors text[],
                             p_copy_items integer[], p_copy_messages uuid[], p_copy_txns text[],
                             p_copy_traces uuid[], p_copy_created timestamptz[], p_copy_encrypted boolean[],
                             p_copy_subs text[], p_copy_payloads bytea, p_copy_lengths integer[])
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
                                   p_copy_encrypted, p_copy_subs, p_copy_payloads, p_copy_lengths) c
             WHERE c.idx = r.idx;
            IF NOT FOUND THEN
                missing := missing || format('%s:%s', r.idx, r.dlq_offset);
                CONTINUE;
            END IF;
            dl := queen.dead_letter(p_groups[r.idx + 1], p_partitions[r.idx + 1], r.dlq_offset, copy.message_id,
                                    copy.transaction_id, copy.trace_id, copy.payload, copy.encrypted,
                                    p_errors[r.idx + 1], copy.created, copy.producer_sub);
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

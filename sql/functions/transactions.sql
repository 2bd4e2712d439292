-- Transactions: acks and pushes committed together (POST /api/v1/transaction).

-- Every lease named must be live.
CREATE OR REPLACE FUNCTION queen.require_leases(p_leases uuid[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    l uuid;
BEGIN
    FOREACH l IN ARRAY p_leases LOOP
        IF NOT EXISTS (SELECT 1 FROM queen.log_consumers WHERE lease_id = l AND lease_expires > now()) THEN
            RAISE EXCEPTION 'required lease % is not held', l USING ERRCODE = 'SLL01';
        END IF;
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION queen.tx_ack(p_groups text[], p_partitions uuid[], p_hashes bytea, p_statuses text[],
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

CREATE OR REPLACE FUNCTION queen.tx_copies(p_items integer[], p_messages uuid[], p_txns text[], p_traces uuid[],
                                p_created timestamptz[], p_encrypted boolean[], p_subs text[],
                                p_payloads bytea, p_lengths integer[])
RETURNS TABLE (idx integer, message_id uuid, transaction_id text, trace_id uuid, created timestamptz,
               encrypted boolean, producer_sub text, payload bytea) LANGUAGE sql IMMUTABLE AS $$
    SELECT u.idx, u.msg, u.txn, u.trace, u.created, u.enc, u.sub,
           substring(p_payloads FROM (sum(u.len) OVER (ORDER BY u.ord) - u.len)::integer + 1 FOR u.len)
      FROM unnest(p_items, p_messages, p_txns, p_traces, p_created, p_encrypted, p_subs, p_lengths)
           WITH ORDINALITY AS u(idx, msg, txn, trace, created, enc, sub, len, ord)
$$;

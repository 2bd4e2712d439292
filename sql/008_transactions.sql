-- 008_transactions: the parts of POST /api/v1/transaction that must fail
-- loudly. Inside a transaction every failure raises, so the whole
-- transaction (its pushes included) rolls back and the client learns why.

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

-- Acks inside a transaction. Items are those of queen.ack plus "e" (the
-- client's error text). A dead-letter hand-off needs the message's frame,
-- which only C can read from the compressed segment: without a copy in
-- p_copies ({"<item index>": {"m","t","tr","pl" (hex),"c"}}), this raises
-- SLQ01 with DETAIL [{"i","p","o"}] naming what is needed, and the caller
-- retries the whole transaction with the copies.
CREATE FUNCTION queen.tx_ack(p_items jsonb, p_copies jsonb) RETURNS SETOF queen.ack_result
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
                                    item->>'e', (copy->>'c')::timestamptz);
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

-- 006_dead_letters: listing, replay and removal of dead letters, and message
-- lookup by (partitionId, transactionId).

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

-- A retained message by transactionId hash: its offset and covering segment.
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

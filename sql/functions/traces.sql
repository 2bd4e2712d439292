-- Message traces.

-- Records one trace against the retained message with that transactionId
-- (p_hash, its xxh3-128, resolved through the sidecar as an ack is). Returns
-- false when there is no such message.
CREATE OR REPLACE FUNCTION queen.trace_record(p_id uuid, p_partition uuid, p_hash bytea, p_txn text, p_group text,
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
CREATE OR REPLACE FUNCTION queen.traces_of_message(p_partition uuid, p_txn text)
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
CREATE OR REPLACE FUNCTION queen.traces_by_name(p_name text, p_limit integer, p_offset integer)
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
CREATE OR REPLACE FUNCTION queen.trace_names(p_limit integer, p_offset integer)
RETURNS TABLE (trace_name text, trace_count bigint, message_count bigint, last_seen timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT n.trace_name, count(*), count(DISTINCT (t.partition_id, t.message_offset)), max(n.created_at)
      FROM queen.message_trace_names n JOIN queen.message_traces t ON t.id = n.trace_id
     GROUP BY n.trace_name
     ORDER BY max(n.created_at) DESC, n.trace_name
     LIMIT p_limit OFFSET p_offset;
$$;

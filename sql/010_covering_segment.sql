-- 010_covering_segment: covering_segment always returns a row (all NULL when
-- retention removed the segment), so callers that assign it to a record can
-- test base IS NULL; the SQL version returned a NULL record instead, which
-- made a dead-letter hand-off of a removed message fail rather than answer
-- "dlq rejected".
CREATE OR REPLACE FUNCTION queen.covering_segment(p_partition uuid, p_offset bigint,
                                                  OUT base bigint, OUT created timestamptz, OUT blob bytea)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    SELECT s.base_offset, s.created_at, s.blob INTO base, created, blob
      FROM queen.log_segments s
     WHERE s.partition_id = p_partition AND s.base_offset <= p_offset AND s.end_offset >= p_offset
       AND p_offset >= (SELECT log_start FROM queen.log_partitions WHERE id = p_partition)
     ORDER BY s.base_offset DESC LIMIT 1;
END $$;

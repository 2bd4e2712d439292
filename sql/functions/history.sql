-- The dashboard's history (GET /api/v1/stats/history): a per-minute rollup
-- of figures the database already keeps, so that every server sharing it
-- sees one history and no push, pop or ack does any work for it.
--
-- pushed: offsets written (the change of sum(last_offset + 1) over the
-- queue's partitions, as the overview's offsetsWritten). consumed: offsets
-- consumed by every group (the change of sum(total_consumed) over its
-- cursors, as offsetsConsumed: seeks move it too). dead_lettered: dead
-- letters whose failed_at falls in the span (one replayed or deleted
-- before the rollup read it is not counted). A counter that went down (a
-- partition or a cursor deleted) counts 0, never negative.

-- Rolls the minute before p_now's: once, by the first server to get here
-- (the others find the lock taken, or the minute rolled, and return -1).
-- A queue read for the first time counts from 0 when it was made since the
-- last reading, else from now (its past is not this minute's). Keeps 24
-- hours. Returns the queues' rows written.
CREATE OR REPLACE FUNCTION queen.minute_stats_roll(p_now timestamptz) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    m    timestamptz := date_trunc('minute', p_now) - interval '1 minute';
    last queen.minute_rolls%ROWTYPE;
    n    integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtext('silt.minute_stats')) THEN RETURN -1; END IF;
    SELECT * INTO last FROM queen.minute_rolls ORDER BY minute DESC LIMIT 1;
    IF last.minute >= m THEN RETURN -1; END IF;
    WITH written AS (
        SELECT p.queue, sum(p.last_offset + 1) AS written FROM queen.log_partitions p GROUP BY p.queue),
    consumed AS (
        SELECT p.queue, sum(c.total_consumed) AS consumed
          FROM queen.log_consumers c JOIN queen.log_partitions p ON p.id = c.partition_id GROUP BY p.queue),
    cur AS (
        SELECT q.name AS queue, q.created_at, coalesce(w.written, 0) AS written, coalesce(k.consumed, 0) AS consumed
          FROM queen.queues q LEFT JOIN written w ON w.queue = q.name LEFT JOIN consumed k ON k.queue = q.name),
    delta AS (
        SELECT cur.queue,
               greatest(cur.written - coalesce(prev.written, CASE WHEN last.read_at IS NULL
                        OR cur.created_at < last.read_at THEN cur.written ELSE 0 END), 0) AS pushed,
               greatest(cur.consumed - coalesce(prev.consumed, CASE WHEN last.read_at IS NULL
                        OR cur.created_at < last.read_at THEN cur.consumed ELSE 0 END), 0) AS consumed
          FROM cur LEFT JOIN queen.minute_counters prev ON prev.queue = cur.queue),
    dead AS (
        SELECT d.queue, count(*) AS dead_lettered FROM queen.log_dlq d
         WHERE d.failed_at >= coalesce(last.read_at, p_now - interval '1 minute') AND d.failed_at < p_now
         GROUP BY d.queue),
    kept AS (
        INSERT INTO queen.minute_counters AS k (queue, written, consumed)
        SELECT cur.queue, cur.written, cur.consumed FROM cur
        ON CONFLICT (queue) DO UPDATE SET written = excluded.written, consumed = excluded.consumed)
    INSERT INTO queen.minute_stats (minute, queue, pushed, consumed, dead_lettered)
    SELECT m, coalesce(d.queue, x.queue), coalesce(d.pushed, 0), coalesce(d.consumed, 0), coalesce(x.dead_lettered, 0)
      FROM delta d FULL JOIN dead x ON x.queue = d.queue
     WHERE coalesce(d.pushed, 0) + coalesce(d.consumed, 0) + coalesce(x.dead_lettered, 0) > 0;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO queen.minute_rolls (minute, read_at, seconds)
    VALUES (m, p_now, coalesce(round(extract(epoch FROM p_now - last.read_at))::integer, 60));
    DELETE FROM queen.minute_counters k WHERE NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.name = k.queue);
    DELETE FROM queen.minute_stats WHERE minute < m - interval '24 hours';
    DELETE FROM queen.minute_rolls WHERE minute < m - interval '24 hours';
    RETURN n;
END $$;

-- The rolled minutes of the last p_hours, oldest first, summed over every
-- queue or p_queue's only: a rolled minute without rows is zeros, a minute
-- no server rolled is absent.
CREATE OR REPLACE FUNCTION queen.minute_history(p_queue text, p_hours integer)
RETURNS TABLE (minute timestamptz, seconds integer, pushed bigint, consumed bigint, dead_lettered bigint)
LANGUAGE sql STABLE AS $$
    SELECT r.minute, r.seconds, coalesce(sum(s.pushed), 0)::bigint, coalesce(sum(s.consumed), 0)::bigint,
           coalesce(sum(s.dead_lettered), 0)::bigint
      FROM queen.minute_rolls r
      LEFT JOIN queen.minute_stats s ON s.minute = r.minute AND (p_queue IS NULL OR s.queue = p_queue)
     WHERE r.minute >= now() - make_interval(hours => p_hours)
     GROUP BY r.minute, r.seconds ORDER BY r.minute
$$;

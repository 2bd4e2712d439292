-- Sending tasks.

-- A UUIDv7 made in SQL (PostgreSQL 15 has none): 48 bits of Unix
-- milliseconds, then random bits with the version and variant set.
CREATE OR REPLACE FUNCTION tasks.uuid7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                  PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                  FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;

-- The creation time a UUIDv7 carries (every task id is one); -infinity for
-- any other uuid, which then bounds nothing.
CREATE OR REPLACE FUNCTION tasks.uuid7_time(p_id uuid) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN substr(p_id::text, 15, 1) = '7'
                THEN to_timestamp(('x' || lpad(substr(replace(p_id::text, '-', ''), 1, 12), 16, '0'))::bit(64)::bigint
                                  / 1000.0)
                ELSE '-infinity'::timestamptz END
$$;

-- Sends a batch, one element per task in each array. p_rerun_of names the
-- task each one reruns (tasks_rerun.sql), NULL for a plain send; p_rate_keys
-- holds each task's rateKey (NULL: none; tasks.claim_rated counts them).
CREATE OR REPLACE FUNCTION tasks.send(p_ids uuid[], p_names text[], p_queues text[], p_args text[],
                           p_priorities integer[], p_run_at timestamptz[], p_delays_ms bigint[],
                           p_good_until timestamptz[], p_timeouts integer[], p_max_retries integer[],
                           p_retry_delays text[], p_bases integer[], p_caps integer[], p_jitters real[],
                           p_retry_on text[], p_keys text[], p_classes text[], p_rerun_of uuid[] DEFAULT NULL,
                           p_rate_keys text[] DEFAULT NULL)
RETURNS TABLE (idx integer, id uuid, created boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    -- The first send of each key wins (in this batch: the first item). A
    -- concurrent send of the same key is waited for, then seen by the
    -- statements below (each takes a new snapshot).
    INSERT INTO horsies_task_idempotency (idempotency_key, task_id)
    SELECT DISTINCT ON (u.key) u.key, u.id FROM unnest(p_keys, p_ids) WITH ORDINALITY AS u(key, id, ord)
     WHERE u.key IS NOT NULL ORDER BY u.key, u.ord
    ON CONFLICT DO NOTHING;
    INSERT INTO horsies_tasks (id, task_name, queue_name, args, priority, status, run_at, good_until,
                               timeout_ms, max_retries, retry_delays_ms, retry_base_ms, retry_cap_ms,
                               retry_jitter, retry_on, idempotency_key, retention_class_key, rerun_of, rate_key)
    SELECT u.id, u.name, u.queue, u.args::json, u.priority, 'PENDING',
           coalesce(u.run_at, now() + make_interval(secs => coalesce(u.delay, 0) / 1000.0)), u.good_until,
           u.timeout, u.retries, u.delays::integer[], u.base, u.cap, u.jitter, u.retry_on::text[], u.key, u.class,
           u.rerun_of, u.rate_key
      FROM unnest(p_ids, p_names, p_queues, p_args, p_priorities, p_run_at, p_delays_ms, p_good_until,
                  p_timeouts, p_max_retries, p_retry_delays, p_bases, p_caps, p_jitters, p_retry_on, p_keys,
                  p_classes, p_rerun_of, p_rate_keys)
           AS u(id, name, queue, args, priority, run_at, delay, good_until, timeout, retries,
                delays, base, cap, jitter, retry_on, key, class, rerun_of, rate_key)
      LEFT JOIN horsies_task_idempotency k ON k.idempotency_key = u.key
     WHERE u.key IS NULL OR k.task_id = u.id;
    RETURN QUERY
        SELECT (u.ord - 1)::integer, coalesce(k.task_id, u.id), u.key IS NULL OR k.task_id = u.id
          FROM unnest(p_ids, p_keys) WITH ORDINALITY AS u(id, key, ord)
          LEFT JOIN horsies_task_idempotency k ON k.idempotency_key = u.key
         ORDER BY u.ord;
END $$;

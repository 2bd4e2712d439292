-- ==== Rate limits of task queues (issue 34, point 2) ====
--
-- A queue's rate limit (silt.conf `rate_limit = N/PERIOD`) and its limit
-- per key (`rate_limit_per_key`) count claims in a sliding window. The
-- claims of a rate-limited queue are recorded here, one row per claim
-- statement and key (how many it took, when), written and read under the
-- queue's advisory lock (the one a cap takes), and pruned by the claims
-- themselves once older than the longer of the queue's two periods. A
-- queue without a rate limit writes nothing here.
CREATE TABLE tasks.rate_claims (
    queue_name text NOT NULL,
    rate_key   text,                 -- the tasks' rateKey when the queue limits per key; NULL otherwise
    claimed_at timestamptz NOT NULL, -- clock_timestamp() once the queue's lock was held: in lock order
    claims     integer NOT NULL      -- tasks this claim took of the queue (and key)
);
CREATE INDEX rate_claims_window ON tasks.rate_claims (queue_name, rate_key, claimed_at);

-- A task's rate key (POST /api/v1/tasks `rateKey`), kept in its record.
ALTER TABLE horsies_tasks ADD COLUMN rate_key text;
ALTER TABLE horsies_task_history ADD COLUMN rate_key text;

-- tasks.send takes the rate keys (p_rate_keys, optional); tasks.claim and
-- tasks.claim_many the queues' rate limits (p_rates, optional).
DROP FUNCTION IF EXISTS tasks.send(uuid[], text[], text[], text[], integer[], timestamptz[], bigint[], timestamptz[],
                                   integer[], integer[], text[], integer[], integer[], real[], text[], text[], text[],
                                   uuid[]);
DROP FUNCTION IF EXISTS tasks.claim_many(text[], text[], text[], integer[], boolean[]);
DROP FUNCTION IF EXISTS tasks.claim(text, text[], integer[], integer, boolean);

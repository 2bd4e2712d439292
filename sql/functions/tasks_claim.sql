-- Claiming, starting and heartbeating tasks; giving claims back.

-- The claims of concurrent requests, gathered: each request's in request
-- order, in one transaction. One statement at a time takes from a queue's
-- head, instead of several claimers each stepping over the rows the others
-- hold locked. p_queues, p_caps and p_rates hold array literals, one per
-- request (p_rates: NULL for a request naming no rate-limited queue, and
-- p_rates itself NULL when no request does).
--
-- A request claims up to its max tasks for its worker from its queues,
-- taken in the order given (the server orders them by their declared
-- priority, most urgent first), and within a queue by task priority, then
-- enqueue time. A queue with a cap (> 0) never has more than that many
-- CLAIMED or RUNNING across the cluster: claimers of a capped queue take
-- turns on a transaction-scoped advisory lock (every capped queue's lock
-- first, in name order, so two batches never wait on each other in a
-- circle), count, and take what is left. A rate-limited queue (see
-- tasks.rate_limited) takes the same lock and is claimed by
-- tasks.claim_rated, within both its cap and its rate. SKIP LOCKED:
-- concurrent claimers never wait on each other's rows and never take the
-- same task. A request with start starts what it takes. The rows it locks
-- are updated by their address (ctid, a TID scan: they are locked, so it
-- stays theirs), not found again by id through a join whose plan the
-- table's statistics decide (a drained queue's stale ones once chose to
-- read the whole table for every claim). The update's RETURNING is the
-- reply's rows: no function is called per request, and no whole task row
-- is copied between functions on its way out.
-- A paused queue (tasks.paused_queues) gives nothing: it is left out of the
-- queue loop's own query. Every queue's pause lock is held shared before
-- that query runs, so tasks.queue_pause, which takes it exclusively, waits
-- for the claims already reading the queue, and every claim after it sees
-- the pause.
--
-- Generic plans: the statements' parameters are a request's one or two
-- queues, for which a custom plan always looks cheaper than a generic one,
-- so PostgreSQL planned them again at every claim (pg_stat_statements: the
-- loop's queries planned 180 times in 176 claims); each has one plan
-- whatever the values (an index or a TID scan). And no sequential scan: a
-- generic plan made while the live table is a few pages reads it whole in
-- place of the TID scan of the rows a claim locked, and is kept for the
-- life of the connection while dead rows grow the table (see
-- tasks.finish_many). A function's settings hold for what it calls
-- (tasks.claim_rated).
CREATE OR REPLACE FUNCTION tasks.claim_many(p_workers text[], p_queues text[], p_caps text[], p_max integer[],
                                 p_start boolean[], p_rates text[] DEFAULT NULL)
RETURNS TABLE (idx integer, id uuid, task_name text, queue_name text, args json, priority integer,
               claim_id uuid, attempt integer, retry_count integer, timeout_ms integer, status text)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
    r      record;
    rated  boolean := cardinality(array_remove(p_rates, NULL)) > 0;
    req    bigint;    -- the request whose queues r is at ...
    left_n integer;   -- ... and what it may still take
    room   integer;
    got    integer;
BEGIN
    -- Every capped or rate-limited queue of every request, locked once in
    -- name order before any claim: two batches never hold one queue's lock
    -- while waiting for another's. A batch without rate limits runs the
    -- statement it ran before they existed (its plans, its cost).
    IF rated THEN
        FOR r IN SELECT DISTINCT x.queue FROM unnest(p_queues, p_caps, p_rates) AS u(queues, caps, rates),
                        unnest(u.queues::text[], u.caps::integer[]) WITH ORDINALITY AS x(queue, cap, i)
                  WHERE x.cap > 0 OR tasks.rate_limited(u.rates::integer[], x.i::integer) ORDER BY x.queue LOOP
            PERFORM pg_advisory_xact_lock(hashtextextended('silt.task_queue:' || r.queue, 0));
        END LOOP;
    ELSE
        FOR r IN SELECT DISTINCT x.queue FROM unnest(p_queues, p_caps) AS u(queues, caps),
                        unnest(u.queues::text[], u.caps::integer[]) AS x(queue, cap)
                  WHERE x.cap > 0 ORDER BY x.queue LOOP
            PERFORM pg_advisory_xact_lock(hashtextextended('silt.task_queue:' || r.queue, 0));
        END LOOP;
    END IF;
    -- Every queue's pause lock, shared, in name order, before any claim
    -- reads whether its queues are paused.
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('silt.task_pause:' || x.queue, 0))
       FROM (SELECT DISTINCT x.queue FROM unnest(p_queues) AS u(queues), unnest(u.queues::text[]) AS x(queue)
              ORDER BY 1) x;
    -- Each request's queues in turn, one query for the batch: a request's
    -- claim starts at its first queue that is not paused.
    FOR r IN SELECT u.worker, u.max, u.start, u.rates::integer[] AS rates, u.ord, x.queue, x.cap, x.i::integer AS i
               FROM unnest(p_workers, p_queues, p_caps, p_max, p_start, p_rates)
                    WITH ORDINALITY AS u(worker, queues, caps, max, start, rates, ord),
                    unnest(u.queues::text[], u.caps::integer[]) WITH ORDINALITY AS x(queue, cap, i)
              WHERE NOT EXISTS (SELECT 1 FROM tasks.paused_queues p WHERE p.queue_name = x.queue)
              ORDER BY u.ord, x.i LOOP
        IF r.ord IS DISTINCT FROM req THEN req := r.ord; left_n := r.max; END IF;
        CONTINUE WHEN left_n <= 0;
        room := left_n;
        IF r.cap > 0 THEN
            SELECT r.cap - count(*) INTO room FROM horsies_tasks t
             WHERE t.queue_name = r.queue AND t.status <> 'PENDING';
            room := least(room, left_n);
        END IF;
        CONTINUE WHEN room <= 0;
        IF tasks.rate_limited(r.rates, r.i) THEN
            RETURN QUERY SELECT (r.ord - 1)::integer, c.id, c.task_name, c.queue_name, c.args, c.priority,
                                c.claim_id, c.attempt, c.retry_count, c.timeout_ms, c.status
                           FROM tasks.claim_rated(r.worker, r.queue, room, r.start, r.rates[r.i][1], r.rates[r.i][2],
                                                  r.rates[r.i][3], r.rates[r.i][4]) c;
        ELSE
            RETURN QUERY
                UPDATE horsies_tasks t
                   SET status = CASE WHEN r.start THEN 'RUNNING' ELSE 'CLAIMED' END, worker_id = r.worker,
                       claim_id = gen_random_uuid(), claimed_at = now(), last_heartbeat_at = now(),
                       attempt = t.attempt + CASE WHEN r.start THEN 1 ELSE 0 END,
                       started_at = CASE WHEN r.start THEN now() END
                 WHERE t.ctid = ANY (ARRAY(
                           SELECT c.ctid FROM horsies_tasks c
                            WHERE c.queue_name = r.queue AND c.status = 'PENDING' AND c.run_at <= now()
                              AND (c.good_until IS NULL OR c.good_until >= now())   -- expired: recovery's
                            ORDER BY c.priority, c.enqueued_at
                            LIMIT room FOR UPDATE SKIP LOCKED))
                RETURNING (r.ord - 1)::integer, t.id, t.task_name, t.queue_name, t.args, t.priority, t.claim_id,
                          t.attempt, t.retry_count, t.timeout_ms, t.status;
        END IF;
        GET DIAGNOSTICS got = ROW_COUNT;
        left_n := left_n - got;
    END LOOP;
END $$;

-- Whether queue i of a claim has a rate limit: p_rates holds one row per
-- queue, {limit, period_ms, limit_per_key, key_period_ms}, 0 for none (the
-- whole array NULL when no queue of the claim has one). An SQL expression,
-- inlined: a claim without rate limits pays no call.
CREATE OR REPLACE FUNCTION tasks.rate_limited(p_rates integer[], i integer) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(p_rates[i][1] > 0 OR p_rates[i][3] > 0, false)
$$;

-- Claims up to p_room tasks of one rate-limited queue, within its rate: in
-- any window of p_period_ms at most p_limit claims of the queue (0: no
-- limit), and at most p_key_limit of each rateKey in any window of
-- p_key_period_ms (0: no limit per key; tasks without a key count only
-- toward the queue's). The caller holds the queue's advisory lock, so the
-- claims of a queue are made and recorded (tasks.rate_claims) one after
-- another, across every server, and the time each is recorded at is read
-- once the lock is held: a later claim never records an earlier time, and
-- each counts every claim recorded before it. A claim spends budget as it
-- is made, whether its tasks start at once or later, and keeps it spent
-- when they are given back. The tasks' claimed_at (and started_at, with
-- p_start) is that same time, so the rows show what the limit counted.
--
-- Per key, a round locks up to the room left of the queue's head, leaving
-- out keys whose window is full, then takes from each key no more than its
-- budget left (FOR UPDATE SKIP LOCKED and a window function cannot share
-- one SELECT: the candidates are locked in one CTE, chosen in another). A
-- round that passed over a key's tasks beyond its budget made that key
-- full, so the next round looks past it; rounds end when one takes nothing
-- or the room is filled.
CREATE OR REPLACE FUNCTION tasks.claim_rated(p_worker text, p_queue text, p_room integer, p_start boolean,
                                  p_limit integer, p_period_ms integer, p_key_limit integer,
                                  p_key_period_ms integer)
RETURNS SETOF horsies_tasks LANGUAGE plpgsql AS $$
DECLARE
    claim_at  timestamptz := clock_timestamp();
    period    interval := make_interval(secs => p_period_ms / 1000.0);
    key_since timestamptz := claim_at - make_interval(secs => p_key_period_ms / 1000.0);
    room      integer := p_room;
    full_keys text[];
    got       integer;
BEGIN
    DELETE FROM tasks.rate_claims r
     WHERE r.queue_name = p_queue
       AND r.claimed_at <= claim_at - make_interval(secs => greatest(p_period_ms, p_key_period_ms) / 1000.0);
    IF p_limit > 0 THEN
        SELECT least(room, p_limit - coalesce(sum(r.claims), 0)) INTO room FROM tasks.rate_claims r
         WHERE r.queue_name = p_queue AND r.claimed_at > claim_at - period;
    END IF;
    WHILE room > 0 LOOP
        IF p_key_limit > 0 THEN
            SELECT array_agg(f.rate_key) INTO full_keys FROM (
                SELECT r.rate_key FROM tasks.rate_claims r
                 WHERE r.queue_name = p_queue AND r.rate_key IS NOT NULL AND r.claimed_at > key_since
                 GROUP BY r.rate_key HAVING sum(r.claims) >= p_key_limit) f;
        END IF;
        RETURN QUERY
            WITH candidates AS (
                SELECT c.id, c.rate_key, c.priority, c.enqueued_at FROM horsies_tasks c
                 WHERE c.queue_name = p_queue AND c.status = 'PENDING' AND c.run_at <= now()
                   AND (c.good_until IS NULL OR c.good_until >= now())
                   AND (c.rate_key IS NULL OR full_keys IS NULL OR c.rate_key <> ALL (full_keys))
                 ORDER BY c.priority, c.enqueued_at
                 LIMIT room FOR UPDATE SKIP LOCKED),
            spent AS (
                SELECT r.rate_key, sum(r.claims) AS n FROM tasks.rate_claims r
                 WHERE p_key_limit > 0 AND r.queue_name = p_queue AND r.claimed_at > key_since
                   AND r.rate_key IN (SELECT c.rate_key FROM candidates c)
                 GROUP BY r.rate_key),
            chosen AS (
                SELECT k.id FROM (SELECT c.id, c.rate_key,
                                         row_number() OVER (PARTITION BY c.rate_key
                                                            ORDER BY c.priority, c.enqueued_at) AS nth
                                    FROM candidates c) k
                  LEFT JOIN spent s ON s.rate_key = k.rate_key
                 WHERE k.rate_key IS NULL OR p_key_limit = 0 OR k.nth <= p_key_limit - coalesce(s.n, 0)),
            taken AS (
                UPDATE horsies_tasks t
                   SET status = CASE WHEN p_start THEN 'RUNNING' ELSE 'CLAIMED' END, worker_id = p_worker,
                       claim_id = gen_random_uuid(), claimed_at = claim_at, last_heartbeat_at = claim_at,
                       attempt = t.attempt + CASE WHEN p_start THEN 1 ELSE 0 END,
                       started_at = CASE WHEN p_start THEN claim_at END
                  FROM chosen k WHERE t.id = k.id
                RETURNING t.*),
            noted AS (
                INSERT INTO tasks.rate_claims (queue_name, rate_key, claimed_at, claims)
                SELECT p_queue, CASE WHEN p_key_limit > 0 THEN t.rate_key END, claim_at, count(*) FROM taken t
                 GROUP BY 2)
            SELECT * FROM taken;
        GET DIAGNOSTICS got = ROW_COUNT;
        room := room - got;
        EXIT WHEN got = 0 OR p_key_limit = 0;
    END LOOP;
END $$;

-- When a parked claim of these queues (with their caps and rate limits, as
-- tasks.claim_many takes them) should look again: the earliest of the
-- moment a full rate window of one of its queues lets a claim through again
-- (tasks.rate_reopens_at) and the moment the earliest delayed task of its
-- other queues is due (tasks.next_run_at; a capped queue, or one with a
-- full window, is left out: its cap or window, not a delayed task, decides
-- when it can give again; a delayed task of it is seen at the reopening or the periodic look).
-- NULL: nothing known, the periodic look stands.
CREATE OR REPLACE FUNCTION tasks.claim_wake_at(p_queues text[], p_caps integer[], p_rates integer[])
RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
    q       record;
    wake    timestamptz;
    reopens timestamptz;
    plain   text[] := '{}';
BEGIN
    FOR q IN SELECT u.queue, u.cap, u.i FROM unnest(p_queues, p_caps) WITH ORDINALITY AS u(queue, cap, i) LOOP
        reopens := NULL;
        IF tasks.rate_limited(p_rates, q.i::integer) THEN
            reopens := least(tasks.rate_reopens_at(q.queue, p_rates[q.i][1], p_rates[q.i][2], false),
                             tasks.rate_reopens_at(q.queue, p_rates[q.i][3], p_rates[q.i][4], true));
            wake := least(wake, reopens);
        END IF;
        IF q.cap = 0 AND reopens IS NULL THEN plain := plain || q.queue; END IF;
    END LOOP;
    RETURN least(wake, tasks.next_run_at(plain));
END $$;

-- When a full rate window of the queue lets a claim through again (NULL:
-- it is not full, or p_limit is 0): per key (p_per_key), the earliest
-- moment any full key's window does. A window holds the claims of the last
-- p_period_ms; it is full while they add up to p_limit, and stops being
-- full when the claim that made it so leaves it: the newest one from which,
-- counting back from the newest, they reach the limit.
CREATE OR REPLACE FUNCTION tasks.rate_reopens_at(p_queue text, p_limit integer, p_period_ms integer,
                                      p_per_key boolean)
RETURNS timestamptz LANGUAGE sql AS $$
    SELECT min(k.filled_at) + make_interval(secs => p_period_ms / 1000.0)
      FROM (SELECT max(w.claimed_at) AS filled_at
              FROM (SELECT CASE WHEN p_per_key THEN r.rate_key END AS rate_key, r.claimed_at,
                           sum(r.claims) OVER (PARTITION BY CASE WHEN p_per_key THEN r.rate_key END
                                               ORDER BY r.claimed_at DESC ROWS UNBOUNDED PRECEDING) AS newer
                      FROM tasks.rate_claims r
                     WHERE p_limit > 0 AND r.queue_name = p_queue
                       AND r.claimed_at > clock_timestamp() - make_interval(secs => p_period_ms / 1000.0)
                       AND (r.rate_key IS NOT NULL OR NOT p_per_key)) w
             WHERE w.newer >= p_limit
             GROUP BY w.rate_key) k
$$;

-- When the earliest delayed PENDING task of these queues becomes claimable
-- (NULL: none), so a parked claimer looks again at that moment rather than
-- at its next periodic look. Tasks already due are not counted: one that
-- is due but not claimable (locked by another claimer, or its queue at its
-- cap) would otherwise have a parked claimer look again at once, forever.
-- A paused queue's tasks are not counted: nothing of it is claimable.
-- A task due later than now was enqueued before its run_at: saying so lets
-- the planner read horsies_tasks_delayed (migration 050), which holds only
-- delayed tasks, instead of the queues' whole backlog. PL/pgSQL, so that a
-- session plans the query once: as an SQL function it was planned at every
-- call, which cost more than the query (0.35 ms a call against 0.03).
CREATE OR REPLACE FUNCTION tasks.next_run_at(p_queues text[]) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT min(t.run_at) FROM horsies_tasks t
             WHERE t.queue_name = ANY (p_queues) AND t.status = 'PENDING' AND t.run_at > now()
               AND t.run_at > t.enqueued_at
               AND t.queue_name NOT IN (SELECT p.queue_name FROM tasks.paused_queues p));
END $$;

-- Takes back what a claim took for a client that was gone before the reply
-- reached it: the tasks go back to PENDING as if never claimed (a start
-- made by the claim itself is undone: its attempt is taken back), so
-- nobody's retries are spent on a reply nobody read. Returns how many, per
-- queue.
CREATE OR REPLACE FUNCTION tasks.unclaim(p_ids uuid[], p_claims uuid[])
RETURNS TABLE (queue text, released bigint) LANGUAGE sql AS $$
    WITH mine AS (
        SELECT t.id, t.status FROM horsies_tasks t, unnest(p_ids, p_claims) AS u(id, claim)
         WHERE t.id = u.id AND t.claim_id = u.claim AND t.status IN ('CLAIMED', 'RUNNING')
         ORDER BY t.id FOR UPDATE OF t),
    back AS (
        UPDATE horsies_tasks t
           SET status = 'PENDING', attempt = t.attempt - CASE WHEN m.status = 'RUNNING' THEN 1 ELSE 0 END,
               worker_id = NULL, claim_id = NULL, claimed_at = NULL, started_at = NULL, last_heartbeat_at = NULL
          FROM mine m WHERE t.id = m.id
        RETURNING t.queue_name)
    SELECT queue_name, count(*) FROM back GROUP BY queue_name
$$;

-- Hands claimed-but-unstarted tasks back (a worker stopping): PENDING again,
-- claimable at once. Returns how many went back, per queue.
CREATE OR REPLACE FUNCTION tasks.release(p_worker text, p_ids uuid[], p_claims uuid[])
RETURNS TABLE (queue text, released bigint) LANGUAGE sql AS $$
    WITH back AS (
        UPDATE horsies_tasks t
           SET status = 'PENDING', worker_id = NULL, claim_id = NULL, claimed_at = NULL, last_heartbeat_at = NULL
          FROM unnest(p_ids, p_claims) AS u(id, claim)
         WHERE t.id = u.id AND t.claim_id = u.claim AND t.worker_id = p_worker AND t.status = 'CLAIMED'
        RETURNING t.queue_name)
    SELECT queue_name, count(*) FROM back GROUP BY queue_name
$$;

-- CLAIMED -> RUNNING under the claim: the attempt begins (it is the task
-- row's until it ends, when tasks.end_attempts writes its row). NULL when
-- the claim is not (or no longer) this task's: the caller answers 409.
CREATE OR REPLACE FUNCTION tasks.start(p_id uuid, p_claim uuid) RETURNS integer
LANGUAGE sql AS $$
    UPDATE horsies_tasks SET status = 'RUNNING', attempt = attempt + 1, started_at = now(), last_heartbeat_at = now()
     WHERE id = p_id AND claim_id = p_claim AND status = 'CLAIMED'
    RETURNING attempt
$$;

-- A heartbeat answers each (task, claim) it names, in the order named: a
-- worker that names a task twice, under an old claim (an end it still
-- holds) and the current one, hears 'lost' for the old. 019's answered by
-- task id alone, so both heard the current claim's state.
-- p_reported[i] true: item i carries a progress report (p_progress[i],
-- p_infos[i], either NULL), which replaces the task's last one, with the
-- time, when the claim is the task's and it is RUNNING; a stale claim's
-- report is dropped with its heartbeat ('lost'), a CLAIMED task's ignored.
-- The arrays may be NULL when no item reports.
CREATE OR REPLACE FUNCTION tasks.heartbeat(p_worker text, p_ids uuid[], p_claims uuid[],
                                           p_reported boolean[], p_progress double precision[], p_infos text[])
RETURNS TABLE (id uuid, state text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    -- Rows locked in id order, as every batch that ends tasks locks them, so
    -- a heartbeat and an end of the same tasks never wait on each other in a
    -- circle.
    PERFORM 1 FROM horsies_tasks t WHERE t.id = ANY (p_ids) ORDER BY t.id FOR UPDATE;
    RETURN QUERY
    WITH named AS (SELECT u.id, u.claim, u.ord, coalesce(p_reported[u.ord], false) AS reported,
                          p_progress[u.ord] AS progress, p_infos[u.ord]::json AS info
                     FROM unnest(p_ids, p_claims) WITH ORDINALITY AS u(id, claim, ord)),
    held AS (
        UPDATE horsies_tasks t SET last_heartbeat_at = now(),
               progress      = CASE WHEN n.reported AND t.status = 'RUNNING' THEN n.progress ELSE t.progress END,
               progress_info = CASE WHEN n.reported AND t.status = 'RUNNING' THEN n.info ELSE t.progress_info END,
               progress_at   = CASE WHEN n.reported AND t.status = 'RUNNING' THEN now() ELSE t.progress_at END
          FROM named n WHERE t.id = n.id AND t.claim_id = n.claim AND t.worker_id = p_worker
        RETURNING t.id, t.claim_id, t.status, t.cancel_requested),
    beats AS (
        INSERT INTO horsies_heartbeats (task_id, worker_id, role)
        SELECT h.id, p_worker, CASE WHEN h.status = 'RUNNING' THEN 'runner' ELSE 'claimer' END FROM held h)
    SELECT n.id, CASE WHEN h.id IS NULL THEN 'lost' WHEN h.cancel_requested THEN 'cancelled' ELSE 'ok' END
      FROM named n LEFT JOIN held h ON h.id = n.id AND h.claim_id = n.claim ORDER BY n.ord;
    UPDATE horsies_workers SET last_seen_at = now() WHERE worker_id = p_worker;
    INSERT INTO horsies_worker_states (worker_id, hostname, pid, queues, concurrency, claimed, running)
    SELECT w.worker_id, w.hostname, w.pid, w.queues, w.concurrency,
           (SELECT count(*) FROM horsies_tasks t WHERE t.worker_id = p_worker AND t.status = 'CLAIMED'),
           (SELECT count(*) FROM horsies_tasks t WHERE t.worker_id = p_worker AND t.status = 'RUNNING')
      FROM horsies_workers w WHERE w.worker_id = p_worker;
END $$;

-- Registers (or re-registers) a worker.
CREATE OR REPLACE FUNCTION tasks.register_worker(p_worker text, p_hostname text, p_pid integer, p_queues text[],
                                      p_concurrency integer) RETURNS timestamptz
LANGUAGE sql AS $$
    INSERT INTO horsies_workers (worker_id, hostname, pid, queues, concurrency)
    VALUES (p_worker, p_hostname, p_pid, p_queues, p_concurrency)
    ON CONFLICT (worker_id) DO UPDATE
       SET hostname = excluded.hostname, pid = excluded.pid, queues = excluded.queues,
           concurrency = excluded.concurrency, last_seen_at = now()
    RETURNING registered_at
$$;

-- Per queue (in the order given): its tasks claimed or running now, what
-- a cap counts (the index horsies_tasks_held), and whether a PENDING task
-- is due. GET /api/v1/task-queues: a queue at its max_concurrency with a
-- task due is held back by its cap, not short of workers.
CREATE OR REPLACE FUNCTION tasks.queue_load(p_queues text[])
RETURNS TABLE (queue text, held bigint, waiting boolean) LANGUAGE sql STABLE AS $$
    SELECT u.queue,
           (SELECT count(*) FROM horsies_tasks t WHERE t.queue_name = u.queue AND t.status <> 'PENDING'),
           EXISTS (SELECT 1 FROM horsies_tasks t
                    WHERE t.queue_name = u.queue AND t.status = 'PENDING' AND t.run_at <= now()
                      AND (t.good_until IS NULL OR t.good_until >= now()))
      FROM unnest(p_queues) WITH ORDINALITY AS u(queue, ord) ORDER BY u.ord
$$;

-- Pushing messages from SQL (docs/sql-api.md): what an application calls
-- inside its own transaction to push into the message log. The message is
-- written to the outbox (queen.push_outbox, migration 047) in the caller's
-- transaction, and a NOTIFY on silt_tasks made there too, so PostgreSQL
-- delivers it at the commit and never after a rollback. Every server
-- listens, and one of them moves the rows into the log through the push
-- path HTTP uses (src/streams/outbox.c): hashing, dedup within
-- dedupWindowSeconds, segments, encryption and wake-ups are that path's,
-- implemented once. What is checked here is what POST /api/v1/push checks
-- of an item before anything is queued (src/api/push.c), with its words;
-- a bad argument raises 22023 and nothing is written.
--
-- queen.push and queen.push_many are SECURITY DEFINER with a fixed
-- search_path: silt_producer may call them (the grants close
-- sql/functions/sql_api.sql, with the task API's).

-- One item as POST /api/v1/push reads it: at is the prefix of a message
-- ("items[2]: " in a batch, "" for queen.push). Raises 22023 with the
-- HTTP 400's (or 413's) words. Returns the outbox row's values: the
-- partition (Default when NULL), the transactionId (a UUIDv7 when none
-- was given) and whether the caller chose it, the trace id.
CREATE OR REPLACE FUNCTION queen.push_check(p_queue text, p_partition text, p_payload json, p_txn text,
                                            p_trace text, p_at text, p_max_payload bigint,
                                            OUT partition text, OUT txn text, OUT client_txn boolean,
                                            OUT trace uuid)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_queue IS NULL THEN
        RAISE EXCEPTION '%queue is required', p_at USING ERRCODE = '22023';
    END IF;
    PERFORM queen.push_check_name(p_queue, 'queue', p_at, 255);
    partition := coalesce(p_partition, 'Default');
    PERFORM queen.push_check_name(partition, 'partition', p_at, 255);
    client_txn := p_txn IS NOT NULL;
    txn := coalesce(p_txn, tasks.uuid7()::text);
    PERFORM queen.push_check_name(txn, 'transactionId', p_at, 65535);   -- FRAME_MAX_TXN
    IF p_trace IS NOT NULL THEN
        IF p_trace !~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' THEN
            RAISE EXCEPTION '%traceId must be a uuid', p_at USING ERRCODE = '22023';
        END IF;
        trace := p_trace::uuid;
    END IF;
    IF p_payload IS NULL THEN
        RAISE EXCEPTION '%payload is required', p_at USING ERRCODE = '22023';
    END IF;
    IF octet_length(p_payload::text) > p_max_payload THEN
        RAISE EXCEPTION '%payload exceeds % bytes', p_at, p_max_payload USING ERRCODE = '22023';
    END IF;
END $$;

-- A name or transactionId: a non-empty string of at most max bytes.
CREATE OR REPLACE FUNCTION queen.push_check_name(p_value text, p_field text, p_at text, p_max integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_value = '' THEN
        RAISE EXCEPTION '%', format('%s%s must be a non-empty string', p_at, p_field) USING ERRCODE = '22023';
    END IF;
    IF octet_length(p_value) > p_max THEN
        RAISE EXCEPTION '%', format('%s%s is longer than %s bytes', p_at, p_field, p_max) USING ERRCODE = '22023';
    END IF;
END $$;

-- "\u0000" in JSON cannot become PostgreSQL text, and any member read
-- from an object holding one fails (22P05), whichever member holds it; a
-- batch with one is read with this mark in its place, and the mark put
-- back in what is stored, so a payload keeps its bytes (as over HTTP).
CREATE OR REPLACE FUNCTION queen.push_nul_mark() RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT '\u0001\u0002silt-nul'
$$;

-- A string member of a batch item, as the HTTP body's is read (the task
-- API's rules: absent or null is NULL, else a non-empty string) and
-- without NUL characters.
CREATE OR REPLACE FUNCTION queen.push_json_text(o json, key text, at text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v text := tasks.api_json_text(o, key, at);
BEGIN
    IF strpos((o -> key)::text, queen.push_nul_mark()) > 0 THEN   -- PostgreSQL's text cannot hold it
        RAISE EXCEPTION '%', format('%s%s must not contain NUL characters', at, key) USING ERRCODE = '22023';
    END IF;
    RETURN v;
END $$;

-- The server settings a push is checked against (migration 047).
CREATE OR REPLACE FUNCTION queen.push_limits(OUT max_payload_bytes bigint, OUT max_items integer)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(s.max_payload_bytes, 67108864), coalesce(s.max_items, 10000)
      FROM (SELECT 1) one LEFT JOIN queen.push_settings s ON true
$$;

-- Stores a server's MAX_PAYLOAD_BYTES and MAX_BATCH_ITEMS at its start
-- (src/streams/outbox.c).
CREATE OR REPLACE FUNCTION queen.push_settings_store(p_max_payload_bytes bigint, p_max_items integer) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO queen.push_settings (max_payload_bytes, max_items) VALUES (p_max_payload_bytes, p_max_items)
    ON CONFLICT (only_row) DO UPDATE SET max_payload_bytes = excluded.max_payload_bytes,
                                         max_items = excluded.max_items, updated_at = now()
$$;

-- Tells every server that the outbox has rows ("sql outbox": "sql" is no
-- server's origin, src/tasks/hub.c). Delivered at the commit, once per
-- transaction however many pushes it made.
CREATE OR REPLACE FUNCTION queen.push_announce() RETURNS void LANGUAGE sql AS $$
    SELECT pg_notify('silt_tasks', 'sql outbox')
$$;

-- One message. partition NULL is "Default"; transaction_id NULL: silt
-- makes one (a UUIDv7), which, as over HTTP, is never a duplicate. Returns
-- the message's transactionId (the one to ack it by). A transaction_id
-- pushed to the partition within the queue's dedupWindowSeconds (over
-- HTTP or SQL) makes no second message: it is dropped when moved.
CREATE OR REPLACE FUNCTION queen.push(queue text, partition text, payload json, transaction_id text DEFAULT NULL,
                                      trace_id text DEFAULT NULL)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    c record;
BEGIN
    c := queen.push_check(push.queue, push.partition, push.payload, push.transaction_id, push.trace_id, '',
                          (queen.push_limits()).max_payload_bytes);
    INSERT INTO queen.push_outbox (queue, partition, transaction_id, client_txn, trace_id, payload)
    VALUES (push.queue, c.partition, c.txn, c.client_txn, c.trace, push.payload);
    PERFORM queen.push_announce();
    RETURN c.txn;
END $$;

-- A batch: a JSON array of items in POST /api/v1/push's shape (queue,
-- partition, payload, transactionId, traceId), at most MAX_BATCH_ITEMS.
-- One row per item, in order: its index and transactionId. A bad item
-- raises naming it ("items[2]: ...") and nothing of the batch is written.
CREATE OR REPLACE FUNCTION queen.push_many(items json)
RETURNS TABLE ("index" integer, transaction_id text) LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    lim record := queen.push_limits();
    n   integer;
    src json := push_many.items;
    nul boolean := false;
BEGIN
    IF json_typeof(push_many.items) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'items array is required' USING ERRCODE = '22023';
    END IF;
    IF strpos(push_many.items::text, '\u0000') > 0 THEN
        IF strpos(push_many.items::text, queen.push_nul_mark()) > 0 THEN
            RAISE EXCEPTION 'items must not hold both \u0000 and %', queen.push_nul_mark() USING ERRCODE = '22023';
        END IF;
        src := replace(push_many.items::text, '\u0000', queen.push_nul_mark())::json;
        nul := true;
    END IF;
    n := json_array_length(src);
    IF n > lim.max_items THEN
        RAISE EXCEPTION 'too many items: % (the limit is %)', n, lim.max_items USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
    WITH e AS MATERIALIZED (
        SELECT (x.ord - 1)::integer AS i, x.item, format('items[%s]: ', x.ord - 1) AS at,
               CASE WHEN nul THEN replace((x.item -> 'payload')::text, queen.push_nul_mark(), '\u0000')::json
                    ELSE x.item -> 'payload' END AS payload
          FROM json_array_elements(src) WITH ORDINALITY AS x(item, ord)),
    -- Each item read once and checked once, in order (a lateral call; "(f()).*"
    -- would call push_check once per column). OFFSET 0 keeps the object check
    -- before the members are read, as the HTTP handler checks them.
    c AS MATERIALIZED (
        SELECT e.i, e.payload, f.queue, k.partition, k.txn, k.client_txn, k.trace
          FROM e
         CROSS JOIN LATERAL (SELECT queen.push_json_text(e.item, 'queue', e.at) AS queue,
                                    queen.push_json_text(e.item, 'partition', e.at) AS partition,
                                    queen.push_json_text(e.item, 'transactionId', e.at) AS txn,
                                    queen.push_json_text(e.item, 'traceId', e.at) AS trace
                              WHERE queen.push_item_object(e.item, e.at) OFFSET 0) f
         CROSS JOIN LATERAL queen.push_check(f.queue, f.partition, e.payload, f.txn, f.trace, e.at,
                                             lim.max_payload_bytes) k
         ORDER BY e.i),
    ins AS (
        INSERT INTO queen.push_outbox (queue, partition, transaction_id, client_txn, trace_id, payload)
        SELECT c.queue, c.partition, c.txn, c.client_txn, c.trace, c.payload FROM c ORDER BY c.i)
    SELECT c.i, c.txn FROM c ORDER BY c.i;
    IF n > 0 THEN PERFORM queen.push_announce(); END IF;
END $$;

-- An item must be an object (true, or raises).
CREATE OR REPLACE FUNCTION queen.push_item_object(item json, at text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF json_typeof(item) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION '%must be an object', at USING ERRCODE = '22023';
    END IF;
    RETURN true;
END $$;

-- ---- The server's side: moving rows into the log (src/streams/outbox.c) ----

-- The oldest rows, at most p_limit and about p_bytes of payload (the
-- first row whatever its size), in outbox order. Read without locks: the
-- move that takes them checks they are still there.
CREATE OR REPLACE FUNCTION queen.push_outbox_read(p_limit integer, p_bytes bigint)
RETURNS TABLE (id bigint, queue text, partition text, transaction_id text, client_txn boolean, trace_id uuid,
               payload json)
LANGUAGE sql STABLE AS $$
    SELECT x.id, x.queue, x.partition, x.transaction_id, x.client_txn, x.trace_id, x.payload
      FROM (SELECT o.*, sum(octet_length(o.payload::text)) OVER (ORDER BY o.id) AS upto
              FROM (SELECT * FROM queen.push_outbox ORDER BY id LIMIT p_limit) o) x
     WHERE x.upto - octet_length(x.payload::text) < p_bytes
     ORDER BY x.id
$$;

-- The first call of a move's transaction, before the push_flush that
-- appends the rows: deletes them, so they leave the outbox exactly when
-- they enter the log. One mover at a time (an advisory lock held to the
-- commit): a second one waits, then finds its rows gone and raises SLO01
-- (the server reads the outbox again), so a row is moved once and the
-- rows of a partition enter its log in outbox order.
CREATE OR REPLACE FUNCTION queen.push_outbox_take(p_ids bigint[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('silt.push_outbox'));
    DELETE FROM queen.push_outbox WHERE id = ANY (p_ids);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> cardinality(p_ids) THEN
        RAISE EXCEPTION 'outbox rows already moved' USING ERRCODE = 'SLO01';
    END IF;
    RETURN n;
END $$;

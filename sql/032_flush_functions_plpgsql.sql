-- ==== No SQL-language function planned per push flush (issue 15, point 3) ====
--
-- A SQL-language function that PostgreSQL cannot inline into the calling
-- query (its body has a FROM, or it returns a record) is parsed and planned
-- again in every transaction that calls it: PostgreSQL 15 keeps a SQL
-- function's plan only for the query it runs in. A push flush is a
-- transaction of its own, so each flush paid for five of them, counted with
-- track_functions = all under push batch 1 at 128 connections (~13
-- messages a flush): queen.maintenance_value (flush_buffers, 0.17 ms a
-- flush), queen.txn_keys (the sidecar's GIN index expression, 0.16 ms),
-- queen.retention_windows (0.13 ms) and queen.rules_window (0.10 ms) (both
-- append_segments), about a fifth of queen.push_flush's 2.6 ms; and, in
-- maintenance mode, queen.buffered_duplicates (buffer_flush).
--
-- Each becomes PL/pgSQL, whose statements' plans are kept for the session
-- (as queen.append_segments and queen.leased_in already are). Same names,
-- arguments, results, volatility and strictness; the bodies compute what
-- the SQL bodies did, expression for expression. queen.default_options
-- stays SQL: it is a constant that PostgreSQL inlines and folds.

-- The queue options that matter to retention, as seconds (0: off).
CREATE OR REPLACE FUNCTION queen.retention_windows(opts jsonb, OUT retention integer, OUT completed integer,
                                                   OUT max_wait integer, OUT ack_window integer)
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    retention := CASE WHEN (opts->>'retentionEnabled')::boolean THEN (opts->>'retentionSeconds')::integer ELSE 0 END;
    completed := CASE WHEN (opts->>'retentionEnabled')::boolean
                      THEN (opts->>'completedRetentionSeconds')::integer ELSE 0 END;
    max_wait := (opts->>'maxWaitTimeSeconds')::integer;
    ack_window := greatest((opts->>'dedupWindowSeconds')::integer, (opts->>'completedRetentionSeconds')::integer, 900);
END $$;

-- The shortest window after which some rule can delete a segment (seconds),
-- NULL when no rule is on.
CREATE OR REPLACE FUNCTION queen.rules_window(opts jsonb) RETURNS integer
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    w record := queen.retention_windows(opts);
BEGIN
    RETURN nullif(least(nullif(w.retention, 0), nullif(w.completed, 0), nullif(w.max_wait, 0)), 0);
END $$;

-- The maintenance switch's value (NULL: no row).
CREATE OR REPLACE FUNCTION queen.maintenance_value() RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v jsonb;
BEGIN
    SELECT value INTO v FROM queen.system_state WHERE key = 'maintenance_mode';
    RETURN v;
END $$;

-- The index keys of a sidecar row: partition id || hash, one per frame;
-- NULL for a row of no frames (as array_agg over none). The keys are built
-- by a loop of simple expressions, which PL/pgSQL evaluates without an
-- executor per call: it runs once per sidecar row a flush inserts.
CREATE OR REPLACE FUNCTION queen.txn_keys(p_partition uuid, p_hashes bytea) RETURNS bytea[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    part bytea := uuid_send(p_partition);
    keys bytea[];
BEGIN
    FOR k IN 0 .. length(p_hashes) / 16 - 1 LOOP
        keys := array_append(keys, part || substring(p_hashes FROM k * 16 + 1 FOR 16));
    END LOOP;
    RETURN keys;
END $$;

-- Frames of p_hashes whose transactionId is already buffered for the
-- partition since p_cutoff: "frame:message-id-hex,..." as find_duplicates.
CREATE OR REPLACE FUNCTION queen.buffered_duplicates(p_partition uuid, p_hashes bytea, p_cutoff timestamptz)
RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
        SELECT string_agg(k || ':' || encode(b.message_id, 'hex'), ',' ORDER BY k)
          FROM generate_series(0, length(p_hashes) / 16 - 1) AS k
          JOIN queen.push_buffer_txns b
            ON b.partition_id = p_partition AND b.hash = substring(p_hashes FROM k * 16 + 1 FOR 16)
         WHERE b.buffered_at >= p_cutoff);
END $$;

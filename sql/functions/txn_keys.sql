-- The index keys of the dedup index on queen.log_txns (log_txns_keys). Applied
-- before the migrations: a migration builds that index on this function.

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

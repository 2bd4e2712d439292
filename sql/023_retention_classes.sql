-- 023: the retention class registry (the Retention Config document,
-- "Declaring your own"): every class the servers of this database use,
-- with its window. Each server registers its classes (silt's standard_30d
-- and forever, the ones its silt.conf declares, the ones its queue mappings
-- derive) at startup,
-- before it listens. Classes are immutable, because rows already carry the
-- old window: a server whose silt.conf gives a registered key another
-- duration is refused at startup, naming the key.

CREATE TABLE horsies_retention_classes (
    class_key     text PRIMARY KEY,
    duration_s    bigint CHECK (duration_s > 0),   -- NULL: forever
    origin        text NOT NULL CHECK (origin IN ('silt', 'declared', 'mapping')),
    registered_at timestamptz NOT NULL DEFAULT now()
);

-- Registers a server's classes (parallel arrays; a NULL duration is
-- forever), all or none: the keys already registered with another
-- duration come back (what the registry holds, what the server says), and
-- then nothing is written. One registration at a time.
CREATE FUNCTION tasks.register_classes(p_keys text[], p_durations bigint[], p_origins text[])
RETURNS TABLE (class_key text, registered_s bigint, declared_s bigint) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('silt.retention_classes', 0));
    RETURN QUERY
        SELECT c.class_key, c.duration_s, u.d
          FROM unnest(p_keys, p_durations) AS u(k, d) JOIN horsies_retention_classes c ON c.class_key = u.k
         WHERE c.duration_s IS DISTINCT FROM u.d ORDER BY 1;
    IF FOUND THEN RETURN; END IF;
    INSERT INTO horsies_retention_classes (class_key, duration_s, origin)
    SELECT u.k, u.d, u.o FROM unnest(p_keys, p_durations, p_origins) AS u(k, d, o)
    ON CONFLICT (class_key) DO NOTHING;
END $$;

-- Queues and their options: the defaults, configure, and what an options
-- change re-schedules; the small helpers every read uses.

-- The options a queue has until /configure says otherwise.
CREATE OR REPLACE FUNCTION queen.default_options() RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT '{"leaseTime": 300, "retryLimit": 3, "retryDelay": 1000, "priority": 0,
             "ttl": 3600, "maxSize": 0, "deadLetterQueue": true,
             "dlqAfterMaxRetries": true, "delayedProcessing": 0, "windowBuffer": 0,
             "retentionEnabled": false, "retentionSeconds": 0,
             "completedRetentionSeconds": 0, "maxWaitTimeSeconds": 0,
             "dedupWindowSeconds": 3600, "encryptionEnabled": false}'::jsonb
$$;

-- Creates or updates a queue. p_patch holds only the options given; a key
-- given as null returns to its default. Tags change only when given.
CREATE OR REPLACE FUNCTION queen.configure(p_queue text, p_namespace text, p_task text, p_patch jsonb,
                                OUT namespace text, OUT task text, OUT options jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    defaults jsonb := queen.default_options();
    reset    text[];
BEGIN
    SELECT coalesce(array_agg(key), '{}') INTO reset
      FROM jsonb_each(p_patch) WHERE jsonb_typeof(value) = 'null';
    INSERT INTO queen.queues AS q (name, namespace, task, options)
    VALUES (p_queue, p_namespace, p_task, defaults || jsonb_strip_nulls(p_patch))
    ON CONFLICT (name) DO UPDATE SET
        namespace = coalesce(p_namespace, q.namespace),
        task = coalesce(p_task, q.task),
        options = defaults || (q.options - reset) || jsonb_strip_nulls(p_patch)
    RETURNING q.namespace, q.task, q.options INTO namespace, task, options;
END $$;

-- ISO 8601 in UTC with milliseconds: the API's one timestamp format.
CREATE OR REPLACE FUNCTION queen.iso_ms(ts timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- Index (0-based) of the 16-byte hash h among the aligned 16-byte entries of
-- hashes, or -1. position() may match across an entry boundary, so misaligned
-- hits are skipped.
CREATE OR REPLACE FUNCTION queen.hash_index(hashes bytea, h bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    base integer := 0;
    pos  integer;
BEGIN
    LOOP
        pos := position(h IN substring(hashes FROM base + 1));
        IF pos = 0 THEN RETURN -1; END IF;
        IF (base + pos - 1) % 16 = 0 THEN RETURN (base + pos - 1) / 16; END IF;
        base := base + pos;
    END LOOP;
END $$;

-- Changing a queue's options reschedules its partitions.
CREATE OR REPLACE FUNCTION queen.queue_options_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queen.reschedule(p.id, NEW.options, NULL) FROM queen.log_partitions p WHERE p.queue = NEW.name;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER queues_options_changed AFTER UPDATE OF options ON queen.queues
    FOR EACH ROW WHEN (OLD.options IS DISTINCT FROM NEW.options) EXECUTE FUNCTION queen.queue_options_changed();

-- Rows deleted behind silt's back (by hand, or by a cascade): what depends on
-- them is cleaned up or re-scheduled.

-- A consumer group's cursors going away (the group deleted, or its queue)
-- can release the consumption cap of their partitions: schedule them for
-- the next pass instead of the recheck a pinned partition was given.
CREATE OR REPLACE FUNCTION queen.cursors_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM queen.reschedule(p.id, q.options, NULL)
       FROM (SELECT DISTINCT partition_id FROM gone) g
       JOIN queen.log_partitions p ON p.id = g.partition_id
       JOIN queen.queues q ON q.name = p.queue;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER log_consumers_removed AFTER DELETE ON queen.log_consumers
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.cursors_removed();

-- 018's triggers, taking the set's rows and the write rows with them.
CREATE OR REPLACE FUNCTION queen.partitions_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_segments s USING gone g WHERE s.partition_id = g.id;
    DELETE FROM queen.log_txns t USING gone g WHERE t.partition_id = g.id;
    DELETE FROM queen.log_ready r USING gone g WHERE r.partition_id = g.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER log_partitions_removed AFTER DELETE ON queen.log_partitions
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.partitions_removed();

CREATE OR REPLACE FUNCTION queen.queues_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_dlq d USING gone g WHERE d.queue = g.name;
    DELETE FROM queen.log_writes w USING gone g WHERE w.queue = g.name;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER queues_removed AFTER DELETE ON queen.queues
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.queues_removed();

CREATE OR REPLACE FUNCTION queen.segments_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.message_traces t USING gone g
     WHERE t.partition_id = g.partition_id AND t.message_offset BETWEEN g.base_offset AND g.end_offset;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER log_segments_removed AFTER DELETE ON queen.log_segments
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.segments_removed();

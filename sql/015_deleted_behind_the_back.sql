-- 015_deleted_behind_the_back: a queue or partition deleted by plain SQL
-- (`DELETE FROM queen.queues WHERE name LIKE 'test-%'`, as operators and
-- test harnesses do) leaves nothing behind. Segments and sidecar rows have
-- no foreign keys (012: a trigger call per pushed row was too dear), so
-- statement-level triggers on the rare deletes do what the keys would have
-- done; pushes never delete, so the hot path pays nothing.

CREATE FUNCTION queen.partitions_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_segments s USING gone g WHERE s.partition_id = g.id;
    DELETE FROM queen.log_txns t USING gone g WHERE t.partition_id = g.id;
    RETURN NULL;
END $$;
CREATE TRIGGER log_partitions_removed AFTER DELETE ON queen.log_partitions
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.partitions_removed();

-- Dead letters are copies that outlive their segments on purpose, but not
-- their queue.
CREATE FUNCTION queen.queues_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.log_dlq d USING gone g WHERE d.queue = g.name;
    RETURN NULL;
END $$;
CREATE TRIGGER queues_removed AFTER DELETE ON queen.queues
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION queen.queues_removed();

-- DELETE /api/v1/resources/queues/:queue is now that same DELETE: its
-- partitions cascade, and the triggers take the rest.
CREATE OR REPLACE FUNCTION queen.queue_delete(p_queue text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queen.queues WHERE name = p_queue;
    RETURN FOUND;
END $$;

-- Orphans an earlier SQL delete left.
DELETE FROM queen.log_segments s WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = s.partition_id);
DELETE FROM queen.log_txns t WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = t.partition_id);
DELETE FROM queen.log_dlq d WHERE NOT EXISTS (SELECT 1 FROM queen.queues q WHERE q.name = d.queue);

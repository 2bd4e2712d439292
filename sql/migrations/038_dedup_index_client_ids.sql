-- 038: the dedup index holds only sidecar rows that carry client-chosen
-- transactionIds (issue 33).
--
-- 028's GIN index took every pushed message's hash, inside push_flush,
-- with fastupdate off: at push batch 100 into one partition it was most of
-- PostgreSQL's work per message (5.1 µs against 1.4 without it). A
-- transactionId the server generated (a UUIDv7, when the client gave none)
-- cannot collide with another, so a row whose messages all had one is
-- never the answer to a dedup probe: it is left out of the index.
-- client_ids says whether any message of the row had a client's id; rows
-- from before say true (they stay indexed, as they were), and so do the
-- rows maintenance mode's buffer drains (the buffer does not record it).
ALTER TABLE queen.log_txns ADD COLUMN client_ids boolean NOT NULL DEFAULT true;

DROP INDEX queen.log_txns_keys;
CREATE INDEX log_txns_keys ON queen.log_txns USING gin (queen.txn_keys(partition_id, hashes))
    WITH (fastupdate = off) WHERE client_ids;

-- append_segments now takes whether each partition's messages had a
-- client's id (sql/functions/push.sql).
DROP FUNCTION IF EXISTS queen.append_segments(text[], text[], integer[], bytea, integer[], bytea, bytea, timestamptz);

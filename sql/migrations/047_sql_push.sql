-- ==== Pushing messages from SQL: the outbox (issue 34, point 1) ====
--
-- A stored message is a frame in a segment plus the xxh3-128 of its
-- transactionId in the sidecar (queen.log_txns); PostgreSQL has no xxh3
-- and silt adds no extension, so SQL cannot append to the log itself.
-- queen.push and queen.push_many (sql/functions/sql_push.sql) write the
-- message here, in the caller's transaction, and notify; a server moves
-- the rows into the log through the push path HTTP uses (hash, dedup,
-- segment, encryption, wake-ups), deleting them in the transaction that
-- appends them (src/streams/outbox.c; docs/sql-api.md).

-- One row a message pushed from SQL and not yet in the log. id is the
-- order the messages of a partition are moved in.
CREATE TABLE queen.push_outbox (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue          text NOT NULL,
    partition      text NOT NULL,
    transaction_id text NOT NULL,   -- the caller's, or a UUIDv7 made by queen.push
    client_txn     boolean NOT NULL,   -- the caller chose transaction_id: dedup applies, as over HTTP
    trace_id       uuid,
    payload        json NOT NULL,   -- as given, byte for byte (json keeps its text)
    pushed_at      timestamptz NOT NULL DEFAULT now()
);

-- The server settings a push is checked against (MAX_PAYLOAD_BYTES,
-- MAX_BATCH_ITEMS), written by every server at start: the last one
-- started wrote what is here. Before any server started: the defaults.
CREATE TABLE queen.push_settings (
    only_row          boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    max_payload_bytes bigint NOT NULL DEFAULT 67108864,
    max_items         integer NOT NULL DEFAULT 10000,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- silt_producer (migration 045) calls queen.push and queen.push_many; the
-- grants are made with the others, after every function (sql/functions/sql_api.sql).
GRANT USAGE ON SCHEMA queen TO silt_producer;

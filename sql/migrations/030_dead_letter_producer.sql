-- 030: a dead letter keeps its message's producerSub.
--
-- With authentication on, a push stamps the token's sub in the message's
-- frame (FRAME_HAS_SUB) and pops return it as producerSub. The dead-letter
-- hand-off copied every other part of the frame into queen.log_dlq but not
-- that one, so a dead letter, and the message its replay pushed back, no
-- longer said who produced it. The copy now carries it: C reads it from the
-- frame as it reads the rest (streams/ack.c for acks, streams/tx.c for the
-- copies of a transaction) and hands it to queen.dead_letter.
--
-- The column is nullable with no default: messages pushed without
-- authentication have no sub, and dead letters stored before this file have
-- none either (their frames may be gone), so they read as null. Adding it
-- rewrites nothing.
--
-- The three functions of the hand-off gain a parameter, so they are dropped
-- and created again (a CREATE OR REPLACE with another signature would add an
-- overload beside the old one). Their bodies are 018's but for the sub.

ALTER TABLE queen.log_dlq ADD COLUMN producer_sub text;

   -- the pushing token's sub; NULL: none

-- Second half of a dead-letter hand-off: stores the full copy C decoded from
-- the covering segment and moves the cursor past it (committing what the
-- leased batch held below it), unless the cursor already passed it. Returns
-- whether the lease was released, or an error.
DROP FUNCTION IF EXISTS queen.dead_letter(text, uuid, bigint, uuid, text, uuid, bytea, boolean, text, timestamptz);

-- The dead-letter copies C read from compressed segments for queen.tx_ack,
-- one row per copy: parallel arrays (p_subs: each message's producerSub,
-- NULL when it has none), the payloads concatenated in one bytea (p_lengths
-- bytes each, in order), as pushes send their segments.
DROP FUNCTION IF EXISTS queen.tx_copies(integer[], uuid[], text[], uuid[], timestamptz[], boolean[], bytea, integer[]);

-- Acks inside a transaction: the arrays of queen.ack, plus each item's
-- transactionId (for the error) and the client's error text (kept with a
-- dead letter), then the dead-letter copies (queen.tx_copies). A hand-off
-- needs the message's frame, which only C can read from the compressed
-- segment: without its copy this raises SLQ01 with DETAIL
-- "<item index>:<offset>,..." naming what is needed, and the caller retries
-- the whole transaction with the copies.
DROP FUNCTION IF EXISTS queen.tx_ack(text[], uuid[], bytea, text[], uuid[], text[], text[], integer[], uuid[], text[],
                           uuid[], timestamptz[], boolean[], bytea, integer[]);

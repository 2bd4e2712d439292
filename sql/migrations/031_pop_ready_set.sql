-- 031: a pop finds a deliverable partition without reading every partition.
--
-- queen.pop (018) chose among all the queue's partitions, joined to the
-- group's cursors and sorted by when each was last served, on every pop: at
-- 100,000 partitions one pop cost over half a second. Now a queue-wide pop
-- walks the group's ready set: one row per partition that may have
-- something for the group (queen.log_ready), in the order they were last
-- served, and stops at the first it can claim. Pops of one partition and
-- discovery pops (by namespace or task, across queues) keep 018's scan.
--
-- How the set stays whole without pushes touching it: every flush writes
-- one row per queue to queen.log_writes (which partitions it appended to,
-- and its transaction id). Before a queue-wide pop claims, a reconcile, in
-- a transaction of its own, adds to the group's set the partitions of the
-- write rows it has not taken in yet. What it has taken in is kept per
-- group and queue (queen.log_ready_scans) as the highest write row id it
-- saw and the transactions in flight when it looked: a row it did not see
-- either has a higher id or was written by one of those (a row id is drawn
-- after its writer's transaction id, so a writer that starts after a look
-- draws a higher id than any the look saw). A long transaction elsewhere
-- therefore costs a lookup by transaction id, not a rescan.
--
-- A pop removes a partition from the set when it finds the group has
-- nothing left there (cursor at the end or past the retained log). Every
-- path that can give the group something there again re-marks it: the
-- reconcile for writes, the seek for cursors moved back, the claim itself
-- (touching its served time). A mark bumps the row's version, and the
-- removal names the version it read, so a mark between the pop's read and
-- its removal keeps the row. Removals and touches skip rows another
-- transaction holds and never wait on them; only the reconcile waits (on
-- them, briefly), which keeps the lock graph free of cycles. The first
-- pop of a group on a queue fills the set from the partitions, and one
-- reconcile a minute fills it again, whatever the set says: a safety net
-- (cursors edited by hand, a set damaged by a bug) at the cost of one scan
-- of the queue a minute per group.

CREATE TABLE queen.log_writes (
    id            bigserial PRIMARY KEY,
    queue         text NOT NULL,
    writer        xid8 NOT NULL DEFAULT pg_current_xact_id(),
    partition_ids uuid[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX log_writes_queue ON queen.log_writes (queue, id);

CREATE INDEX log_writes_writer ON queen.log_writes (writer);

CREATE TABLE queen.log_ready (
    consumer_group text NOT NULL,
    queue          text NOT NULL,
    partition_id   uuid NOT NULL,
    served_at      timestamptz,                -- the group's last claim there; NULL: first in line
    born_at        timestamptz NOT NULL,       -- the partition's creation: among equals, the older first
    version        integer NOT NULL DEFAULT 0, -- bumped by every mark
    PRIMARY KEY (consumer_group, partition_id)
);

CREATE INDEX log_ready_walk ON queen.log_ready (consumer_group, queue, served_at NULLS FIRST, born_at);

CREATE TABLE queen.log_ready_scans (
    consumer_group text NOT NULL,
    queue          text NOT NULL REFERENCES queen.queues(name) ON DELETE CASCADE,
    seen_id        bigint NOT NULL,            -- highest log_writes id taken in
    in_flight      xid8[] NOT NULL,            -- transactions running at that look
    filled_at      timestamptz NOT NULL,       -- the last fill from the partitions
    PRIMARY KEY (consumer_group, queue)
);

-- Existing groups start with a fill at their first pop: no scans row yet.

-- ---- Writes ---------------------------------------------------------------

-- ---- The set ----------------------------------------------------------------

-- ---- The pop ----------------------------------------------------------------

-- ---- Cursors moved or removed -----------------------------------------------

-- ---- Deletion and upkeep ----------------------------------------------------

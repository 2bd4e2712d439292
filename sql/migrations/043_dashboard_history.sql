-- The dashboard's 24 hours of history (issue 36): a per-minute rollup of
-- the database's own counters, written once a minute by whichever server
-- takes the rollup's lock (queen.minute_stats_roll, sql/functions/history.sql).

-- Each minute rolled, with the span its counts cover: the seconds since the
-- reading before (60 while some server runs; longer after none did).
CREATE TABLE queen.minute_rolls (
    minute  timestamptz PRIMARY KEY,
    read_at timestamptz NOT NULL,
    seconds integer NOT NULL
);

-- What each queue did in a rolled minute; a queue that did nothing has no
-- row (a rolled minute without rows is a minute of zeros).
CREATE TABLE queen.minute_stats (
    minute        timestamptz NOT NULL,
    queue         text NOT NULL,
    pushed        bigint NOT NULL DEFAULT 0,
    consumed      bigint NOT NULL DEFAULT 0,
    dead_lettered bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, queue)
);
CREATE INDEX minute_stats_queue ON queen.minute_stats (queue, minute);

-- The last reading of each queue's cumulative counters: a minute's counts
-- are the change since.
CREATE TABLE queen.minute_counters (
    queue    text PRIMARY KEY,
    written  numeric NOT NULL,
    consumed numeric NOT NULL
);

-- The queue and group lists take ?search= and ?sort= (issue 36): their
-- functions have new arguments, so the old ones go.
DROP FUNCTION IF EXISTS queen.queue_list(integer, integer);
DROP FUNCTION IF EXISTS queen.group_list(integer, integer, text, integer, integer);

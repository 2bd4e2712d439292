-- ==== Uniqueness of sends (issue 34, point 5) ====
--
-- A send with "unique" holds a key (its task name and either a key it
-- names or its args) for its task: for a period from the send (forMs), or
-- while the task is live (PENDING, CLAIMED or RUNNING). A send of a key
-- held gets the holder back instead of a new task (and, when it asks, the
-- holder's args replaced or its start pushed later). The row is the lock:
-- sends on every server insert it with ON CONFLICT, so two of one key
-- never both create a task (sql/functions/tasks_send.sql).
--
-- A key whose period ended, or whose task ended (its row no longer in
-- horsies_tasks), is free: the next send of it takes the row over. The
-- sweep deletes such rows (tasks.sweep_unique_keys) so the table holds
-- little more than the keys held.
CREATE TABLE tasks.unique_keys (
    task_name  text NOT NULL,
    scope      text NOT NULL,          -- 'key:' || the key, or 'args:' || md5 of the args as jsonb text
    task_id    uuid NOT NULL,          -- the holder
    expires_at timestamptz,            -- held until then (forMs); NULL: while the holder is live
    held_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_name, scope)
);

-- The send functions take uniqueness and return whether a send changed the
-- task it got back: new arguments and a new row type, so the old
-- signatures go (their current definitions are re-made from
-- sql/functions/ after the migrations).
DROP FUNCTION IF EXISTS tasks.send(uuid[], text[], text[], text[], integer[], timestamptz[], bigint[], timestamptz[],
                                   integer[], integer[], text[], integer[], integer[], real[], text[], text[], text[],
                                   uuid[], text[]);
DROP FUNCTION IF EXISTS tasks.enqueue(uuid[], text[], text[], text[], integer[], timestamptz[], bigint[],
                                      timestamptz[], integer[], integer[], text[], integer[], integer[], real[], text[],
                                      text[], text[], boolean, text[]);
DROP FUNCTION IF EXISTS tasks.send_task(text, text, json, integer, bigint, timestamptz, timestamptz, integer, integer,
                                        integer[], integer, integer, real, text[], text, text);
DROP FUNCTION IF EXISTS tasks.send_tasks(json);
DROP FUNCTION IF EXISTS tasks.api_json_task(json, text);

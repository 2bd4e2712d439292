-- 022: retention classes at send (the Retention Config document, "Which
-- class a send gets"). Every task carries the class its server resolved at
-- enqueue (tasks/retention_class.c: the send's retentionClassKey, else its
-- queue's queue_retention mapping, else standard_30d), snapshotted on the
-- row: tasks.send takes it with the rest of each task.

DROP FUNCTION IF EXISTS tasks.send(uuid[], text[], text[], text[], integer[], timestamptz[], bigint[], timestamptz[],
                         integer[], integer[], text[], integer[], integer[], real[], text[], text[]);

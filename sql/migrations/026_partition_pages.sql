-- 026: what the dashboard reads at scale: queues, consumer groups, a
-- queue's partitions and a group's cursors a page at a time, the cluster's
-- traffic as counters any server can read, and leased offsets evicted over
-- time.
--
-- A queue may hold 100,000 partitions: its detail and its retention explain
-- listed every one (26 s and 63 s at that size). With a limit they answer
-- one page, ordered by partition name, and the queue-wide figures come from
-- one scan of the partition rows, never from per-partition work. Without a
-- limit they answer the whole list, as Queen's clients read it.

-- GET /api/v1/resources/queues/:queue[?limit=&offset=].
DROP FUNCTION IF EXISTS queen.queue_detail(text);

-- GET /api/v1/retention/explain?queue=[&partition=][&limit=&offset=].
DROP FUNCTION IF EXISTS queen.retention_explain(text, text, timestamptz);

-- GET /api/v1/resources/queues[?limit=&offset=]: queues in name order.
DROP FUNCTION IF EXISTS queen.queue_list();

-- A page of groups, or one group's cursors, is read by group name: without
-- this index each would scan every cursor of every group. The group never
-- changes in a row, so cursor updates stay heap-only.
CREATE INDEX log_consumers_group ON queen.log_consumers (consumer_group);

-- GET /api/v1/consumer-groups[?queue=][&limit=&offset=]: groups with
-- cursors (on p_queue's partitions when given), in name order; only the
-- page's groups are summed, each over all its cursors.
DROP FUNCTION IF EXISTS queen.group_list(integer, integer);

-- GET /api/v1/consumer-groups/:group[?limit=&offset=]: the group's figures,
-- its cursors in (queue, partition) order — a page of them when asked —
-- and its stored subscriptions. NULL when it has neither cursors nor
-- subscriptions.
DROP FUNCTION IF EXISTS queen.group_detail(text);

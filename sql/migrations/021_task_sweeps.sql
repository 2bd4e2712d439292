-- 021: the row-delete sweep and paused-workflow expiry of the Retention
-- Config document (docs/retention.md, second table). Terminal workflow
-- records and worker-state snapshots are deleted in batches, one commit
-- each; PAUSED workflows paused longer than a declared age are EXPIRED.
-- Terminal task records and heartbeats age by partition drop instead.
--
-- One server sweeps at a time: each batch takes a transaction-level
-- advisory lock, and a server that cannot take it leaves the round to the
-- one that holds it.

CREATE INDEX horsies_workflows_finished ON horsies_workflows (finished_at) WHERE finished_at IS NOT NULL;

CREATE INDEX horsies_workflows_paused ON horsies_workflows (paused_at) WHERE status = 'PAUSED';

CREATE INDEX horsies_worker_states_snapshot ON horsies_worker_states (snapshot_at);

CREATE INDEX horsies_workers_last_seen ON horsies_workers (last_seen_at);

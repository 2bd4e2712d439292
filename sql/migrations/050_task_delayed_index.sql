-- ==== A parked claim finds the next delayed task without the backlog (issue 35) ====
--
-- A claim that takes nothing asks tasks.next_run_at when the earliest
-- delayed task of its queues is due. Without run_at in an index, that read
-- every PENDING task of the queues through horsies_tasks_ready and its
-- heap row: 0.44 ms a call with ~1,000 waiting in the peers' end-to-end
-- scenario, where claims gathered together often leave the later ones
-- empty (908 calls for 96,000 tasks, 5% of PostgreSQL's statement time).
-- A task is delayed only when its run_at is later than its enqueued_at
-- (both now() when it is sent or retried without a delay), so this index
-- holds the delayed tasks alone: a send or retry without a delay writes no
-- entry, and a queue without delayed tasks is answered from an empty range.
CREATE INDEX horsies_tasks_delayed ON horsies_tasks (queue_name, run_at)
    WHERE status = 'PENDING' AND run_at > enqueued_at;

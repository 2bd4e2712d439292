"""The tasks a worker holds, and the one decision each attempt gets.

A task is *held* from its claim until the server has answered its end (or
said it is lost): that is the set the heartbeats name, so a task whose end
is still being resent is heartbeated like a running one and recovery does
not take it back meanwhile.

Several parties race to end an attempt: the function returning, the
heartbeat reporting a cancel, the timeout, the grace running out at stop.
``HeldSet.decide`` lets the first one win, under one lock; the others find
the attempt decided and do nothing. That is what makes "nothing is sent
twice" hold: one end per claim, resent only as itself.
"""

import threading

__all__ = ["Held", "HeldSet", "RUNNING", "ENDING", "DONE"]

RUNNING = 0   # the attempt is undecided (its function may or may not still run)
ENDING = 1    # its end is decided and waits in the outbox for the server's answer
DONE = 2      # answered or lost: forgotten


class Held:
    """One claimed attempt: the claim it runs under, its context, its end."""

    __slots__ = ("id", "claim_id", "ctx", "state", "end", "deadline")

    def __init__(self, task, ctx):
        self.id = task["id"]
        self.claim_id = task["claimId"]
        self.ctx = ctx
        self.state = RUNNING
        self.end = None        # the end's JSON text, one item of a finish batch
        self.deadline = None   # monotonic time past which it is TASK_TIMEOUT, or None


class HeldSet:
    """Every held attempt of a worker, by (task id, claimId): a task lost
    and claimed again is held twice until its first attempt is dropped."""

    def __init__(self):
        self._lock = threading.Lock()
        self._tasks = {}

    def add(self, held):
        with self._lock:
            self._tasks[held.id, held.claim_id] = held

    def decide(self, held, end):
        """Makes ``end`` the attempt's end if none was decided; True when
        it did (the caller then hands it to the outbox)."""
        with self._lock:
            if held.state != RUNNING:
                return False
            held.state = ENDING
            held.end = end
            return True

    def forget(self, held):
        """The server answered its end, or said it is lost: not held any more."""
        self.forget_all((held,))

    def forget_all(self, helds):
        with self._lock:
            for held in helds:
                held.state = DONE
                self._tasks.pop((held.id, held.claim_id), None)

    def get(self, task_id, claim_id):
        return self._tasks.get((task_id, claim_id))

    def claims(self):
        """(id, claimId) of every held task: what a heartbeat names."""
        with self._lock:
            return [(h.id, h.claim_id) for h in self._tasks.values()]

    def __len__(self):
        return len(self._tasks)

"""The worker's supervisor: heartbeats, and the timeouts of running tasks.

One thread with two kinds of timer: every ``runnerHeartbeatIntervalMs`` it
names every held task under its claim (``POST /api/v1/workers/:id/
heartbeat``, also with none: that writes the worker's snapshot), and at
each task's deadline it calls the timeout. A heartbeat that gets no answer
is retried after a backoff rather than a whole interval, so after a server
restart the held tasks are heartbeated again within a second of its
return. Timeouts keep firing meanwhile: they need no server.
"""

import heapq
import itertools
import logging
import threading
import time

from ._backoff import Backoff
from ._held import RUNNING
from .errors import TransportError

__all__ = ["Supervisor"]

log = logging.getLogger("silt.worker")

MAX_NAMED = 1000           # the server's bound on the tasks of one heartbeat
REQUEST_TIMEOUT_S = 10.0   # a heartbeat that hangs longer is retried (timeouts wait for it meanwhile)


class Supervisor:
    """Heartbeats and timeouts on a thread of their own.

    ``on_state(held, state)`` is called for each task a heartbeat answers
    ``cancelled`` or ``lost``; ``on_timeout(held)`` when a running task's
    deadline passes.
    """

    def __init__(self, conn, path, held_set, interval_s, on_state, on_timeout):
        self._conn = conn
        self._path = path
        self._held = held_set
        self._interval = interval_s
        self._on_state = on_state
        self._on_timeout = on_timeout
        self._cond = threading.Condition()
        self._deadlines = []                 # heap of (monotonic deadline, seq, held)
        self._seq = itertools.count()        # ties broken by arrival, never by comparing Held
        self._sleep_until = float("inf")     # when the thread wakes next: a sooner deadline must wake it
        self._stopping = False
        self.beats = 0                       # heartbeats answered (for tests)
        self._thread = threading.Thread(target=self._run, name="silt-heartbeat", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self, timeout=1.0):
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join(timeout)

    def watch(self, held):
        """Times ``held`` out at ``held.deadline``."""
        with self._cond:
            heapq.heappush(self._deadlines, (held.deadline, next(self._seq), held))
            if held.deadline < self._sleep_until:
                self._cond.notify()

    # ---- the thread ----

    def _run(self):
        backoff = Backoff()
        next_beat = time.monotonic() + self._interval
        while True:
            with self._cond:
                if self._stopping:
                    return
                now = time.monotonic()
                due = self._due(now)
            for held in due:
                self._timeout(held)
            if now >= next_beat:
                answered = self._beat_safely()
                next_beat = time.monotonic() + (self._interval if answered else backoff.next_delay())
                if answered:
                    backoff.reset()
            self._sleep(next_beat)

    def _due(self, now):
        due = []
        while self._deadlines and self._deadlines[0][0] <= now:
            due.append(heapq.heappop(self._deadlines)[2])
        return due

    def _timeout(self, held):
        if held.state == RUNNING:
            try:
                self._on_timeout(held)
            except Exception:   # a bug there must not stop the heartbeats
                log.exception("timing out task %s", held.id)

    def _sleep(self, next_beat):
        with self._cond:
            wake = min(next_beat, self._deadlines[0][0] if self._deadlines else next_beat)
            self._sleep_until = wake
            if not self._stopping:
                self._cond.wait(max(0.0, wake - time.monotonic()))
            self._sleep_until = float("inf")

    def _beat_safely(self):
        try:
            return self._beat()
        except Exception:   # a reply of an unexpected shape: the heartbeats must go on
            log.exception("heartbeat")
            return False

    def _beat(self):
        """One heartbeat of every held task; False when the server did not answer."""
        for chunk in _chunks(self._held.claims()):
            body = {"tasks": [{"id": i, "claimId": c} for i, c in chunk]}
            try:
                reply = self._conn.request("POST", self._path, body, timeout=REQUEST_TIMEOUT_S)
            except TransportError as exc:
                log.debug("heartbeat: %s", exc)
                return False
            if reply.status != 200:
                log.warning("heartbeat answered %d: %s", reply.status, (reply.data or {}).get("error"))
                return False
            self._apply(dict(chunk), reply.data.get("tasks", []))
        self.beats += 1
        return True

    def _apply(self, claims, answers):
        """Answers come by task id, which is unique in a request (_chunks)."""
        for answer in answers:
            state = answer.get("state")
            task_id = answer.get("id")
            if state == "ok" or task_id not in claims:
                continue
            held = self._held.get(task_id, claims[task_id])
            if held is not None:
                self._on_state(held, state)


def _chunks(claims):
    """The (id, claimId) pairs as heartbeat requests: at most MAX_NAMED
    each, and never one id twice in a request. The server answers a task by
    its id and matches it to any named claim of it, so the stale claim of a
    task lost and claimed again must go alone to be told it is lost."""
    chunks, seen = [], []
    for task_id, claim in claims:
        for chunk, ids in zip(chunks, seen):
            if len(chunk) < MAX_NAMED and task_id not in ids:
                break
        else:
            chunk, ids = [], set()
            chunks.append(chunk)
            seen.append(ids)
        chunk.append((task_id, claim))
        ids.add(task_id)
    return chunks or [[]]

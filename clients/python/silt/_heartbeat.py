"""The worker's supervisor: heartbeats, and the timeouts of running tasks.

One thread with two kinds of timer: every ``runnerHeartbeatIntervalMs`` it
names every held task under its claim (``POST /api/v1/workers/:id/
heartbeat``, also with none: that writes the worker's snapshot), and at
each task's deadline it calls the timeout. A heartbeat that gets no answer
is retried after a backoff rather than a whole interval, so after a server
restart the held tasks are heartbeated again within a second of its
return. Timeouts keep firing meanwhile: they need no server.

A task function's progress report (``ctx.progress``) brings the next
heartbeat forward, to at most one a second (``PROGRESS_EVERY_S``): each
carries the latest report of every task that made one. An attempt that
ends with a report not yet sent has it sent, in a heartbeat at once, before
its end goes to the outbox (``end_after_report``), so its record shows
where it ended.
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
PROGRESS_EVERY_S = 1.0     # progress brings a heartbeat forward at most this often


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
        self._progress_at = None             # when a report asks for a heartbeat (None: none asks)
        self._last_beat = float("-inf")      # when the last heartbeat went out
        self._ending = []                    # (held, put): ends that wait for their last report to go
        self._ending_left = 0                # of those, not yet put (waited for by wait_ending)
        self.beats = 0                       # heartbeats answered (for tests)
        self._thread = threading.Thread(target=self._run, name="silt-heartbeat", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self, timeout=1.0):
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def watch(self, held):
        """Times ``held`` out at ``held.deadline``."""
        with self._cond:
            heapq.heappush(self._deadlines, (held.deadline, next(self._seq), held))
            if held.deadline < self._sleep_until:
                self._cond.notify_all()

    def progressed(self):
        """A task reported progress: heartbeat at most PROGRESS_EVERY_S after the last."""
        with self._cond:
            if self._progress_at is None:
                self._progress_at = max(time.monotonic(), self._last_beat + PROGRESS_EVERY_S)
                if self._progress_at < self._sleep_until:
                    self._cond.notify_all()

    def end_after_report(self, held, put):
        """Calls ``put(held)`` once a heartbeat has carried held's last
        report (answered or not: an end never waits on progress for long)."""
        with self._cond:
            self._ending.append((held, put))
            self._ending_left += 1
            self._cond.notify_all()

    def wait_ending(self, deadline):
        """Waits (up to ``deadline``, monotonic) until every end handed to
        end_after_report is with the outbox: a stopping worker drains the
        outbox after that."""
        with self._cond:
            while self._ending_left and time.monotonic() < deadline:
                self._cond.wait(deadline - time.monotonic())

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
                ending, self._ending = self._ending, []
                early = ending or (self._progress_at is not None and now >= self._progress_at)
            for held in due:
                self._timeout(held)
            if now >= next_beat or early:
                answered = self._beat_safely()
                next_beat = time.monotonic() + (self._interval if answered else backoff.next_delay())
                if answered:
                    backoff.reset()
            for held, put in ending:
                put(held)
            if ending:
                with self._cond:
                    self._ending_left -= len(ending)
                    self._cond.notify_all()
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
            if self._progress_at is not None:
                wake = min(wake, self._progress_at)
            if self._ending:
                wake = 0.0
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
        """One heartbeat of every held task, with the progress reports not
        yet sent; False when the server did not answer."""
        with self._cond:
            self._progress_at = None
            self._last_beat = time.monotonic()
        for chunk in _chunks(self._held.claims()):
            items, reports = self._items(chunk)
            try:
                reply = self._conn.request("POST", self._path, {"tasks": items}, timeout=REQUEST_TIMEOUT_S)
            except TransportError as exc:
                log.debug("heartbeat: %s", exc)
                _give_back(reports)
                return False
            if reply.status != 200:
                log.warning("heartbeat answered %d: %s", reply.status, (reply.data or {}).get("error"))
                _give_back(reports)
                return False
            self._apply(dict(chunk), reply.data.get("tasks", []))
        self.beats += 1
        return True

    def _items(self, chunk):
        """The heartbeat's items, each with its task's report taken, and the
        (ctx, report) pairs taken (given back if the call fails)."""
        items, reports = [], []
        for task_id, claim in chunk:
            item = {"id": task_id, "claimId": claim}
            held = self._held.get(task_id, claim)
            report = held.ctx._take_report() if held is not None else None
            if report is not None:
                item.update(report)
                reports.append((held.ctx, report))
            items.append(item)
        return items, reports

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


def _give_back(reports):
    for ctx, report in reports:
        ctx._give_back_report(report)


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

"""Ends of attempts: what a function's outcome is reported as, and the
outbox that delivers ends until the server has answered each one.

An end is encoded once, as the JSON text of one item of ``POST
/api/v1/workers/:id/finish``, when the attempt is decided (so a result
that cannot be encoded fails the attempt ``INVALID_RESULT`` right there).
The outbox sends ends in batches: while one batch is with the server the
next gathers, so a busy worker pays one round trip per batch, not per task.

An end is kept until the server answers for it: a status (COMPLETED,
FAILED, CANCELLED, PENDING for a retry) or a refusal under fencing (its
claim was retired: recovered, cancelled, already ended). No answer at all —
connection refused, reset, timed out, a 5xx, the 503 of a draining server —
and the same batch is sent again, under the same claimIds, after a backoff
(50 ms doubling to 1 s), for as long as it takes: the task stays held and
heartbeated meanwhile, so recovery does not take it back. Only the
worker's stop puts a bound on it (``drain``).
"""

import json
import logging
import re
import threading

from ._backoff import Backoff
from ._held import ENDING
from .errors import TransportError

__all__ = ["Outbox", "complete", "fail", "from_exception"]

log = logging.getLogger("silt.worker")

MAX_BATCH = 1000            # the server's bound on a finish batch
MAX_CODE = 64               # errorCode, characters
MAX_MESSAGE = 4096          # the server keeps 4096 bytes of a message; no need to send megabytes
_ITEM_AT = re.compile(r"^tasks\[(\d+)\]: ")


class InvalidResult(Exception):
    """The function's return value cannot be sent as JSON."""


def complete(held, value):
    """The end of an attempt that returned ``value``: a finish item that
    completes it. Raises InvalidResult when value is not JSON."""
    try:
        result = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidResult(f"the result is not JSON-serialisable: {exc}") from None
    return f'{{"id":"{held.id}","claimId":"{held.claim_id}","result":{result}}}'


def fail(held, code, message):
    """The end of a failed attempt: a finish item with its error."""
    return json.dumps({"id": held.id, "claimId": held.claim_id, "errorCode": code[:MAX_CODE] or "ERROR",
                       "errorMessage": (message or "")[:MAX_MESSAGE]}, separators=(",", ":"))


def from_exception(exc):
    """(errorCode, errorMessage) of an exception: its ``code`` attribute
    when it has a string one (TaskError), else its class name."""
    code = getattr(exc, "code", None)
    if not isinstance(code, str) or not code:
        code = type(exc).__name__
    message = getattr(exc, "message", None)
    if not isinstance(message, str) or not message:
        message = str(exc) or type(exc).__name__
    return code, message


class Outbox:
    """Delivers ends through ``POST /api/v1/workers/:id/finish`` on its own
    thread and connection, each until answered (see the module comment)."""

    def __init__(self, conn, path, held_set, request_timeout=30.0):
        self._conn = conn
        self._path = path
        self._held = held_set
        self._timeout = request_timeout
        self._cond = threading.Condition()
        self._queue = []           # decided ends not yet in a batch
        self._pending = 0          # ends put and not yet answered or given up
        self._closing = False
        self._abandon = threading.Event()   # set when the stop's bound is reached: resend no more
        self.failed_sends = 0      # batches that got no answer (for tests and logs)
        self._thread = threading.Thread(target=self._run, name="silt-ends", daemon=True)

    def start(self):
        self._thread.start()

    def put(self, held):
        """Queues the end of a decided attempt (held.state is ENDING)."""
        with self._cond:
            self._queue.append(held)
            self._pending += 1
            self._cond.notify()

    def pending(self):
        """Ends not yet answered."""
        return self._pending

    def drain(self, deadline, clock):
        """Waits until every end is answered or ``deadline`` (a ``clock()``
        time) passes; then stops resending. True when all were answered."""
        with self._cond:
            while self._pending and clock() < deadline:
                self._cond.wait(deadline - clock())
            left = self._pending
        if left:
            log.warning("worker stopping with %d end(s) the server never answered: recovery will fail those "
                        "tasks WORKER_CRASHED once their heartbeats are stale", left)
        self._abandon.set()
        return left == 0

    def close(self, timeout=1.0):
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._abandon.set()
        self._thread.join(timeout)

    # ---- the sending thread ----

    def _run(self):
        backoff = Backoff()
        batch = []
        while True:
            batch = self._fill(batch)
            if batch is None:
                return
            batch = self._send(batch)
            if not batch:
                backoff.reset()
            elif backoff.sleep(self._abandon):
                self._settle(batch)   # the stop's bound: these will never be answered by us
                batch = []

    def _fill(self, batch):
        """The batch to send: what is left of the last one, topped up from
        the queue (lost tasks left out: they report nothing). None to quit."""
        with self._cond:
            while True:
                live = [h for h in batch if h.state == ENDING]
                self._pending -= len(batch) - len(live)
                room = MAX_BATCH - len(live)
                if room > 0 and self._queue:
                    taken, self._queue = self._queue[:room], self._queue[room:]
                    fresh = [h for h in taken if h.state == ENDING]
                    self._pending -= len(taken) - len(fresh)
                    live += fresh
                if live:
                    return live
                batch = []
                self._cond.notify_all()   # lost ends dropped: a drain may be waiting for pending == 0
                if self._closing or self._abandon.is_set():
                    return None
                self._cond.wait()

    def _send(self, batch):
        """One attempt at a batch; returns the ends still to send."""
        body = '{"tasks":[' + ",".join(h.end for h in batch) + "]}"
        try:
            reply = self._conn.request("POST", self._path, body, timeout=self._timeout)
        except TransportError as exc:
            return self._no_answer(batch, str(exc))
        if reply.status == 200:
            answers = reply.data.get("tasks") if isinstance(reply.data, dict) else None
            if not isinstance(answers, list) or len(answers) != len(batch):
                return self._no_answer(batch, "a reply without an answer for each end")
            self._answered(batch, answers)
            return []
        if reply.status == 400:
            return self._refused_item(batch, reply)
        if reply.status == 413 and len(batch) > 1:
            half = len(batch) // 2   # too big together: send it in halves (the rest stays queued)
            return self._send(batch[:half]) + batch[half:]
        message = (reply.data or {}).get("error", "") if isinstance(reply.data, dict) else ""
        return self._no_answer(batch, f"{reply.status} {message}")

    def _no_answer(self, batch, why):
        self.failed_sends += 1
        if self.failed_sends == 1 or self.failed_sends % 50 == 0:
            log.warning("reporting %d end(s) failed (%s): kept, and sent again", len(batch), why)
        return batch

    def _answered(self, batch, answers):
        for held, answer in zip(batch, answers):
            if answer.get("status") is None:
                log.info("task %s: the server refused its end: %s", held.id, answer.get("error"))
        self._settle(batch)

    def _refused_item(self, batch, reply):
        """A 400 names the item at fault (``tasks[3]: ...``): it can never be
        accepted, so it is dropped (logged) and the rest sent again."""
        message = reply.data.get("error", "") if isinstance(reply.data, dict) else ""
        match = _ITEM_AT.match(message)
        bad = batch[int(match.group(1))] if match and int(match.group(1)) < len(batch) else None
        victims = [bad] if bad is not None else batch
        for held in victims:
            log.error("task %s: the server refused its end (%s); it is left to recovery", held.id, message)
        self._settle(victims)
        return [h for h in batch if h is not bad] if bad is not None else []

    def _settle(self, helds):
        self._held.forget_all(helds)
        with self._cond:
            self._pending -= len(helds)
            self._cond.notify_all()

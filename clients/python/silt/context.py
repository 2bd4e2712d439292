"""What a running task function can know about its task: ``current_task()``.

A task function is a plain function; the worker sets a ``TaskContext`` in
a context variable around each call, so ``silt.current_task()`` works in
sync functions (on the worker's threads) and in ``async def`` functions (on
its event loop) alike, and returns None outside a task.

The context's cancel flag is how the worker asks a function to stop: a
Python thread cannot be interrupted from outside, so a long function
should look at ``ctx.cancelled`` (or sleep with ``ctx.wait(seconds)``, which
returns early when the flag is set). An ``async def`` function is also
cancelled for real: the worker cancels its asyncio task.
"""

import contextvars
import json
import math
import threading

from .errors import Cancelled

__all__ = ["TaskContext", "current_task"]

_current = contextvars.ContextVar("silt_current_task", default=None)

# One lock for every context's lazy Event: taken only by wait() and by the
# worker setting a flag, both rare next to the tasks that never look.
_event_lock = threading.Lock()

# Why the cancel flag was set (TaskContext.reason).
CANCELLED = "cancelled"   # the task's cancel was asked (heartbeat said "cancelled")
TIMEOUT = "timeout"       # the task ran past its timeoutMs
LOST = "lost"             # the claim is no longer this worker's (recovery took it back)
SHUTDOWN = "shutdown"     # the worker stopped and its grace ran out

PROGRESS_INFO_MAX = 4096  # bytes of a progress report's JSON value, as the server bounds it


def current_task():
    """The TaskContext of the task running in this thread or asyncio task,
    or None outside a task."""
    return _current.get()


class TaskContext:
    """One attempt of a task, as its function sees it.

    Attributes: ``id``, ``name``, ``queue``, ``args`` (as sent),
    ``attempt`` (1 for the first run), ``retry_count``, ``timeout``
    (seconds, or None), ``worker_id``; ``cancelled`` and ``reason`` (see
    ``wait``). ``progress(value, info)`` reports how far it is.
    """

    __slots__ = ("id", "name", "queue", "args", "attempt", "retry_count", "timeout", "worker_id",
                 "reason", "_event", "_on_cancel", "_report", "_on_progress")

    def __init__(self, task, worker_id):
        self.id = task["id"]
        self.name = task["name"]
        self.queue = task["queue"]
        self.args = task.get("args")
        self.attempt = task.get("attempt", 1)
        self.retry_count = task.get("retryCount", 0)
        ms = task.get("timeoutMs")
        self.timeout = ms / 1000 if ms else None
        self.worker_id = worker_id
        self.reason = None
        self._event = None          # made on the first wait(): most tasks never need one
        self._on_cancel = None      # set by the async runner: cancels the asyncio task
        self._report = None         # the report not yet sent: {"progress": ..., "progressInfo": ...}
        self._on_progress = None    # set by the worker: brings the next heartbeat forward

    @property
    def cancelled(self):
        """True once the worker wants this function to stop: its task was
        cancelled, ran past its timeout, was lost, or the worker's grace
        ran out. ``reason`` says which (``cancelled``, ``timeout``,
        ``lost``, ``shutdown``). Whatever the function returns after that
        is discarded."""
        return self.reason is not None

    def wait(self, timeout=None):
        """Sleeps up to ``timeout`` seconds, returning early when the cancel
        flag is set; returns ``cancelled``."""
        if self.reason is None:
            self._flag().wait(timeout)
        return self.reason is not None

    def raise_if_cancelled(self):
        """Raises ``silt.Cancelled`` when the cancel flag is set."""
        if self.reason is not None:
            raise Cancelled(self.reason)

    def progress(self, value=None, info=None):
        """Reports how far the task is: ``value`` a finite number (say 0 to
        100, or items done) or None, ``info`` any JSON value of at most
        4096 bytes or None. Each report replaces the last; the latest goes
        with the next heartbeat, brought forward to at most one a second,
        and the last one made before the function returns is sent before
        its end. GET /api/v1/tasks/:id shows it as ``progress``,
        ``progressInfo`` and ``progressAt``. A bad value raises ValueError
        or TypeError, and nothing is reported."""
        report = {"progress": _progress_value(value), "progressInfo": _progress_info(info)}
        with _event_lock:
            self._report = report
            hook = self._on_progress
        if hook is not None:
            hook()

    def _take_report(self):
        """The report not yet sent, taken (the worker's side), or None."""
        with _event_lock:
            report, self._report = self._report, None
            return report

    def _give_back_report(self, report):
        """A report whose heartbeat failed goes again, unless a newer one came."""
        with _event_lock:
            if self._report is None:
                self._report = report

    def _has_report(self):
        return self._report is not None

    def _flag(self):
        with _event_lock:
            if self._event is None:
                self._event = threading.Event()
                if self.reason is not None:
                    self._event.set()
            return self._event

    def _cancel(self, reason):
        """Sets the flag (the worker's side); the first reason is kept."""
        with _event_lock:
            if self.reason is not None:
                return
            self.reason = reason
            event, hook = self._event, self._on_cancel
        if event is not None:
            event.set()
        if hook is not None:
            hook()

    def __repr__(self):
        return f"<TaskContext {self.name} {self.id} attempt {self.attempt}{' ' + self.reason if self.reason else ''}>"



def _progress_value(value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"progress must be a number or None, not {type(value).__name__}")
    try:
        finite = math.isfinite(float(value))
    except OverflowError:   # an int past a double's range
        finite = False
    if not finite:
        raise ValueError("progress must be a finite number")
    return value


def _progress_info(info):
    if info is None:
        return None
    text = json.dumps(info, separators=(",", ":"), allow_nan=False)
    if len(text.encode()) > PROGRESS_INFO_MAX:
        raise ValueError(f"progress info must be at most {PROGRESS_INFO_MAX} bytes of JSON")
    return info

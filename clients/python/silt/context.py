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


def current_task():
    """The TaskContext of the task running in this thread or asyncio task,
    or None outside a task."""
    return _current.get()


class TaskContext:
    """One attempt of a task, as its function sees it.

    Attributes: ``id``, ``name``, ``queue``, ``args`` (as sent),
    ``attempt`` (1 for the first run), ``retry_count``, ``timeout``
    (seconds, or None), ``worker_id``; ``cancelled`` and ``reason`` (see
    ``wait``).
    """

    __slots__ = ("id", "name", "queue", "args", "attempt", "retry_count", "timeout", "worker_id",
                 "reason", "_event", "_on_cancel")

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


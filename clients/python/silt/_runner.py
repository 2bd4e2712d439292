"""Runs task functions, at most ``concurrency`` at once.

Sync functions run on a pool of threads that grows on demand up to one per
slot and is kept (a thread per task would cost more than a no-op task
does); ``async def`` functions run as asyncio tasks on one event-loop
thread. Both share the slots: ``wait_free`` is how the claimer learns how
many tasks it may claim.

A slot is given back when the function returns, not when its end is
decided: a function the worker gave up on (timeout, cancel, the grace)
keeps its slot until it really stops, since a Python thread cannot be
killed and a slot is a promise about what runs at once.
"""

import asyncio
import contextvars
import logging
import queue
import threading

from . import _ends
from .context import _current

__all__ = ["Runner"]

log = logging.getLogger("silt.worker")


def _call(fn, args):
    """Calls a task function with its args: an object as keyword
    arguments (what ``send`` makes), an array as positional ones, null as
    none, anything else as the one argument."""
    if isinstance(args, dict):
        return fn(**args)
    if args is None:
        return fn()
    if isinstance(args, list):
        return fn(*args)
    return fn(args)


class Runner:
    """Slots and the threads (and event loop) that fill them.

    ``finish(held, end)`` is called with each attempt's end once its
    function has returned or raised; it decides whether the end still
    counts (the attempt may have been ended meanwhile).
    """

    def __init__(self, functions, concurrency, finish):
        self._functions = functions      # task name -> TaskFunction
        self._concurrency = concurrency
        self._finish = finish
        self._cond = threading.Condition()
        self._free = concurrency
        self._running = set()            # Held whose function has not returned (by identity: a task
                                         # lost and claimed again runs twice here, once per claim)
        self._sync = 0                   # sync functions submitted and not returned
        self._threads = 0
        self._queue = queue.SimpleQueue()
        self._loop = None

    # ---- slots ----

    def wait_free(self, stopping):
        """Blocks until a slot is free or ``stopping()``; returns how many
        are free (0 when stopping)."""
        with self._cond:
            while self._free == 0 and not stopping():
                self._cond.wait()
            return 0 if stopping() else self._free

    def interrupt(self):
        """Wakes a wait_free so it looks at its ``stopping`` again."""
        with self._cond:
            self._cond.notify_all()

    def wait_idle(self, deadline, clock):
        """Waits until no function runs or ``deadline``; True when none runs."""
        with self._cond:
            while self._running and clock() < deadline:
                self._cond.wait(deadline - clock())
            return not self._running

    def running(self):
        """The attempts whose functions have not returned."""
        with self._cond:
            return list(self._running)

    # ---- running ----

    def submit(self, held):
        """Runs the attempt's function in a free slot (the claimer claimed
        no more than wait_free said)."""
        task = self._functions.get(held.ctx.name)
        is_async = task is not None and task.is_async
        with self._cond:
            self._free -= 1
            self._running.add(held)
            if not is_async:
                self._sync += 1
                grow = self._sync > self._threads   # every sync function must have a thread to itself
                if grow:
                    self._threads += 1
        if is_async:
            self._event_loop().call_soon_threadsafe(self._start_async, held, task)
            return
        if grow:
            threading.Thread(target=self._serve, name=f"silt-run-{self._threads}", daemon=True).start()
        self._queue.put(held)

    def close(self):
        """Lets idle threads and the event loop end (functions still running
        keep their daemon threads until they return)."""
        for _ in range(self._threads):
            self._queue.put(None)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    def _serve(self):
        while True:
            held = self._queue.get()
            if held is None:
                return
            self._run_sync(held)

    def _run_sync(self, held):
        task = self._functions.get(held.ctx.name)
        token = _current.set(held.ctx)
        try:
            if task is None:
                end = _ends.fail(held, "UNKNOWN_TASK", f"this worker has no task named {held.ctx.name!r}")
            else:
                end = self._outcome(held, task.fn, held.ctx.args)
        finally:
            _current.reset(token)
        self._done(held, end, sync=True)

    def _outcome(self, held, fn, args):
        try:
            value = _call(fn, args)
        except BaseException as exc:   # SystemExit too: a task must not end its thread silently
            return self._failure(held, exc)
        return self._success(held, value)

    def _success(self, held, value):
        try:
            return _ends.complete(held, value)
        except _ends.InvalidResult as exc:
            return _ends.fail(held, "INVALID_RESULT", str(exc))

    def _failure(self, held, exc):
        code, message = _ends.from_exception(exc)
        if held.ctx.reason is None:
            log.warning("task %s %s failed: %s: %s", held.ctx.name, held.id, code, message,
                        exc_info=log.isEnabledFor(logging.DEBUG))
        return _ends.fail(held, code, message)

    def _done(self, held, end, sync):
        try:
            self._finish(held, end)
        except Exception:
            log.exception("ending task %s", held.id)
        with self._cond:
            self._free += 1
            self._running.discard(held)
            if sync:
                self._sync -= 1
            self._cond.notify_all()

    # ---- async functions ----

    def _event_loop(self):
        with self._cond:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="silt-async-tasks", daemon=True).start()
            return self._loop

    def _start_async(self, held, task):
        """On the loop: the function as an asyncio task, in a context that
        holds its TaskContext; the cancel flag cancels it for real."""
        context = contextvars.copy_context()
        context.run(_current.set, held.ctx)
        atask = self._loop.create_task(self._run_async(held, task), context=context)
        held.ctx._on_cancel = lambda: self._loop.call_soon_threadsafe(atask.cancel)
        if held.ctx.reason is not None:   # cancelled before the hook was in place
            atask.cancel()

    async def _run_async(self, held, task):
        try:
            value = await _call(task.fn, held.ctx.args)
        except asyncio.CancelledError:
            end = _ends.fail(held, "CANCELLED", f"cancelled ({held.ctx.reason or 'by the worker'})")
        except BaseException as exc:
            end = self._failure(held, exc)
        else:
            end = self._success(held, value)
        self._done(held, end, sync=False)

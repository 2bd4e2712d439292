"""Tasks as functions: ``App``, ``@app.task``, ``.send()``, ``TaskHandle``.

The decorated function stays callable as itself; it gains ``send`` (and
``send_async``, ``with_options``), which binds the call's arguments to the
function's signature *before* anything is sent: a call the function could
not accept raises TypeError here, not in a worker an hour later. The args
JSON is the object of the function's keyword arguments, which the worker
passes back as ``fn(**args)``.
"""

import functools
import inspect
import time

from . import options as _options
from ._backoff import Backoff
from .client import DEFAULT_URL, Client, task_body
from .errors import SiltError, TaskFailed, TransportError

__all__ = ["App", "TaskFunction", "TaskSender", "TaskHandle"]

DEFAULT_QUEUE = "default"
_TERMINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "EXPIRED"})


class App:
    """A set of task functions and the server they are sent to and run from.

    ``App(url="http://localhost:6632", token=None)``, or ``App(client=...)``
    to share a Client.
    """

    def __init__(self, url=DEFAULT_URL, token=None, *, client=None):
        self.client = client or Client(url, token)
        self.tasks = {}   # task name -> TaskFunction: what a worker of this app can run

    def task(self, fn=None, *, name=None, queue=DEFAULT_QUEUE, **options):
        """Declares a task function: ``@app.task`` or ``@app.task(name=...,
        queue=..., <send options>)``. The name defaults to the function's;
        the options (priority, retry, timeout, retention_class_key, ...) are
        the defaults of every send and are checked here."""
        def declare(f):
            task = TaskFunction(self, f, name or f.__name__, {"queue": queue, **options})
            if task.name in self.tasks:
                raise ValueError(f"a task named {task.name!r} is already declared in this app")
            self.tasks[task.name] = task
            return task
        return declare(fn) if fn is not None else declare

    def queues(self):
        """The queues of this app's tasks, in declaration order."""
        return list(dict.fromkeys(t.queue for t in self.tasks.values()))

    def worker(self, queues=None, concurrency=8, grace=30.0, worker_id=None):
        """A Worker of this app (not started): ``start()``, ``stop()``, ``join()``."""
        from .worker import Worker   # the worker is not needed to send
        return Worker(self, queues=queues, concurrency=concurrency, grace=grace, worker_id=worker_id)

    def run_worker(self, queues=None, concurrency=8, grace=30.0, worker_id=None):
        """Runs a worker until SIGTERM or SIGINT (when called from the main
        thread) or ``stop()``: see silt.worker. ``queues`` defaults to the
        queues of this app's tasks."""
        self.worker(queues, concurrency, grace, worker_id).run()


def _check_signature(fn, sig):
    """A task's arguments travel as a JSON object of keyword arguments, so
    every parameter must be passable by keyword."""
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL):
            raise TypeError(f"task {fn.__qualname__}: parameter {p.name!r} cannot be passed by keyword, "
                            "and a task's args are sent as keyword arguments")


class _Sending:
    """What TaskFunction and TaskSender share: binding and sending."""

    task = None      # the TaskFunction
    options = None   # checked options, the queue included

    def with_options(self, **options):
        """The same task with some send options changed (checked now):
        queue, priority, delay, run_at, good_until, timeout, retry,
        idempotency_key, retention_class_key, unique, rate_key. Returns a sender with
        ``send``, ``send_async`` and ``with_options``."""
        return TaskSender(self.task, _options.check_options({**self.options, **options}))

    def send(self, *args, **kwargs):
        """Sends the task with these arguments; returns a TaskHandle."""
        body = self._body(args, kwargs)
        reply = self.task.app.client.send_raw(body)
        return TaskHandle(self.task.app.client, reply["id"], reply.get("created", True), reply.get("changed"))

    async def send_async(self, *args, **kwargs):
        """``send`` for async callers; the request runs on the client's pool."""
        body = self._body(args, kwargs)   # bad arguments raise here, before any await
        reply = await self.task.app.client.run_async(self.task.app.client.send_raw, body)
        return TaskHandle(self.task.app.client, reply["id"], reply.get("created", True), reply.get("changed"))

    def _body(self, args, kwargs):
        opts = dict(self.options)
        return task_body(self.task.name, opts.pop("queue"), self.task.bind(*args, **kwargs), **opts)


class TaskFunction(_Sending):
    """A function declared with ``@app.task``: call it to run it here,
    ``send`` it to run it on a worker."""

    def __init__(self, app, fn, name, options):
        self.app = app
        self.fn = fn
        self.name = _options.check_name("name", name)
        self.signature = inspect.signature(fn)
        _check_signature(fn, self.signature)
        self.options = _options.check_options(options)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.task = self
        functools.update_wrapper(self, fn)

    @property
    def queue(self):
        return self.options["queue"]

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def bind(self, *args, **kwargs):
        """The args object a send of this call carries (TypeError when the
        function could not take these arguments). Defaults are not filled
        in: the worker's function applies its own."""
        bound = self.signature.bind(*args, **kwargs)
        out = {}
        for name, value in bound.arguments.items():
            if self.signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
            else:
                out[name] = value
        return out

    def __repr__(self):
        return f"<silt task {self.name} on {self.queue}>"


class TaskSender(_Sending):
    """A task with options of its own (``with_options``)."""

    def __init__(self, task, options):
        self.task = task
        self.options = options

    def __repr__(self):
        return f"<silt task {self.task.name} with {self.options}>"


class TaskHandle:
    """A sent task: ``id``, ``created``, ``changed``; ``result()``, ``get()``,
    ``cancel()``, ``attempts()``, ``rerun()``.

    ``created`` is False when an idempotency key or a ``unique`` key named
    an earlier task (this is that task); ``changed`` is, for a send with
    ``unique``, whether its ``onConflict`` (replace, debounce) changed that
    task, and None for a send without."""

    def __init__(self, client, task_id, created=True, changed=None):
        self.client = client
        self.id = task_id
        self.created = created
        self.changed = changed

    def get(self, wait=None):
        """The task as the server has it now (see Client.get)."""
        return self.client.get(self.id, wait=wait)

    def cancel(self):
        """Cancels the task (see Client.cancel)."""
        return self.client.cancel(self.id)

    def attempts(self):
        """The task's attempts, oldest first."""
        return self.client.attempts(self.id)

    def rerun(self, **overrides):
        """Sends the finished task again (see Client.rerun); returns a
        TaskHandle of the rerun (``created`` False: the rerun made before)."""
        reply = self.client.rerun(self.id, **overrides)
        return TaskHandle(self.client, reply["id"], reply["created"])

    def result(self, timeout=None):
        """Waits for the task's end and returns its result (COMPLETED).

        Raises TaskFailed (FAILED, CANCELLED, EXPIRED: with status, error
        code and message) or TimeoutError when ``timeout`` seconds pass
        first (None: wait as long as it takes). The wait is held by the
        server in slices of at most 60 s; while the server cannot be
        reached (a restart) the wait goes on, retried with backoff."""
        deadline = None if timeout is None else time.monotonic() + timeout
        backoff = Backoff()
        while True:
            left = 60.0 if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                task = self.client.get(self.id, wait=min(60.0, left))
                backoff.reset()
            except (TransportError, SiltError) as exc:
                if isinstance(exc, SiltError) and exc.status != 503:
                    raise
                if deadline is not None and time.monotonic() + backoff.first > deadline:
                    raise TimeoutError(f"task {self.id}: no answer from the server before the timeout") from exc
                backoff.sleep()
                continue
            if task["status"] in _TERMINAL:
                return _outcome(task)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"task {self.id} is still {task['status']} after {timeout} s")

    async def result_async(self, timeout=None):
        """``result`` for async callers (the wait runs on the client's pool)."""
        return await self.client.run_async(self.result, timeout)

    def __repr__(self):
        return f"<TaskHandle {self.id}>"


def _outcome(task):
    if task["status"] == "COMPLETED":
        return task.get("result")
    raise TaskFailed(task)


"""Client: the task and workflow HTTP API of silt, one method per route.

Every method is one request (``send_many`` too: one batch, all or
nothing), answers the server's JSON as Python values, raises ``SiltError``
when the server refuses (with its status and message) and
``TransportError`` when it cannot be reached. Durations are seconds here
and milliseconds on the wire. A Client may be shared by any number of
threads: each thread gets its own keep-alive connection.
"""

import concurrent.futures
import json
import threading
import urllib.parse

from . import options as _options
from ._http import Endpoint, Transport

__all__ = ["Client", "DEFAULT_URL"]

DEFAULT_URL = "http://localhost:6632"
MAX_WAIT_S = 60.0          # the server's bound on ?wait= (60,000 ms)
MAX_BATCH = 1000           # tasks in one send
_SLACK_S = 15.0            # a waiting request's socket outlives its wait by this much


def _wait_ms(wait):
    if wait is None:
        return None
    if not 0 <= wait <= MAX_WAIT_S:
        raise ValueError(f"wait must be from 0 to {MAX_WAIT_S:g} seconds, not {wait}")
    return int(wait * 1000)


def _query(path, **params):
    pairs = {k: v for k, v in params.items() if v is not None}
    return f"{path}?{urllib.parse.urlencode(pairs)}" if pairs else path


def _id(value):
    """A task or workflow id for a path: quoted, so a stray '/' or '?' is
    refused by the server rather than taken for another route."""
    if not isinstance(value, str) or not value:
        raise TypeError(f"id must be a non-empty string, not {value!r}")
    return urllib.parse.quote(value, safe="")


def task_body(name, queue, args=None, **options):
    """One task of POST /api/v1/tasks, its options checked (TypeError or
    ValueError naming the option) and its args JSON-encodable."""
    checked = _options.check_options({"queue": queue, **options})
    if "queue" not in checked:
        raise TypeError("queue is required")
    body = {"name": _options.check_name("name", name), "args": args}
    body.update(_options.to_wire(checked))
    try:   # here, not in the transport: a bad value is the caller's error, before anything is sent
        json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"args must be JSON-serialisable: {exc}") from None
    return body


class Client:
    """The silt task and workflow API.

    ``Client(url="http://localhost:6632", token=None, timeout=30.0)``;
    ``token`` is sent as ``Authorization: Bearer <token>``; ``timeout`` is
    the seconds a request may take (waiting reads add their wait to it).
    """

    def __init__(self, url=DEFAULT_URL, token=None, timeout=30.0):
        self.url = url
        self.timeout = timeout
        self.endpoint = Endpoint(url, token)
        self.transport = Transport(self.endpoint)
        self._executor = None
        self._executor_lock = threading.Lock()

    def _call(self, method, path, body=None, wait_s=0.0):
        return self.transport.call(method, path, body, timeout=self.timeout + wait_s)

    # ---- tasks ----

    def send(self, name, queue, args=None, **options):
        """Sends one task; returns ``{"id", "created"}`` (``created`` False
        when ``idempotency_key`` or a ``unique`` key named an earlier task;
        with ``unique``, also ``changed``).

        Options: priority (1 most urgent .. 100), delay (seconds or
        timedelta), run_at (aware datetime), good_until (aware datetime, or
        timedelta from now), timeout (seconds or timedelta), retry (the wire
        policy: ``{"maxRetries", "delaysMs", "backoff": {"baseMs", "capMs"},
        "jitter", "retryOn"}``), idempotency_key, retention_class_key (a
        class key, or None to keep the record forever), unique (the wire
        object: ``{"key": ...}`` or ``{"byArgs": True}``, with ``"forMs"``
        or ``"while": "live"`` and ``"onConflict"``: docs/tasks.md)."""
        return self._call("POST", "/api/v1/tasks", task_body(name, queue, args, **options))

    def send_many(self, tasks):
        """Sends 1 to 1,000 tasks in one request, all or nothing. Each task
        is a dict of ``send``'s parameters (``{"name", "queue", "args",
        "priority", ...}``). Returns a list of ``{"id", "created"}``, in order."""
        tasks = list(tasks)
        if not 1 <= len(tasks) <= MAX_BATCH:
            raise ValueError(f"send_many takes 1 to {MAX_BATCH} tasks, not {len(tasks)}")
        bodies = []
        for i, t in enumerate(tasks):
            try:
                bodies.append(task_body(**t))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"tasks[{i}]: {exc}") from None
        return self._call("POST", "/api/v1/tasks", {"tasks": bodies})["tasks"]

    def send_raw(self, body):
        """Sends a body of POST /api/v1/tasks as given (one task, or
        ``{"tasks": [...]}``), unchecked: for fields this library has no
        option for. Returns the server's reply."""
        return self._call("POST", "/api/v1/tasks", body)

    def get(self, task_id, wait=None):
        """The task (live or finished). With ``wait`` (seconds, at most 60)
        the server holds the request until the task is terminal or the wait
        is over, and answers its state either way."""
        ms = _wait_ms(wait)
        path = _query(f"/api/v1/tasks/{_id(task_id)}", wait=ms)
        return self._call("GET", path, wait_s=wait or 0.0)

    def list(self, queue=None, status=None, limit=None, cursor=None):
        """One page of tasks in send order: ``{"tasks": [...], "nextCursor"}``."""
        return self._call("GET", _query("/api/v1/tasks", queue=queue, status=status, limit=limit, cursor=cursor))

    def iter_tasks(self, queue=None, status=None, page_size=1000):
        """Every task matching the filters, following ``nextCursor``."""
        cursor = None
        while True:
            page = self.list(queue=queue, status=status, limit=page_size, cursor=cursor)
            yield from page["tasks"]
            cursor = page.get("nextCursor")
            if not cursor:
                return

    def cancel(self, task_id):
        """Cancels a task: ``{"id", "status", "cancelled", "cancelRequested"}``.
        PENDING or CLAIMED: CANCELLED at once; RUNNING: its worker is told
        on its next heartbeat."""
        return self._call("POST", f"/api/v1/tasks/{_id(task_id)}/cancel")

    def attempts(self, task_id, wait=None):
        """The task's attempts, oldest first (a list of dicts). With
        ``wait``, once the task is terminal or the wait is over."""
        ms = _wait_ms(wait)
        path = _query(f"/api/v1/tasks/{_id(task_id)}/attempts", wait=ms)
        return self._call("GET", path, wait_s=wait or 0.0)["attempts"]

    # ---- workflows (docs/workflows.md) ----

    def start_workflow(self, definition):
        """Starts a workflow from its definition (a dict: name, nodes,
        onError, output); returns ``{"id", "status"}``. A refused
        definition raises SiltError whose ``problems`` lists every problem."""
        return self._call("POST", "/api/v1/workflows", definition)

    def get_workflow(self, workflow_id, wait=None):
        """The workflow and its nodes; with ``wait`` (seconds, at most 60),
        once it has ended or the wait is over."""
        ms = _wait_ms(wait)
        path = _query(f"/api/v1/workflows/{_id(workflow_id)}", wait=ms)
        return self._call("GET", path, wait_s=wait or 0.0)

    def list_workflows(self, status=None, name=None, limit=None, cursor=None):
        """One page of workflows (without nodes): ``{"workflows", "nextCursor"}``."""
        path = _query("/api/v1/workflows", status=status, name=name, limit=limit, cursor=cursor)
        return self._call("GET", path)

    def pause_workflow(self, workflow_id):
        """Pauses a workflow; returns ``{"id", "status"}`` (its status afterwards)."""
        return self._call("POST", f"/api/v1/workflows/{_id(workflow_id)}/pause")

    def resume_workflow(self, workflow_id):
        """Resumes a paused workflow; returns ``{"id", "status"}``."""
        return self._call("POST", f"/api/v1/workflows/{_id(workflow_id)}/resume")

    def cancel_workflow(self, workflow_id):
        """Cancels a workflow; returns ``{"id", "status"}``."""
        return self._call("POST", f"/api/v1/workflows/{_id(workflow_id)}/cancel")

    # ---- the rest ----

    def health(self):
        """``GET /health`` as answered (200 or 503): ``(status, body)``."""
        reply = self.transport.request("GET", "/health", timeout=self.timeout)
        return reply.status, reply.data

    async def run_async(self, fn, *args, **kwargs):
        """Runs a blocking call of this client on its own thread pool, for
        ``async`` callers (e.g. ``await client.run_async(client.get, id)``).
        A pool of its own: long waits must not starve asyncio's default one."""
        import asyncio
        import functools
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), functools.partial(fn, *args, **kwargs))

    def _pool(self):
        with self._executor_lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="silt-async")
            return self._executor

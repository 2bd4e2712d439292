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


def _segment(what, value):
    """A queue's or schedule's name for a path, quoted; what else it must
    be is the server's to say (a 400 naming it, or a 404)."""
    if not isinstance(value, str) or not value:
        raise TypeError(f"{what} must be a non-empty string, not {value!r}")
    return urllib.parse.quote(value, safe="")


class _Unset:
    """A parameter not given (None is a value there: null on the wire)."""

    def __repr__(self):
        return "<unset>"


UNSET = _Unset()
_ENDED = ("FAILED", "CANCELLED", "EXPIRED", "COMPLETED")


def _bool(name, v):
    if not isinstance(v, bool):
        raise TypeError(f"{name} must be True or False, not {v!r}")
    return v


def _overrides(priority, timeout, retry, retention_class_key):
    """The overrides a rerun of one task and one by filter share, checked
    as a send's options and in their wire form."""
    given = {"priority": priority, "timeout": timeout, "retry": retry}
    if retention_class_key is not UNSET:
        given["retention_class_key"] = retention_class_key
    return _options.to_wire(_options.check_options(given))


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
        or ``"while": "live"`` and ``"onConflict"``: docs/tasks.md), rate_key
        (the key the queue's ``rate_limit_per_key`` counts separately)."""
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

    def list(self, queue=None, status=None, limit=None, cursor=None, search=None, order=None):
        """One page of tasks in send order (``order="desc"``: newest first):
        ``{"tasks": [...], "nextCursor", "total", "totalCapped"}``. ``search``
        keeps the tasks whose name holds it (case aside); ``total`` counts
        the matches up to 10,000 (``totalCapped`` past it)."""
        if order is not None and order not in ("asc", "desc"):
            raise ValueError(f"order must be 'asc' or 'desc', not {order!r}")
        path = _query("/api/v1/tasks", queue=queue, status=status, search=search, order=order, limit=limit,
                      cursor=cursor)
        return self._call("GET", path)

    def iter_tasks(self, queue=None, status=None, page_size=1000, search=None, order=None):
        """Every task matching the filters, following ``nextCursor``."""
        cursor = None
        while True:
            page = self.list(queue=queue, status=status, limit=page_size, cursor=cursor, search=search, order=order)
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

    def rerun(self, task_id, *, name=None, queue=None, args=UNSET, priority=None, timeout=None, retry=None,
              retention_class_key=UNSET, include_completed=False):
        """Sends a finished task again as a new task that names it in
        ``rerunOf`` (docs/tasks.md, "Rerunning finished tasks"); returns
        ``{"id", "rerunOf", "created", "workflowId", "workflowStatus"}``
        (the workflow a node's task belongs to, which goes on from the
        rerun node; None for a plain task). A task is rerun at most once:
        asked again, ``created`` is False and ``id`` the rerun made before.
        FAILED, CANCELLED and EXPIRED tasks are rerun, COMPLETED ones with
        ``include_completed``; 409 (SiltError) for one that has not ended.

        The rerun keeps the original's name, queue, args, priority, retry
        policy, timeout, retention class and rate key, except what is given:
        ``args`` (None is JSON null), ``priority``, ``timeout`` (seconds or a
        timedelta), ``retry`` (the whole policy; ``{}``: no retries),
        ``retention_class_key`` (None: forever)."""
        body = _overrides(priority, timeout, retry, retention_class_key)
        if name is not None:
            body["name"] = _options.check_name("name", name)
        if queue is not None:
            body["queue"] = _options.check_name("queue", queue)
        if args is not UNSET:
            try:
                json.dumps(args, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"args must be JSON-serialisable: {exc}") from None
            body["args"] = args
        if _bool("include_completed", include_completed):
            body["includeCompleted"] = True
        return self._call("POST", f"/api/v1/tasks/{_id(task_id)}/rerun", body)

    def rerun_many(self, *, queue=None, name=None, error_code=None, status=None, finished_after=None,
                   finished_before=None, limit=None, dry_run=False, include_completed=False, priority=None,
                   timeout=None, retry=None, retention_class_key=UNSET):
        """Reruns (admin) the tasks that ended FAILED, CANCELLED or EXPIRED
        (COMPLETED too with ``include_completed`` or ``status="COMPLETED"``)
        and match every filter given, oldest first, up to ``limit`` (1 to
        1,000, default 100), in one transaction; tasks with a rerun already
        and workflow nodes' are left out. ``finished_after`` and
        ``finished_before`` are aware datetimes (or ISO 8601 text). Returns
        ``{"dryRun", "count", "more", "tasks": [{"id", "rerunOf", "created"}]}``
        (no ``tasks`` with ``dry_run``: only counted). Called again it goes
        on with the ones left, while ``more``. Overrides as for ``rerun``."""
        body = _overrides(priority, timeout, retry, retention_class_key)
        if queue is not None:
            body["queue"] = _options.check_name("queue", queue)
        if name is not None:
            body["name"] = _options.check_name("name", name)
        if error_code is not None:
            if not isinstance(error_code, str) or not error_code:
                raise TypeError(f"error_code must be a non-empty string, not {error_code!r}")
            body["errorCode"] = error_code
        if status is not None:
            if status not in _ENDED:
                raise ValueError(f"status must be one of {', '.join(_ENDED)}, not {status!r}")
            body["status"] = status
        if finished_after is not None:
            body["finishedAfter"] = _options.iso_time("finished_after", finished_after)
        if finished_before is not None:
            body["finishedBefore"] = _options.iso_time("finished_before", finished_before)
        if limit is not None:
            body["limit"] = _options._int_in("limit", limit, 1, MAX_BATCH)
        if _bool("dry_run", dry_run):
            body["dryRun"] = True
        if _bool("include_completed", include_completed):
            body["includeCompleted"] = True
        return self._call("POST", "/api/v1/tasks/rerun", body)

    # ---- task queues (docs/tasks.md, "Pausing a queue") ----

    def list_queues(self):
        """``{"queues": [...], "paused": [{"queue", "pausedAt"}]}``: the
        queues silt.conf declares with their load, caps and rate limits
        (each with ``paused``), and every paused queue, declared or not."""
        return self._call("GET", "/api/v1/task-queues")

    def pause_queue(self, queue):
        """Pauses a queue (admin): it accepts sends and hands nothing out
        until resumed; what runs goes on. Returns ``{"queue", "paused",
        "pausedAt", "changed"}`` (``changed`` False: it was paused already)."""
        return self._call("POST", f"/api/v1/task-queues/{_segment('queue', queue)}/pause")

    def resume_queue(self, queue):
        """Resumes a queue (admin): its waiting tasks are claimable at once.
        Returns ``{"queue", "paused", "pausedAt", "changed"}``."""
        return self._call("POST", f"/api/v1/task-queues/{_segment('queue', queue)}/resume")

    # ---- schedules (docs/workflows.md, "Schedules at run time") ----

    def list_schedules(self):
        """Every schedule (of silt.conf, ``origin`` "config", and made here,
        "api"), by name: a list of dicts."""
        return self._call("GET", "/api/v1/schedules")["schedules"]

    def get_schedule(self, name):
        """One schedule; SiltError 404 for a name no schedule has."""
        return self._call("GET", f"/api/v1/schedules/{_segment('name', name)}")

    def create_schedule(self, name, cron, task, queue, *, timezone=None, args=None, catch_up=None, priority=None,
                        retention_class_key=None, paused=False):
        """Makes a schedule (admin) that sends ``task`` on ``queue`` with
        ``args`` at every slot of ``cron`` in ``timezone`` (default UTC),
        from the first slot after now; ``catch_up`` missed slots fired
        after downtime (0 or None: skipped); ``priority`` and
        ``retention_class_key`` default to the queue's. The server checks
        every field (a 400 naming it; 409 naming ``name`` when it is
        taken). Returns the schedule."""
        body = {"name": _options.check_name("name", name), "cron": cron, "task": task, "queue": queue}
        for key, value in (("timezone", timezone), ("args", args), ("catchUp", catch_up), ("priority", priority),
                           ("retentionClassKey", retention_class_key)):
            if value is not None:
                body[key] = value
        if _bool("paused", paused):
            body["paused"] = True
        return self._call("POST", "/api/v1/schedules", body)

    def change_schedule(self, name, *, cron=UNSET, task=UNSET, queue=UNSET, timezone=UNSET, args=UNSET,
                        catch_up=UNSET, priority=UNSET, retention_class_key=UNSET):
        """Changes the fields given (admin); the others stay. None sets
        ``timezone``, ``args``, ``catch_up``, ``priority`` and
        ``retention_class_key`` back to their default. A new ``cron`` or
        ``timezone`` counts from the first slot after now. Returns the
        schedule; 409 for a schedule of silt.conf (changed in the file)."""
        given = {"cron": cron, "task": task, "queue": queue, "timezone": timezone, "args": args,
                 "catchUp": catch_up, "priority": priority, "retentionClassKey": retention_class_key}
        body = {key: value for key, value in given.items() if value is not UNSET}
        return self._call("PATCH", f"/api/v1/schedules/{_segment('name', name)}", body)

    def pause_schedule(self, name):
        """Pauses a schedule (admin; idempotent): it fires nothing. Returns the schedule."""
        return self._call("POST", f"/api/v1/schedules/{_segment('name', name)}/pause")

    def resume_schedule(self, name):
        """Resumes a schedule (admin; idempotent) from its first slot after
        now: the slots of the pause are skipped. Returns the schedule."""
        return self._call("POST", f"/api/v1/schedules/{_segment('name', name)}/resume")

    def delete_schedule(self, name):
        """Deletes a schedule (admin): nothing fires after it; the tasks it
        sent stay. Returns ``{"name", "deleted": True}``."""
        return self._call("DELETE", f"/api/v1/schedules/{_segment('name', name)}")

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

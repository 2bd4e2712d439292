"""The in-process worker: claims tasks of an App's queues and runs them.

    worker = app.worker(queues=["emails"], concurrency=8, grace=30)
    worker.run()        # until SIGTERM/SIGINT (main thread) or stop()

It keeps the guarantees of ``silt worker`` (docs/tasks.md):

- **Claims.** It registers, then claims with ``"start": true`` as many
  tasks as it has free slots, as soon as a slot is free; the claim always
  long-polls, so an idle worker costs one parked request, and a busy one
  gets work the moment it is sent. No claimed task waits in the worker:
  each claimed task has a slot, so "claimed but not started" never exists
  here and nothing needs releasing at stop.
- **Heartbeats** name every held task under its claim every
  ``runnerHeartbeatIntervalMs`` (silt._heartbeat), ends not yet answered
  included. ``cancelled``: the attempt is ended ``CANCELLED`` at once and
  the function's cancel flag set; ``lost``: the flag is set and nothing is
  reported.
- **Timeouts.** Past the task's ``timeoutMs`` the attempt is ended
  ``TASK_TIMEOUT`` and the flag set.
- **Ends** go through the outbox (silt._ends), resent under their claim
  until the server answers each one.
- **Stop** (SIGTERM/SIGINT or ``stop()``): claiming stops at once — the
  parked claim is half-closed, so the server sees its client leave and
  gives back what it took (docs/tasks.md, "A claimer that hangs up"), while
  a reply already on its way is still read and its tasks run. Running
  functions get ``grace`` seconds; those still running are ended
  ``WORKER_CRASHED``. Ends are delivered until the grace is over (and at
  least 5 s after the last one was decided), then the worker returns. A
  second signal exits the process at once with status 1, reporting nothing.

A function the worker gave up on (cancel, timeout, grace) cannot be killed
— Python threads cannot be — so it runs on, its slot occupied, until it
returns; its return value is discarded. ``async def`` functions are
cancelled for real (CancelledError at their next await).
"""

import logging
import os
import signal
import socket
import threading
import time
import urllib.parse

from . import _ends
from ._backoff import Backoff
from ._ends import Outbox
from ._heartbeat import Supervisor
from ._held import RUNNING, Held, HeldSet
from ._http import Connection, raise_for_status
from ._runner import Runner
from .context import CANCELLED, LOST, SHUTDOWN, TIMEOUT, TaskContext
from .errors import TransportError

__all__ = ["Worker"]

log = logging.getLogger("silt.worker")

CLAIM_WAIT_MS = 20_000       # a parked claim's wait; a stop ends it at once, so it can be long
MAX_CLAIM = 1000             # the server's bound on a claim's max
MAX_CONCURRENCY = 10_000     # the server's bound on a registration's concurrency
END_DELIVERY_MIN_S = 5.0     # at stop, ends decided last (WORKER_CRASHED) get at least this long
# A half-closed claim is answered at once by a live server (204, or a reply
# it had already sent); one that does not answer within this is cut both
# ways. Not sooner: a reply the server wrote just before it saw us leave
# holds tasks already started for us, and cutting it would strand them
# until recovery. A responsive server answers in well under a millisecond.
ABORT_READ_S = 2.0


class Worker:
    """Runs the tasks of ``app`` from ``queues`` (default: the queues of its
    tasks), ``concurrency`` at once; see the module documentation."""

    def __init__(self, app, queues=None, concurrency=8, grace=30.0, worker_id=None):
        self.queues = list(queues) if queues else app.queues()
        if not self.queues or not all(isinstance(q, str) and q for q in self.queues):
            raise ValueError("queues must be a non-empty list of queue names (the app declares no task)")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or \
                not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ValueError(f"concurrency must be an integer from 1 to {MAX_CONCURRENCY}, not {concurrency!r}")
        if not isinstance(grace, (int, float)) or grace < 0:
            raise ValueError(f"grace must be a number of seconds >= 0, not {grace!r}")
        self.app = app
        self.concurrency = concurrency
        self.grace = float(grace)
        self.worker_id = worker_id
        self.heartbeat_interval = None       # seconds, from the registration
        self._endpoint = app.client.endpoint
        self._stop_requested = threading.Event()
        self._registered = threading.Event()
        self._stopped = threading.Event()
        self._held = HeldSet()
        self._runner = Runner(app.tasks, concurrency, self._decided_by_function)
        self._claim_conn = Connection(self._endpoint)
        self._control_conn = Connection(self._endpoint)   # registration and heartbeats
        self._outbox = None
        self._supervisor = None
        self._claimer = None
        self._thread = None
        self.error = None                    # what ended a start()ed worker early (registration refused)

    # ---- lifecycle ----

    def run(self):
        """Runs until stopped; on the main thread, SIGTERM and SIGINT stop it
        (a second one exits the process at once, status 1). Raises SiltError
        when the server refuses the registration."""
        previous = self._install_signals()
        try:
            self._serve()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def start(self):
        """Runs the worker on a thread of its own and returns; ``stop()``
        and ``join()`` end it."""
        self._thread = threading.Thread(target=self._serve_catching, name="silt-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Asks the worker to stop (safe from any thread and from a signal
        handler); ``join()`` or ``run()`` returns once it has."""
        self._stop_requested.set()

    def join(self, timeout=None):
        """Waits until a start()ed worker has stopped; True when it has."""
        return self._stopped.wait(timeout)

    def wait_registered(self, timeout=None):
        """Waits until the server has registered the worker; True when it has."""
        return self._registered.wait(timeout)

    @property
    def stopping(self):
        return self._stop_requested.is_set()

    def pending_ends(self):
        """Ends decided and not yet answered by the server."""
        return self._outbox.pending() if self._outbox else 0

    def failed_end_sends(self):
        """Batches of ends that got no answer so far (each was sent again)."""
        return self._outbox.failed_sends if self._outbox else 0

    def held(self):
        """How many tasks the worker holds (running, or ends unanswered)."""
        return len(self._held)

    def _serve_catching(self):
        try:
            self._serve()
        except Exception as exc:   # kept for the starter: a thread has nobody to raise to
            self.error = exc
            log.error("worker ended: %s", exc)

    def _serve(self):
        try:
            if not self._register():
                return
            self._start_parts()
            while not self._stop_requested.wait(1.0):
                pass
            self._shutdown()
        finally:
            self._stopped.set()

    def _install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return {}

        def on_signal(signum, frame):
            if self._stop_requested.is_set():
                os.write(2, b"silt worker: second signal: exiting at once, reporting nothing\n")
                os._exit(1)
            self._stop_requested.set()

        return {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}

    # ---- registration ----

    def _register(self):
        """Registers, retrying while the server cannot be reached; False
        when stopped first. A refusal (4xx) raises SiltError."""
        body = {"hostname": socket.gethostname()[:200], "pid": os.getpid(), "queues": self.queues,
                "concurrency": self.concurrency}
        if self.worker_id:
            body["workerId"] = self.worker_id
        backoff = Backoff()
        while not self._stop_requested.is_set():
            try:
                reply = self._control_conn.request("POST", "/api/v1/workers", body, timeout=10.0)
            except TransportError as exc:
                self._log_unreachable("registering", exc, backoff)
                backoff.sleep(self._stop_requested)
                continue
            if reply.status >= 500:
                self._log_unreachable("registering", f"{reply.status}", backoff)
                backoff.sleep(self._stop_requested)
                continue
            data = raise_for_status(reply)
            self.worker_id = data["workerId"]
            self.heartbeat_interval = data["runnerHeartbeatIntervalMs"] / 1000
            log.info("worker %s registered: queues %s, concurrency %d, heartbeat every %g s",
                     self.worker_id, ",".join(self.queues), self.concurrency, self.heartbeat_interval)
            self._registered.set()
            return True
        return False

    @staticmethod
    def _log_unreachable(what, why, backoff):
        if backoff.fresh:   # the first failure of a run: said once, not at every retry
            log.warning("%s: the server cannot be reached (%s); retrying", what, why)

    def _start_parts(self):
        base = f"/api/v1/workers/{urllib.parse.quote(self.worker_id, safe='')}"
        self._claim_path = base + "/claim"
        self._outbox = Outbox(Connection(self._endpoint), base + "/finish", self._held)
        self._supervisor = Supervisor(self._control_conn, base + "/heartbeat", self._held,
                                      self.heartbeat_interval, self._on_state, self._on_timeout)
        self._outbox.start()
        self._supervisor.start()
        self._claimer = threading.Thread(target=self._claim_loop, name="silt-claim", daemon=True)
        self._claimer.start()

    # ---- claiming ----

    def _claim_body(self, n):
        return {"queues": self.queues, "max": min(n, MAX_CLAIM), "waitMs": CLAIM_WAIT_MS, "start": True}

    def _claim_loop(self):
        backoff = Backoff()
        while True:
            free = self._runner.wait_free(self._stop_requested.is_set)
            if not free:
                return
            tasks = self._claim(free, backoff)
            if tasks is None:
                if self._stop_requested.is_set():
                    return
                backoff.sleep(self._stop_requested)
                continue
            backoff.reset()
            for task in tasks:
                self._accept_safely(task)   # a reply read after the stop is ours too: it runs within the grace

    def _claim(self, free, backoff):
        """One claim of up to ``free`` tasks; None when it got no usable answer."""
        try:
            reply = self._claim_conn.request("POST", self._claim_path, self._claim_body(free),
                                             timeout=CLAIM_WAIT_MS / 1000 + 15)
        except TransportError as exc:
            if not self._stop_requested.is_set():
                self._log_unreachable("claiming", exc, backoff)
            return None
        if reply.status == 204:   # the server's answer to a claimer it saw leave: nothing taken
            return []
        tasks = reply.data.get("tasks") if reply.status == 200 and isinstance(reply.data, dict) else None
        if tasks is None and backoff.fresh and not self._stop_requested.is_set():
            error = reply.data.get("error") if isinstance(reply.data, dict) else None
            log.warning("claim answered %d: %s; retrying", reply.status, error)
        return tasks

    def _accept_safely(self, task):
        try:
            self._accept(task)
        except Exception:   # a claimed task of an unexpected shape: left to recovery, the claimer goes on
            log.exception("accepting claimed task %r", task)

    def _accept(self, task):
        held = Held(task, TaskContext(task, self.worker_id))
        held.ctx._on_progress = self._supervisor.progressed
        self._held.add(held)
        if held.ctx.timeout:
            held.deadline = time.monotonic() + held.ctx.timeout
            self._supervisor.watch(held)
        self._runner.submit(held)

    # ---- ends ----

    def _decided_by_function(self, held, end):
        if not self._end(held, end):
            log.debug("task %s: the function returned after its attempt was ended: result discarded", held.id)

    def _end(self, held, end):
        """Makes ``end`` the attempt's end if nothing else did first."""
        if not self._held.decide(held, end):
            return False
        if held.ctx._has_report():   # its last report goes before its end
            self._supervisor.end_after_report(held, self._outbox.put)
        else:
            self._outbox.put(held)
        return True

    def _stop_function(self, held, reason, code, message):
        """Ends the attempt ``code`` (decided first, so the function cannot
        complete it after seeing its flag), then sets the flag."""
        self._end(held, _ends.fail(held, code, message))
        held.ctx._cancel(reason)

    def _on_state(self, held, state):
        if state == "cancelled" and held.state == RUNNING:
            log.info("task %s %s: cancelled while running", held.ctx.name, held.id)
            self._stop_function(held, CANCELLED, "CANCELLED", "the task was cancelled while it ran")
        elif state == "lost":
            log.info("task %s %s: lost (its claim is no longer this worker's): dropped", held.ctx.name, held.id)
            held.ctx._cancel(LOST)
            self._held.forget(held)

    def _on_timeout(self, held):
        ms = round(held.ctx.timeout * 1000)
        log.info("task %s %s: past its timeout of %d ms", held.ctx.name, held.id, ms)
        self._stop_function(held, TIMEOUT, "TASK_TIMEOUT", f"the task ran past its timeout of {ms} ms")

    # ---- stopping ----

    def _shutdown(self):
        stop_at = time.monotonic()
        running = len(self._runner.running())
        log.info("worker %s stopping: %d task(s) running, grace %g s", self.worker_id, running, self.grace)
        self._stop_claiming()
        if not self._runner.wait_idle(stop_at + self.grace, time.monotonic):
            for held in self._runner.running():
                self._stop_function(held, SHUTDOWN, "WORKER_CRASHED",
                                    f"the worker stopped and its grace of {self.grace:g} s ran out")
        deadline = max(stop_at + self.grace, time.monotonic() + END_DELIVERY_MIN_S)
        self._supervisor.wait_ending(deadline)   # ends held back for their last progress report
        self._outbox.drain(deadline, time.monotonic)
        self._supervisor.stop()
        self._outbox.close()
        self._runner.close()
        self._control_conn.close()
        log.info("worker %s stopped", self.worker_id)

    def _stop_claiming(self):
        """Ends the claim in flight: half-closed first (a reply already sent
        is still read), cut both ways if the server does not answer soon."""
        self._claim_conn.abort_write()
        self._runner.interrupt()
        self._claimer.join(ABORT_READ_S)
        if self._claimer.is_alive():
            self._claim_conn.abort()
            self._claimer.join(5.0)   # a read cut both ways returns at once; this bound is for the unforeseen
        self._claim_conn.close()

"""Test support: a throwaway database and a real silt server, no mocks.

The environment (scripts/test.sh sets it): ``SILT_BIN`` is the silt binary;
``SILT_TEST_PGPORT`` the port of a throwaway PostgreSQL on 127.0.0.1 (user
postgres, no password) holding a migrated ``silt_template`` that allows no
connections. Each TestCase class (or each test that restarts its server)
gets its own clone of the template and its own server on a free port, and
drops both at the end. Nothing sleeps a fixed time: every wait is a
condition polled up to a deadline.
"""

import http.client
import itertools
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)          # clients/python: on sys.path for the tests and their children
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)

SILT_BIN = os.environ.get("SILT_BIN", "")
PG_PORT = os.environ.get("SILT_TEST_PGPORT", "")
_names = itertools.count()

# Fast heartbeats, for tests that wait for a cancel to reach a worker.
FAST_HEARTBEATS = """
[recovery]
claimer_heartbeat_interval_ms = 1000
runner_heartbeat_interval_ms = 1000
"""


def environment_problem():
    """Why the suite cannot run here, or None."""
    if not SILT_BIN or not os.access(SILT_BIN, os.X_OK):
        return "SILT_BIN must name the silt binary"
    if not PG_PORT:
        return "SILT_TEST_PGPORT must name the port of a PostgreSQL holding silt_template"
    return None


def psql(sql, db="postgres"):
    """Runs SQL through psql; returns its unaligned, tuples-only output."""
    out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                          "-p", PG_PORT, "-U", "postgres", "-d", db, "-c", sql],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"psql: {sql}: {out.stderr.strip()}")
    return out.stdout.strip()


def scratch_dir(case, prefix):
    """A temporary directory removed when ``case`` (a TestCase) ends."""
    path = tempfile.mkdtemp(prefix=prefix)
    case.addCleanup(shutil.rmtree, path, ignore_errors=True)
    return path


def wait_until(predicate, timeout=10.0, what="the condition", interval=0.01):
    """Polls ``predicate`` until it returns a true value (returned) or the
    deadline passes (AssertionError naming ``what``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Database:
    """A clone of silt_template, made now and dropped by ``drop()``."""

    def __init__(self, tag):
        tag = re.sub(r"[^a-z0-9]", "_", tag.lower())[:30]
        self.name = f"silt_py_{tag}_{os.getpid()}_{next(_names)}"
        psql(f'CREATE DATABASE "{self.name}" TEMPLATE silt_template STRATEGY FILE_COPY')

    def sql(self, statement):
        return psql(statement, db=self.name)

    def drop(self):
        psql(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def _pick_port():
    # Below the kernel's ephemeral range (as scripts/test.sh does), so no
    # outgoing connection holds it.
    return random.randint(20000, 32000)


class Server:
    """``silt server`` on a database; ``start()``, ``kill()``, ``restart()``."""

    def __init__(self, db, config=None, env=None):
        self.db = db
        self.dir = tempfile.mkdtemp(prefix="silt-py-test-")
        self.config = None
        if config:
            self.config = os.path.join(self.dir, "silt.conf")
            with open(self.config, "w") as f:
                f.write(config)
        self.extra_env = env or {}
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.dir, "server.log")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout=20.0):
        """Starts on a free port (or the port it had: a restart)."""
        for _ in range(1 if self.port else 5):
            port = self.port or _pick_port()
            if self._launch(port, timeout):
                self.port = port
                return self
        raise RuntimeError(f"silt server did not start; its log:\n{self.log_tail()}")

    def _launch(self, port, timeout):
        env = dict(os.environ, PG_HOST="127.0.0.1", PG_PORT=PG_PORT, PG_USER="postgres", PG_DB=self.db.name,
                   PORT=str(port), HOST="127.0.0.1", LOG_LEVEL="warn", **self.extra_env)
        env.pop("DATABASE_URL", None)
        if self.config:
            env["SILT_CONFIG"] = self.config
        else:
            env.pop("SILT_CONFIG", None)
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen([SILT_BIN, "server"], env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=log)
        return self._wait_healthy(port, timeout)

    def _wait_healthy(self, port, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            # Another test's server may have taken the port first (classes
            # run side by side): its /health is not this one's, which will
            # fail to bind and exit.
            if _health(port) == 200 and _listens_on(self.proc.pid, port):
                return True
            time.sleep(0.02)
        self.kill()
        return False

    def kill(self, sig=signal.SIGKILL, timeout=20.0):
        """Sends ``sig`` and waits for the process to exit."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stop(self):
        """Stops the server and removes its directory (log and silt.conf)."""
        self.kill(signal.SIGTERM)
        shutil.rmtree(self.dir, ignore_errors=True)

    def restart(self):
        self.start()

    def log_tail(self, lines=30):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def metric(self, name):
        """A value of GET /metrics/prometheus (the first sample of ``name``)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", "/metrics/prometheus")
            text = conn.getresponse().read().decode()
        finally:
            conn.close()
        match = re.search(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
        return float(match.group(1)) if match else None


def _listens_on(pid, port):
    """Whether process ``pid`` holds the socket listening on ``port`` (on
    whatever address), from Linux's /proc (true where there is none to ask)."""
    if not os.path.exists("/proc/net/tcp"):
        return True
    with open("/proc/net/tcp") as table:
        inodes = {f"socket:[{fields[9]}]" for fields in (line.split() for line in list(table)[1:])
                  if fields[1].endswith(f":{port:04X}") and fields[3] == "0A"}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False   # gone
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            pass       # closed since the listing
    return False


def _health(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


class ServerCase(unittest.TestCase):
    """A TestCase whose tests share one server and database (set up once
    for the class). Tests keep apart by queue: ``self.queue`` is unique to
    the test."""

    config = None       # silt.conf text for the class's server
    server_env = None   # extra environment for it

    @classmethod
    def setUpClass(cls):
        problem = environment_problem()
        if problem:
            raise unittest.SkipTest(problem)
        cls.db = Database(cls.__name__)
        try:
            cls.server = Server(cls.db, cls.config, cls.server_env).start()
        except Exception:
            cls.db.drop()
            raise
        cls.url = cls.server.url

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.db.drop()

    def setUp(self):
        self.queue = re.sub(r"[^A-Za-z0-9_]", "_", self.id().split(".", 1)[1])[-120:]

    def start_worker(self, app, **kwargs):
        """Starts a worker of ``app`` on this test's queue; stopped at the end."""
        kwargs.setdefault("queues", [self.queue])
        worker = app.worker(**kwargs).start()
        self.addCleanup(lambda: (worker.stop(), worker.join(30)))
        self.assertTrue(worker.wait_registered(10), "the worker did not register")
        return worker

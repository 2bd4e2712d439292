"""SIGTERM to a worker process (``python3 -m silt worker``): an idle one
exits at once, a busy one lets its task finish within the grace, and a
task still running when the grace ends is failed WORKER_CRASHED."""

import os
import signal
import subprocess
import sys
import time

from tests.support import PACKAGE_ROOT, ServerCase, scratch_dir, wait_until

from silt import Client


class WorkerSigtermTests(ServerCase):
    # Alone (tests/run.py): "an idle worker exits at once" is 100 ms on a
    # quiet machine, checked with slack that a neighbour's load can eat (a
    # Python process's start and exit).
    alone = True

    def setUp(self):
        super().setUp()
        self.client = Client(self.url)
        self.markers = scratch_dir(self, "silt-py-markers-")

    def start_worker(self, grace):
        env = dict(os.environ, SILT_URL=self.url, SILT_TEST_QUEUE=self.queue,
                   PYTHONPATH=os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")])))
        log = open(os.path.join(self.markers, "worker.log"), "w")
        self.addCleanup(log.close)
        proc = subprocess.Popen([sys.executable, "-m", "silt", "worker", "tests.worker_app:app",
                                 "--grace", str(grace), "--concurrency", "2"],
                                cwd=PACKAGE_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        wait_until(lambda: self.server.metric("silt_task_claims_parked") or proc.poll() is not None,
                   timeout=20, what="the worker's claim to be parked")
        self.assertIsNone(proc.poll(), self.worker_log())
        return proc

    def worker_log(self):
        with open(os.path.join(self.markers, "worker.log")) as f:
            return f.read()

    def sigterm(self, proc, timeout=60):
        """SIGTERM; returns (exit status, seconds until the process ended)."""
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout)
        return rc, time.monotonic() - started

    def send(self, seconds):
        marker = os.path.join(self.markers, f"task{seconds}")
        sent = self.client.send("sleepy", self.queue, {"seconds": seconds, "marker": marker})
        wait_until(lambda: os.path.exists(marker + ".started"), timeout=20, what="the task to start")
        return sent["id"], marker

    def test_a_refused_registration_exits_1_and_a_bad_target_2(self):
        env = dict(os.environ, SILT_URL=self.url, PYTHONPATH=PACKAGE_ROOT)
        base = [sys.executable, "-m", "silt", "worker"]
        refused = subprocess.run(base + ["tests.worker_app:app", "--queue", "q" * 300], cwd=PACKAGE_ROOT, env=env,
                                 capture_output=True, text=True, timeout=60)
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertIn("400: queues[0] is longer than 255 bytes", refused.stderr)
        usage = subprocess.run(base + ["tests.no_such_module:app"], cwd=PACKAGE_ROOT, env=env, capture_output=True,
                               text=True, timeout=60)
        self.assertEqual(usage.returncode, 2, usage.stderr)

    def test_an_idle_worker_exits_at_once_on_sigterm(self):
        proc = self.start_worker(grace=30)
        rc, took = self.sigterm(proc)
        print(f"\n    idle worker: exit {rc} {took * 1000:.0f} ms after SIGTERM (the rule: 100 ms on a quiet machine)")
        self.assertEqual(rc, 0, self.worker_log())
        self.assertLess(took, 3.0)   # a worker that waited for its parked claim would take the claim's wait
        wait_until(lambda: self.server.metric("silt_task_claims_parked") == 0, what="the parked claim to end")

    def test_a_busy_worker_lets_its_task_finish_within_the_grace(self):
        proc = self.start_worker(grace=30)
        task_id, marker = self.send(1.0)
        rc, took = self.sigterm(proc)
        self.assertEqual(rc, 0, self.worker_log())
        self.assertTrue(os.path.exists(marker + ".done"))
        task = self.client.get(task_id)
        self.assertEqual((task["status"], task["result"]), ("COMPLETED", {"slept": 1.0}))

    def test_a_task_still_running_when_the_grace_ends_fails_worker_crashed(self):
        proc = self.start_worker(grace=0.5)
        task_id, marker = self.send(60)
        rc, took = self.sigterm(proc)
        self.assertEqual(rc, 0, self.worker_log())
        self.assertLess(took, 20)
        self.assertFalse(os.path.exists(marker + ".done"))
        task = self.client.get(task_id)
        self.assertEqual((task["status"], task["errorCode"]), ("FAILED", "WORKER_CRASHED"))

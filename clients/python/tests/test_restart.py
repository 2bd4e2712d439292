"""A server that dies or restarts while a task runs: the end is kept and
resent until the server answers, and the function ran exactly once.

Each test has its own database and server, since it kills the server.
"""

import signal
import threading
import unittest

from tests.support import Database, Server, environment_problem, wait_until

from silt import App, current_task


class ServerRestartTests(unittest.TestCase):
    def setUp(self):
        problem = environment_problem()
        if problem:
            self.skipTest(problem)
        self.db = Database(self.id().rsplit(".", 1)[1][-20:])
        self.addCleanup(self.db.drop)
        self.server = Server(self.db).start()
        self.addCleanup(self.server.stop)

    def run_across_a_restart(self, sig):
        """A task whose function is running when the server gets ``sig``
        and ends while no server runs; the server then comes back on the
        same port."""
        app = App(self.server.url)
        started, finish, runs = threading.Event(), threading.Event(), []

        @app.task(queue="restart")
        def survive(n):
            runs.append(current_task().attempt)
            started.set()
            finish.wait(60)
            return {"n": n, "runs": len(runs)}

        worker = app.worker(concurrency=2, grace=30).start()
        self.addCleanup(lambda: (worker.stop(), worker.join(60)))
        h = survive.send(n=7)
        self.assertTrue(started.wait(15), "the function did not start")

        self.server.kill(sig)
        finish.set()   # the function returns while no server runs
        wait_until(lambda: worker.failed_end_sends() >= 1, timeout=15,
                   what="the worker to try to report the end to the stopped server")
        self.assertEqual(worker.pending_ends(), 1)

        self.server.restart()
        self.assertEqual(h.result(timeout=30), {"n": 7, "runs": 1})
        task = h.get()
        self.assertEqual((task["status"], task["attempt"], task["retryCount"]), ("COMPLETED", 1, 0))
        self.assertEqual([a["outcome"] for a in h.attempts()], ["COMPLETED"])
        self.assertEqual(runs, [1])
        wait_until(lambda: worker.pending_ends() == 0 and worker.held() == 0, what="the worker to settle")

        # and the worker goes on working with the restarted server
        again = survive.send(n=8)
        self.assertEqual(again.result(timeout=30), {"n": 8, "runs": 2})

    def test_a_task_running_when_the_server_is_killed_completes_once_after_its_restart(self):
        self.run_across_a_restart(signal.SIGKILL)

    def test_a_task_running_when_the_server_stops_gracefully_completes_once_after_its_restart(self):
        self.run_across_a_restart(signal.SIGTERM)

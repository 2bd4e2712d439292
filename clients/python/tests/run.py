"""Runs the Python client's test suite against a real silt server.

    SILT_BIN=build/silt SILT_TEST_PGPORT=15433 python3 clients/python/tests/run.py [NAME ...]

NAME narrows the run (a module, class or test: ``test_worker``,
``test_worker.WorkerTests.test_cancel_...``). The last line is exactly
``N passed, N failed``; the exit status is non-zero on any failure.

Without NAME, every test class runs in a process of its own (each has its
own database and server already), ``SILT_TEST_JOBS`` of them at a time
(default: the online cores); each one's account is printed whole when it
ends. A class with ``alone = True`` (a bound on a delay that a neighbour's
load would break) runs after the others, one at a time; ``HARNESS_ALONE=skip``
leaves those out and ``HARNESS_ALONE=only`` runs only them, as for the
integration tests (scripts/test.sh runs the rest beside the integration
tests, and these after them).
"""

import logging
import os
import re
import subprocess
import sys
import time
import unittest
from concurrent.futures import ThreadPoolExecutor, as_completed

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.support import environment_problem  # noqa: E402


class CountingResult(unittest.TextTestResult):
    """Counts successes, so that errors of a class's setUp (which are no
    test of their own) still count as failures and never as passes."""

    successes = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.successes += 1


def classes():
    """The suite's test classes: id (``tests.test_worker.WorkerTests``) to
    whether it runs alone."""
    found, pending = {}, [unittest.TestLoader().discover(start_dir=HERE, pattern="test_*.py", top_level_dir=ROOT)]
    while pending:
        item = pending.pop()
        if isinstance(item, unittest.TestSuite):
            pending.extend(item)
        else:
            found[f"{type(item).__module__}.{type(item).__qualname__}"] = getattr(type(item), "alone", False)
    return dict(sorted(found.items()))


def run_class(name):
    """One class in a process of its own: its output, passed and failed."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), name], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    counts = re.search(r"^(\d+) passed, (\d+) failed\s*\Z", out, re.M)
    # A process that ended without its count (killed, crashed) is one failure.
    return out, (int(counts[1]), int(counts[2])) if counts else (0, 1)


def run_classes(names, jobs):
    """names side by side, jobs at a time, each one's account printed whole
    as it ends; returns the passed and failed."""
    passed = failed = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = {pool.submit(run_class, name): name for name in names}
        for done in as_completed(runs):
            out, (ok, bad) = done.result()
            print(f"-- {runs[done]}\n{out}", end="" if out.endswith("\n") else "\n", flush=True)
            passed, failed = passed + ok, failed + bad
    return passed, failed


def main_by_class():
    """Every class side by side, SILT_TEST_JOBS at a time, then those that
    run alone one at a time (HARNESS_ALONE: skip or only those); the sums last."""
    jobs = max(1, int(os.environ.get("SILT_TEST_JOBS") or os.cpu_count() or 1))
    which = os.environ.get("HARNESS_ALONE", "")
    found = classes()
    started, passed, failed = time.monotonic(), 0, 0
    if which != "only":
        passed, failed = run_classes([name for name, alone in found.items() if not alone], jobs)
    if which != "skip":
        ok, bad = run_classes([name for name, alone in found.items() if alone], 1)
        passed, failed = passed + ok, failed + bad
    print(f"python client suite: {time.monotonic() - started:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


def main(names):
    problem = environment_problem()
    if problem:
        print(f"tests: {problem}")
        print("0 passed, 1 failed")
        return 1
    if not names:
        return main_by_class()
    # The workers' expected warnings (a task failed, a server away) would
    # bury the test names; SILT_TEST_LOG=1 shows them.
    logging.basicConfig(level=logging.INFO if os.environ.get("SILT_TEST_LOG") else logging.ERROR,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    loader = unittest.TestLoader()
    if names:
        suite = loader.loadTestsFromNames([n if n.startswith("tests.") else f"tests.{n}" for n in names])
    else:
        suite = loader.discover(start_dir=HERE, pattern="test_*.py", top_level_dir=ROOT)
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=CountingResult)
    started = time.monotonic()
    result = runner.run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    print(f"python client suite: {time.monotonic() - started:.1f} s")
    sys.stdout.flush()
    print(f"{result.successes} passed, {failed} failed")
    return 1 if failed or not result.successes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

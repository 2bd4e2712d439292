"""Runs the Python client's test suite against a real silt server.

    SILT_BIN=build/silt SILT_TEST_PGPORT=15433 python3 clients/python/tests/run.py [NAME ...]

NAME narrows the run (a module, class or test: ``test_worker``,
``test_worker.WorkerTests.test_cancel_...``). The last line is exactly
``N passed, N failed``; the exit status is non-zero on any failure.
"""

import logging
import os
import sys
import time
import unittest

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


def main(names):
    problem = environment_problem()
    if problem:
        print(f"tests: {problem}")
        print("0 passed, 1 failed")
        return 1
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

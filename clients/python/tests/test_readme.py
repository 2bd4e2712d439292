"""The README's examples run as written, against a real server.

The README marks each code block it means to be run with an HTML comment
on the line before it (invisible when rendered):

- ``<!-- file: NAME -->``: the block is the file NAME (e.g. the app module);
- ``<!-- run: background -->``: started before the others (the workers),
  stopped with SIGTERM at the end, and must then exit 0;
- ``<!-- run -->``: run in order, each must exit 0.

A ``python`` block runs as a script; an ``sh`` block must be one simple
command, run without a shell (so the SIGTERM reaches the command itself).

Every ``python`` block must carry one of them, so no example escapes the
test. Blocks run in a scratch directory holding the files, with
``SILT_URL`` naming this test's server.
"""

import os
import re
import shlex
import signal
import subprocess
import sys

from tests.support import FAST_HEARTBEATS, PACKAGE_ROOT, ServerCase, scratch_dir, wait_until

README = os.path.join(PACKAGE_ROOT, "README.md")
BLOCK = re.compile(r"(?:<!-- (file|run)(?:: ([^ ]+))? -->\n)?```(\w+)\n(.*?)```", re.S)


def blocks():
    """(kind, argument, language, code) of every fenced block, in order;
    kind is None for a block without a mark."""
    with open(README) as f:
        return [m.groups() for m in BLOCK.finditer(f.read())]


class ReadmeTests(ServerCase):
    config = FAST_HEARTBEATS   # the cancel example is told within a second

    def setUp(self):
        super().setUp()
        self.dir = scratch_dir(self, "silt-py-readme-")
        self.env = dict(os.environ, SILT_URL=self.url,
                        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
                        PYTHONPATH=os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")])))
        self.env.pop("SILT_TOKEN", None)

    def command(self, lang, code, n):
        if lang == "python":
            path = os.path.join(self.dir, f"example_{n}.py")
            with open(path, "w") as f:
                f.write(code)
            return [sys.executable, path]
        self.assertEqual(lang, "sh", f"block {n}: no way to run {lang}")
        lines = [line for line in code.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, f"block {n}: a shell example to run must be one simple command")
        return shlex.split(lines[0])   # run without a shell, so SIGTERM reaches the command itself

    def start(self, lang, code, n):
        log = open(os.path.join(self.dir, f"background_{n}.log"), "w")
        self.addCleanup(log.close)
        proc = subprocess.Popen(self.command(lang, code, n), cwd=self.dir, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT)
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        return proc, log.name

    def run_block(self, lang, code, n):
        out = subprocess.run(self.command(lang, code, n), cwd=self.dir, env=self.env, capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(out.returncode, 0, f"README block {n} failed:\n{code}\n{out.stdout}\n{out.stderr}")
        return out.stdout

    def test_every_python_example_is_marked_to_run(self):
        unmarked = [code for kind, _, lang, code in blocks() if lang == "python" and kind is None]
        self.assertEqual(unmarked, [], "README python blocks without a <!-- file/run --> mark")

    def test_the_readme_examples_run_as_written(self):
        found = blocks()
        for kind, arg, lang, code in found:
            if kind == "file":
                with open(os.path.join(self.dir, arg), "w") as f:
                    f.write(code)
        workers = [self.start(lang, code, n) for n, (kind, arg, lang, code) in enumerate(found)
                   if kind == "run" and arg == "background"]
        self.assertGreaterEqual(len(workers), 1)
        wait_until(lambda: self.server.metric("silt_task_claims_parked") >= len(workers), timeout=30,
                   what="the README's workers to claim")
        outputs = [self.run_block(lang, code, n) for n, (kind, arg, lang, code) in enumerate(found)
                   if kind == "run" and arg is None]
        self.assertIn("{'sent': True, 'to': 'a@b'}", outputs[0])
        self.assertIn("FAILED BAD_ADDRESS", outputs[1])
        self.assertIn("CANCELLED", outputs[-1])
        for proc, log in workers:
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(60), 0, open(log).read())

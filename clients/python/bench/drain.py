"""Drain benchmark: how fast an in-process Python worker runs no-op tasks.

    PYTHONPATH=clients/python python3 clients/python/bench/drain.py \
        --url http://127.0.0.1:6632 --tasks 20000 --concurrency 64

Sends N no-op tasks in batches of 1,000 (from --senders threads, while the
worker already runs: the clock covers send → COMPLETED), runs a worker of
this process until every task's end has been answered by the server, then
checks on the server that all N are COMPLETED. Prints one line:

    python-worker: 20000 tasks in 3.21 s: 6230 tasks/s (send → COMPLETED)

Exit status 1 when not all completed (or within --timeout).
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from silt import App  # noqa: E402  (after the path above: runs from a checkout)

BATCH = 1000


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("SILT_URL", "http://127.0.0.1:6632"))
    p.add_argument("--tasks", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--queue", default=f"bench_py_{os.getpid()}")
    p.add_argument("--senders", type=int, default=2, help="threads sending batches (default 2)")
    p.add_argument("--timeout", type=float, default=300.0, help="give up after this many seconds")
    p.add_argument("--profile", metavar="FILE", help="cProfile the whole run into FILE")
    return p.parse_args()


class Counter:
    """Runs of the no-op function; sets ``all_ran`` at the N-th."""

    def __init__(self, n):
        self.n = n
        self.count = 0
        self.lock = threading.Lock()
        self.all_ran = threading.Event()

    def hit(self):
        with self.lock:
            self.count += 1
            if self.count == self.n:
                self.all_ran.set()


def send_all(task, n, senders):
    """Sends n tasks of ``task`` in batches of 1,000 from ``senders`` threads."""
    client = task.app.client
    batches = [min(BATCH, n - i) for i in range(0, n, BATCH)]
    lock = threading.Lock()

    def sender():
        while True:
            with lock:
                if not batches:
                    return
                size = batches.pop()
            client.send_many([{"name": task.name, "queue": task.queue, "args": {}}] * size)

    threads = [threading.Thread(target=sender) for _ in range(senders)]
    for t in threads:
        t.start()
    return threads


def completed_on_server(client, queue):
    return sum(1 for _ in client.iter_tasks(queue=queue, status="COMPLETED"))


def run(args):
    app = App(args.url)
    counter = Counter(args.tasks)

    @app.task(queue=args.queue, name="noop")
    def noop():
        counter.hit()

    worker = app.worker(concurrency=args.concurrency, grace=5).start()
    if not worker.wait_registered(30):
        sys.exit("drain: the worker could not register")
    started = time.monotonic()
    senders = send_all(noop, args.tasks, args.senders)
    deadline = started + args.timeout
    counter.all_ran.wait(args.timeout)
    while worker.pending_ends() and time.monotonic() < deadline:
        time.sleep(0.001)   # the last batch of ends with the server
    elapsed = time.monotonic() - started
    for t in senders:
        t.join()
    worker.stop()
    worker.join()
    done = completed_on_server(app.client, args.queue)
    rate = done / elapsed if elapsed > 0 else 0.0
    print(f"python-worker: {done} tasks in {elapsed:.2f} s: {rate:.0f} tasks/s (send → COMPLETED)")
    return 0 if done == args.tasks else 1


def profiled(args):
    """run() with every thread under cProfile (cProfile sees one thread
    only, and the worker's time is spent on its own threads); the stats of
    all threads are merged into args.profile."""
    import cProfile
    import pstats
    profiles = []
    plain_run = threading.Thread.run

    def run_profiled(thread):
        profiler = cProfile.Profile()
        profiles.append(profiler)
        profiler.runcall(plain_run, thread)

    threading.Thread.run = run_profiled
    main_profiler = cProfile.Profile()
    rc = main_profiler.runcall(run, args)
    threading.Thread.run = plain_run
    stats = pstats.Stats(main_profiler)
    for p in profiles:
        try:
            stats.add(p)
        except TypeError:   # a thread still running: its profile is not complete
            pass
    stats.dump_stats(args.profile)
    return rc


def main():
    args = parse()
    return profiled(args) if args.profile else run(args)


if __name__ == "__main__":
    sys.exit(main())

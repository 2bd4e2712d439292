"""python3 -m silt worker MODULE:APP [--queue Q ...] [--concurrency N] [--grace S] [--worker-id ID]

Imports MODULE (from the current directory first, as ``python3 -m`` puts
it on sys.path), takes its App (attribute APP, default ``app``) and runs a
worker until SIGTERM or SIGINT. Exit status: 0 after an orderly stop, 1
when the server refuses the registration (or at a second signal), 2 on a
usage error.
"""

import argparse
import importlib
import logging
import sys

from .errors import SiltError
from .tasks import App


def _load_app(target):
    """The App that MODULE:APP names; ValueError when there is none."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{target}: cannot import {module_name}: {exc}") from None
    app = getattr(module, attr or "app", None)
    if not isinstance(app, App):
        raise ValueError(f"{target}: no silt.App named {attr or 'app'!r} in module {module_name}")
    return app


def _parser():
    p = argparse.ArgumentParser(prog="python3 -m silt", description="silt task worker")
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="run the tasks of an App until SIGTERM/SIGINT")
    w.add_argument("app", metavar="MODULE:APP", help="e.g. mymodule:app (APP defaults to 'app')")
    w.add_argument("--queue", "-q", action="append", dest="queues", metavar="Q",
                   help="a queue to claim from (repeatable; default: the queues of the app's tasks)")
    w.add_argument("--concurrency", "-c", type=int, default=8, metavar="N", help="tasks run at once (default 8)")
    w.add_argument("--grace", type=float, default=30.0, metavar="S",
                   help="seconds running tasks get at a stop before they are failed WORKER_CRASHED (default 30)")
    w.add_argument("--worker-id", metavar="ID", help="the worker's id (default: the server makes one)")
    w.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app = _load_app(args.app)
        app.run_worker(queues=args.queues, concurrency=args.concurrency, grace=args.grace,
                       worker_id=args.worker_id)
    except ValueError as exc:
        print(f"silt: {exc}", file=sys.stderr)
        return 2
    except SiltError as exc:
        print(f"silt: the server refused the worker: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

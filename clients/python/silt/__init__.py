"""silt: the Python client of the silt task queue.

    from silt import App
    app = App("http://localhost:6632")

    @app.task(queue="emails", retry={"maxRetries": 3, "backoff": {"baseMs": 500}})
    def send_email(to, subject):
        ...

    h = send_email.send(to="a@b", subject="hi")
    print(h.result(timeout=30))
    app.run_worker(queues=["emails"], concurrency=8)   # or: python3 -m silt worker mymodule:app

``Client`` is the HTTP API route by route; ``App`` declares task functions
and runs workers for them; ``current_task()`` is what a running function
knows about its task. Standard library only (Python 3.11+).
"""

from .client import Client
from .context import TaskContext, current_task
from .errors import Cancelled, Error, SiltError, TaskError, TaskFailed, TransportError
from .tasks import App, TaskFunction, TaskHandle, TaskSender
from .worker import Worker

__version__ = "0.1.0"

__all__ = ["App", "Client", "Worker", "TaskFunction", "TaskSender", "TaskHandle", "TaskContext", "current_task",
           "Error", "SiltError", "TransportError", "TaskFailed", "TaskError", "Cancelled"]

"""The exceptions of the silt client library.

Three families, so a caller can tell them apart without reading messages:

- ``SiltError``: the server answered, and refused (an HTTP status of 400 or
  more). It carries the status and the server's own ``error`` text.
- ``TransportError``: no answer at all (connection refused, reset, timed
  out, a reply that is not HTTP or not JSON). The request may or may not
  have been carried out.
- ``TaskFailed``: a task ended without a result (FAILED, CANCELLED or
  EXPIRED); raised by ``TaskHandle.result()``.

``TaskError`` is the other direction: a task function raises it to choose
the error code its failure is reported with.
"""

__all__ = ["Error", "SiltError", "TransportError", "TaskFailed", "TaskError", "Cancelled"]


class Error(Exception):
    """Base class of every exception this library raises about the server."""


class SiltError(Error):
    """The server refused a request.

    Attributes:
        status: the HTTP status (400, 404, 409, 503, ...).
        message: the server's ``error`` text (lower-case, as silt writes it).
        field: the request field the server named, or None.
        body: the whole decoded reply (a dict; e.g. ``problems`` for a
            refused workflow definition).
    """

    def __init__(self, status, message, field=None, body=None):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.field = field
        self.body = body if body is not None else {}

    @property
    def problems(self):
        """Every problem of a refused workflow definition (a list of str)."""
        return self.body.get("problems") or [self.message]


class TransportError(Error):
    """The server could not be reached, or its answer could not be read.

    Raised for connection refused or reset, timeouts, and replies that are
    not valid HTTP/JSON. The request may or may not have taken effect.
    """


class TaskFailed(Error):
    """A task ended without a result.

    Attributes:
        task_id: the task's id.
        status: ``FAILED``, ``CANCELLED`` or ``EXPIRED``.
        error_code: the code of its last failure (e.g. ``ValueError``,
            ``TASK_TIMEOUT``, ``WORKER_CRASHED``), or None.
        error_message: the message of its last failure, or None.
        task: the task as ``GET /api/v1/tasks/:id`` answered it.
    """

    def __init__(self, task):
        self.task = task
        self.task_id = task.get("id")
        self.status = task.get("status")
        self.error_code = task.get("errorCode")
        self.error_message = task.get("errorMessage")
        detail = f" {self.error_code}: {self.error_message}" if self.error_code else ""
        super().__init__(f"task {self.task_id} {self.status}{detail}")


class TaskError(Exception):
    """Raised by a task function to fail with a chosen error code.

    ``raise TaskError("OUT_OF_STOCK", "item 7 is sold out")`` reports the
    failure with code ``OUT_OF_STOCK``; a retry policy's ``retryOn`` lists
    such codes. Any exception with a string attribute ``code`` works the
    same way; other exceptions are reported with their class name.
    """

    def __init__(self, code, message=""):
        super().__init__(message)
        self.code = code
        self.message = message


class Cancelled(Exception):
    """Raised by ``TaskContext.raise_if_cancelled()`` once the task's cancel
    flag is set. Its report is discarded: the worker has already ended the
    task (CANCELLED, TASK_TIMEOUT or WORKER_CRASHED) or lost it."""

    code = "CANCELLED"

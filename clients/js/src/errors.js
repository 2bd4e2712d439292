// errors: every error the library throws on purpose. A caller tells them
// apart with instanceof (or .name): the server refused (SiltError), the
// server could not be reached (TransportError), a task ended badly
// (TaskFailedError), a wait ran out (WaitTimeoutError).

/**
 * The server answered with an error status. `message` is the server's own
 * `error` text, `field` the request field it names (when it names one).
 */
export class SiltError extends Error {
    /**
     * @param {number} status HTTP status
     * @param {object|null} body the parsed reply, when it was JSON
     */
    constructor(status, body) {
        const text = body && typeof body.error === "string" ? body.error : `http status ${status}`;
        super(text);
        this.name = "SiltError";
        this.status = status;
        this.field = body && typeof body.field === "string" ? body.field : undefined;
        /** every problem of a refused workflow definition, when the server listed them */
        this.problems = body && Array.isArray(body.problems) ? body.problems : undefined;
        this.body = body;
    }
}

/**
 * No answer from the server: connection refused or reset, DNS failure, a
 * reply that did not arrive in time, or a reply that was not JSON. The
 * request may or may not have been carried out.
 */
export class TransportError extends Error {
    /**
     * @param {string} message
     * @param {unknown} [cause]
     */
    constructor(message, cause) {
        super(message, cause === undefined ? undefined : { cause });
        this.name = "TransportError";
        /** errno-like code of the underlying failure (ECONNREFUSED, ...), when known */
        this.code = causeCode(cause);
    }
}

function causeCode(cause) {
    for (let c = cause, depth = 0; c && depth < 4; c = c.cause, depth++)
        if (typeof c.code === "string") return c.code;
    return undefined;
}

/**
 * A task ended FAILED, CANCELLED or EXPIRED. Carries the task's status and
 * the error code and message its last attempt reported.
 */
export class TaskFailedError extends Error {
    /** @param {object} task the task as GET /api/v1/tasks/:id answered it */
    constructor(task) {
        const why = task.errorCode ? `${task.errorCode}${task.errorMessage ? `: ${task.errorMessage}` : ""}` : "";
        super(`task ${task.id} ended ${task.status}${why ? ` (${why})` : ""}`);
        this.name = "TaskFailedError";
        this.taskId = task.id;
        this.status = task.status;
        this.errorCode = task.errorCode ?? null;
        this.errorMessage = task.errorMessage ?? null;
        this.task = task;
    }
}

/** A wait for a task's (or workflow's) end ran out before it ended. */
export class WaitTimeoutError extends Error {
    /**
     * @param {string} what e.g. "task 01a2..."
     * @param {number} timeoutMs
     * @param {string} lastStatus the status seen last
     */
    constructor(what, timeoutMs, lastStatus) {
        super(`${what} has not ended after ${timeoutMs} ms (status ${lastStatus})`);
        this.name = "WaitTimeoutError";
        this.timeoutMs = timeoutMs;
        this.status = lastStatus;
    }
}

/**
 * The reason a running task's AbortSignal gives: `code` says why —
 * CANCELLED (someone cancelled it), TASK_TIMEOUT (it ran past its
 * timeoutMs), WORKER_CRASHED (the worker stopped and its grace ran out) or
 * LOST (the server took the claim back: the work is no longer this worker's).
 */
export class TaskAbortedError extends Error {
    /**
     * @param {"CANCELLED"|"TASK_TIMEOUT"|"WORKER_CRASHED"|"LOST"} code
     * @param {string} message
     */
    constructor(code, message) {
        super(message);
        this.name = "TaskAbortedError";
        this.code = code;
    }
}

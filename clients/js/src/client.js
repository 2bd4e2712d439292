// client: the task calls of the HTTP API (docs/tasks.md) as methods. Every
// option is checked before anything is sent; every error is an exception
// (SiltError: the server refused, TransportError: no answer). Nothing is
// retried behind the caller's back: a send that failed in transport may or
// may not have been written, and only the caller knows whether sending it
// again is safe (an idempotencyKey makes it so).

import { Http } from "./http.js";
import { sendBody, checkName, checkId, checkLimit, refuseUnknown } from "./options.js";
import { TaskHandle, isTerminal } from "./handle.js";
import { waitForEnd, checkWaitMs } from "./wait.js";
import { Workflows } from "./workflows.js";

const MAX_BATCH = 1000;
const TASK_STATUSES = ["PENDING", "CLAIMED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "EXPIRED"];

/** A connection to one silt server. */
export class Client {
    /**
     * @param {{url: string, token?: string|null, timeoutMs?: number}} options
     *   timeoutMs: how long a reply may take beyond any wait the server was asked to hold (default 30000)
     */
    constructor({ url, token = null, timeoutMs } = {}) {
        this.http = new Http({ url, token, timeoutMs });
        this.url = this.http.base;
        /** the workflow calls */
        this.workflows = new Workflows(this.http);
    }

    /**
     * Sends one task.
     * @param {{name: string, queue: string, args?: unknown} & object} task name, queue, args and any send option
     * @returns {Promise<TaskHandle>}
     */
    async send(task) {
        const body = taskBody(task, "");
        const reply = await this.http.request("POST", "/api/v1/tasks", { body });
        return new TaskHandle(this, reply.id, reply.created);
    }

    /**
     * Sends 1 to 1,000 tasks in one request: all are written or none is.
     * @param {Array<object>} tasks as for send
     * @returns {Promise<TaskHandle[]>} in the order given
     */
    async sendBatch(tasks) {
        if (!Array.isArray(tasks)) throw new TypeError("tasks must be an array");
        if (tasks.length === 0 || tasks.length > MAX_BATCH)
            throw new RangeError(`a batch holds 1 to ${MAX_BATCH} tasks, not ${tasks.length}`);
        const body = { tasks: tasks.map((t, i) => taskBody(t, `tasks[${i}]: `)) };
        const reply = await this.http.request("POST", "/api/v1/tasks", { body });
        return reply.tasks.map((t) => new TaskHandle(this, t.id, t.created));
    }

    /**
     * The task, live or finished. With waitMs (at most 60000) the server
     * holds the request until the task has ended or the time is up.
     * @param {string} id
     * @param {{waitMs?: number}} [options]
     */
    async get(id, { waitMs } = {}) {
        const wait = checkWaitMs(waitMs);
        return this.http.request("GET", taskPath(id), { query: { wait }, waitMs: wait ?? 0 });
    }

    /**
     * Waits until the task has ended (any terminal status) and answers it.
     * @param {string} id
     * @param {{timeoutMs?: number}} [options] default: no limit; throws WaitTimeoutError past it
     */
    async wait(id, { timeoutMs = Infinity } = {}) {
        return waitForEnd((waitMs) => this.get(id, { waitMs }), (t) => isTerminal(t.status), timeoutMs, `task ${id}`);
    }

    /**
     * A page of tasks, live and finished, in send order.
     * @param {{queue?: string, status?: string, limit?: number, cursor?: string}} [filter]
     * @returns {Promise<{tasks: object[], nextCursor: string|null}>}
     */
    async list({ queue, status, limit, cursor, ...rest } = {}) {
        refuseUnknown(rest, "list");
        if (queue !== undefined) checkName("queue", queue);
        if (status !== undefined && !TASK_STATUSES.includes(status))
            throw new RangeError(`status must be one of ${TASK_STATUSES.join(", ")}`);
        checkLimit(limit);
        return this.http.request("GET", "/api/v1/tasks", { query: { queue, status, limit, cursor } });
    }

    /**
     * Cancels a task: PENDING or CLAIMED ones at once, a RUNNING one is told
     * on its worker's next heartbeat.
     * @param {string} id
     * @returns {Promise<{id: string, status: string, cancelled: boolean, cancelRequested: boolean}>}
     */
    async cancel(id) {
        return this.http.request("POST", `${taskPath(id)}/cancel`);
    }

    /**
     * The task's attempts, oldest first.
     * @param {string} id
     * @param {{waitMs?: number}} [options] as for get
     * @returns {Promise<object[]>}
     */
    async attempts(id, { waitMs } = {}) {
        const wait = checkWaitMs(waitMs);
        const reply = await this.http.request("GET", `${taskPath(id)}/attempts`, { query: { wait }, waitMs: wait ?? 0 });
        return reply.attempts;
    }

    /** A handle on a task already sent, by id. */
    handle(id) {
        checkId(id);
        return new TaskHandle(this, id, false);
    }
}

function taskBody(task, where) {
    if (task === null || typeof task !== "object" || Array.isArray(task)) throw new TypeError(`${where}a task must be an object`);
    const { name, args, ...options } = task;
    return sendBody(name, args, options, where);
}

function taskPath(id) {
    return `/api/v1/tasks/${encodeURIComponent(checkId(id))}`;
}

// client: the task calls of the HTTP API (docs/tasks.md) as methods. Every
// option is checked before anything is sent; every error is an exception
// (SiltError: the server refused, TransportError: no answer). Nothing is
// retried behind the caller's back: a send that failed in transport may or
// may not have been written, and only the caller knows whether sending it
// again is safe (an idempotencyKey makes it so).

import { Http } from "./http.js";
import { sendBody, checkName, checkId, checkLimit, refuseUnknown, checkInt, checkRetry, checkClass, checkTime, checkBool } from "./options.js";
import { TaskHandle, isTerminal } from "./handle.js";
import { waitForEnd, checkWaitMs } from "./wait.js";
import { Workflows } from "./workflows.js";
import { TaskQueues } from "./queues.js";
import { Schedules } from "./schedules.js";

const MAX_BATCH = 1000;
const TASK_STATUSES = ["PENDING", "CLAIMED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "EXPIRED"];
const ENDED_STATUSES = ["FAILED", "CANCELLED", "EXPIRED", "COMPLETED"];
const ORDERS = ["asc", "desc"];

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
        /** the task queues: list, pause, resume */
        this.queues = new TaskQueues(this.http);
        /** the schedules made at run time (and those of silt.conf, to read) */
        this.schedules = new Schedules(this.http);
    }

    /**
     * Sends one task.
     * @param {{name: string, queue: string, args?: unknown} & object} task name, queue, args and any send option
     * @returns {Promise<TaskHandle>}
     */
    async send(task) {
        const body = taskBody(task, "");
        const reply = await this.http.request("POST", "/api/v1/tasks", { body });
        return new TaskHandle(this, reply.id, reply.created, reply.changed);
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
        return reply.tasks.map((t) => new TaskHandle(this, t.id, t.created, t.changed));
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
     * A page of tasks, live and finished, in send order (order "desc": newest
     * first). search keeps the tasks whose name holds it (case aside).
     * @param {{queue?: string, status?: string, search?: string, order?: "asc"|"desc", limit?: number, cursor?: string}} [filter]
     * @returns {Promise<{tasks: object[], nextCursor: string|null, total: number, totalCapped: boolean}>}
     */
    async list({ queue, status, search, order, limit, cursor, ...rest } = {}) {
        refuseUnknown(rest, "list");
        if (queue !== undefined) checkName("queue", queue);
        if (status !== undefined && !TASK_STATUSES.includes(status))
            throw new RangeError(`status must be one of ${TASK_STATUSES.join(", ")}`);
        if (search !== undefined && typeof search !== "string") throw new TypeError("search must be a string");
        if (order !== undefined && !ORDERS.includes(order)) throw new RangeError(`order must be "asc" or "desc", not ${String(order)}`);
        checkLimit(limit);
        return this.http.request("GET", "/api/v1/tasks", { query: { queue, status, search, order, limit, cursor } });
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

    /**
     * Sends a finished task again, as a new task whose rerunOf names it
     * (docs/tasks.md, "Rerunning finished tasks"). A task is rerun at most
     * once: asking again answers the rerun made before, created false.
     * FAILED, CANCELLED and EXPIRED tasks are rerun; COMPLETED ones with
     * includeCompleted. The overrides replace the original's.
     * @param {string} id
     * @param {{name?: string, queue?: string, args?: unknown, priority?: number, timeoutMs?: number,
     *          retry?: object, retentionClassKey?: string|null, includeCompleted?: boolean}} [overrides]
     * @returns {Promise<{id: string, rerunOf: string, created: boolean, workflowId: string|null, workflowStatus: string|null}>}
     */
    async rerun(id, overrides = {}) {
        if (overrides === null || typeof overrides !== "object" || Array.isArray(overrides))
            throw new TypeError("rerun overrides must be an object");
        const { name, queue, args, includeCompleted, ...rest } = overrides;
        const body = rerunOverrides(rest, "rerun");
        if (name !== undefined) body.name = checkName("name", name);
        if (queue !== undefined) body.queue = checkName("queue", queue);
        if (args !== undefined) {
            if (JSON.stringify(args) === undefined) throw new TypeError("args must be JSON-serialisable");
            body.args = args;
        }
        if (checkBool("includeCompleted", includeCompleted) !== undefined) body.includeCompleted = includeCompleted;
        return this.http.request("POST", `${taskPath(id)}/rerun`, { body });
    }

    /**
     * Reruns the ended tasks that match every filter given, oldest first, up
     * to limit (default 100, at most 1000), in one transaction: a task with a
     * rerun already, or a workflow node's, is left out. With dryRun only
     * counts. Answers {dryRun, count, more, tasks} (tasks left out with
     * dryRun); the same call made again goes on with the ones left.
     * @param {{queue?: string, name?: string, errorCode?: string, status?: "FAILED"|"CANCELLED"|"EXPIRED"|"COMPLETED",
     *          finishedAfter?: Date|string, finishedBefore?: Date|string, limit?: number, dryRun?: boolean,
     *          includeCompleted?: boolean, priority?: number, timeoutMs?: number, retry?: object,
     *          retentionClassKey?: string|null}} [filter]
     */
    async rerunMany(filter = {}) {
        if (filter === null || typeof filter !== "object" || Array.isArray(filter))
            throw new TypeError("rerunMany takes an object of filters");
        const { queue, name, errorCode, status, finishedAfter, finishedBefore, limit, dryRun, includeCompleted, ...rest } = filter;
        const body = rerunOverrides(rest, "rerunMany");
        if (queue !== undefined) body.queue = checkName("queue", queue);
        if (name !== undefined) body.name = checkName("name", name);
        if (errorCode !== undefined) {
            if (typeof errorCode !== "string" || errorCode.length === 0) throw new TypeError("errorCode must be a non-empty string");
            body.errorCode = errorCode;
        }
        if (status !== undefined) {
            if (!ENDED_STATUSES.includes(status)) throw new RangeError(`status must be one of ${ENDED_STATUSES.join(", ")}`);
            body.status = status;
        }
        if (finishedAfter !== undefined) body.finishedAfter = checkTime("finishedAfter", finishedAfter);
        if (finishedBefore !== undefined) body.finishedBefore = checkTime("finishedBefore", finishedBefore);
        checkLimit(limit);
        if (limit !== undefined) body.limit = limit;
        if (checkBool("dryRun", dryRun) !== undefined) body.dryRun = dryRun;
        if (checkBool("includeCompleted", includeCompleted) !== undefined) body.includeCompleted = includeCompleted;
        return this.http.request("POST", "/api/v1/tasks/rerun", { body });
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

/** The overrides a rerun of one task and one by filter share: priority,
 * timeoutMs, retry (the whole policy; {} is none), retentionClassKey (null:
 * forever); anything else is refused. */
function rerunOverrides({ priority, timeoutMs, retry, retentionClassKey, ...rest }, what) {
    refuseUnknown(rest, what);
    const body = {};
    if (priority !== undefined) body.priority = checkInt("priority", priority, 1, 100);
    if (timeoutMs !== undefined) body.timeoutMs = checkInt("timeoutMs", timeoutMs, 1, 86400000);
    if (retry !== undefined) body.retry = checkRetry(retry);
    if (retentionClassKey !== undefined) body.retentionClassKey = checkClass(retentionClassKey);
    return body;
}

function taskPath(id) {
    return `/api/v1/tasks/${encodeURIComponent(checkId(id))}`;
}

// handle: a sent task, by id. What a send answers, so the caller can wait
// for the task's result, read it, or cancel it.

import { TaskFailedError } from "./errors.js";

const TERMINAL = new Set(["COMPLETED", "FAILED", "CANCELLED", "EXPIRED"]);

/** True for a status a task never leaves. */
export function isTerminal(status) {
    return TERMINAL.has(status);
}

/** A task that was sent. */
export class TaskHandle {
    /**
     * @param {import("./client.js").Client} client
     * @param {string} id
     * @param {boolean} created false when an idempotencyKey or a unique key named an earlier task
     * @param {boolean} [changed] with unique: true when replace or debounce changed that task
     */
    constructor(client, id, created, changed) {
        this.client = client;
        /** the task's id (a UUIDv7) */
        this.id = id;
        /** false when the idempotencyKey or unique key named an earlier task: this is that task */
        this.created = created;
        /** a send with unique: true when its onConflict (replace, debounce) changed the task holding the key; else undefined */
        this.changed = changed;
    }

    /**
     * Waits for the task's end. COMPLETED answers its result; FAILED,
     * CANCELLED and EXPIRED throw a TaskFailedError; running out of time
     * throws a WaitTimeoutError.
     * @param {{timeoutMs?: number}} [options] default: no limit
     */
    async result({ timeoutMs = Infinity } = {}) {
        const task = await this.client.wait(this.id, { timeoutMs });
        if (task.status === "COMPLETED") return task.result;
        throw new TaskFailedError(task);
    }

    /** The task as the server has it now. */
    get() {
        return this.client.get(this.id);
    }

    /** Cancels the task (a running one is told on its worker's next heartbeat). */
    cancel() {
        return this.client.cancel(this.id);
    }

    /** The task's attempts, oldest first. */
    attempts() {
        return this.client.attempts(this.id);
    }

    /**
     * Sends the finished task again as a new task (see Client.rerun);
     * answers a handle on the rerun (created false: the rerun made before).
     * @param {object} [overrides]
     */
    async rerun(overrides) {
        const reply = await this.client.rerun(this.id, overrides);
        return new TaskHandle(this.client, reply.id, reply.created);
    }

    toJSON() {
        return this.changed === undefined ? { id: this.id, created: this.created } : { id: this.id, created: this.created, changed: this.changed };
    }
}

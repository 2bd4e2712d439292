// app: the registry of a program's tasks. Producers use it to send them,
// workers to find the function of each task they claim, by name.

import { Client } from "./client.js";
import { Task } from "./task.js";
import { Worker } from "./worker.js";

/** A set of task definitions talking to one silt server. */
export class App {
    /**
     * @param {{url?: string, token?: string|null, timeoutMs?: number, client?: Client}} options
     *   give either url (and token) or an existing client
     */
    constructor({ url, token = null, timeoutMs, client } = {}) {
        this.client = client ?? new Client({ url, token, timeoutMs });
        /** @type {Map<string, Task>} */
        this.tasks = new Map();
        /** @type {Set<Worker>} */
        this.workers = new Set();
    }

    /**
     * Defines a task. Without a function, the task is one this process only
     * sends (another program runs it).
     * @param {string} name
     * @param {object} options default send options: queue (required), priority, retry, ...
     * @param {(args: any, ctx: import("./runner.js").TaskContext) => any} [fn]
     *   its return value (JSON) is the task's result; what it throws, the failure
     * @returns {Task}
     */
    task(name, options, fn = null) {
        if (typeof options === "function") throw new TypeError(`task ${name}: options (with a queue) come before the function`);
        if (this.tasks.has(name)) throw new Error(`task ${name} is defined twice`);
        const task = new Task(this.client, name, options, fn);
        this.tasks.set(name, task);
        return task;
    }

    /** The function of a task by name (null when this process does not run it). */
    functionOf(name) {
        const task = this.tasks.get(name);
        return task ? task.fn : null;
    }

    /** The queues of the tasks this app runs, for a worker given none. */
    queues() {
        const queues = new Set();
        for (const task of this.tasks.values()) if (task.fn) queues.add(task.queue);
        return [...queues];
    }

    /**
     * A worker for this app's tasks, not yet started (`await worker.run()`).
     * @param {import("./worker.js").WorkerOptions} [options]
     * @returns {Worker}
     */
    worker(options = {}) {
        return new Worker(this, options);
    }

    /**
     * Runs a worker until it is stopped (options.signal, app.stopWorkers(),
     * or worker.stop()). Resolves once it has stopped and its ends are delivered.
     * @param {import("./worker.js").WorkerOptions} [options]
     */
    async runWorker(options = {}) {
        const worker = this.worker(options);
        this.workers.add(worker);
        try {
            await worker.run();
        } finally {
            this.workers.delete(worker);
        }
    }

    /** Stops every worker runWorker started; resolves when they have stopped. */
    async stopWorkers() {
        await Promise.all([...this.workers].map((w) => w.stop()));
    }
}

// task: a task definition — a name, its default send options and (in the
// process that runs it) its function. Sending goes through the app's
// Client; running is the worker's business, which finds the function here
// by name.

import { checkSendOptions, checkName } from "./options.js";

const MAX_BATCH = 1000;

/**
 * What `app.task(...)` answers.
 * @template A, R
 */
export class Task {
    /**
     * @param {import("./client.js").Client} client
     * @param {string} name
     * @param {object} options default send options; queue required
     * @param {((args: A, ctx: object) => R | Promise<R>) | null} fn
     */
    constructor(client, name, options, fn) {
        checkName("name", name);
        const checked = checkSendOptions(options);
        if (checked.queue === undefined) throw new TypeError(`task ${name}: queue is required`);
        if (fn !== null && typeof fn !== "function") throw new TypeError(`task ${name}: the task's function must be a function`);
        this.client = client;
        this.name = name;
        this.options = Object.freeze(checked);
        this.fn = fn;
    }

    /** The queue it is sent to. */
    get queue() {
        return this.options.queue;
    }

    /**
     * The same task with some send options replaced (a `retry` given here
     * replaces the whole retry policy; giving delayMs drops a default runAt
     * and the other way round). Checked now.
     * @param {object} overrides
     * @returns {Task<A, R>}
     */
    withOptions(overrides) {
        const extra = checkSendOptions(overrides);
        const base = { ...this.options };
        if (extra.delayMs !== undefined) delete base.runAt;
        if (extra.runAt !== undefined) delete base.delayMs;
        return new Task(this.client, this.name, { ...base, ...extra }, this.fn);
    }

    /**
     * Sends one task with these args.
     * @param {A} [args] any JSON value
     * @returns {Promise<import("./handle.js").TaskHandle>}
     */
    send(args) {
        return this.client.send({ ...this.options, name: this.name, args });
    }

    /**
     * Sends 1 to 1,000 tasks in one request (all written, or none).
     * @param {A[]} argsList
     * @returns {Promise<import("./handle.js").TaskHandle[]>}
     */
    async sendMany(argsList) {
        if (!Array.isArray(argsList)) throw new TypeError("sendMany takes an array of args");
        if (argsList.length === 0 || argsList.length > MAX_BATCH)
            throw new RangeError(`a batch holds 1 to ${MAX_BATCH} tasks, not ${argsList.length}`);
        return this.client.sendBatch(argsList.map((args) => ({ ...this.options, name: this.name, args })));
    }
}

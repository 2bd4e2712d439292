// worker: the in-process worker — registers, claims, runs task functions
// concurrently, heartbeats, delivers ends, and stops gracefully. It speaks
// the worker protocol of docs/tasks.md and keeps the guarantees of
// `silt worker`: every call about a task names its claimId (fencing), ends
// are kept until the server answers for them, a cancel or a timeout aborts
// the task's signal, and a stop lets running tasks finish within a grace.
//
// Claiming: one claim request at a time, for as many tasks as there are
// free slots (up to 1,000), with "start": true so a claimed task is RUNNING
// at once. Every claim long-polls: when tasks are waiting it is answered at
// once, when none are it is parked in the server until a send wakes it. So
// the next claim leaves as soon as a slot is free, and an idle worker costs
// one parked request — there is no claim timer. While ends cannot be
// delivered, nothing new is claimed: work would only pile up behind them.
//
// The server being away (refused, reset, 5xx, draining) is never fatal:
// registration, claims and heartbeats are tried again with backoff, ends
// are resent until answered, and running functions go on meanwhile.

import os from "node:os";
import { Backoff, Wakeup, sleep } from "./backoff.js";
import { SiltError } from "./errors.js";
import { Finisher } from "./finisher.js";
import { Heartbeats } from "./heartbeats.js";
import { Job, runJob } from "./runner.js";
import { completedItem, failedItem, thrownItem } from "./outcome.js";
import { checkInt } from "./options.js";

const MAX_CLAIM = 1000;
const MAX_CONCURRENCY = 10000;
const DEFAULTS = { concurrency: 16, graceMs: 30000, claimWaitMs: 20000 };
const OPTIONS = ["queues", "concurrency", "graceMs", "workerId", "heartbeatMs", "claimWaitMs", "signal", "logger"];

/**
 * @typedef {object} WorkerOptions
 * @property {string[]} [queues] default: the queues of the app's tasks that have a function
 * @property {number} [concurrency] tasks run at once (default 16)
 * @property {number} [graceMs] on stop, how long running tasks may take to finish (default 30000)
 * @property {string} [workerId] default: one the server makes
 * @property {number} [heartbeatMs] heartbeat this often when sooner than the server's runnerHeartbeatIntervalMs
 * @property {number} [claimWaitMs] how long an idle claim waits in the server (default 20000)
 * @property {AbortSignal} [signal] aborting it stops the worker
 * @property {{info?: Function, warn?: Function, error?: Function}} [logger] default: warnings and errors on stderr
 */

export class Worker {
    /**
     * @param {import("./app.js").App} app
     * @param {WorkerOptions} options
     */
    constructor(app, options = {}) {
        const o = checkOptions(options, app);
        this.app = app;
        this.http = app.client.http;
        this.queues = o.queues;
        this.concurrency = o.concurrency;
        this.graceMs = o.graceMs;
        this.claimWaitMs = o.claimWaitMs;
        this.heartbeatMs = o.heartbeatMs;
        this.logger = makeLogger(o.logger);
        /** the worker's id (known once registered) */
        this.id = o.workerId ?? null;
        /** tasks held: running, or ended and not yet answered for; by id */
        this.held = new Map();
        this.busy = 0;                      // slots taken: functions not yet settled
        this.stopping = false;
        this.stopper = new AbortController();
        this.wakeup = new Wakeup();
        this.claim = null;                  // the claim in flight: {abort, headers}
        this.running = null;
        /** counters since start: claimed, and server answers per status */
        this.stats = { claimed: 0, ended: {}, fenced: 0, lost: 0, refused: 0 };
        if (options.signal) whenAborted(options.signal, () => this.stop());
    }

    /**
     * Runs until stopped; resolves once stopped with every end delivered.
     * Rejects only when the server refuses the registration (a 4xx, e.g. an
     * undeclared queue): a configuration mistake, not an outage.
     */
    run() {
        if (!this.running) this.running = this.lifecycle();
        return this.running;
    }

    /**
     * Stops: claims nothing more at once, lets running tasks finish for up
     * to graceMs, fails the rest WORKER_CRASHED, delivers every end.
     * Resolves when the worker has stopped (at once if it never ran).
     */
    stop() {
        if (!this.stopping) {
            this.stopping = true;
            this.stopper.abort();
            // A claim whose reply has begun to arrive took its tasks: let it land and run them.
            if (this.claim && !this.claim.headers) this.claim.abort.abort();
            this.wakeup.notify();
        }
        return this.running ?? Promise.resolve();
    }

    async lifecycle() {
        const registration = await this.register();
        if (!registration) return;
        this.finisher = new Finisher({
            http: this.http,
            path: `${this.path()}/finish`,
            onAnswer: (job, status) => this.answered(job, status),
            onFailing: () => this.wakeup.notify(),
            logger: this.logger,
        });
        const intervalMs = Math.min(registration.runnerHeartbeatIntervalMs, this.heartbeatMs ?? Infinity);
        this.heartbeats = new Heartbeats({
            http: this.http,
            path: `${this.path()}/heartbeat`,
            intervalMs,
            held: () => [...this.held.values()],
            onState: (job, state) => this.heard(job, state),
            logger: this.logger,
        });
        this.heartbeats.start();
        await this.claimLoop();
        await this.drain();
    }

    path() {
        return `/api/v1/workers/${encodeURIComponent(this.id)}`;
    }

    // ---- registration ----

    async register() {
        const body = { hostname: os.hostname(), pid: process.pid, queues: this.queues, concurrency: this.concurrency };
        if (this.id) body.workerId = this.id;
        const backoff = new Backoff();
        let warned = false;
        while (!this.stopping) {
            try {
                const reply = await this.http.request("POST", "/api/v1/workers", { body, signal: this.stopper.signal });
                this.id = reply.workerId;
                this.logger.info(`registered as ${this.id} on ${this.queues.join(", ")} (concurrency ${this.concurrency})`);
                return reply;
            } catch (err) {
                if (this.stopping) break;
                if (err instanceof SiltError && err.status < 500) throw err;
                if (!warned) this.logger.warn(`cannot register yet, trying again: ${err.message}`);
                warned = true;
                await sleep(backoff.next(), this.stopper.signal);
            }
        }
        return null;
    }

    // ---- claiming ----

    async claimLoop() {
        const backoff = new Backoff();
        let failing = false;
        while (!this.stopping) {
            const free = this.concurrency - this.busy;
            if (free <= 0 || this.finisher.failing) {
                await this.wakeup.wait();
                continue;
            }
            const began = Date.now();
            try {
                const tasks = await this.claimTasks(Math.min(free, MAX_CLAIM));
                if (failing) this.logger.warn("claims get through again");
                failing = false;
                this.take(tasks);
                // An empty answer long before the wait was up: the server is
                // draining and answers every claim at once. Do not spin on it.
                if (tasks.length === 0 && Date.now() - began < this.claimWaitMs / 2) await sleep(backoff.next(), this.stopper.signal);
                else backoff.reset();
            } catch (err) {
                if (this.stopping) break;
                if (!failing) this.logger.warn(`claim failed, trying again: ${err.message}`);
                failing = true;
                await sleep(backoff.next(), this.stopper.signal);
            }
        }
    }

    async claimTasks(max) {
        const claim = { abort: new AbortController(), headers: false };
        this.claim = claim;
        try {
            const reply = await this.http.request("POST", `${this.path()}/claim`, {
                body: { queues: this.queues, max, waitMs: this.claimWaitMs, start: true },
                waitMs: this.claimWaitMs,
                signal: claim.abort.signal,
                onHeaders: () => { claim.headers = true; },
            });
            return reply.tasks;
        } finally {
            this.claim = null;
        }
    }

    take(tasks) {
        const unstarted = [];
        for (const t of tasks) {
            this.stats.claimed++;
            if (t.status === "RUNNING") this.start(new Job(t));
            else unstarted.push(t);
        }
        // A claim with "start": true starts what it takes; anything else is handed back.
        if (unstarted.length) this.release(unstarted);
    }

    async release(tasks) {
        const body = { tasks: tasks.map((t) => ({ id: t.id, claimId: t.claimId })) };
        try {
            await this.http.request("POST", `${this.path()}/release`, { body });
        } catch (err) {
            this.logger.warn(`could not release ${tasks.length} unstarted tasks (recovery will): ${err.message}`);
        }
    }

    // ---- running ----

    start(job) {
        const fn = this.app.functionOf(job.name);
        job.onProgress = () => this.heartbeats.progressed();
        this.held.set(job.id, job);
        if (!fn) {
            this.end(job, failedItem(job.id, job.claimId, "UNKNOWN_TASK", `this worker has no function for task ${job.name}`));
            return;
        }
        this.busy++;
        runJob(job, fn, {
            onTimeout: (j) => this.endEarly(j, "TASK_TIMEOUT", `the task ran past its timeout of ${j.timeoutMs} ms`),
            onSettled: (j, ok, value) => this.settled(j, ok, value),
        });
    }

    settled(job, ok, value) {
        this.busy--;
        if (!job.ended && !job.lost)
            this.end(job, ok ? completedItem(job.id, job.claimId, value) : thrownItem(job.id, job.claimId, value));
        this.wakeup.notify();
    }

    /** Ends a job whose function still runs: its signal aborts, its slot stays taken until it settles. */
    endEarly(job, code, message) {
        if (job.ended || job.lost) return;
        job.abort(code, message);
        this.end(job, failedItem(job.id, job.claimId, code, message));
    }

    end(job, text) {
        job.ended = true;
        if (job.report) this.heartbeats.endAfterReport(() => this.finisher.add(job, text));   // its last report first
        else this.finisher.add(job, text);
    }

    /** The server's answer for an end: the task is no longer held. */
    answered(job, status) {
        if (this.held.get(job.id) === job) this.held.delete(job.id);
        if (status === undefined) this.stats.refused++;
        else if (status === null) this.stats.fenced++;
        else this.stats.ended[status] = (this.stats.ended[status] ?? 0) + 1;
        this.wakeup.notify();
    }

    /** A heartbeat's word about a task other than ok. */
    heard(job, state) {
        if (this.held.get(job.id) !== job || job.ended) return;   // gone, or its end is on its way
        if (state === "cancelled") this.endEarly(job, "CANCELLED", "the task was cancelled");
        else if (state === "lost") this.drop(job);
    }

    /** The claim is no longer ours: stop the work, report nothing. */
    drop(job) {
        job.lost = true;
        this.held.delete(job.id);
        this.stats.lost++;
        job.abort("LOST", "the server took the task back (its claim was retired)");
        this.logger.warn(`task ${job.id} was taken back by the server: dropped, nothing reported`);
    }

    // ---- stopping ----

    async drain() {
        await this.graceOver();
        for (const job of this.held.values())
            this.endEarly(job, "WORKER_CRASHED", `the worker stopped and the task was still running after ${this.graceMs} ms`);
        await this.heartbeats.endingSent();   // ends held back for their last progress report
        await this.finisher.drained();
        await this.heartbeats.stop();
        this.logger.info(`stopped (${this.stats.claimed} tasks claimed)`);
    }

    /** Waits until every held task's end is decided, or graceMs. */
    async graceOver() {
        const deadline = Date.now() + this.graceMs;
        let timer;
        const timeout = new Promise((resolve) => { timer = setTimeout(resolve, this.graceMs); });
        try {
            while (this.undecided() > 0 && Date.now() < deadline) await Promise.race([this.wakeup.wait(), timeout]);
        } finally {
            clearTimeout(timer);
        }
    }

    undecided() {
        let n = 0;
        for (const job of this.held.values()) if (!job.ended) n++;
        return n;
    }
}

function checkOptions(options, app) {
    for (const key of Object.keys(options))
        if (!OPTIONS.includes(key)) throw new TypeError(`unknown worker option "${key}" (known: ${OPTIONS.join(", ")})`);
    const o = { ...DEFAULTS, ...stripUndefined(options) };
    o.queues = o.queues ?? app.queues();
    if (!Array.isArray(o.queues) || o.queues.length === 0 || o.queues.length > 64 || o.queues.some((q) => typeof q !== "string" || !q))
        throw new TypeError("queues must be an array of 1 to 64 queue names (or define tasks with a function first)");
    checkInt("concurrency", o.concurrency, 1, MAX_CONCURRENCY);
    checkInt("graceMs", o.graceMs, 0, 2 ** 31 - 1);
    checkInt("claimWaitMs", o.claimWaitMs, 1, 60000);
    if (o.heartbeatMs !== undefined) checkInt("heartbeatMs", o.heartbeatMs, 100, 600000);
    if (o.workerId !== undefined && (typeof o.workerId !== "string" || !o.workerId || o.workerId.length > 200))
        throw new TypeError("workerId must be a non-empty string of at most 200 characters");
    return o;
}

function stripUndefined(o) {
    return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

function makeLogger(logger) {
    const say = (level) => (msg) => console.error(`silt-worker ${level}: ${msg}`);
    const quiet = () => {};
    return {
        info: logger?.info?.bind(logger) ?? quiet,
        warn: logger?.warn?.bind(logger) ?? say("warning"),
        error: logger?.error?.bind(logger) ?? say("error"),
    };
}

function whenAborted(signal, fn) {
    if (signal.aborted) queueMicrotask(fn);
    else signal.addEventListener("abort", fn, { once: true });
}

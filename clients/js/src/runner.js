// runner: one claimed task in this process — its context, its AbortSignal,
// its timeout, and the call of its function. A job ends one of two ways:
// its function settles, or the worker decides its end first (cancel,
// timeout, grace over) and aborts its signal. Either way the end is
// reported once: whichever comes first wins and the other only frees the
// slot. A JavaScript function cannot be killed, so a job whose end was
// decided early keeps its slot until its function does settle.

import { TaskAbortedError } from "./errors.js";

/**
 * What a task function receives besides its args.
 * @typedef {object} TaskContext
 * @property {AbortSignal} signal aborts on cancel, timeout, a stop past grace, or a lost claim; its reason is a TaskAbortedError
 * @property {string} taskId
 * @property {number} attempt 1 for the first run, 2 for the first retry ...
 * @property {number} retryCount retries used before this attempt
 * @property {string} name
 * @property {string} queue
 * @property {(value?: number | null, info?: unknown) => void} progress reports how far the task is
 */

const PROGRESS_INFO_MAX = 4096;   // bytes of a report's JSON value, as the server bounds it

/** A task this worker claimed (and the server started). */
export class Job {
    /** @param {object} claimed one task of a claim's reply */
    constructor(claimed) {
        this.id = claimed.id;
        this.claimId = claimed.claimId;
        this.name = claimed.name;
        this.queue = claimed.queue;
        this.args = claimed.args;
        this.attempt = claimed.attempt;
        this.retryCount = claimed.retryCount;
        this.timeoutMs = claimed.timeoutMs;
        // Made when the function first reads ctx.signal: most quick tasks
        // never do, and an AbortController per task showed in the profile.
        this.controller = null;
        this.abortReason = null;
        this.timer = null;
        /** its end is decided (reported, or queued to be) */
        this.ended = false;
        /** the server took the claim back: report nothing */
        this.lost = false;
        /** its function has returned or thrown */
        this.settled = false;
        /** the progress report not yet sent: {progress, progressInfo} */
        this.report = null;
        /** set by the worker: brings the next heartbeat forward */
        this.onProgress = null;
    }

    /** Checks and keeps a report (ctx.progress); throws TypeError or RangeError, keeping nothing. */
    progress(value = null, info = null) {
        if (value !== null && typeof value !== "number") throw new TypeError("progress must be a number or null");
        if (value !== null && !Number.isFinite(value)) throw new RangeError("progress must be a finite number");
        const text = info === null || info === undefined ? null : JSON.stringify(info);
        if (text === undefined) throw new TypeError("progress info must be a JSON value");
        if (text !== null && Buffer.byteLength(text) > PROGRESS_INFO_MAX)
            throw new RangeError(`progress info must be at most ${PROGRESS_INFO_MAX} bytes of JSON`);
        this.report = { progress: value, progressInfo: text === null ? null : JSON.parse(text) };
        this.onProgress?.();
    }

    /** The report not yet sent, taken (the heartbeat's side), or null. */
    takeReport() {
        const report = this.report;
        this.report = null;
        return report;
    }

    /** A report whose heartbeat failed goes again, unless a newer one came. */
    giveBackReport(report) {
        if (!this.report) this.report = report;
    }

    /** @returns {TaskContext} */
    context() {
        const job = this;
        return {
            get signal() {
                return job.signal();
            },
            taskId: this.id,
            attempt: this.attempt,
            retryCount: this.retryCount,
            name: this.name,
            queue: this.queue,
            progress: (value, info) => job.progress(value, info),
        };
    }

    /** The function's AbortSignal (already aborted if the job was). */
    signal() {
        if (!this.controller) {
            this.controller = new AbortController();
            if (this.abortReason) this.controller.abort(this.abortReason);
        }
        return this.controller.signal;
    }

    /** Aborts the function's signal, saying why. */
    abort(code, message) {
        if (this.abortReason) return;
        this.abortReason = new TaskAbortedError(code, message);
        if (this.controller) this.controller.abort(this.abortReason);
    }
}

/**
 * Calls the job's function. `onTimeout(job)` runs if it is still going
 * after its timeoutMs; `onSettled(job, ok, valueOrError)` once it settles.
 * @param {Job} job
 * @param {Function} fn
 * @param {{onTimeout: (job: Job) => void, onSettled: (job: Job, ok: boolean, v: unknown) => void}} hooks
 */
export function runJob(job, fn, hooks) {
    if (job.timeoutMs) job.timer = setTimeout(() => hooks.onTimeout(job), job.timeoutMs);
    invoke(fn, job.args, job.context()).then(
        (value) => settle(job, hooks, true, value),
        (err) => settle(job, hooks, false, err),
    );
}

// async: a function that throws before returning a promise is a rejection
// like any other, never an exception in the worker's own loop.
async function invoke(fn, args, ctx) {
    return fn(args, ctx);
}

function settle(job, hooks, ok, value) {
    job.settled = true;
    if (job.timer) clearTimeout(job.timer);
    job.timer = null;
    hooks.onSettled(job, ok, value);
}

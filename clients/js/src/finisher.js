// finisher: delivers the ends of attempts (complete or fail) through
// POST /api/v1/workers/:id/finish, many per request, and keeps each one
// until the server has answered for it.
//
// Batching: ends arriving in the same turn of the event loop (a claim of a
// thousand quick tasks settles them together) are sent as one request; up
// to two requests are in flight (the server gathers ends two batches deep),
// and whatever arrives meanwhile waits for the next. No timer is involved
// on the fast path: the next request leaves as soon as a slot is free.
//
// Delivery: an end leaves the backlog only when the reply names it — with
// a status (COMPLETED, FAILED, PENDING when retried, CANCELLED) or with
// none, meaning the claim is no longer current (recovered, cancelled, or
// this very end was already written by a request whose reply was lost).
// A request that gets no answer (connection refused or reset, timeout) or a
// 5xx (database away, server draining) is sent again, the same ends under
// the same claimIds, after a backoff from 50 ms to 1 s, for as long as it
// takes. Fencing makes the resend safe: an end already written is refused,
// never applied twice.

import { Backoff } from "./backoff.js";
import { SiltError, TransportError } from "./errors.js";
import { failedItem } from "./outcome.js";

const MAX_ITEMS = 1000;                  // the server's bound on one finish
const MAX_BYTES = 8 * 1024 * 1024;       // well below MAX_BODY_BYTES, so big results travel alone
const MAX_IN_FLIGHT = 2;

/**
 * @typedef {object} End
 * @property {import("./runner.js").Job} job
 * @property {string} text the item's JSON text
 * @property {boolean} alone send it in a request of its own (its batch was refused)
 */

export class Finisher {
    /**
     * @param {object} o
     * @param {import("./http.js").Http} o.http
     * @param {string} o.path the worker's finish route
     * @param {(job: object, status: string|null) => void} o.onAnswer status null: the claim was not current
     * @param {(failing: boolean) => void} o.onFailing called when delivery starts or stops failing
     * @param {{warn: Function, error: Function}} o.logger
     */
    constructor({ http, path, onAnswer, onFailing, logger }) {
        this.http = http;
        this.path = path;
        this.onAnswer = onAnswer;
        this.onFailing = onFailing;
        this.logger = logger;
        /** @type {End[]} */
        this.queue = [];
        this.inFlight = 0;
        this.sending = 0;           // ends in requests in flight
        this.scheduled = false;
        this.retryTimer = null;
        this.failing = false;
        this.backoff = new Backoff();
        this.idleWaiters = [];
    }

    /** Ends not yet answered for (queued or in flight). */
    get backlog() {
        return this.queue.length + this.sending;
    }

    /**
     * Queues the end of a job for delivery.
     * @param {object} job
     * @param {string} text JSON text of the finish item
     */
    add(job, text) {
        this.queue.push({ job, text, alone: false });
        this.schedule();
    }

    /** Resolves once every end handed over so far has been answered for. */
    drained() {
        if (this.backlog === 0) return Promise.resolve();
        return new Promise((resolve) => this.idleWaiters.push(resolve));
    }

    // One setImmediate per burst: every end settled in this turn joins the request.
    schedule() {
        if (this.scheduled || this.retryTimer || this.inFlight >= MAX_IN_FLIGHT || this.queue.length === 0) return;
        this.scheduled = true;
        setImmediate(() => {
            this.scheduled = false;
            this.flush();
        });
    }

    flush() {
        while (!this.retryTimer && this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) this.send(this.takeBatch());
    }

    takeBatch() {
        if (this.queue[0].alone) return this.queue.splice(0, 1);
        let n = 0;
        let bytes = 0;
        while (n < this.queue.length && n < MAX_ITEMS && !this.queue[n].alone) {
            bytes += this.queue[n].text.length;
            if (n > 0 && bytes > MAX_BYTES) break;
            n++;
        }
        return this.queue.splice(0, n);
    }

    send(batch) {
        this.inFlight++;
        this.sending += batch.length;
        const rawBody = `{"tasks":[${batch.map((e) => e.text).join(",")}]}`;
        this.http.request("POST", this.path, { rawBody }).then((reply) => {
            if (!reply || !Array.isArray(reply.tasks)) throw new TransportError("the finish reply has no tasks");
            this.answered(batch, reply);
        }).catch((err) => this.failed(batch, err)).finally(() => {
            this.inFlight--;
            this.sending -= batch.length;
            this.schedule();
            this.checkIdle();
        });
    }

    answered(batch, reply) {
        this.setFailing(false);
        this.backoff.reset();
        const status = new Map();
        for (const item of reply.tasks) status.set(item.id, item.status);
        const unanswered = [];
        for (const end of batch) {
            if (status.has(end.job.id)) this.onAnswer(end.job, status.get(end.job.id));
            else unanswered.push(end);           // not expected: kept, sent again
        }
        if (unanswered.length) this.queue.unshift(...unanswered);
    }

    failed(batch, err) {
        if (err instanceof SiltError && err.status < 500) return this.refused(batch, err);
        // No answer, or the server could not take it now: the same ends, later.
        if (!this.failing) this.logger.warn(`ends not delivered, resending until answered: ${err.message}`);
        this.setFailing(true);
        this.queue.unshift(...batch);
        if (!this.retryTimer)
            this.retryTimer = setTimeout(() => {
                this.retryTimer = null;
                this.flush();
            }, this.backoff.next());
    }

    // A 4xx for a whole batch: one of its ends is at fault. Each is sent
    // alone so the others go through; one refused alone can never succeed
    // and is dropped (the server's recovery ends the task). A result too
    // large for a request is reported as a failure instead.
    refused(batch, err) {
        if (batch.length > 1) {
            for (const end of batch) end.alone = true;
            this.queue.unshift(...batch);
            return;
        }
        const end = batch[0];
        if (err.status === 413 && !end.tooLarge) {
            end.tooLarge = true;
            end.text = failedItem(end.job.id, end.job.claimId, "RESULT_TOO_LARGE", `the result is too large to send: ${err.message}`);
            this.queue.unshift(end);
            return;
        }
        this.logger.error(`the server refused the end of task ${end.job.id} (${err.status} ${err.message}): left to its recovery`);
        this.onAnswer(end.job, undefined);
    }

    setFailing(failing) {
        if (this.failing === failing) return;
        this.failing = failing;
        if (!failing) this.logger.warn("ends delivered again");
        this.onFailing(failing);
    }

    checkIdle() {
        if (this.backlog > 0 || this.idleWaiters.length === 0) return;
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const resolve of waiters) resolve();
    }
}

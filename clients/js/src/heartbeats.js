// heartbeats: the worker's periodic POST /api/v1/workers/:id/heartbeat.
// Each names every task the worker holds with its claimId — running ones,
// and ones whose end is decided but not yet answered for, so that recovery
// does not take a task back while its end waits for the server. An empty
// list is sent too: it records the worker as alive. A failed heartbeat is
// tried again soon (backoff from 50 ms, never later than the interval),
// since a missed one brings the task nearer to being declared crashed.
//
// A task function's progress report (ctx.progress) brings the next
// heartbeat forward, to at most one a second (PROGRESS_EVERY_MS): each
// carries the latest report of every job that made one. A job that ends
// with a report not yet sent has it sent, in a heartbeat at once, before its
// end goes to the finisher (endAfterReport), so its record shows where it
// ended.

import { Backoff } from "./backoff.js";

const MAX_TASKS = 1000;   // the server's bound on one heartbeat's list
const PROGRESS_EVERY_MS = 1000;   // progress brings a heartbeat forward at most this often

export class Heartbeats {
    /**
     * @param {object} o
     * @param {import("./http.js").Http} o.http
     * @param {string} o.path the worker's heartbeat route
     * @param {number} o.intervalMs
     * @param {() => Array<{id: string, claimId: string}>} o.held the jobs to name
     * @param {(job: object, state: string) => void} o.onState a job named and the state the reply gives it, when not ok
     * @param {{warn: Function}} o.logger
     */
    constructor({ http, path, intervalMs, held, onState, logger }) {
        Object.assign(this, { http, path, intervalMs, held, onState, logger });
        this.stopper = new AbortController();
        this.backoff = new Backoff(50, Math.min(1000, intervalMs));
        this.failing = false;
        this.loop = null;
        this.lastBeat = -Infinity;
        this.progressAt = null;   // when a report asks for a heartbeat (null: none asks)
        this.ending = [];         // ends that wait for their job's last report: () => void each
        this.poke = null;         // cuts the loop's sleep short
        this.endingLeft = 0;      // ends given to endAfterReport, not yet put
        this.endingWaiters = [];
    }

    /** A job reported progress: heartbeat at most PROGRESS_EVERY_MS after the last. */
    progressed() {
        if (this.progressAt !== null) return;
        this.progressAt = Math.max(Date.now(), this.lastBeat + PROGRESS_EVERY_MS);
        this.poke?.();
    }

    /** Calls put() once a heartbeat has carried the job's last report (answered or not). */
    endAfterReport(put) {
        this.endingLeft++;
        this.ending.push(() => {
            put();
            if (--this.endingLeft === 0) for (const resolve of this.endingWaiters.splice(0)) resolve();
        });
        this.poke?.();
    }

    /** Resolves once every end given to endAfterReport is with the finisher. */
    endingSent() {
        if (this.endingLeft === 0) return Promise.resolve();
        return new Promise((resolve) => this.endingWaiters.push(resolve));
    }

    start() {
        this.loop = this.run();
    }

    /** Stops after the heartbeat in flight, if any, is answered or cut off. */
    async stop() {
        this.stopper.abort();
        await this.loop;
    }

    async run() {
        let next = Date.now() + this.intervalMs;
        while (!this.stopper.signal.aborted) {
            await this.sleepUntil(next);
            if (this.stopper.signal.aborted) break;
            const now = Date.now(), ending = this.ending.splice(0);
            if (now < next && !ending.length && !(this.progressAt !== null && now >= this.progressAt)) continue;
            next = Date.now() + ((await this.beat()) ? this.intervalMs : this.backoff.next());
            for (const put of ending) put();
        }
        for (const put of this.ending.splice(0)) put();   // stopping: an end never waits on progress
    }

    /** Sleeps until `at`, a report's moment or an end waiting, whichever is first; a stop cuts it short. */
    sleepUntil(at) {
        const due = this.ending.length ? 0 : Math.min(at, this.progressAt ?? Infinity) - Date.now();
        if (due <= 0 || this.stopper.signal.aborted) return Promise.resolve();
        return new Promise((resolve) => {
            const done = () => {
                clearTimeout(timer);
                this.stopper.signal.removeEventListener("abort", done);
                this.poke = null;
                resolve();
            };
            const timer = setTimeout(done, due);
            this.stopper.signal.addEventListener("abort", done);
            this.poke = done;
        });
    }

    /** One heartbeat (in chunks the server accepts); false when it did not get through. */
    async beat() {
        const held = this.held();
        this.progressAt = null;
        this.lastBeat = Date.now();
        let taken = [];   // [job, report]: given back when the call fails
        try {
            for (let i = 0; i === 0 || i < held.length; i += MAX_TASKS) {
                // The reply is about the claims named, not about whatever
                // job holds the id by the time it arrives (a retry of the
                // task may have been claimed again meanwhile).
                const named = new Map(held.slice(i, i + MAX_TASKS).map((j) => [j.id, j]));
                taken = [];
                const tasks = [...named.values()].map((j) => {
                    const report = j.takeReport();
                    if (!report) return { id: j.id, claimId: j.claimId };
                    taken.push([j, report]);
                    return { id: j.id, claimId: j.claimId, ...report };
                });
                const reply = await this.http.request("POST", this.path, { body: { tasks }, signal: this.stopper.signal });
                for (const t of reply.tasks) if (t.state !== "ok" && named.has(t.id)) this.onState(named.get(t.id), t.state);
            }
            if (this.failing) this.logger.warn("heartbeats get through again");
            this.failing = false;
            this.backoff.reset();
            return true;
        } catch (err) {
            for (const [job, report] of taken) job.giveBackReport(report);
            if (this.stopper.signal.aborted) return true;
            if (!this.failing) this.logger.warn(`heartbeat failed, trying again: ${err.message}`);
            this.failing = true;
            return false;
        }
    }
}

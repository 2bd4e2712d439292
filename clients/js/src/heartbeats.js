// heartbeats: the worker's periodic POST /api/v1/workers/:id/heartbeat.
// Each names every task the worker holds with its claimId — running ones,
// and ones whose end is decided but not yet answered for, so that recovery
// does not take a task back while its end waits for the server. An empty
// list is sent too: it records the worker as alive. A failed heartbeat is
// tried again soon (backoff from 50 ms, never later than the interval),
// since a missed one brings the task nearer to being declared crashed.

import { Backoff, sleep } from "./backoff.js";

const MAX_TASKS = 1000;   // the server's bound on one heartbeat's list

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
        let delay = this.intervalMs;
        while (!this.stopper.signal.aborted) {
            await sleep(delay, this.stopper.signal);
            if (this.stopper.signal.aborted) return;
            delay = (await this.beat()) ? this.intervalMs : this.backoff.next();
        }
    }

    /** One heartbeat (in chunks the server accepts); false when it did not get through. */
    async beat() {
        const held = this.held();
        try {
            for (let i = 0; i === 0 || i < held.length; i += MAX_TASKS) {
                // The reply is about the claims named, not about whatever
                // job holds the id by the time it arrives (a retry of the
                // task may have been claimed again meanwhile).
                const named = new Map(held.slice(i, i + MAX_TASKS).map((j) => [j.id, j]));
                const tasks = [...named.values()].map((j) => ({ id: j.id, claimId: j.claimId }));
                const reply = await this.http.request("POST", this.path, { body: { tasks }, signal: this.stopper.signal });
                for (const t of reply.tasks) if (t.state !== "ok" && named.has(t.id)) this.onState(named.get(t.id), t.state);
            }
            if (this.failing) this.logger.warn("heartbeats get through again");
            this.failing = false;
            this.backoff.reset();
            return true;
        } catch (err) {
            if (this.stopper.signal.aborted) return true;
            if (!this.failing) this.logger.warn(`heartbeat failed, trying again: ${err.message}`);
            this.failing = true;
            return false;
        }
    }
}

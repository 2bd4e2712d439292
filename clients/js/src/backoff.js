// backoff: how the worker waits before trying the server again, and a
// sleep that a stop can cut short. The worker never gives up on the server
// (a restart or a failover is a matter of seconds); it only slows down.

/** Delays doubling from `firstMs` to `capMs`, back to `firstMs` after reset(). */
export class Backoff {
    constructor(firstMs = 50, capMs = 1000) {
        this.firstMs = firstMs;
        this.capMs = capMs;
        this.nextMs = firstMs;
    }

    /** The delay to wait now; the one after is twice as long, up to the cap. */
    next() {
        const ms = this.nextMs;
        this.nextMs = Math.min(this.capMs, ms * 2);
        return ms;
    }

    reset() {
        this.nextMs = this.firstMs;
    }
}

/**
 * Resolves after `ms`, or as soon as `signal` aborts (never rejects).
 * @param {number} ms
 * @param {AbortSignal} [signal]
 */
export function sleep(ms, signal) {
    return new Promise((resolve) => {
        if (signal && signal.aborted) return resolve();
        const done = () => {
            clearTimeout(timer);
            if (signal) signal.removeEventListener("abort", done);
            resolve();
        };
        const timer = setTimeout(done, ms);
        if (signal) signal.addEventListener("abort", done, { once: true });
    });
}

/** A promise to wait on until something changes; notify() wakes every waiter. */
export class Wakeup {
    constructor() {
        this.waiters = [];
    }

    wait() {
        return new Promise((resolve) => this.waiters.push(resolve));
    }

    notify() {
        if (this.waiters.length === 0) return;
        const waiters = this.waiters;
        this.waiters = [];
        for (const resolve of waiters) resolve();
    }
}

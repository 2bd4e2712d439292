// wait: waiting for a task or a workflow to end, in slices the server can
// hold (GET ...?wait=MS, at most 60 s each), so one long wait is a few
// requests rather than polling. The server wakes a held read the moment the
// end commits, whichever server it went through.

import { WaitTimeoutError } from "./errors.js";

/** The longest wait the server holds one request for. */
export const MAX_WAIT_SLICE_MS = 60000;

/**
 * Reads `read(waitMs)` until `ended(record)` or the time is up.
 * @param {(waitMs: number) => Promise<any>} read
 * @param {(record: any) => boolean} ended
 * @param {number} timeoutMs Infinity: no limit
 * @param {string} what for the timeout error's message
 */
export async function waitForEnd(read, ended, timeoutMs, what) {
    checkTimeout(timeoutMs);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const left = Math.max(0, deadline - Date.now());
        const record = await read(Math.min(MAX_WAIT_SLICE_MS, left));
        if (ended(record)) return record;
        if (Date.now() >= deadline) throw new WaitTimeoutError(what, timeoutMs, record.status);
    }
}

function checkTimeout(ms) {
    if (ms === Infinity) return;
    if (typeof ms !== "number" || !Number.isInteger(ms)) throw new TypeError(`timeoutMs must be an integer or Infinity, not ${String(ms)}`);
    if (ms < 0) throw new RangeError(`timeoutMs must not be negative, not ${ms}`);
}

/** The server's ?wait= bound, checked before sending. */
export function checkWaitMs(ms) {
    if (ms === undefined) return undefined;
    if (typeof ms !== "number" || !Number.isInteger(ms)) throw new TypeError(`waitMs must be an integer, not ${String(ms)}`);
    if (ms < 0 || ms > MAX_WAIT_SLICE_MS) throw new RangeError(`waitMs must be an integer from 0 to ${MAX_WAIT_SLICE_MS}, not ${ms}`);
    return ms;
}

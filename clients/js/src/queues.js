// queues: the task queues of a server and their pausing (docs/tasks.md,
// "Pausing a queue"). A paused queue accepts sends and hands nothing out;
// what runs goes on. Pausing and resuming are admin calls, idempotent
// (`changed` false when nothing changed), shared by every server and kept
// across restarts.

import { checkSegment } from "./options.js";

/** The task queues of one server: `client.queues`. */
export class TaskQueues {
    /** @param {import("./http.js").Http} http */
    constructor(http) {
        this.http = http;
    }

    /**
     * The queues silt.conf declares, with their load, caps and rate limits,
     * and every paused queue (declared or not).
     * @returns {Promise<{queues: object[], paused: Array<{queue: string, pausedAt: string}>}>}
     */
    async list() {
        return this.http.request("GET", "/api/v1/task-queues");
    }

    /**
     * Pauses a queue: claims take nothing from it until it is resumed.
     * @param {string} queue
     * @returns {Promise<{queue: string, paused: boolean, pausedAt: string|null, changed: boolean}>}
     */
    async pause(queue) {
        return this.http.request("POST", `${path(queue)}/pause`);
    }

    /**
     * Resumes a paused queue: its waiting tasks are claimable at once.
     * @param {string} queue
     * @returns {Promise<{queue: string, paused: boolean, pausedAt: string|null, changed: boolean}>}
     */
    async resume(queue) {
        return this.http.request("POST", `${path(queue)}/resume`);
    }
}

// A name past 255 bytes, or one silt.conf does not declare, is the server's
// to refuse (400 naming queue, 404).
function path(queue) {
    return `/api/v1/task-queues/${encodeURIComponent(checkSegment("queue", queue))}`;
}

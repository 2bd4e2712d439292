// workflows: the workflow calls of the HTTP API (docs/workflows.md). A
// definition is sent as given: the server checks it whole and lists every
// problem in one 400, which arrives as a SiltError whose `problems` holds
// them all.

import { waitForEnd, checkWaitMs } from "./wait.js";
import { checkId, checkLimit, refuseUnknown } from "./options.js";

const WORKFLOW_STATUSES = ["PENDING", "RUNNING", "PAUSED", "COMPLETED", "FAILED", "CANCELLED", "EXPIRED"];
const ENDED = new Set(["COMPLETED", "FAILED", "CANCELLED", "EXPIRED"]);

/** Workflows of one server: `client.workflows`. */
export class Workflows {
    /** @param {import("./http.js").Http} http */
    constructor(http) {
        this.http = http;
    }

    /**
     * Creates and starts a workflow.
     * @param {{name: string, nodes: object[], onError?: "FAIL"|"PAUSE", output?: string}} definition
     * @returns {Promise<{id: string, status: string}>}
     */
    async start(definition) {
        if (definition === null || typeof definition !== "object" || Array.isArray(definition))
            throw new TypeError("a workflow definition must be an object");
        return this.http.request("POST", "/api/v1/workflows", { body: definition });
    }

    /**
     * The workflow and its nodes; with waitMs (at most 60000), held until it has ended or the time is up.
     * @param {string} id
     * @param {{waitMs?: number}} [options]
     */
    async get(id, { waitMs } = {}) {
        const wait = checkWaitMs(waitMs);
        return this.http.request("GET", path(id), { query: { wait }, waitMs: wait ?? 0 });
    }

    /**
     * Waits until the workflow has ended (COMPLETED, FAILED, CANCELLED or
     * EXPIRED; a PAUSED one has not) and answers it.
     * @param {string} id
     * @param {{timeoutMs?: number}} [options] default: no limit
     */
    async wait(id, { timeoutMs = Infinity } = {}) {
        return waitForEnd((waitMs) => this.get(id, { waitMs }), (w) => ENDED.has(w.status), timeoutMs, `workflow ${id}`);
    }

    /**
     * A page of workflows (without their nodes), in creation order.
     * @param {{status?: string, name?: string, limit?: number, cursor?: string}} [filter]
     */
    async list({ status, name, limit, cursor, ...rest } = {}) {
        refuseUnknown(rest, "workflows.list");
        if (status !== undefined && !WORKFLOW_STATUSES.includes(status))
            throw new RangeError(`status must be one of ${WORKFLOW_STATUSES.join(", ")}`);
        checkLimit(limit);
        return this.http.request("GET", "/api/v1/workflows", { query: { status, name, limit, cursor } });
    }

    /** Pauses a running workflow; answers {id, status} (the status afterwards). */
    async pause(id) {
        return this.http.request("POST", `${path(id)}/pause`);
    }

    /** Resumes a paused workflow; answers {id, status}. */
    async resume(id) {
        return this.http.request("POST", `${path(id)}/resume`);
    }

    /** Cancels a workflow; answers {id, status}. */
    async cancel(id) {
        return this.http.request("POST", `${path(id)}/cancel`);
    }
}

function path(id) {
    return `/api/v1/workflows/${encodeURIComponent(checkId(id))}`;
}

// schedules: the schedules made at run time (docs/workflows.md, "Schedules
// at run time"; every field and answer in docs/api.md). The fields are sent
// as given and checked by the server with silt.conf's rules: a bad one is a
// SiltError 400 naming it (`field`), and nothing is written. A schedule of
// silt.conf (origin "config") is listed and read here, but changing,
// pausing, resuming or deleting it is refused (409 naming name).

import { checkSegment } from "./options.js";

const CREATE_FIELDS = ["name", "cron", "task", "queue", "timezone", "args", "catchUp", "priority", "retentionClassKey", "paused"];
const CHANGE_FIELDS = ["cron", "task", "queue", "timezone", "args", "catchUp", "priority", "retentionClassKey"];

/** The schedules of one server's database: `client.schedules`. */
export class Schedules {
    /** @param {import("./http.js").Http} http */
    constructor(http) {
        this.http = http;
    }

    /**
     * Every schedule, by name, of either origin, with where it stands (lastSlot, nextFire, ...).
     * @returns {Promise<object[]>}
     */
    async list() {
        const reply = await this.http.request("GET", "/api/v1/schedules");
        return reply.schedules;
    }

    /**
     * One schedule; a SiltError 404 for a name no schedule has.
     * @param {string} name
     */
    async get(name) {
        return this.http.request("GET", path(name));
    }

    /**
     * Makes a schedule (admin): its first slot is the first after now.
     * @param {{name: string, cron: string, task: string, queue: string, timezone?: string, args?: unknown,
     *          catchUp?: number, priority?: number, retentionClassKey?: string, paused?: boolean}} schedule
     * @returns {Promise<object>} the schedule as get answers it
     */
    async create(schedule) {
        const body = fields(schedule, CREATE_FIELDS, "schedules.create");
        checkSegment("name", body.name);
        return this.http.request("POST", "/api/v1/schedules", { body });
    }

    /**
     * Changes the fields given (admin); the others stay. null sets timezone,
     * args, catchUp, priority and retentionClassKey back to their default. A
     * new cron or timezone counts from the first slot after now.
     * @param {string} name
     * @param {{cron?: string, task?: string, queue?: string, timezone?: string|null, args?: unknown,
     *          catchUp?: number|null, priority?: number|null, retentionClassKey?: string|null}} changes
     * @returns {Promise<object>} the schedule afterwards
     */
    async change(name, changes) {
        const body = fields(changes, CHANGE_FIELDS, "schedules.change");
        return this.http.request("PATCH", path(name), { body });
    }

    /** Pauses a schedule (admin; idempotent): it fires nothing. Answers the schedule. */
    async pause(name) {
        return this.http.request("POST", `${path(name)}/pause`);
    }

    /** Resumes a schedule (admin; idempotent) from its first slot after now. Answers the schedule. */
    async resume(name) {
        return this.http.request("POST", `${path(name)}/resume`);
    }

    /**
     * Deletes a schedule (admin): no slot fires after it; the tasks it sent stay.
     * @returns {Promise<{name: string, deleted: true}>}
     */
    async delete(name) {
        return this.http.request("DELETE", path(name));
    }
}

/** The fields given (undefined ones left out, null kept: it means "the default"). */
function fields(given, known, what) {
    if (given === null || typeof given !== "object" || Array.isArray(given)) throw new TypeError(`${what} takes an object`);
    const out = {};
    for (const [key, value] of Object.entries(given)) {
        if (!known.includes(key)) throw new TypeError(`unknown option "${key}" for ${what} (known: ${known.join(", ")})`);
        if (value !== undefined) out[key] = value;
    }
    return out;
}

function path(name) {
    return `/api/v1/schedules/${encodeURIComponent(checkSegment("name", name))}`;
}

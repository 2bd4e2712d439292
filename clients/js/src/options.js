// options: the options of a task send, checked before anything is sent.
// The bounds are the server's own (src/api/task_input.c), so a value the
// client lets through is one the server accepts, and a mistake is a
// TypeError or RangeError naming the option at the call site instead of a
// round trip. What only the server can know (a declared queue, a retention
// class of its silt.conf, a date such as 30 February) is left to it: its 400
// reaches the caller as a SiltError with its message.

const NAME_MAX_BYTES = 255;
const PRIORITY = [1, 100];
const MAX_DELAY_MS = 366 * 86400000;          // the server's "a year at most"
const MAX_TIMEOUT_MS = 86400000;
const MAX_RETRY_DELAY_MS = 86400000;
const MAX_RETRIES = 20;
const MAX_DELAYS = 20;
const MAX_RETRY_CODES = 16;
const CODE_MAX = 64;
const KEY_MAX_BYTES = 200;
// ISO 8601 as the server reads it: a date, or a date and time with optional
// seconds, fraction (at most 9 digits) and offset.
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** Every option a send takes besides name and args, each with its check. */
const CHECKS = {
    queue: (v) => checkName("queue", v),
    priority: (v) => checkInt("priority", v, PRIORITY[0], PRIORITY[1]),
    delayMs: (v) => checkInt("delayMs", v, 0, MAX_DELAY_MS),
    runAt: (v) => checkTime("runAt", v),
    goodUntil: (v) => checkTime("goodUntil", v),
    timeoutMs: (v) => checkInt("timeoutMs", v, 1, MAX_TIMEOUT_MS),
    retry: (v) => checkRetry(v),
    idempotencyKey: (v) => checkKey(v),
    rateKey: (v) => checkRateKey(v),
    retentionClassKey: (v) => checkClass(v),
    unique: (v) => checkUnique(v),
};

/** The names of the send options, for messages and for the declarations. */
export const SEND_OPTIONS = Object.freeze(Object.keys(CHECKS));

/**
 * Checks send options and answers their wire form (undefined and null
 * left out, except retentionClassKey: null, which means "keep forever";
 * Date values as ISO strings).
 * @param {object} options
 * @param {string} [where] prefix for messages, e.g. "tasks[3]: "
 * @returns {object}
 */
export function checkSendOptions(options, where = "") {
    if (options === undefined || options === null) return {};
    if (typeof options !== "object" || Array.isArray(options))
        throw new TypeError(`${where}options must be an object`);
    const out = {};
    for (const [key, value] of Object.entries(options)) {
        const check = CHECKS[key];
        if (!check) throw new TypeError(`${where}unknown option "${key}" (known: ${SEND_OPTIONS.join(", ")})`);
        if (value === undefined || (value === null && key !== "retentionClassKey")) continue;
        out[key] = prefixed(where, () => check(value));
    }
    if (out.delayMs !== undefined && out.runAt !== undefined)
        throw new TypeError(`${where}delayMs and runAt cannot both be given`);
    return out;
}

/**
 * Checks one whole send (name, args and options) and answers its body.
 * @param {string} name
 * @param {unknown} args
 * @param {object} options must include queue
 * @param {string} [where]
 */
export function sendBody(name, args, options, where = "") {
    prefixed(where, () => checkName("name", name));
    const body = { name, ...checkSendOptions(options, where) };
    if (body.queue === undefined) throw new TypeError(`${where}queue is required`);
    body.args = prefixed(where, () => checkArgs(args));
    return body;
}

/** A task's name or queue: a non-empty string of at most 255 bytes. */
export function checkName(what, v) {
    if (typeof v !== "string" || v.length === 0) throw new TypeError(`${what} must be a non-empty string`);
    if (Buffer.byteLength(v) > NAME_MAX_BYTES) throw new RangeError(`${what} is longer than ${NAME_MAX_BYTES} bytes`);
    return v;
}

function prefixed(where, fn) {
    try {
        return fn();
    } catch (err) {
        if (where && (err instanceof TypeError || err instanceof RangeError)) err.message = where + err.message;
        throw err;
    }
}

/** An integer within [min, max], or a TypeError/RangeError naming `what`. */
export function checkInt(what, v, min, max) {
    if (typeof v !== "number" || !Number.isInteger(v)) throw new TypeError(`${what} must be an integer, not ${describe(v)}`);
    if (v < min || v > max) throw new RangeError(`${what} must be an integer from ${min} to ${max}, not ${v}`);
    return v;
}

/** A Date or an ISO 8601 string, answered as the string the server reads. */
export function checkTime(what, v) {
    if (v instanceof Date) {
        if (Number.isNaN(v.getTime())) throw new RangeError(`${what} is an invalid Date`);
        return v.toISOString();
    }
    if (typeof v !== "string") throw new TypeError(`${what} must be a Date or an ISO 8601 string, not ${describe(v)}`);
    if (!ISO_TIME.test(v)) throw new RangeError(`${what} must be an ISO 8601 timestamp, e.g. 2026-12-01T07:04:30.501Z`);
    return v;
}

function checkKey(v) {
    if (typeof v !== "string" || v.length === 0) throw new TypeError("idempotencyKey must be a non-empty string");
    if (Buffer.byteLength(v) > KEY_MAX_BYTES) throw new RangeError(`idempotencyKey must be at most ${KEY_MAX_BYTES} bytes`);
    return v;
}

/** rateKey: the key the queue's rate_limit_per_key counts separately, 1 to 255 bytes. */
function checkRateKey(v) {
    if (typeof v !== "string" || v.length === 0) throw new TypeError(`rateKey must be a non-empty string, not ${describe(v)}`);
    if (Buffer.byteLength(v) > NAME_MAX_BYTES) throw new RangeError(`rateKey must be at most ${NAME_MAX_BYTES} bytes`);
    return v;
}

/** unique: the server's object as is (docs/tasks.md, "Uniqueness"); its
 * members are known here, their rules the server's (a 400 naming one). */
function checkUnique(v) {
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new TypeError("unique must be an object");
    for (const key of Object.keys(v))
        if (!["key", "byArgs", "forMs", "while", "onConflict"].includes(key))
            throw new TypeError(`unknown option "unique.${key}" (known: key, byArgs, forMs, while, onConflict)`);
    return { ...v };
}

/** A retention class key, or null (kept forever). */
export function checkClass(v) {
    if (v !== null && (typeof v !== "string" || v.length === 0))
        throw new TypeError("retentionClassKey must be a retention class key or null (kept forever)");
    return v;
}

/** args: any JSON value; undefined is sent as null. */
function checkArgs(v) {
    if (v === undefined) return null;
    try {
        if (JSON.stringify(v) === undefined) throw new TypeError(`it is ${describe(v)}`);
    } catch (err) {
        throw new TypeError(`args must be JSON-serialisable: ${err.message}`);
    }
    return v;
}

const RETRY_CHECKS = {
    maxRetries: (v) => checkInt("retry.maxRetries", v, 0, MAX_RETRIES),
    delaysMs: (v) => checkDelays(v),
    backoff: (v) => checkBackoff(v),
    jitter: (v) => checkJitter(v),
    retryOn: (v) => checkRetryOn(v),
};

/** A retry policy as a send takes it (checked; null and undefined members left out). */
export function checkRetry(v) {
    if (v === null || typeof v !== "object" || Array.isArray(v)) throw new TypeError("retry must be an object");
    const out = {};
    for (const [key, value] of Object.entries(v)) {
        const check = RETRY_CHECKS[key];
        if (!check) throw new TypeError(`unknown option "retry.${key}" (known: ${Object.keys(RETRY_CHECKS).join(", ")})`);
        if (value !== undefined && value !== null) out[key] = check(value);
    }
    if (out.delaysMs !== undefined && out.backoff !== undefined)
        throw new TypeError("retry.backoff and retry.delaysMs cannot both be given");
    return out;
}

function checkDelays(v) {
    if (!Array.isArray(v) || v.length === 0 || v.length > MAX_DELAYS)
        throw new TypeError(`retry.delaysMs must be an array of 1 to ${MAX_DELAYS} integers`);
    v.forEach((ms, i) => checkInt(`retry.delaysMs[${i}]`, ms, 0, MAX_RETRY_DELAY_MS));
    return v;
}

function checkBackoff(v) {
    if (typeof v !== "object" || Array.isArray(v)) throw new TypeError("retry.backoff must be an object");
    for (const key of Object.keys(v))
        if (key !== "baseMs" && key !== "capMs") throw new TypeError(`unknown option "retry.backoff.${key}" (known: baseMs, capMs)`);
    if (v.baseMs === undefined) throw new TypeError("retry.backoff.baseMs is required");
    const out = { baseMs: checkInt("retry.backoff.baseMs", v.baseMs, 1, MAX_RETRY_DELAY_MS) };
    if (v.capMs !== undefined) {
        out.capMs = checkInt("retry.backoff.capMs", v.capMs, 1, MAX_RETRY_DELAY_MS);
        if (out.capMs < out.baseMs) throw new RangeError("retry.backoff.capMs must be at least baseMs");
    }
    return out;
}

function checkJitter(v) {
    if (typeof v !== "number" || Number.isNaN(v)) throw new TypeError(`retry.jitter must be a number, not ${describe(v)}`);
    if (v < 0 || v > 1) throw new RangeError(`retry.jitter must be a number from 0 to 1, not ${v}`);
    return v;
}

function checkRetryOn(v) {
    if (!Array.isArray(v) || v.length === 0 || v.length > MAX_RETRY_CODES)
        throw new TypeError(`retry.retryOn must be an array of 1 to ${MAX_RETRY_CODES} error codes`);
    v.forEach((code, i) => {
        if (typeof code !== "string" || code.length === 0) throw new TypeError(`retry.retryOn[${i}] must be a non-empty string`);
        if (Buffer.byteLength(code) > CODE_MAX) throw new RangeError(`retry.retryOn[${i}] must be at most ${CODE_MAX} bytes`);
    });
    return v;
}

function describe(v) {
    if (v === null) return "null";
    if (Array.isArray(v)) return "an array";
    if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
    if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return `${typeof v} ${String(v)}`;
    return `a ${typeof v}`;
}

/** A value of a path segment (a queue's or a schedule's name): a non-empty
 * string; what else it must be is the server's to say (a 400 naming it). */
export function checkSegment(what, v) {
    if (typeof v !== "string" || v.length === 0) throw new TypeError(`${what} must be a non-empty string, not ${describe(v)}`);
    return v;
}

/** A boolean option, when given. */
export function checkBool(what, v) {
    if (v !== undefined && typeof v !== "boolean") throw new TypeError(`${what} must be true or false, not ${describe(v)}`);
    return v;
}

/** A task's or workflow's id, as a path segment will carry it. */
export function checkId(id) {
    if (typeof id !== "string" || id.length === 0) throw new TypeError(`id must be a non-empty string, not ${String(id)}`);
    return id;
}

/** A list's page size, as the server bounds it. */
export function checkLimit(limit) {
    if (limit === undefined) return;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RangeError(`limit must be an integer from 1 to 1000, not ${limit}`);
}

/** Options a call does not take are refused, not ignored: a typo would silently change nothing. */
export function refuseUnknown(rest, what) {
    const keys = Object.keys(rest);
    if (keys.length) throw new TypeError(`unknown option "${keys[0]}" for ${what}`);
}

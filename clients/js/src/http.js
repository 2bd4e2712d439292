// http: one JSON request to the silt server. Everything else in the library
// talks HTTP through here, so the rules live in one place:
//   - a reply with status >= 400 is a SiltError carrying the server's words;
//   - no reply (refused, reset, timed out, not JSON) is a TransportError;
//   - nothing is retried here: whether a retry is safe depends on the call,
//     so the caller decides (the worker does, a Client call does not).
// Node's global fetch keeps connections alive between requests. A CPU
// profile of bench/drain.mjs (50,000 no-op tasks, claims and finishes of up
// to 1,000) found the worker's process idle two thirds of the time, waiting
// on the server, and fetch's own work a few percent of the rest: with
// requests that large, HTTP overhead is not what bounds throughput, so the
// built-in fetch is kept rather than a hand-driven node:http agent.

import { SiltError, TransportError } from "./errors.js";

const DEFAULT_TIMEOUT_MS = 30000;

/** The server's address, its token, and how long a reply may take. */
export class Http {
    /**
     * @param {{url: string, token?: string|null, timeoutMs?: number}} options
     */
    constructor({ url, token = null, timeoutMs = DEFAULT_TIMEOUT_MS }) {
        if (typeof url !== "string" || !/^https?:\/\//.test(url))
            throw new TypeError(`url must be an http:// or https:// address, not ${JSON.stringify(url)}`);
        if (token !== null && token !== undefined && typeof token !== "string")
            throw new TypeError("token must be a string");
        this.base = url.replace(/\/+$/, "");
        this.headers = { "content-type": "application/json", accept: "application/json" };
        if (token) this.headers.authorization = `Bearer ${token}`;
        this.timeoutMs = timeoutMs;
    }

    /**
     * Sends one request and answers the parsed JSON reply (null for an empty one).
     * @param {string} method
     * @param {string} path e.g. "/api/v1/tasks"
     * @param {object} [options]
     * @param {unknown} [options.body] sent as JSON
     * @param {string} [options.rawBody] sent as is (already JSON text)
     * @param {Record<string, unknown>} [options.query] undefined values are left out
     * @param {number} [options.waitMs] the server may hold the request this long: added to the timeout
     * @param {AbortSignal} [options.signal] aborts the request; its reason is thrown
     * @param {() => void} [options.onHeaders] called once the reply's status line and headers are in
     */
    async request(method, path, { body, rawBody, query, waitMs = 0, signal, onHeaders } = {}) {
        const limit = this.timeoutMs + waitMs;
        const abort = linkedAbort(signal, limit);
        try {
            const res = await fetch(this.base + path + queryString(query), {
                method,
                headers: this.headers,
                body: rawBody ?? (body === undefined ? undefined : JSON.stringify(body)),
                signal: abort.signal,
            });
            if (onHeaders) onHeaders();
            const text = await res.text();
            return parseReply(res.status, text);
        } catch (err) {
            throw translate(err, signal, abort, `${method} ${path}`, limit);
        } finally {
            abort.done();
        }
    }
}

function queryString(query) {
    if (!query) return "";
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query))
        if (value !== undefined && value !== null) params.set(key, String(value));
    const text = params.toString();
    return text ? `?${text}` : "";
}

function parseReply(status, text) {
    let json = null;
    if (text.length > 0) {
        try {
            json = JSON.parse(text);
        } catch (err) {
            if (status < 400) throw new TransportError(`the reply (status ${status}) is not JSON`, err);
        }
    }
    if (status >= 400) throw new SiltError(status, json);
    return json;
}

// One AbortController fed by the caller's signal and by a timer: Node 18 has
// no AbortSignal.any, and the timer must be cleared once the reply is in.
function linkedAbort(outer, timeoutMs) {
    const controller = new AbortController();
    const state = { signal: controller.signal, timedOut: false };
    const onOuter = () => controller.abort(outer.reason);
    if (outer) {
        if (outer.aborted) controller.abort(outer.reason);
        else outer.addEventListener("abort", onOuter, { once: true });
    }
    const timer = Number.isFinite(timeoutMs)
        ? setTimeout(() => { state.timedOut = true; controller.abort(); }, timeoutMs)
        : null;
    state.done = () => {
        if (timer) clearTimeout(timer);
        if (outer) outer.removeEventListener("abort", onOuter);
    };
    return state;
}

function translate(err, outer, abort, what, limit) {
    if (err instanceof SiltError || err instanceof TransportError) return err;
    if (outer && outer.aborted) return outer.reason ?? err;
    if (abort.timedOut) return new TransportError(`${what}: no reply within ${limit} ms`, err);
    const code = err && err.cause && err.cause.code;
    const why = code || (err && err.cause && err.cause.message) || (err && err.message) || String(err);
    return new TransportError(`${what}: ${why}`, err);
}

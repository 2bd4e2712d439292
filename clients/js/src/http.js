// http: one JSON request to the silt server. Everything else in the library
// talks HTTP through here, so the rules live in one place:
//   - a reply with status >= 400 is a SiltError carrying the server's words;
//   - no reply (refused, reset, timed out, not JSON) is a TransportError;
//   - nothing is retried here: whether a retry is safe depends on the call,
//     so the caller decides (the worker does, a Client call does not).
// Requests go through node:http (node:https) on connections kept alive in
// one pool per protocol. Node's fetch did the same work at twice the CPU: a
// drain of 50,000 no-op tasks by 8 loops claiming 100 and finishing each
// batch in one request (make bench-peers) cost the client 23 µs a task
// through fetch and 11 through node:http, most of the difference in fetch's
// web streams and request objects.

import http from "node:http";
import https from "node:https";
import { SiltError, TransportError } from "./errors.js";

// A pooled connection idle this long is closed: well inside the server's
// HTTP_IDLE_TIMEOUT_MS (60 s by default), so a request never goes out on a
// connection the server is closing.
const IDLE_MS = 4000;
const transports = {
    "http:": { module: http, agent: new http.Agent({ keepAlive: true, timeout: IDLE_MS }) },
    "https:": { module: https, agent: new https.Agent({ keepAlive: true, timeout: IDLE_MS }) },
};

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
        this.transport = transports[new URL(this.base).protocol];
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
            const payload = rawBody ?? (body === undefined ? undefined : JSON.stringify(body));
            const reply = await this.exchange(method, path + queryString(query), payload, abort.signal, onHeaders);
            return parseReply(reply, `${method} ${path}`);
        } catch (err) {
            throw translate(err, signal, abort, `${method} ${path}`, limit);
        } finally {
            abort.done();
        }
    }

    // One request on a pooled connection, and its whole reply as text.
    exchange(method, target, payload, signal, onHeaders) {
        return new Promise((resolve, reject) => {
            const headers = payload === undefined ? this.headers
                : { ...this.headers, "content-length": Buffer.byteLength(payload) };
            const req = this.transport.module.request(this.base + target,
                { method, headers, agent: this.transport.agent, signal }, (res) => {
                    if (onHeaders) onHeaders();
                    const chunks = [];
                    res.on("data", (chunk) => chunks.push(chunk));
                    res.on("end", () => resolve({ status: res.statusCode, location: res.headers.location,
                                                  text: Buffer.concat(chunks).toString("utf8") }));
                    res.on("error", reject);
                    res.on("close", () => {
                        if (!res.complete) reject(Object.assign(new Error("the connection closed before the reply ended"),
                                                                { code: "ECONNRESET" }));
                    });
                });
            req.on("error", reject);
            req.end(payload);
        });
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

// Redirects are not followed: silt answers none, so one comes from
// something in between (a proxy sending http to https), and following it
// could resend a request to an address nobody chose.
function parseReply({ status, location, text }, what) {
    if (status >= 300 && status < 400)
        throw new TransportError(`${what}: answered ${status}, a redirect to ${location ?? "nowhere"}: requests are not ` +
                                 "redirected; use the address it names");
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
    if (abort.timedOut)
        return new TransportError(`${what}: no reply within ${limit} ms`, Object.assign(new Error("timed out"),
                                                                                         { code: "ETIMEDOUT" }));
    const code = err && (err.code || (err.cause && err.cause.code));
    const why = code || (err && err.cause && err.cause.message) || (err && err.message) || String(err);
    return new TransportError(`${what}: ${why}`, err);
}

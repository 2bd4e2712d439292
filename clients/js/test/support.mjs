// support: a real silt server on a throwaway database for each test file.
//
// Contract (scripts/test.sh calls the suite this way): SILT_BIN is the silt
// binary; SILT_TEST_PGPORT the port of a running PostgreSQL on 127.0.0.1
// (user postgres, no password) holding a migrated, closed database
// silt_template. Each file copies the template into a database of its own,
// starts `silt server` on a free port, waits for GET /health = 200, and
// drops everything when it ends. Nothing here sleeps for a fixed time:
// every wait is for a condition, with a deadline.

import { spawn, execFile } from "node:child_process";
import { once } from "node:events";
import { Http } from "../src/http.js";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after } from "node:test";
import { promisify } from "node:util";

const run = promisify(execFile);

/** How long a condition may take to become true, for waits that have no other bound. */
export const DEADLINE_MS = 20000;

function env(name) {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set (see clients/js/test/run.mjs)`);
    return value;
}

/** Runs one SQL statement on the postgres database of the test cluster. */
export async function psql(sql) {
    await run("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", env("SILT_TEST_PGPORT"),
        "-U", "postgres", "-d", "postgres", "-c", sql]);
}

/**
 * One row of a query on a test database, as text fields (psql -At), for
 * what the HTTP API does not show (a task's stored retry policy).
 */
export async function queryRow(db, sql) {
    const { stdout } = await run("psql", ["-X", "-q", "-At", "-F", "|", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
        "-p", env("SILT_TEST_PGPORT"), "-U", "postgres", "-d", db, "-c", sql]);
    return stdout.trim().split("|");
}

/**
 * A free TCP port on 127.0.0.1, released for a server to take in a moment:
 * random in 10000-14999, below the kernel's ephemeral range (where every
 * outgoing connection on the machine gets its port, and one could take this
 * one before the server binds it) and apart from the ports the integration
 * tests and the Python suite pick (15000-19999, 20000-32000), which run
 * beside this suite.
 */
export async function freePort() {
    for (;;) {
        const port = 10000 + Math.floor(Math.random() * 5000);
        // 10080 is one of the ports fetch refuses to connect to ("bad port")
        if (port !== 10080 && await bindable(port)) return port;
    }
}

async function bindable(port) {
    const server = net.createServer();
    try {
        server.listen(port, "127.0.0.1");
        await once(server, "listening");
    } catch {
        return false;
    }
    server.close();
    await once(server, "close");
    return true;
}

/**
 * Waits until `check()` answers something truthy, trying every `everyMs`;
 * throws naming `what` past the deadline.
 */
export async function waitFor(what, check, { timeoutMs = DEADLINE_MS, everyMs = 20 } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const value = await check();
        if (value) return value;
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
}

/** A silt server process on one database and one port; can be killed and started again. */
export class SiltServer {
    constructor({ db, port, config }) {
        this.db = db;
        this.port = port;
        this.config = config;
        this.url = `http://127.0.0.1:${port}`;
        this.proc = null;
        this.log = "";
    }

    /** Starts the server and resolves once /health answers 200. */
    async start() {
        const env = {
            ...process.env,
            PG_HOST: "127.0.0.1", PG_PORT: process.env.SILT_TEST_PGPORT, PG_USER: "postgres", PG_DB: this.db,
            PORT: String(this.port), HOST: "127.0.0.1", LOG_LEVEL: "warn",
        };
        if (this.config) env.SILT_CONFIG = this.config;
        const proc = spawn(process.env.SILT_BIN, ["server"], { env, stdio: ["ignore", "ignore", "pipe"] });
        this.proc = proc;
        this.exited = once(proc, "exit");
        proc.stderr.on("data", (chunk) => { this.log += chunk; });
        await waitFor(`silt server on port ${this.port} to be healthy`, async () => {
            if (proc.exitCode !== null) throw new Error(`silt server exited (${proc.exitCode}): ${this.log}`);
            return healthy(this.url);
        });
    }

    /** Sends `signal` and waits for the process to exit. */
    async stop(signal = "SIGTERM") {
        if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
        this.proc.kill(signal);
        await this.exited;
    }
}

async function healthy(url) {
    try {
        const res = await fetch(`${url}/health`);
        await res.arrayBuffer();
        return res.status === 200;
    } catch {
        return false;
    }
}

/**
 * A database and a server for the calling test file, torn down after it.
 * @param {string} tag names the database: silt_js_<tag>_<pid>
 * @param {{config?: string}} [options] config: silt.conf text
 */
export async function startSilt(tag, { config } = {}) {
    const db = `silt_js_${tag}_${process.pid}`;
    await psql(`CREATE DATABASE "${db}" TEMPLATE silt_template STRATEGY FILE_COPY`);
    let configFile;
    if (config) {
        configFile = path.join(os.tmpdir(), `${db}.conf`);
        fs.writeFileSync(configFile, config);
    }
    const server = new SiltServer({ db, port: await freePort(), config: configFile });
    after(async () => {
        await server.stop("SIGKILL");
        await psql(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
        if (configFile) fs.rmSync(configFile, { force: true });
    });
    await server.start();
    return server;
}

/** A queue name no other test uses. */
let queues = 0;
export function uniqueQueue(what) {
    return `${what}-${process.pid}-${++queues}`;
}

/** A promise with its resolve, for a test to release a task function when it chooses. */
export function gate() {
    let open;
    const opened = new Promise((resolve) => { open = resolve; });
    return { open, opened };
}

/** Logs nothing: the worker's outage warnings are expected in these tests. */
export const quiet = { info() {}, warn() {}, error() {} };

/** Counts the requests made (every one goes through Http's exchange) while fn runs. */
export async function countRequests(fn) {
    const real = Http.prototype.exchange;
    let n = 0;
    Http.prototype.exchange = function (...args) { n++; return real.apply(this, args); };
    try {
        await fn();
    } finally {
        Http.prototype.exchange = real;
    }
    return n;
}

/** silt.conf of a server whose recovery acts within seconds: a running task without heartbeats for 2 s is crashed. */
export const QUICK_RECOVERY = `[recovery]
claimer_heartbeat_interval_ms = 1000
runner_heartbeat_interval_ms = 1000
claimed_stale_after_ms = 2000
running_stale_after_ms = 2000
check_interval_ms = 1000
`;

/** The first sample of a metric of GET /metrics/prometheus, or null. */
export async function metric(url, name) {
    const res = await fetch(`${url}/metrics/prometheus`);
    const text = await res.text();
    const line = text.split("\n").find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : null;
}

#!/usr/bin/env node
// silt-worker: runs the tasks of a module's App until SIGTERM or SIGINT.
//
//   node bin/silt-worker.mjs ./tasks.mjs [--queue Q ...] [--concurrency N]
//        [--grace-ms MS] [--worker-id ID] [--heartbeat-ms MS]
//
// The module exports an App as `default` or as `app`; without --queue the
// worker serves the queues of the app's tasks. The first SIGTERM or SIGINT
// stops it gracefully (no new claims, running tasks get --grace-ms, ends
// delivered) and it exits 0; a second one exits 1 at once, reporting
// nothing (the server's recovery ends those tasks WORKER_CRASHED).
// Exit status: 0 after an orderly stop, 1 on a failure (the module cannot
// be loaded, the server refuses the registration), 2 on a usage error.

import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import path from "node:path";
import { App } from "../src/index.js";

const USAGE = "usage: silt-worker MODULE [--queue Q ...] [--concurrency N] [--grace-ms MS] [--worker-id ID] [--heartbeat-ms MS]";

function usage(message) {
    console.error(`silt-worker: ${message}\n${USAGE}`);
    process.exit(2);
}

function readArgs() {
    let parsed;
    try {
        parsed = parseArgs({
            allowPositionals: true,
            options: {
                queue: { type: "string", multiple: true },
                concurrency: { type: "string" },
                "grace-ms": { type: "string" },
                "worker-id": { type: "string" },
                "heartbeat-ms": { type: "string" },
                help: { type: "boolean", short: "h" },
            },
        });
    } catch (err) {
        usage(err.message);
    }
    const { values, positionals } = parsed;
    if (values.help) { console.log(USAGE); process.exit(0); }
    if (positionals.length !== 1) usage("name one module");
    return {
        module: positionals[0],
        queues: values.queue,
        concurrency: integer(values.concurrency, "--concurrency"),
        graceMs: integer(values["grace-ms"], "--grace-ms"),
        workerId: values["worker-id"],
        heartbeatMs: integer(values["heartbeat-ms"], "--heartbeat-ms"),
    };
}

function integer(text, flag) {
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text)) usage(`${flag} takes a whole number, not ${JSON.stringify(text)}`);
    return Number(text);
}

async function loadApp(file) {
    const mod = await import(pathToFileURL(path.resolve(file)).href);
    const app = mod.default instanceof App ? mod.default : mod.app;
    if (!(app instanceof App)) throw new Error(`${file} exports no App (as default or as app)`);
    return app;
}

function log(message) {
    console.error(`silt-worker: ${message}`);
}

async function main() {
    const args = readArgs();
    const app = await loadApp(args.module);
    const { module: _, ...options } = args;
    let worker;
    try {
        worker = app.worker({ ...options, logger: { info: log } });
    } catch (err) {
        usage(err.message);   // a bad --concurrency, --grace-ms ...
    }
    let signals = 0;
    const onSignal = (name) => {
        if (++signals > 1) { log(`${name} again: exiting now`); process.exit(1); }
        log(`${name}: stopping (no new claims; running tasks get ${worker.graceMs} ms)`);
        worker.stop();
    };
    process.on("SIGTERM", () => onSignal("SIGTERM"));
    process.on("SIGINT", () => onSignal("SIGINT"));
    await worker.run();
    process.exit(0);
}

main().catch((err) => {
    log(err && err.message ? err.message : String(err));
    process.exit(1);
});

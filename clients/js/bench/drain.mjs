#!/usr/bin/env node
// drain: how fast the in-process worker drains no-op tasks, end to end.
//
//   node clients/js/bench/drain.mjs --url URL --tasks N --concurrency C [--queue Q] [--timeout-s S]
//
// Starts a worker on queue Q (default: a fresh one), sends N no-op tasks in
// batches of 1,000 (two batches in flight) while it runs, and stops the
// clock when the server has answered COMPLETED for all N. Then it checks
// with GET /api/v1/tasks that N tasks of Q are COMPLETED, and prints
//   js-worker: N tasks in T s: R tasks/s (send → COMPLETED)
// Exit status 1 when not all of them completed (in time).

import { parseArgs } from "node:util";
import { App } from "../src/index.js";

const BATCH = 1000;
const SENDS_IN_FLIGHT = 2;

function readArgs() {
    const { values } = parseArgs({
        options: {
            url: { type: "string", default: process.env.SILT_URL ?? "http://localhost:6632" },
            tasks: { type: "string", default: "50000" },
            concurrency: { type: "string", default: "1000" },
            queue: { type: "string", default: `js-drain-${process.pid}-${Date.now()}` },
            "timeout-s": { type: "string", default: "300" },
        },
    });
    return {
        url: values.url,
        tasks: Number(values.tasks),
        concurrency: Number(values.concurrency),
        queue: values.queue,
        timeoutMs: Number(values["timeout-s"]) * 1000,
    };
}

async function sendAll(task, n) {
    let next = 0;
    const sender = async () => {
        while (next < n) {
            const count = Math.min(BATCH, n - next);
            next += count;
            await task.sendMany(new Array(count).fill(null));
        }
    };
    await Promise.all(Array.from({ length: SENDS_IN_FLIGHT }, sender));
}

// Polled, not awaited per task: a 1 ms check costs nothing next to the work.
function completedAll(worker, n, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    return new Promise((resolve) => {
        const timer = setInterval(() => {
            const done = worker.stats.ended.COMPLETED ?? 0;
            if (done >= n || Date.now() > deadline) {
                clearInterval(timer);
                resolve(done >= n);
            }
        }, 1);
    });
}

async function countCompleted(client, queue) {
    let count = 0;
    let cursor;
    do {
        const page = await client.list({ queue, status: "COMPLETED", limit: 1000, cursor });
        count += page.tasks.length;
        cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return count;
}

async function main() {
    const args = readArgs();
    const app = new App({ url: args.url });
    const noop = app.task("noop", { queue: args.queue }, async () => null);
    const worker = app.worker({ queues: [args.queue], concurrency: args.concurrency });
    const running = worker.run();
    const started = process.hrtime.bigint();
    const [, inTime] = await Promise.all([sendAll(noop, args.tasks), completedAll(worker, args.tasks, args.timeoutMs)]);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    await worker.stop();
    await running;
    const completed = await countCompleted(app.client, args.queue);
    const rate = Math.round(args.tasks / seconds);
    console.log(`js-worker: ${args.tasks} tasks in ${seconds.toFixed(2)} s: ${rate} tasks/s (send → COMPLETED)`);
    if (!inTime || completed !== args.tasks) {
        console.error(`drain: ${completed} of ${args.tasks} tasks COMPLETED${inTime ? "" : " (timed out)"}`);
        process.exit(1);
    }
}

main().catch((err) => {
    console.error(`drain: ${err.message}`);
    process.exit(1);
});

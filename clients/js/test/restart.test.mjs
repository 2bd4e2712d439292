// The server goes away while a task runs — killed, or stopped gracefully —
// and comes back on the same port. The function finishes while the server
// is down; its end waits, is delivered once the server is back, and the
// task ends COMPLETED at attempt 1, the function having run once.

import test from "node:test";
import assert from "node:assert/strict";
import { App } from "../src/index.js";
import { startSilt, uniqueQueue, waitFor, gate, quiet, freePort, SiltServer } from "./support.mjs";

const silt = await startSilt("restart");

async function survivesRestart(t, signal) {
    const queue = uniqueQueue(signal);
    const app = new App({ url: silt.url });
    const started = gate();
    const release = gate();
    let runs = 0;
    const task = app.task("survivor", { queue }, async () => {
        runs++;
        started.open();
        await release.opened;
        return { survived: true };
    });
    const worker = app.worker({ queues: [queue], heartbeatMs: 200, logger: quiet });
    const running = worker.run();
    t.after(async () => { await worker.stop(); await running; });

    const h = await task.send();
    await started.opened;
    await silt.stop(signal);
    release.open();                                   // the function ends while the server is down
    await waitFor("the end to be refused by the absent server", () => worker.finisher.failing);
    await silt.start();

    assert.deepEqual(await h.result({ timeoutMs: 20000 }), { survived: true });
    const done = await h.get();
    assert.equal(done.status, "COMPLETED");
    assert.equal(done.attempt, 1);
    assert.equal((await h.attempts()).length, 1);
    assert.equal(runs, 1, "the function ran exactly once");
    // The worker carries on with new work after the restart.
    const again = app.task("after", { queue }, async () => "still here");
    assert.equal(await (await again.send()).result({ timeoutMs: 20000 }), "still here");
}

test("a_task_running_when_the_server_is_killed_completes_once_after_it_restarts", (t) => survivesRestart(t, "SIGKILL"));

test("a_task_running_when_the_server_stops_gracefully_completes_once_after_it_restarts", (t) => survivesRestart(t, "SIGTERM"));

test("a_worker_started_before_its_server_registers_once_the_server_is_up", async (t) => {
    const port = await freePort();
    const later = new SiltServer({ db: silt.db, port });
    const queue = uniqueQueue("early");
    const app = new App({ url: later.url });
    const task = app.task("early", { queue }, async () => "served");
    const warnings = [];
    const worker = app.worker({ queues: [queue], logger: { ...quiet, warn: (m) => warnings.push(m) } });
    const running = worker.run();
    t.after(async () => { await worker.stop(); await running; await later.stop("SIGKILL"); });
    await waitFor("a refused registration", () => warnings.some((w) => /cannot register yet/.test(w)));
    await later.start();
    assert.equal(await (await task.send()).result({ timeoutMs: 20000 }), "served");
});

// Ends that cannot be delivered are kept, resent under their claimId, and
// their tasks heartbeated meanwhile, on a server whose recovery is quick
// (a running task without heartbeats for 2 s is declared crashed).

import test from "node:test";
import assert from "node:assert/strict";
import { App, TransportError, SiltError } from "../src/index.js";
import { startSilt, uniqueQueue, waitFor, quiet, QUICK_RECOVERY } from "./support.mjs";

const silt = await startSilt("delivery", { config: QUICK_RECOVERY });

/**
 * Makes the worker's finish requests fail the way `fail()` says while
 * `blocked`, and records what each heartbeat named.
 */
function intercept(app, fail) {
    const state = { blocked: true, finishTries: 0, finishBodies: [], heartbeats: [] };
    const http = app.client.http;
    const real = http.request.bind(http);
    http.request = async (method, path, options = {}) => {
        if (path.endsWith("/finish")) {
            state.finishBodies.push(options.rawBody);
            if (state.blocked) {
                state.finishTries++;
                throw fail();
            }
        }
        if (path.endsWith("/heartbeat")) state.heartbeats.push({ at: Date.now(), ids: options.body.tasks.map((t) => t.id) });
        return real(method, path, options);
    };
    return state;
}

async function endHeldBack(t, fail) {
    const queue = uniqueQueue("held");
    const app = new App({ url: silt.url });
    let runs = 0;
    const task = app.task("quick", { queue }, async () => { runs++; return { done: true }; });
    const state = intercept(app, fail);
    // Heartbeats every 500 ms against a 2 s threshold: slack for a loaded machine.
    const worker = app.worker({ queues: [queue], heartbeatMs: 500, logger: quiet });
    const running = worker.run();
    t.after(async () => { state.blocked = false; await worker.stop(); await running; });
    const h = await task.send();
    await waitFor("a first refused finish", () => state.finishTries > 0);
    const heldSince = Date.now();
    // Past the stale threshold (2 s) plus a recovery pass (1 s), the heartbeats must have kept naming it.
    const since = () => state.heartbeats.filter((b) => b.at > heldSince);
    await waitFor("3.5 s of heartbeats", () => since().length >= 7, { timeoutMs: 30000 });
    assert.ok(since().every((b) => b.ids.includes(h.id)), "every heartbeat named the task whose end was held back");
    const meanwhile = await h.get();
    assert.equal(meanwhile.status, "RUNNING", "recovery did not take the task back");
    assert.ok(state.finishTries >= 3, `the end was tried ${state.finishTries} times`);
    state.blocked = false;
    assert.deepEqual(await h.result({ timeoutMs: 10000 }), { done: true });
    const task1 = await h.get();
    assert.equal(task1.attempt, 1);
    assert.equal(runs, 1);
    const bodies = new Set(state.finishBodies);
    assert.equal(bodies.size, 1, "every resend carried the same end under the same claimId");
    assert.equal(JSON.parse([...bodies][0]).tasks[0].claimId, (await h.attempts())[0].claimId);
    assert.deepEqual([worker.stats.fenced, worker.stats.ended.COMPLETED], [0, 1]);
}

test("an_end_the_server_cannot_be_reached_for_is_resent_until_answered_and_its_task_heartbeated", (t) =>
    endHeldBack(t, () => new TransportError("injected: connection refused", Object.assign(new Error("refused"), { code: "ECONNREFUSED" }))));

test("an_end_refused_with_503_is_resent_until_answered_and_its_task_heartbeated", (t) =>
    endHeldBack(t, () => new SiltError(503, { error: "server is shutting down" })));

test("an_end_already_written_is_answered_as_fenced_when_resent", async (t) => {
    // The reply of the first delivery is lost after the server wrote it: the
    // resend is refused (its claim is spent) and counts as answered.
    const queue = uniqueQueue("fenced");
    const app = new App({ url: silt.url });
    const task = app.task("once", { queue }, async () => "written");
    const http = app.client.http;
    const real = http.request.bind(http);
    let lostReplies = 0;
    http.request = async (method, path, options) => {
        const reply = await real(method, path, options);
        if (path.endsWith("/finish") && lostReplies++ === 0) throw new TransportError("injected: reply lost");
        return reply;
    };
    const worker = app.worker({ queues: [queue], logger: quiet });
    const running = worker.run();
    t.after(async () => { await worker.stop(); await running; });
    const h = await task.send();
    assert.equal(await h.result({ timeoutMs: 10000 }), "written");
    await waitFor("the resend to be answered", () => worker.stats.fenced === 1);
    assert.equal(worker.finisher.backlog, 0);
    assert.equal((await h.get()).attempt, 1);
});

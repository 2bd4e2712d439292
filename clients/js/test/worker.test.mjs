// The in-process worker against a real server: results, failures, retries,
// cancel, timeout, lost claims, slots and batching.

import test from "node:test";
import assert from "node:assert/strict";
import { App, TaskFailedError } from "../src/index.js";
import { startSilt, uniqueQueue, waitFor, gate, quiet } from "./support.mjs";

const silt = await startSilt("worker");

/** An app on its own queue, and a worker for it that the test stops at its end. */
function setup(t, workerOptions = {}) {
    const queue = uniqueQueue(t.name.slice(0, 20));
    const app = new App({ url: silt.url });
    let worker;
    const running = [];
    t.after(async () => {
        await worker?.stop();
        await Promise.all(running);
    });
    return {
        app, queue,
        start() {
            worker = app.worker({ queues: [queue], heartbeatMs: 100, logger: quiet, ...workerOptions });
            running.push(worker.run());
            return worker;
        },
    };
}

/** Counts the worker's requests by route while it runs. */
function countRoutes(app) {
    const counts = {};
    const http = app.client.http;
    const real = http.request.bind(http);
    http.request = (method, path, options) => {
        const route = path.split("/").pop();
        counts[route] = (counts[route] ?? 0) + 1;
        return real(method, path, options);
    };
    return counts;
}

test("a_worker_runs_tasks_stores_their_results_and_passes_the_context", async (t) => {
    const { app, queue, start } = setup(t);
    const seen = [];
    const add = app.task("add", { queue }, async ({ a, b }, ctx) => {
        seen.push({ taskId: ctx.taskId, attempt: ctx.attempt, retryCount: ctx.retryCount, name: ctx.name, queue: ctx.queue, signal: ctx.signal instanceof AbortSignal });
        return { sum: a + b };
    });
    const nothing = app.task("nothing", { queue }, () => undefined);
    start();
    const h = await add.send({ a: 2, b: 3 });
    assert.deepEqual(await h.result({ timeoutMs: 10000 }), { sum: 5 });
    assert.equal(await (await nothing.send()).result({ timeoutMs: 10000 }), null);
    assert.deepEqual(seen, [{ taskId: h.id, attempt: 1, retryCount: 0, name: "add", queue, signal: true }]);
    const task = await h.get();
    assert.equal(task.status, "COMPLETED");
    assert.equal(task.attempt, 1);
});

test("a_thrown_error_fails_the_task_with_its_code_or_name_and_message", async (t) => {
    const { app, queue, start } = setup(t);
    const coded = app.task("coded", { queue }, async () => { throw Object.assign(new Error("card declined"), { code: "PAYMENT_DECLINED" }); });
    const named = app.task("named", { queue }, () => { throw new TypeError("bad input"); });
    const plain = app.task("plain", { queue }, async () => { throw "just a string"; });
    start();
    const expect = async (task, code, message) => {
        await assert.rejects((await task.send()).result({ timeoutMs: 10000 }), (err) => {
            assert.ok(err instanceof TaskFailedError);
            assert.deepEqual([err.status, err.errorCode, err.errorMessage], ["FAILED", code, message]);
            return true;
        });
    };
    await expect(coded, "PAYMENT_DECLINED", "card declined");
    await expect(named, "TypeError", "bad input");
    await expect(plain, "Error", "just a string");
});

test("the_retry_policy_retries_the_codes_it_names_and_only_those", async (t) => {
    const { app, queue, start } = setup(t);
    const flaky = app.task("flaky", { queue, retry: { maxRetries: 2, delaysMs: [0], retryOn: ["FLAKY"] } }, async (args, { attempt }) => {
        if (attempt === 1) throw Object.assign(new Error("try again"), { code: "FLAKY" });
        return { attempt };
    });
    const broken = app.task("broken", { queue, retry: { maxRetries: 2, retryOn: ["FLAKY"] } }, async () => {
        throw Object.assign(new Error("for good"), { code: "BROKEN" });
    });
    start();
    const h = await flaky.send();
    assert.deepEqual(await h.result({ timeoutMs: 15000 }), { attempt: 2 });
    assert.deepEqual((await h.attempts()).map((a) => [a.attempt, a.outcome, a.errorCode]), [[1, "FAILED", "FLAKY"], [2, "COMPLETED", null]]);
    const b = await broken.send();
    await assert.rejects(b.result({ timeoutMs: 10000 }), (err) => err.errorCode === "BROKEN");
    assert.equal((await b.get()).attempt, 1);
});

test("a_result_that_is_not_json_fails_invalid_result", async (t) => {
    const { app, queue, start } = setup(t);
    const big = app.task("bigint", { queue }, async () => ({ n: 10n }));
    const cyclic = app.task("cycle", { queue }, async () => { const o = {}; o.self = o; return o; });
    const fn = app.task("fn", { queue }, async () => () => 1);
    start();
    for (const task of [big, cyclic, fn]) {
        await assert.rejects((await task.send()).result({ timeoutMs: 10000 }), (err) => {
            assert.equal(err.errorCode, "INVALID_RESULT");
            assert.match(err.errorMessage, /not JSON-serialisable/);
            return true;
        });
    }
});

test("cancelling_a_running_task_aborts_its_signal_and_ends_it_cancelled", async (t) => {
    const { app, queue, start } = setup(t);
    const started = gate();
    let reason;
    const slow = app.task("slow", { queue, retry: { maxRetries: 3 } }, (args, { signal }) => {
        started.open();
        return new Promise((resolve) => signal.addEventListener("abort", () => { reason = signal.reason; resolve("stopped"); }));
    });
    start();
    const h = await slow.send();
    await started.opened;
    assert.deepEqual(await h.cancel(), { id: h.id, status: "RUNNING", cancelled: false, cancelRequested: true });
    await assert.rejects(h.result({ timeoutMs: 10000 }), (err) => err.status === "CANCELLED" && err.errorCode === "CANCELLED");
    assert.equal(reason.code, "CANCELLED");
    assert.equal((await h.get()).attempt, 1, "a cancelled task is not retried");
});

test("progress_goes_early_and_rate_limited_get_shows_it_and_the_last_report_outlives_the_end", async (t) => {
    // heartbeats half a minute apart: only a report brings one forward
    const { app, queue, start } = setup(t, { heartbeatMs: 30000 });
    const counts = countRoutes(app);
    const reported = gate(), release = gate();
    const refused = [];
    const copy = app.task("copy", { queue }, async ({ rows }, ctx) => {
        for (const bad of ["half", NaN, Infinity, true])
            try { ctx.progress(bad); } catch (err) { refused.push(err.name); }
        try { ctx.progress(1, "x".repeat(5000)); } catch (err) { refused.push(err.name); }
        for (let i = 0; i <= 1000; i++) ctx.progress(i / 25, { rows, step: "copy" });   // chatty
        reported.open();
        await release.opened;
        ctx.progress(100);   // the last, just before the end: sent before it
        return rows;
    });
    start();
    const h = await copy.send({ rows: 7 });
    await reported.opened;
    const running = await waitFor("the progress report", async () => {
        const task = await h.get();
        return task.progress === 40 && task;
    }, { timeoutMs: 10000 });
    assert.equal(running.status, "RUNNING");
    assert.deepEqual(running.progressInfo, { rows: 7, step: "copy" });
    assert.ok(running.progressAt);
    assert.deepEqual(refused, ["TypeError", "RangeError", "RangeError", "TypeError", "RangeError"]);
    assert.ok(counts.heartbeat <= 2, `a thousand reports, ${counts.heartbeat} heartbeats`);
    release.open();
    assert.equal(await h.result({ timeoutMs: 10000 }), 7);
    const done = await h.get();
    assert.deepEqual([done.status, done.progress, done.progressInfo], ["COMPLETED", 100, null]);
});

test("timeout_ms_aborts_the_signal_and_fails_task_timeout_at_once_while_the_function_runs_on", async (t) => {
    const { app, queue, start } = setup(t, { concurrency: 1 });
    const release = gate();
    let reason;
    let settled = false;
    const stuck = app.task("stuck", { queue, timeoutMs: 300 }, async (args, { signal }) => {
        signal.addEventListener("abort", () => { reason = signal.reason; });
        await release.opened;          // ignores its signal on purpose
        settled = true;
        return "too late";
    });
    const worker = start();
    const h = await stuck.send();
    await assert.rejects(h.result({ timeoutMs: 10000 }), (err) => err.status === "FAILED" && err.errorCode === "TASK_TIMEOUT");
    assert.equal(reason.code, "TASK_TIMEOUT");
    assert.equal(settled, false, "reported while the function still runs");
    assert.equal(worker.busy, 1, "its slot stays taken until the function settles");
    release.open();
    await waitFor("the slot to be freed", () => worker.busy === 0);
    assert.equal(worker.finisher.backlog, 0, "the late return is not reported");
    assert.equal((await h.get()).result, null);
});

test("a_lost_claim_aborts_the_work_and_reports_nothing", async (t) => {
    const { app, queue, start } = setup(t);
    const started = gate();
    const release = gate();
    let reason;
    const task = app.task("taken", { queue }, async (args, { signal }) => {
        signal.addEventListener("abort", () => { reason = signal.reason; });
        started.open();
        await release.opened;
        return "mine";
    });
    const worker = start();
    const h = await task.send();
    await started.opened;
    // Someone else ends the attempt under its claim: the worker's claim is no longer current.
    const [attempt] = await h.attempts();
    await app.client.http.request("POST", `/api/v1/tasks/${h.id}/complete`, { body: { claimId: attempt.claimId, result: "stolen" } });
    await waitFor("the heartbeat to say lost", () => reason);
    assert.equal(reason.code, "LOST");
    release.open();
    await waitFor("the slot to be freed", () => worker.busy === 0);
    assert.equal(worker.finisher.backlog, 0);
    assert.deepEqual([worker.stats.lost, worker.stats.fenced], [1, 0]);
    assert.equal((await h.get()).result, "stolen");
});

test("a_freed_slot_is_filled_at_once_not_after_the_long_poll", async (t) => {
    const { app, queue, start } = setup(t, { concurrency: 1, claimWaitMs: 60000 });
    const first = gate();
    const startedAt = {};
    const task = app.task("one-at-a-time", { queue }, async (n) => {
        startedAt[n] = Date.now();
        if (n === 1) await first.opened;
        return n;
    });
    start();
    const [h1, h2] = await task.sendMany([1, 2]);
    await waitFor("task 1 to start", () => startedAt[1]);
    assert.equal(startedAt[2], undefined, "concurrency 1: task 2 waits");
    const freedAt = Date.now();
    first.open();
    assert.equal(await h2.result({ timeoutMs: 30000 }), 2);
    assert.equal(await h1.result({ timeoutMs: 1000 }), 1);
    const gap = startedAt[2] - freedAt;
    t.diagnostic(`task 2 started ${gap} ms after the slot was freed`);
    assert.ok(gap < 10000, `task 2 started ${gap} ms after the slot was freed (the long poll is 60 s)`);
});

test("concurrency_bounds_the_tasks_running_at_once", async (t) => {
    const { app, queue, start } = setup(t, { concurrency: 3 });
    let now = 0;
    let most = 0;
    const task = app.task("bounded", { queue }, async () => {
        most = Math.max(most, ++now);
        await new Promise((resolve) => setTimeout(resolve, 20));   // the task's own work
        now--;
    });
    start();
    const handles = await task.sendMany(Array.from({ length: 12 }, (_, i) => i));
    for (const h of handles) await h.result({ timeoutMs: 20000 });
    assert.equal(most, 3);
});

test("ends_are_delivered_in_batches_and_claims_take_many_tasks", async (t) => {
    const { app, queue, start } = setup(t, { concurrency: 500 });
    const counts = countRoutes(app);
    const task = app.task("quick", { queue }, async (n) => n);
    const handles = await task.sendMany(Array.from({ length: 500 }, (_, i) => i));
    const worker = start();
    await waitFor("500 completions", () => (worker.stats.ended.COMPLETED ?? 0) === 500);
    t.diagnostic(`500 tasks: ${counts.claim} claims, ${counts.finish} finish requests`);
    assert.ok(counts.finish <= 25, `${counts.finish} finish requests for 500 ends`);
    assert.ok(counts.claim <= 25, `${counts.claim} claims for 500 tasks`);
    assert.equal(await handles[499].result({ timeoutMs: 1000 }), 499);
});

test("a_task_this_worker_has_no_function_for_fails_unknown_task", async (t) => {
    const { app, queue, start } = setup(t);
    app.task("known", { queue }, async () => 1);
    const other = new App({ url: silt.url }).task("unknown", { queue });
    start();
    await assert.rejects((await other.send()).result({ timeoutMs: 10000 }), (err) => err.errorCode === "UNKNOWN_TASK");
});

test("an_idle_worker_stops_at_once", async (t) => {
    const { app, queue, start } = setup(t);
    app.task("idle", { queue }, async () => 1);
    const worker = start();
    await waitFor("the worker to register and park its claim", () => worker.claim);
    const began = Date.now();
    await worker.stop();
    const ms = Date.now() - began;
    t.diagnostic(`stopped in ${ms} ms`);
    assert.ok(ms < 1000, `stopped in ${ms} ms`);
});

// bin/silt-worker.mjs as a child process: SIGTERM stops an idle worker at
// once, lets a busy one finish within its grace, fails what outlives the
// grace WORKER_CRASHED; a second signal exits at once; a killed worker's
// task is left to the server's recovery.

import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client, TaskFailedError } from "../src/index.js";
import { startSilt, uniqueQueue, waitFor, QUICK_RECOVERY } from "./support.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.join(here, "..", "bin", "silt-worker.mjs");
const FIXTURE = path.join(here, "fixtures", "tasks.mjs");

const silt = await startSilt("cli", { config: QUICK_RECOVERY });
const client = new Client({ url: silt.url });

/** The CLI on a fresh queue; its stderr is kept for waits and failure messages. */
function spawnWorker(t, args = []) {
    const queue = uniqueQueue("cli");
    const proc = spawn(process.execPath, [CLI, FIXTURE, ...args], {
        env: { ...process.env, SILT_URL: silt.url, SILT_TEST_QUEUE: queue },
        stdio: ["ignore", "ignore", "pipe"],
    });
    const w = { proc, queue, stderr: "" };
    proc.stderr.on("data", (chunk) => { w.stderr += chunk; });
    w.exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal, at: Date.now() })));
    w.says = (pattern) => waitFor(`the worker to say ${pattern} (stderr: ${w.stderr})`, () => pattern.test(w.stderr));
    t.after(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL"); });
    return w;
}

function send(w, name, args) {
    return client.send({ name, queue: w.queue, args });
}

test("an_idle_worker_exits_promptly_on_sigterm", async (t) => {
    const w = spawnWorker(t);
    await w.says(/registered as/);
    await waitFor("its claim to be parked in the server", async () => {
        const { workers } = await client.http.request("GET", "/api/v1/workers");
        return workers.some((x) => x.queues.includes(w.queue));
    });
    const sent = Date.now();
    w.proc.kill("SIGTERM");
    const { code, at } = await w.exited;
    const ms = at - sent;
    t.diagnostic(`idle worker exited ${ms} ms after SIGTERM`);
    assert.equal(code, 0, w.stderr);
    // 100 ms is the rule on a quiet machine; the slack is for a loaded one
    // (Node's own exit is slow there). A worker that waited for its parked
    // claim would take the claim's 20 s wait.
    assert.ok(ms < 3000, `exited ${ms} ms after SIGTERM`);
});

test("a_busy_worker_lets_its_task_finish_within_the_grace", async (t) => {
    const w = spawnWorker(t, ["--grace-ms", "20000"]);
    const h = await send(w, "nap", { ms: 700 });
    await w.says(new RegExp(`task started ${h.id}`));
    w.proc.kill("SIGTERM");
    const { code } = await w.exited;
    assert.equal(code, 0, w.stderr);
    const task = await h.get();
    assert.equal(task.status, "COMPLETED", "its end was delivered before the exit");
    assert.deepEqual(task.result, { slept: 700 });
});

test("a_task_still_running_when_the_grace_ends_fails_worker_crashed", async (t) => {
    const w = spawnWorker(t, ["--grace-ms", "300"]);
    const h = await send(w, "forever");
    await w.says(new RegExp(`task started ${h.id}`));
    w.proc.kill("SIGTERM");
    const { code } = await w.exited;
    assert.equal(code, 0, w.stderr);
    const task = await h.get();
    assert.equal(task.status, "FAILED");
    assert.equal(task.errorCode, "WORKER_CRASHED");
});

test("a_second_signal_exits_at_once_reporting_nothing", async (t) => {
    const w = spawnWorker(t, ["--grace-ms", "60000"]);
    const h = await send(w, "forever");
    await w.says(new RegExp(`task started ${h.id}`));
    w.proc.kill("SIGTERM");
    await w.says(/stopping/);
    w.proc.kill("SIGINT");
    const { code } = await w.exited;
    assert.equal(code, 1);
    assert.equal((await h.get()).status, "RUNNING", "nothing reported: left to recovery");
});

test("a_killed_workers_task_is_failed_worker_crashed_by_the_servers_recovery", async (t) => {
    const w = spawnWorker(t);
    const h = await send(w, "forever");
    await w.says(new RegExp(`task started ${h.id}`));
    w.proc.kill("SIGKILL");
    await w.exited;
    await assert.rejects(h.result({ timeoutMs: 30000 }), (err) => {
        assert.ok(err instanceof TaskFailedError);
        assert.equal(err.errorCode, "WORKER_CRASHED");
        return true;
    });
});

test("the_cli_refuses_bad_usage_and_a_module_without_an_app", async (t) => {
    const run = (args) => new Promise((resolve) => {
        const proc = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "ignore", "pipe"] });
        let stderr = "";
        proc.stderr.on("data", (c) => { stderr += c; });
        proc.on("exit", (code) => resolve({ code, stderr }));
    });
    assert.equal((await run([])).code, 2);
    assert.equal((await run([FIXTURE, "--concurrency", "many"])).code, 2);
    const noApp = await run([path.join(here, "fixtures", "no-app.mjs")]);
    assert.equal(noApp.code, 1);
    assert.match(noApp.stderr, /exports no App/);
});

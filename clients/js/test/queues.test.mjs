// Task queues and schedules against a server whose silt.conf declares its
// queues (so an undeclared one is refused), a limit per rateKey and a
// schedule of its own (origin "config"): pausing and resuming a queue,
// a rateKey counted by its queue, and the run-time schedule calls.

import test from "node:test";
import assert from "node:assert/strict";
import { App, Client, SiltError } from "../src/index.js";
import { startSilt, waitFor, quiet, metric, countRequests } from "./support.mjs";

const CONFIG = `[queue.images]

[queue.keyed]
rate_limit_per_key = 1/1h

[schedule.nightly]
cron = 30 3 * * *
task = report
queue = images
`;

const silt = await startSilt("queues", { config: CONFIG });
const client = new Client({ url: silt.url });

/** Runs a worker of app on queues while fn runs, then stops it. */
async function withWorker(app, queues, fn) {
    const worker = app.worker({ queues, concurrency: 4, logger: quiet });
    const running = worker.run();
    try {
        return await fn(worker);
    } finally {
        await worker.stop();
        await running;
    }
}

test("the_queue_list_shows_the_declared_queues_their_limits_and_none_paused", async () => {
    const { queues, paused } = await client.queues.list();
    assert.deepEqual(queues.map((q) => q.queue).sort(), ["images", "keyed"]);
    const keyed = queues.find((q) => q.queue === "keyed");
    assert.deepEqual(keyed.rateLimitPerKey, { limit: 1, periodMs: 3600000 });
    assert.equal(keyed.rateLimit, null);
    assert.equal(keyed.paused, false);
    assert.deepEqual(paused, []);
});

test("a_paused_queue_keeps_its_tasks_until_it_is_resumed", async () => {
    const paused = await client.queues.pause("images");
    assert.equal(paused.queue, "images");
    assert.equal(paused.paused, true);
    assert.equal(paused.changed, true);
    assert.ok(!Number.isNaN(Date.parse(paused.pausedAt)), paused.pausedAt);
    const again = await client.queues.pause("images");
    assert.deepEqual(again, { ...paused, changed: false }, "pausing a paused queue changes nothing");
    const listed = await client.queues.list();
    assert.deepEqual(listed.paused, [{ queue: "images", pausedAt: paused.pausedAt }]);
    assert.equal(listed.queues.find((q) => q.queue === "images").paused, true);

    const app = new App({ client });
    const thumb = app.task("thumb", { queue: "images" }, async ({ n }) => n * 2);
    const h = await thumb.send({ n: 21 });
    const parkedBefore = await metric(silt.url, "silt_task_claims_parked");
    await withWorker(app, ["images"], async () => {
        // The worker's claim, made after the send, took nothing and waits in the server.
        await waitFor("the worker's claim to park", async () => (await metric(silt.url, "silt_task_claims_parked")) > parkedBefore);
        assert.equal((await h.get()).status, "PENDING");
        const resumed = await client.queues.resume("images");
        assert.deepEqual(resumed, { queue: "images", paused: false, pausedAt: null, changed: true });
        assert.equal(await h.result({ timeoutMs: 20000 }), 42);
    });
    assert.equal((await client.queues.resume("images")).changed, false);
    assert.deepEqual((await client.queues.list()).paused, []);
});

test("pausing_a_queue_the_server_does_not_know_is_its_refusal", async () => {
    await assert.rejects(client.queues.pause("nope"), (err) => err instanceof SiltError && err.status === 404);
    await assert.rejects(client.queues.resume("q".repeat(256)), (err) => {
        assert.ok(err instanceof SiltError);
        assert.equal(err.status, 400);
        assert.equal(err.field, "queue");
        return true;
    });
    const requests = await countRequests(async () => {
        await assert.rejects(client.queues.pause(""), TypeError);
        await assert.rejects(client.queues.resume(undefined), TypeError);
    });
    assert.equal(requests, 0);
});

test("a_rate_key_is_counted_by_its_queues_limit_per_key", async () => {
    const app = new App({ client });
    const hook = app.task("hook", { queue: "keyed" }, async (args) => args);
    // One request: all three exist before any claim looks.
    const [a1, a2, b1] = await client.sendBatch([
        { name: "hook", queue: "keyed", args: "a1", rateKey: "a" },
        { name: "hook", queue: "keyed", args: "a2", rateKey: "a" },
        { name: "hook", queue: "keyed", args: "b1", rateKey: "b" },
    ]);
    assert.ok(hook);
    await withWorker(app, ["keyed"], async () => {
        assert.equal(await a1.result({ timeoutMs: 20000 }), "a1");
        assert.equal(await b1.result({ timeoutMs: 20000 }), "b1");
        // a's window (one claim an hour) is full: its second task waits.
        const a2now = await a2.get();
        assert.deepEqual([a2now.status, a2now.rateKey], ["PENDING", "a"]);
    });
    const keyed = (await client.queues.list()).queues.find((q) => q.queue === "keyed");
    assert.equal(keyed.due, true);
    await a2.cancel();
});

test("schedules_are_created_read_changed_paused_resumed_and_deleted", async () => {
    const listed = await client.schedules.list();
    assert.deepEqual(listed.map((s) => [s.name, s.origin]), [["nightly", "config"]]);

    const made = await client.schedules.create({ name: "hourly-sync", cron: "0 * * * *", task: "sync", queue: "images",
        args: { full: false }, catchUp: 2, priority: 5, timezone: "Europe/Paris" });
    assert.deepEqual([made.name, made.origin, made.paused, made.cron, made.task, made.queue, made.catchUp, made.priority, made.timezone],
        ["hourly-sync", "api", false, "0 * * * *", "sync", "images", 2, 5, "Europe/Paris"]);
    assert.deepEqual(made.args, { full: false });
    assert.ok(Date.parse(made.nextFire) > Date.now(), made.nextFire);
    assert.deepEqual(await client.schedules.get("hourly-sync"), made);
    assert.deepEqual((await client.schedules.list()).map((s) => s.name), ["hourly-sync", "nightly"]);

    const changed = await client.schedules.change("hourly-sync", { cron: "*/30 * * * *", priority: null, args: undefined });
    assert.deepEqual([changed.cron, changed.priority, changed.catchUp, changed.timezone], ["*/30 * * * *", null, 2, "Europe/Paris"]);
    assert.deepEqual(changed.args, { full: false }, "a field left out stays");

    const paused = await client.schedules.pause("hourly-sync");
    assert.deepEqual([paused.paused, paused.nextFire], [true, null]);
    assert.ok(paused.pausedAt);
    assert.equal((await client.schedules.pause("hourly-sync")).pausedAt, paused.pausedAt, "idempotent");
    assert.equal((await client.schedules.get("hourly-sync")).paused, true);
    const resumed = await client.schedules.resume("hourly-sync");
    assert.deepEqual([resumed.paused, resumed.pausedAt], [false, null]);
    assert.ok(resumed.nextFire);

    assert.deepEqual(await client.schedules.delete("hourly-sync"), { name: "hourly-sync", deleted: true });
    await assert.rejects(client.schedules.get("hourly-sync"), (err) => err instanceof SiltError && err.status === 404);
    assert.deepEqual((await client.schedules.list()).map((s) => s.name), ["nightly"]);
});

test("schedule_refusals_are_the_servers_naming_the_field", async () => {
    const base = { name: "bad-one", cron: "0 * * * *", task: "sync", queue: "images" };
    const refused = async (call, status, field) => assert.rejects(call, (err) => {
        assert.ok(err instanceof SiltError, String(err));
        assert.equal(err.status, status, err.message);
        assert.equal(err.field, field, err.message);
        return true;
    });
    await refused(client.schedules.create({ ...base, cron: "61 * * * *" }), 400, "cron");
    await refused(client.schedules.create({ ...base, queue: "undeclared" }), 400, "queue");
    await refused(client.schedules.create({ ...base, name: "no spaces" }), 400, "name");
    await refused(client.schedules.create({ ...base, name: "nightly" }), 409, "name");
    await client.schedules.create({ ...base, paused: true });
    assert.equal((await client.schedules.get("bad-one")).paused, true, "created paused");
    await refused(client.schedules.create(base), 409, "name");
    await refused(client.schedules.change("bad-one", { timezone: "Mars/Olympus" }), 400, "timezone");
    await refused(client.schedules.change("bad-one", { catchUp: 5000 }), 400, "catchUp");
    await refused(client.schedules.change("nightly", { cron: "0 4 * * *" }), 409, "name");
    await refused(client.schedules.pause("nightly"), 409, "name");
    await refused(client.schedules.resume("nightly"), 409, "name");
    await refused(client.schedules.delete("nightly"), 409, "name");
    await assert.rejects(client.schedules.change("bad-one", {}), (err) => err instanceof SiltError && err.status === 400);
    await assert.rejects(client.schedules.pause("no-such"), (err) => err instanceof SiltError && err.status === 404);
    assert.equal((await client.schedules.get("bad-one")).timezone, "UTC", "nothing of a refused change was written");
    const requests = await countRequests(async () => {
        await assert.rejects(client.schedules.create({ ...base, catch_up: 1 }), (err) => err instanceof TypeError && /catch_up/.test(err.message));
        await assert.rejects(client.schedules.change("bad-one", { name: "x" }), TypeError);
        await assert.rejects(client.schedules.get(""), TypeError);
    });
    assert.equal(requests, 0);
    await client.schedules.delete("bad-one");
});

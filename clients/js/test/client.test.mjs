// The Client against a real server: every call and every send option
// reaches the server and reads back; mistakes are refused before anything
// is sent; the server's refusals arrive with its words.

import test from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { once } from "node:events";
import { App, Client, SiltError, TransportError, TaskFailedError, WaitTimeoutError } from "../src/index.js";
import { startSilt, uniqueQueue, freePort, queryRow, countRequests } from "./support.mjs";

const silt = await startSilt("client");
const client = new Client({ url: silt.url });

test("send_then_get_reads_back_every_send_option", async () => {
    const queue = uniqueQueue("options");
    const runAt = new Date(Date.now() + 3600000);
    const goodUntil = new Date(Date.now() + 7200000);
    const h = await client.send({
        name: "resize", queue, args: { id: 7, tags: ["a"] }, priority: 7, runAt, goodUntil, timeoutMs: 5000,
        retry: { maxRetries: 3, backoff: { baseMs: 1000, capMs: 60000 }, jitter: 0.2, retryOn: ["WORKER_CRASHED"] },
        idempotencyKey: `k-${queue}`, retentionClassKey: "forever",
    });
    assert.equal(h.created, true);
    const t = await h.get();
    assert.equal(t.id, h.id);
    assert.equal(t.name, "resize");
    assert.equal(t.queue, queue);
    assert.equal(t.status, "PENDING");
    assert.deepEqual(t.args, { id: 7, tags: ["a"] });
    assert.equal(t.priority, 7);
    assert.equal(Date.parse(t.runAt), runAt.getTime());
    assert.equal(Date.parse(t.goodUntil), goodUntil.getTime());
    assert.equal(t.timeoutMs, 5000);
    assert.equal(t.maxRetries, 3);
    assert.equal(t.idempotencyKey, `k-${queue}`);
    assert.equal(t.retentionClassKey, "forever");
    // The parts of the retry policy the API does not show, as stored.
    const stored = await queryRow(silt.db, `SELECT retry_base_ms, retry_cap_ms, retry_jitter, retry_on FROM horsies_tasks WHERE id = '${h.id}'`);
    assert.deepEqual(stored, ["1000", "60000", "0.2", "{WORKER_CRASHED}"]);
});

test("delay_ms_and_fixed_retry_delays_reach_the_server", async () => {
    const queue = uniqueQueue("delay");
    const before = Date.now();
    const h = await client.send({ name: "later", queue, delayMs: 600000, retry: { maxRetries: 2, delaysMs: [10, 20] } });
    const t = await h.get();
    assert.ok(Date.parse(t.runAt) >= before + 590000, `runAt ${t.runAt} is about ten minutes away`);
    assert.equal(t.maxRetries, 2);
    assert.deepEqual(await queryRow(silt.db, `SELECT retry_delays_ms FROM horsies_tasks WHERE id = '${h.id}'`), ["{10,20}"]);
});

test("an_idempotency_key_returns_the_first_task", async () => {
    const queue = uniqueQueue("idem");
    const first = await client.send({ name: "once", queue, idempotencyKey: "the-key" });
    const again = await client.send({ name: "once", queue, idempotencyKey: "the-key", args: { other: true } });
    assert.equal(again.id, first.id);
    assert.equal(first.created, true);
    assert.equal(again.created, false);
    assert.equal((await client.list({ queue })).tasks.length, 1);
});

test("a_unique_send_passes_through_and_answers_the_holder", async () => {
    const queue = uniqueQueue("uniq");
    const unique = { key: "k", onConflict: "replace" };
    const first = await client.send({ name: `u-${queue}`, queue, args: 1, unique });
    const again = await client.send({ name: `u-${queue}`, queue, args: 2, unique });
    assert.equal(again.id, first.id);
    assert.equal(again.created, false);
    assert.deepEqual((await again.get()).args, 2);
    await assert.rejects(client.send({ name: "u", queue, unique: { kye: "k" } }), /unknown option "unique.kye"/);
});

test("with_options_sends_the_retention_class_and_overrides_and_keeps_the_defaults", async () => {
    const queue = uniqueQueue("with");
    const app = new App({ client });
    const task = app.task("mail", { queue, priority: 50, retry: { maxRetries: 1 } });
    const h = await task.withOptions({ retentionClassKey: "forever", priority: 10, idempotencyKey: "w1" }).send({ to: "c@d" });
    const t = await h.get();
    assert.equal(t.retentionClassKey, "forever");
    assert.equal(t.priority, 10);
    assert.equal(t.maxRetries, 1);
    assert.equal(t.idempotencyKey, "w1");
    assert.deepEqual(t.args, { to: "c@d" });
    const plain = await (await task.send({ to: "a@b" })).get();
    assert.equal(plain.retentionClassKey, "standard_30d");
    assert.equal(plain.priority, 50);
});

test("a_batch_is_sent_in_one_request_and_answers_handles_in_order", async () => {
    const queue = uniqueQueue("batch");
    let handles;
    const requests = await countRequests(async () => {
        handles = await client.sendBatch([0, 1, 2].map((i) => ({ name: "n", queue, args: i, priority: 10 + i })));
    });
    assert.equal(requests, 1);
    for (const [i, h] of handles.entries()) assert.equal((await h.get()).args, i);
    const app = new App({ client });
    const many = await app.task("m", { queue }).sendMany([{ a: 1 }, { a: 2 }]);
    assert.equal(many.length, 2);
    assert.equal((await client.list({ queue })).tasks.length, 5);
});

test("list_filters_by_queue_and_status_and_pages_with_the_cursor", async () => {
    const queue = uniqueQueue("list");
    const sent = await client.sendBatch([1, 2, 3].map((i) => ({ name: "l", queue, args: i })));
    await client.cancel(sent[0].id);
    const page1 = await client.list({ queue, limit: 2 });
    assert.deepEqual(page1.tasks.map((t) => t.id), [sent[0].id, sent[1].id]);
    assert.equal(page1.nextCursor, sent[1].id);
    const page2 = await client.list({ queue, limit: 2, cursor: page1.nextCursor });
    assert.deepEqual(page2.tasks.map((t) => t.id), [sent[2].id]);
    const cancelled = await client.list({ queue, status: "CANCELLED" });
    assert.deepEqual(cancelled.tasks.map((t) => t.id), [sent[0].id]);
});

test("cancel_of_a_pending_task_cancels_it_at_once_and_result_throws_task_failed", async () => {
    const queue = uniqueQueue("cancel");
    const h = await client.send({ name: "c", queue });
    const reply = await h.cancel();
    assert.deepEqual(reply, { id: h.id, status: "CANCELLED", cancelled: true, cancelRequested: false });
    await assert.rejects(h.result({ timeoutMs: 5000 }), (err) => {
        assert.ok(err instanceof TaskFailedError);
        assert.equal(err.status, "CANCELLED");
        return true;
    });
    assert.deepEqual(await h.attempts(), []);
});

test("result_times_out_with_a_wait_timeout_error_and_get_waits_on_the_server", async () => {
    const queue = uniqueQueue("wait");
    const h = await client.send({ name: "w", queue });
    const began = Date.now();
    await assert.rejects(h.result({ timeoutMs: 300 }), (err) => err instanceof WaitTimeoutError && err.status === "PENDING");
    assert.ok(Date.now() - began >= 290, "the wait lasted its timeout");
    const held = Date.now();
    const t = await client.get(h.id, { waitMs: 200 });
    assert.equal(t.status, "PENDING");
    assert.ok(Date.now() - held >= 190, "the server held the read");
});

test("bad_options_throw_naming_the_option_and_send_nothing", async () => {
    const queue = uniqueQueue("bad");
    const app = new App({ client });
    const task = app.task("t", { queue });
    const cases = [
        [() => task.withOptions({ priority: 0 }), RangeError, /priority/],
        [() => task.withOptions({ priority: 101 }), RangeError, /priority/],
        [() => task.withOptions({ priority: 1.5 }), TypeError, /priority/],
        [() => task.withOptions({ delayMs: -1 }), RangeError, /delayMs/],
        [() => task.withOptions({ delayMs: 367 * 86400000 }), RangeError, /delayMs/],
        [() => task.withOptions({ delayMs: 5, runAt: new Date() }), TypeError, /delayMs and runAt/],
        [() => task.withOptions({ runAt: "yesterday" }), RangeError, /runAt/],
        [() => task.withOptions({ timeoutMs: 0 }), RangeError, /timeoutMs/],
        [() => task.withOptions({ prio: 1 }), TypeError, /unknown option "prio"/],
        [() => task.withOptions({ retry: { max_retries: 1 } }), TypeError, /retry\.max_retries/],
        [() => task.withOptions({ retry: { maxRetries: 21 } }), RangeError, /retry\.maxRetries/],
        [() => task.withOptions({ retry: { delaysMs: [1], backoff: { baseMs: 1 } } }), TypeError, /retry\.backoff/],
        [() => task.withOptions({ retry: { backoff: { baseMs: 10, capMs: 5 } } }), RangeError, /capMs/],
        [() => task.withOptions({ retry: { jitter: 2 } }), RangeError, /jitter/],
        [() => task.withOptions({ retry: { retryOn: [] } }), TypeError, /retryOn/],
        [() => task.withOptions({ idempotencyKey: "" }), TypeError, /idempotencyKey/],
        [() => task.withOptions({ retentionClassKey: 5 }), TypeError, /retentionClassKey/],
        [() => app.task("noqueue", {}), TypeError, /queue is required/],
    ];
    for (const [fn, type, pattern] of cases) assert.throws(fn, (err) => err instanceof type && pattern.test(err.message), String(fn));
    const requests = await countRequests(async () => {
        await assert.rejects(task.send(10n), (err) => err instanceof TypeError && /args/.test(err.message));
        await assert.rejects(client.send({ name: "t", queue, priority: 500 }), RangeError);
        await assert.rejects(client.send({ name: "", queue }), (err) => err instanceof TypeError && /name/.test(err.message));
        await assert.rejects(client.sendBatch([{ name: "t", queue }, { name: "t", queue, delayMs: -5 }]),
            (err) => err instanceof RangeError && /^tasks\[1\]: delayMs/.test(err.message));
        await assert.rejects(client.sendBatch([]), RangeError);
        await assert.rejects(client.get("x", { waitMs: 60001 }), RangeError);
        await assert.rejects(client.list({ status: "DONE" }), RangeError);
    });
    assert.equal(requests, 0, "nothing was sent");
    assert.equal((await client.list({ queue })).tasks.length, 0);
});

test("a_server_400_reaches_the_caller_with_its_message_and_field", async () => {
    const queue = uniqueQueue("refused");
    const app = new App({ client });
    const task = app.task("t", { queue });
    await assert.rejects(task.withOptions({ retentionClassKey: "no_such_class" }).send({}), (err) => {
        assert.ok(err instanceof SiltError);
        assert.equal(err.status, 400);
        assert.equal(err.field, "retentionClassKey");
        assert.match(err.message, /unknown retention class no_such_class/);
        return true;
    });
    await assert.rejects(task.withOptions({ runAt: "2026-02-30" }).send({}), (err) => err.status === 400 && err.field === "runAt");
    await assert.rejects(client.get("not-a-uuid"), (err) => err instanceof SiltError && err.status === 400 && err.field === "id");
    await assert.rejects(client.get("01a23484-0000-7000-8000-000000000000"), (err) => err.status === 404);
    assert.equal((await client.list({ queue })).tasks.length, 0);
});

test("an_unreachable_server_is_a_transport_error", async () => {
    const nobody = new Client({ url: `http://127.0.0.1:${await freePort()}` });
    await assert.rejects(nobody.send({ name: "t", queue: "q" }), (err) => err instanceof TransportError && err.code === "ECONNREFUSED");
});

test("the_token_is_sent_as_a_bearer_authorization", async () => {
    const seen = [];
    const server = http.createServer((req, res) => {
        seen.push(req.headers.authorization);
        res.writeHead(401, { "content-type": "application/json" });
        res.end('{"error":"token expired"}');
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
        const c = new Client({ url: `http://127.0.0.1:${server.address().port}`, token: "abc.def" });
        await assert.rejects(c.list(), (err) => err instanceof SiltError && err.status === 401 && err.message === "token expired");
        assert.deepEqual(seen, ["Bearer abc.def"]);
    } finally {
        server.close();
    }
});

test("a_redirect_is_a_transport_error_naming_it_and_no_reply_in_time_is_etimedout", async () => {
    let posts = 0;
    const server = http.createServer((req, res) => {
        if (req.url.startsWith("/slow")) return;   // never answers
        posts++;
        res.writeHead(308, { location: "https://elsewhere.example/api/v1/tasks" });
        res.end();
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
        const url = `http://127.0.0.1:${server.address().port}`;
        await assert.rejects(new Client({ url }).send({ name: "t", queue: "q" }),
            (err) => err instanceof TransportError && /answered 308, a redirect to https:\/\/elsewhere/.test(err.message));
        assert.equal(posts, 1);   // not followed
        const slow = new Client({ url: `${url}/slow`, timeoutMs: 200 });
        await assert.rejects(slow.list(), (err) => err instanceof TransportError && err.code === "ETIMEDOUT");
    } finally {
        server.closeAllConnections();
        server.close();
    }
});

test("workflows_start_get_list_pause_resume_and_cancel", async () => {
    const queue = uniqueQueue("wf");
    const name = `wf-${queue}`;
    const wf = await client.workflows.start({
        name, output: "b",
        nodes: [{ id: "a", task: "step", queue, args: { n: 1 } }, { id: "b", task: "step", queue, waitsFor: ["a"] }],
    });
    assert.equal(wf.status, "RUNNING");
    const got = await client.workflows.get(wf.id);
    assert.deepEqual(got.nodes.map((n) => [n.id, n.status]), [["a", "ENQUEUED"], ["b", "PENDING"]]);
    const listed = await client.workflows.list({ name });
    assert.deepEqual(listed.workflows.map((w) => w.id), [wf.id]);
    assert.equal((await client.workflows.pause(wf.id)).status, "PAUSED");
    assert.equal((await client.workflows.list({ name, status: "PAUSED" })).workflows.length, 1);
    assert.equal((await client.workflows.resume(wf.id)).status, "RUNNING");
    assert.equal((await client.workflows.cancel(wf.id)).status, "CANCELLED");
    assert.equal((await client.workflows.wait(wf.id, { timeoutMs: 5000 })).status, "CANCELLED");
});

test("a_bad_workflow_is_refused_with_every_problem", async () => {
    const queue = uniqueQueue("wfbad");
    await assert.rejects(client.workflows.start({
        name: "bad", output: "zz",
        nodes: [{ id: "a", task: "t", queue, waitsFor: ["b"] }, { id: "b", task: "t", queue, waitsFor: ["a"] }],
    }), (err) => {
        assert.ok(err instanceof SiltError);
        assert.equal(err.status, 400);
        assert.ok(err.problems.length >= 2, JSON.stringify(err.problems));
        return true;
    });
});

test("a_rate_key_is_sent_kept_and_listed_and_a_bad_one_is_refused_before_sending", async () => {
    const queue = uniqueQueue("ratekey");
    const h = await client.send({ name: "hook", queue, rateKey: "customer-7" });
    assert.equal((await h.get()).rateKey, "customer-7");
    const plain = await client.send({ name: "hook", queue });
    assert.equal((await plain.get()).rateKey, null);
    const app = new App({ client });
    const batch = await app.task("hook", { queue, rateKey: "customer-8" }).sendMany([1]);
    assert.deepEqual((await client.list({ queue })).tasks.map((t) => t.rateKey), ["customer-7", null, "customer-8"]);
    assert.equal(batch.length, 1);
    const requests = await countRequests(async () => {
        await assert.rejects(client.send({ name: "hook", queue, rateKey: "" }), (err) => err instanceof TypeError && /rateKey/.test(err.message));
        await assert.rejects(client.send({ name: "hook", queue, rateKey: "k".repeat(256) }), (err) => err instanceof RangeError && /rateKey/.test(err.message));
        await assert.rejects(client.send({ name: "hook", queue, rateKey: 7 }), (err) => err instanceof TypeError && /rateKey/.test(err.message));
    });
    assert.equal(requests, 0, "nothing was sent");
});

test("unique_debounce_reports_changed_on_the_handle_and_a_bad_unique_is_the_servers_400_naming_the_member", async () => {
    const queue = uniqueQueue("uniqdeb");
    const name = `d-${queue}`;
    const unique = { key: "site-3", onConflict: "debounce" };
    const first = await client.send({ name, queue, delayMs: 60000, unique });
    assert.deepEqual([first.created, first.changed], [true, false]);
    const before = Date.parse((await first.get()).runAt);
    const again = await client.send({ name, queue, delayMs: 120000, unique });
    assert.deepEqual([again.id, again.created, again.changed], [first.id, false, true]);
    assert.ok(Date.parse((await again.get()).runAt) > before + 50000, "debounce moved runAt");
    const timed = await client.send({ name, queue, unique: { byArgs: true, forMs: 60000 }, args: { a: 1 } });
    const timedAgain = await client.send({ name, queue, unique: { byArgs: true, forMs: 60000 }, args: { a: 1 } });
    assert.deepEqual([timedAgain.id, timedAgain.created, timedAgain.changed], [timed.id, false, false]);
    const plain = await client.send({ name, queue });
    assert.equal(plain.changed, undefined);
    await assert.rejects(client.send({ name, queue, unique: { byArgs: true, onConflict: "replace" } }), (err) => {
        assert.ok(err instanceof SiltError);
        assert.equal(err.status, 400);
        assert.equal(err.field, "unique.onConflict");
        return true;
    });
    await assert.rejects(client.send({ name, queue, unique: { key: "k", while: "forever" } }),
        (err) => err instanceof SiltError && err.status === 400 && err.field === "unique.while");
    await assert.rejects(client.send({ name, queue, unique: { key: "k" }, idempotencyKey: "i" }),
        (err) => err instanceof SiltError && err.status === 400 && err.field === "unique");
    assert.equal((await client.list({ queue })).tasks.length, 3);
});

test("rerun_sends_an_ended_task_again_once_with_overrides_and_rerun_of", async () => {
    const queue = uniqueQueue("rerun");
    const h = await client.send({ name: "r", queue, args: { n: 1 }, rateKey: "rk", priority: 50, retry: { maxRetries: 2 } });
    await assert.rejects(client.rerun(h.id), (err) => err instanceof SiltError && err.status === 409);
    await h.cancel();
    const rerun = await client.rerun(h.id, { priority: 10 });
    assert.equal(rerun.rerunOf, h.id);
    assert.equal(rerun.created, true);
    assert.notEqual(rerun.id, h.id);
    const t = await client.get(rerun.id);
    assert.deepEqual([t.rerunOf, t.status, t.priority, t.maxRetries, t.rateKey, t.name, t.queue, t.attempt],
        [h.id, "PENDING", 10, 2, "rk", "r", queue, 0]);
    assert.deepEqual(t.args, { n: 1 });
    assert.equal((await client.get(h.id)).rerunOf, null);
    const again = await client.rerun(h.id, { priority: 99 });
    assert.deepEqual(again, { id: rerun.id, rerunOf: h.id, created: false, workflowId: null, workflowStatus: null });
    const viaHandle = await h.rerun();
    assert.deepEqual([viaHandle.id, viaHandle.created], [rerun.id, false]);
    // overrides of name, queue, args (null included) and retry, on a rerun of the rerun
    await client.cancel(rerun.id);
    const other = uniqueQueue("rerun-to");
    const moved = await client.handle(rerun.id).rerun({ name: "r2", queue: other, args: null, retry: {}, retentionClassKey: null });
    const m = await moved.get();
    assert.deepEqual([m.name, m.queue, m.args, m.maxRetries, m.retentionClassKey, m.rerunOf], ["r2", other, null, 0, "forever", rerun.id]);
    // a bad override: the server's 400 naming it, nothing written
    await client.cancel(moved.id);
    await assert.rejects(client.rerun(moved.id, { retentionClassKey: "no_such_class" }), (err) => {
        assert.ok(err instanceof SiltError);
        assert.equal(err.status, 400);
        assert.equal(err.field, "retentionClassKey");
        return true;
    });
    await assert.rejects(client.rerun("not-a-uuid"), (err) => err instanceof SiltError && err.status === 400 && err.field === "id");
    assert.equal((await client.list({ queue: other })).tasks.length, 1);
    const requests = await countRequests(async () => {
        await assert.rejects(client.rerun(moved.id, { prio: 1 }), (err) => err instanceof TypeError && /prio/.test(err.message));
        await assert.rejects(client.rerun(moved.id, { priority: 0 }), RangeError);
        await assert.rejects(client.rerun(moved.id, { includeCompleted: "yes" }), TypeError);
    });
    assert.equal(requests, 0);
});

test("rerun_many_counts_with_dry_run_then_reruns_a_limit_at_a_time", async () => {
    const queue = uniqueQueue("rerunmany");
    const sent = await client.sendBatch([1, 2, 3].map((i) => ({ name: "m", queue, args: i })));
    const kept = await client.send({ name: "m", queue, args: 4 });
    for (const h of sent) await h.cancel();
    const dry = await client.rerunMany({ queue, status: "CANCELLED", dryRun: true });
    assert.deepEqual(dry, { dryRun: true, count: 3, more: false });
    assert.equal((await client.list({ queue })).tasks.length, 4, "a dry run writes nothing");
    const first = await client.rerunMany({ queue, limit: 2, priority: 3, finishedAfter: new Date(Date.now() - 3600000) });
    assert.deepEqual([first.dryRun, first.count, first.more], [false, 2, true]);
    assert.deepEqual(first.tasks.map((t) => t.rerunOf), [sent[0].id, sent[1].id]);
    assert.ok(first.tasks.every((t) => t.created));
    assert.equal((await client.get(first.tasks[0].id)).priority, 3);
    const second = await client.rerunMany({ queue, limit: 2 });
    assert.deepEqual([second.count, second.more, second.tasks.map((t) => t.rerunOf)], [1, false, [sent[2].id]]);
    assert.deepEqual(await client.rerunMany({ queue, dryRun: true }), { dryRun: true, count: 0, more: false });
    assert.equal((await client.list({ queue })).tasks.length, 7);
    assert.equal((await kept.get()).status, "PENDING");
    await assert.rejects(client.rerunMany({ queue, finishedBefore: "2026-02-30" }), (err) => {
        assert.ok(err instanceof SiltError);
        assert.equal(err.status, 400);
        assert.equal(err.field, "finishedBefore");
        return true;
    });
    const requests = await countRequests(async () => {
        await assert.rejects(client.rerunMany({ queue, status: "RUNNING" }), RangeError);
        await assert.rejects(client.rerunMany({ queue, limit: 0 }), RangeError);
        await assert.rejects(client.rerunMany({ queue, error_code: "X" }), TypeError);
    });
    assert.equal(requests, 0);
});

test("list_searches_names_orders_newest_first_and_counts_the_total", async () => {
    const queue = uniqueQueue("search");
    const sent = await client.sendBatch(["alpha-one", "beta", "Alpha-two"].map((name) => ({ name, queue })));
    const found = await client.list({ queue, search: "ALPHA" });
    assert.deepEqual(found.tasks.map((t) => t.id), [sent[0].id, sent[2].id]);
    assert.equal(found.total, 2);
    assert.equal(found.totalCapped, false);
    const newest = await client.list({ queue, order: "desc", limit: 2 });
    assert.deepEqual(newest.tasks.map((t) => t.id), [sent[2].id, sent[1].id]);
    const rest = await client.list({ queue, order: "desc", limit: 2, cursor: newest.nextCursor });
    assert.deepEqual(rest.tasks.map((t) => t.id), [sent[0].id]);
    await assert.rejects(client.list({ order: "newest" }), RangeError);
});

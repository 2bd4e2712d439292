// Rules that need no server: what a function's return or throw becomes on
// the wire, and the option checks' edges.

import test from "node:test";
import assert from "node:assert/strict";
import { completedItem, thrownItem, codeOf } from "../src/outcome.js";
import { checkSendOptions } from "../src/options.js";
import { Backoff } from "../src/backoff.js";

const ID = "01a23484-0000-7000-8000-000000000001";
const CLAIM = "8b47dea6-6ff1-4612-9f34-f18c3681d1a1";

test("a_result_is_spliced_into_the_item_as_its_json", () => {
    assert.deepEqual(JSON.parse(completedItem(ID, CLAIM, { a: [1, "x"] })), { id: ID, claimId: CLAIM, result: { a: [1, "x"] } });
    assert.deepEqual(JSON.parse(completedItem(ID, CLAIM, undefined)), { id: ID, claimId: CLAIM, result: null });
    assert.deepEqual(JSON.parse(completedItem(ID, CLAIM, "a\u0000b")).result, "a\u0000b", "a result keeps NUL: it is JSON");
});

test("a_result_json_cannot_hold_is_invalid_result", () => {
    const cyclic = {};
    cyclic.self = cyclic;
    for (const bad of [10n, cyclic, () => 1, Symbol("s")]) {
        const item = JSON.parse(completedItem(ID, CLAIM, bad));
        assert.equal(item.errorCode, "INVALID_RESULT");
        assert.equal(item.result, undefined);
    }
});

test("the_error_code_is_err_code_else_err_name_else_error", () => {
    assert.equal(codeOf(Object.assign(new Error("x"), { code: "E_ONE" })), "E_ONE");
    assert.equal(codeOf(Object.assign(new RangeError("x"), { code: 42 })), "RangeError");
    assert.equal(codeOf(Object.assign(new Error("x"), { code: "" })), "Error");
    assert.equal(codeOf("text"), "Error");
    assert.equal(codeOf(null), "Error");
});

test("codes_and_messages_are_made_acceptable_to_the_server", () => {
    const item = JSON.parse(thrownItem(ID, CLAIM, Object.assign(new Error("bad\u0000byte"), { code: "é".repeat(40) + "\u0000" })));
    assert.ok(Buffer.byteLength(item.errorCode) <= 64, "a code fits the server's 64 bytes");
    assert.equal(item.errorCode, "é".repeat(32), "cut at a character, NUL removed");
    assert.equal(item.errorMessage, "badbyte", "PostgreSQL text cannot hold NUL");
    const long = JSON.parse(thrownItem(ID, CLAIM, new Error("€".repeat(3000))));
    assert.ok(Buffer.byteLength(long.errorMessage) <= 4096);
    assert.ok(long.errorMessage.startsWith("€€€"));
    const odd = JSON.parse(thrownItem(ID, CLAIM, { toString() { throw new Error("no"); } }));
    assert.equal(odd.errorMessage, "[object Object]");
});

test("options_null_or_undefined_mean_the_default_except_retention_class_null", () => {
    assert.deepEqual(checkSendOptions({ queue: "q", priority: undefined, delayMs: null, retentionClassKey: null }),
        { queue: "q", retentionClassKey: null });
    assert.deepEqual(checkSendOptions({ queue: "q", runAt: new Date("2026-12-01T07:04:30.501Z") }),
        { queue: "q", runAt: "2026-12-01T07:04:30.501Z" });
    for (const ok of ["2026-12-01", "2026-12-01T07:04", "2026-12-01 07:04:30.123456789+02:00", "2026-12-01T07:04:30-0530"])
        assert.equal(checkSendOptions({ runAt: ok }).runAt, ok);
    assert.throws(() => checkSendOptions({ queue: "x".repeat(256) }), RangeError);
});

test("backoff_doubles_from_50_ms_to_1_s_and_resets", () => {
    const b = new Backoff();
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(() => b.next()), [50, 100, 200, 400, 800, 1000, 1000]);
    b.reset();
    assert.equal(b.next(), 50);
});

test("lone_surrogates_never_reach_the_server_which_refuses_them", () => {
    assert.equal(JSON.parse(completedItem(ID, CLAIM, "x\ud800y")).errorCode, "INVALID_RESULT");
    assert.equal(JSON.parse(completedItem(ID, CLAIM, "x\\ud800y")).result, "x\\ud800y", "an escaped backslash is text");
    assert.equal(JSON.parse(completedItem(ID, CLAIM, "😀")).result, "😀");
    const item = JSON.parse(thrownItem(ID, CLAIM, Object.assign(new Error("m\ud800"), { code: "C\udc00" })));
    assert.deepEqual([item.errorCode, item.errorMessage], ["C\ufffd", "m\ufffd"]);
});

test("a_signal_read_after_the_abort_is_already_aborted_with_its_reason", async () => {
    const { Job } = await import("../src/runner.js");
    const job = new Job({ id: ID, claimId: CLAIM, name: "n", queue: "q", args: null, attempt: 1, retryCount: 0, timeoutMs: null });
    const ctx = job.context();
    job.abort("CANCELLED", "the task was cancelled");
    job.abort("TASK_TIMEOUT", "too late: the first reason stays");
    assert.equal(ctx.signal.aborted, true);
    assert.equal(ctx.signal.reason.code, "CANCELLED");
    assert.equal(ctx.signal, ctx.signal, "one signal per task");
});

#!/usr/bin/env node
// run: the whole JavaScript suite, every test file in a process of its own
// (each with its own database and server), a few files at a time, then the
// files that run alone (ALONE) one at a time. Prints the spec reporter's
// account, then as its last line `N passed, N failed` (top-level tests; a
// file that cannot run counts as one failure). Exit status 1 when anything
// failed. HARNESS_ALONE=skip leaves the ALONE files out, HARNESS_ALONE=only
// runs only them, as for the integration tests (scripts/test.sh runs the
// rest beside the integration tests, and these after them).
//
//   SILT_BIN=/path/to/silt SILT_TEST_PGPORT=5432 node clients/js/test/run.mjs [FILE ...]

import { run } from "node:test";
import { spec } from "node:test/reporters";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const FILE_TIMEOUT_MS = 120000;
// Files whose tests bound a delay that a neighbour's load would break.
// cli.test.mjs: an idle worker process exits promptly on SIGTERM (100 ms
// on a quiet machine; a node process's exit takes some 200-500 ms with
// other files beside it, over a second at a load of 13, against a bound of
// 3 s).
const ALONE = new Set(["cli.test.mjs"]);

/** The files to run: [those side by side, those alone]. */
function files() {
    const named = process.argv.slice(2).map((f) => path.resolve(f));
    if (named.length) return [named, []];
    const all = fs.readdirSync(here).filter((f) => f.endsWith(".test.mjs")).sort();
    const which = process.env.HARNESS_ALONE ?? "";
    const pick = (alone) => all.filter((f) => ALONE.has(f) === alone).map((f) => path.join(here, f));
    return [which === "only" ? [] : pick(false), which === "skip" ? [] : pick(true)];
}

// `node --test clients/js/test/` loads every module under test/, this one
// included: there it has nothing to do (the test files run on their own).
if (process.env.NODE_TEST_CONTEXT) process.exit(0);

for (const name of ["SILT_BIN", "SILT_TEST_PGPORT"]) {
    if (!process.env[name]) {
        console.error(`run: ${name} is not set`);
        console.log("0 passed, 1 failed");
        process.exit(1);
    }
}

const began = Date.now();
let passed = 0;
let failed = 0;

/** Runs files, concurrency at a time, counting into passed and failed. */
async function runFiles(list, concurrency) {
    if (!list.length) return;
    const stream = run({ files: list, concurrency, timeout: FILE_TIMEOUT_MS });
    stream.on("test:pass", (data) => { if (data.nesting === 0) passed++; });
    stream.on("test:fail", (data) => { if (data.nesting === 0) failed++; });
    const report = stream.compose(spec);
    report.pipe(process.stdout, { end: false });
    await new Promise((resolve) => report.on("end", resolve));
}

const [beside, alone] = files();
await runFiles(beside, 3);
await runFiles(alone, 1);
console.log(`\nsuite time ${((Date.now() - began) / 1000).toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed > 0 || passed === 0 ? 1 : 0;

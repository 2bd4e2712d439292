// report: the medians over rounds of what run.mjs wrote, as one Markdown
// table, systems side by side (the rows of docs/performance.md's
// "Beside graphile-worker and pg-boss").
//   node bench/peers/report.mjs RESULTS.jsonl [SYSTEM ...]

import { readFileSync } from "node:fs";
import { median } from "./common.mjs";

const [file, ...order] = process.argv.slice(2);
if (!file) {
    console.error("usage: node bench/peers/report.mjs RESULTS.jsonl [SYSTEM ...]");
    process.exit(2);
}
const rows = readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const systems = order.length ? order : [...new Set(rows.map((r) => r.system))];

// The median of one field over rounds, with the rounds' values beside it
// unless `bare`.
function cell(scenario, system, pick, digits, bare = false) {
    const v = rows.filter((r) => r.scenario === scenario && r.system === system).map(pick);
    if (v.length === 0) return "–";
    const f = (x) => (Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "–");
    return v.length === 1 || bare ? f(median(v)) : `${f(median(v))} (${v.map(f).join(", ")})`;
}

const LINES = [
    ["drain a backlog (no-op tasks), tasks/s", "drain", (r) => r.rate, 0],
    ["  PostgreSQL CPU per drained task, µs", "drain", (r) => r.cpu?.pg, 1],
    ["  server / client CPU per task, µs (medians)", "drain", null, 1],
    ["end to end with producers running, tasks/s", "e2e", (r) => r.rate, 0],
    ["  PostgreSQL CPU per task, µs", "e2e", (r) => r.cpu?.pg, 1],
    ["  server / client CPU per task, µs (medians)", "e2e", null, 1],
    ["batch enqueue (calls of 1,000), tasks/s", "batch", (r) => r.rate, 0],
    ["one task per call, 8 callers, tasks/s", "single", (r) => r.rate, 0],
    ["enqueue → start at 50 tasks/s, p50 ms", "latency", (r) => r.p50, 1],
    ["  p99 ms", "latency", (r) => r.p99, 1],
];

const out = [`| scenario | ${systems.join(" | ")} |`, `|---|${systems.map(() => "---").join("|")}|`];
for (const [label, scenario, pick, digits] of LINES) {
    if (!rows.some((r) => r.scenario === scenario)) continue;
    const cells = systems.map((s) => (pick
        ? cell(scenario, s, pick, digits)
        : `${cell(scenario, s, (r) => r.cpu?.server, digits, true)} / ${cell(scenario, s, (r) => r.cpu?.client, digits, true)}`));
    out.push(`| ${label} | ${cells.join(" | ")} |`);
}
console.log(out.join("\n"));

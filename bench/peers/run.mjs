// run: one round of the peers benchmark for one system, on a database of
// its own. Started by scripts/bench-peers.sh, which owns the cluster, the
// silt server and the npm scratch folder:
//
//   node bench/peers/run.mjs --system silt|graphile-worker|pg-boss --round N
//        --postmaster PID [--pg URL --modules DIR] [--silt-url URL --server-pid PID]
//
// One JSON line per scenario on stdout ({system, round, scenario, tasks,
// seconds, rate, p50, p99, cpu: {pg, server, client} µs per task}); a
// readable line each on stderr. Sizes (BENCH_PEERS_QUICK=1 for the small
// set): BENCH_PEERS_BACKLOG (50000 / 5000), BENCH_PEERS_BATCHES (50 / 5),
// BENCH_PEERS_WINDOW_S (10 / 4), BENCH_PEERS_WARMUP_S (2 / 1),
// BENCH_PEERS_LATENCY_RATE (50), BENCH_PEERS_SCENARIOS (all five).

import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SCENARIOS, scenarios } from "./common.mjs";

const ADAPTERS = {
    silt: "./silt.mjs",
    "graphile-worker": "./graphile.mjs",
    "pg-boss": "./pgboss.mjs",
};

function sizes() {
    const quick = process.env.BENCH_PEERS_QUICK === "1";
    const num = (name, full, small) => Number(process.env[name] || (quick ? small : full));
    return {
        backlog: num("BENCH_PEERS_BACKLOG", 50000, 5000),
        batches: num("BENCH_PEERS_BATCHES", 50, 5),
        windowMs: num("BENCH_PEERS_WINDOW_S", 10, 4) * 1000,
        warmupMs: num("BENCH_PEERS_WARMUP_S", 2, 1) * 1000,
        latencyRate: num("BENCH_PEERS_LATENCY_RATE", 50, 50),
        timeoutMs: 600000,
    };
}

function describe(system, name, r) {
    const f = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "–");
    let line = `${system} ${name}: ${r.tasks} tasks in ${f(r.seconds, 2)} s, ${f(r.rate)} tasks/s`;
    if (r.p50 !== undefined) line += `, enqueue → start p50 ${f(r.p50, 1)} ms p99 ${f(r.p99, 1)} ms`;
    if (r.cpu) line += `; µs/task PostgreSQL ${f(r.cpu.pg, 1)} server ${f(r.cpu.server, 1)} client ${f(r.cpu.client, 1)}`;
    return line;
}

async function main() {
    const { values: a } = parseArgs({
        options: {
            system: { type: "string" }, round: { type: "string", default: "1" },
            postmaster: { type: "string" }, pg: { type: "string" }, modules: { type: "string" },
            "silt-url": { type: "string" }, "server-pid": { type: "string" },
        },
    });
    if (!ADAPTERS[a.system]) throw new Error(`--system is one of ${Object.keys(ADAPTERS).join(", ")}`);
    const { makeAdapter } = await import(ADAPTERS[a.system]);
    const adapter = makeAdapter({
        url: a["silt-url"],
        serverPid: a["server-pid"] ? Number(a["server-pid"]) : null,
        connectionString: a.pg,
        require: a.modules ? createRequire(join(a.modules, "package.json")) : null,
    });
    const wanted = (process.env.BENCH_PEERS_SCENARIOS || SCENARIOS.join(" ")).split(/[\s,]+/).filter(Boolean);
    for (const s of wanted) if (!scenarios[s]) throw new Error(`unknown scenario ${s} (${SCENARIOS.join(", ")})`);
    // A queue per scenario, in a database per round: nothing one scenario
    // leaves behind is in the next one's way.
    const queue = (s) => `peers_${s}`;
    const ctx = { adapter, postmaster: Number(a.postmaster) || null, sizes: sizes() };
    await adapter.setup(wanted.map(queue));
    try {
        for (const s of wanted) {
            const r = await scenarios[s](ctx, queue(s));
            console.error(describe(a.system, s, r));
            console.log(JSON.stringify({ system: a.system, round: Number(a.round), scenario: s, ...r }));
        }
    } finally {
        await adapter.close();
    }
}

main().then(() => process.exit(0), (err) => {
    console.error(`bench-peers: ${err.stack ?? err}`);
    process.exit(1);
});

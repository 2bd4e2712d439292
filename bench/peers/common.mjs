// common: what the peers benchmark shares between systems — the CPU
// accounting, the clock, medians and percentiles, and the five scenarios,
// written once and driven through each system's adapter (silt.mjs,
// graphile.mjs, pgboss.mjs), so every system is timed by the same code.
//
// An adapter is an object with:
//   setup(queues)              schema and queues, before any window opens
//   sendMany(queue, payloads)  one enqueue call of many tasks
//   sendOne(queue, payload)    one enqueue call of one task
//   startWorkers(queue, onTask) → stop()
//                              runs the system's workers on queue; onTask(payload)
//                              is called when a task starts; stop() ends them
//   pending(queue)             tasks of queue not yet completed, as the system's
//                              own committed state says (read once the counts
//                              say all started, to time the drain to its commit)
//   close()
//   serverPid                  the silt server's pid (null for the libraries)

import { readFileSync, readdirSync } from "node:fs";
import { performance } from "node:perf_hooks";

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Milliseconds on one clock for the whole process: payloads carry it. */
export const now = () => performance.timeOrigin + performance.now();

const HZ = Number(process.env.BENCH_PEERS_CLK_TCK || 100);

// utime + stime of one process, in ticks (fields 14 and 15 of /proc/PID/stat,
// counted after the ")" that ends the command name, which may hold spaces).
function statFields(pid) {
    try {
        const text = readFileSync(`/proc/${pid}/stat`, "utf8");
        return text.slice(text.lastIndexOf(")") + 2).split(" ");
    } catch {
        return null;   // exited between the listing and the read
    }
}
const ticksOf = (f, withChildren) =>
    f ? Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0) : 0;

// The cluster's CPU, not another cluster's on the same machine: the
// postmaster's own and what it has reaped (cutime + cstime: backends and
// autovacuum workers that came and went), plus its live children's. As
// scripts/bench-cpu.sh counts it.
function pgTicks(postmaster) {
    if (!postmaster) return 0;
    let total = ticksOf(statFields(postmaster), true);
    for (const name of readdirSync("/proc")) {
        if (!/^\d+$/.test(name)) continue;
        const f = statFields(name);
        if (f && Number(f[1]) === postmaster) total += ticksOf(f, false);
    }
    return total;
}

/** A CPU reading: PostgreSQL's and the server's ticks, this process's µs. */
export function cpuSnapshot(postmaster, serverPid) {
    const c = process.cpuUsage();
    return {
        pg: pgTicks(postmaster),
        server: serverPid ? ticksOf(statFields(serverPid), false) : 0,
        clientUs: c.user + c.system,
    };
}

/** CPU per task between two readings, µs, split by where it went. */
export function cpuPerTask(a, b, tasks) {
    const us = (ticks) => (ticks / HZ) * 1e6 / tasks;
    return {
        pg: us(b.pg - a.pg),
        server: us(b.server - a.server),
        client: (b.clientUs - a.clientUs) / tasks,
    };
}

export function percentile(sorted, p) {
    if (sorted.length === 0) return NaN;
    const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
    return sorted[Math.max(0, i)];
}

export function median(values) {
    const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
    if (v.length === 0) return NaN;
    const m = v.length >> 1;
    return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

const payloads = (n) => Array.from({ length: n }, () => ({ t: now() }));

// Resolves when test() holds, checking every `every` ms; rejects after
// timeoutMs, naming what was awaited.
async function until(test, what, timeoutMs, every = 5) {
    const deadline = Date.now() + timeoutMs;
    while (!(await test())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await sleep(every);
    }
}

/**
 * The scenarios. Each answers {tasks, seconds, rate, cpu?, p50?, p99?}.
 * ctx: {adapter, postmaster, sizes}.
 */
export const scenarios = {
    // A backlog of no-op tasks, enqueued before any worker runs, drained from
    // the workers' start until the system's committed state shows none left.
    async drain({ adapter, postmaster, sizes }, queue) {
        const n = sizes.backlog;
        for (let sent = 0; sent < n; sent += 1000) await adapter.sendMany(queue, payloads(Math.min(1000, n - sent)));
        let started = 0;
        const a = cpuSnapshot(postmaster, adapter.serverPid);
        const t0 = now();
        const stop = await adapter.startWorkers(queue, () => { started++; });
        await until(() => started >= n, `${n} tasks to start (${started} did)`, sizes.timeoutMs);
        await until(async () => (await adapter.pending(queue)) === 0, "the last completions to commit", sizes.timeoutMs);
        const t1 = now();
        const b = cpuSnapshot(postmaster, adapter.serverPid);
        await stop();
        const seconds = (t1 - t0) / 1000;
        return { tasks: n, seconds, rate: n / seconds, cpu: cpuPerTask(a, b, n) };
    },

    // 8 producers send 25 tasks a call while fewer than 1,000 wait (as silt
    // bench's tasks scenario); workers run throughout. Tasks started in the
    // window after a warm-up.
    async e2e({ adapter, postmaster, sizes }, queue) {
        let sent = 0, started = 0, stopping = false;
        const stop = await adapter.startWorkers(queue, () => { started++; });
        const producer = async () => {
            while (!stopping) {
                if (sent - started >= 1000) { await sleep(1); continue; }
                sent += 25;
                await adapter.sendMany(queue, payloads(25));
            }
        };
        const producers = Array.from({ length: 8 }, producer);
        await sleep(sizes.warmupMs);
        const a = cpuSnapshot(postmaster, adapter.serverPid);
        const s0 = started, t0 = now();
        await sleep(sizes.windowMs);
        const s1 = started, t1 = now();
        const b = cpuSnapshot(postmaster, adapter.serverPid);
        stopping = true;
        await Promise.all(producers);
        await stop();
        const tasks = s1 - s0, seconds = (t1 - t0) / 1000;
        return { tasks, seconds, rate: tasks / seconds, cpu: cpuPerTask(a, b, Math.max(1, tasks)) };
    },

    // One caller, calls of 1,000 tasks, back to back; no workers.
    async batch({ adapter, postmaster, sizes }, queue) {
        const n = sizes.batches * 1000;
        const a = cpuSnapshot(postmaster, adapter.serverPid);
        const t0 = now();
        for (let i = 0; i < sizes.batches; i++) await adapter.sendMany(queue, payloads(1000));
        const t1 = now();
        const b = cpuSnapshot(postmaster, adapter.serverPid);
        const seconds = (t1 - t0) / 1000;
        return { tasks: n, seconds, rate: n / seconds, cpu: cpuPerTask(a, b, n) };
    },

    // 8 callers, one task per call, each waiting for its answer; no workers.
    async single({ adapter, postmaster, sizes }, queue) {
        let n = 0;
        const a = cpuSnapshot(postmaster, adapter.serverPid);
        const t0 = now(), end = t0 + sizes.windowMs;
        const caller = async () => {
            while (now() < end) { await adapter.sendOne(queue, { t: now() }); n++; }
        };
        await Promise.all(Array.from({ length: 8 }, caller));
        const t1 = now();
        const b = cpuSnapshot(postmaster, adapter.serverPid);
        const seconds = (t1 - t0) / 1000;
        return { tasks: n, seconds, rate: n / seconds, cpu: cpuPerTask(a, b, Math.max(1, n)) };
    },

    // Open loop at `rate` tasks/s, one task per call, each sent when due
    // whether or not the last has answered; the latency is from just before
    // the enqueue call to the handler's start, for tasks sent after a warm-up.
    async latency({ adapter, sizes }, queue) {
        const lat = [];
        const stop = await adapter.startWorkers(queue, (p) => { if (p && p.m) lat.push(now() - p.t); });
        await sleep(500);   // the workers reach their idle state (parked claims, polls)
        const every = 1000 / sizes.latencyRate;
        const total = Math.round((sizes.warmupMs + sizes.windowMs) / every);
        const warm = Math.round(sizes.warmupMs / every);
        const t0 = now();
        const sends = [];
        for (let k = 0; k < total; k++) {
            const due = t0 + k * every;
            const wait = due - now();
            if (wait > 0) await sleep(wait);
            sends.push(adapter.sendOne(queue, { t: now(), m: k >= warm }));
        }
        await Promise.all(sends);
        const measured = total - warm;
        try {
            await until(() => lat.length >= measured, `${measured} measured tasks to start`, 10000);
        } finally {
            await stop();
        }
        lat.sort((x, y) => x - y);
        return { tasks: measured, seconds: (now() - t0) / 1000, rate: sizes.latencyRate,
                 p50: percentile(lat, 50), p99: percentile(lat, 99) };
    },
};

export const SCENARIOS = ["drain", "e2e", "latency", "batch", "single"];

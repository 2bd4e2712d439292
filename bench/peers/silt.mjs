// silt's side of the peers benchmark: what a careful user writes with no
// library — plain HTTP through clients/js's Http (node:http, connections
// kept alive; no npm dependency).
//
// Workers: 8 loops, each registered once, each claiming up to 100 tasks
// started by the claim itself ("start": true, long-polling 1 s), then
// finishing the whole batch in one POST /finish. A COMPLETED in that reply
// has committed, so pending() is counted from the replies: no extra
// PostgreSQL session reads the queue.

import { Http } from "../../clients/js/src/http.js";

const WORKERS = 8;
const CLAIM = 100;

export function makeAdapter({ url, serverPid }) {
    const http = new Http({ url, timeoutMs: 120000 });
    const sentTo = new Map(), completedIn = new Map();
    const add = (m, q, n) => m.set(q, (m.get(q) ?? 0) + n);

    async function worker(id, queue, onTask, signal) {
        const reg = await http.request("POST", "/api/v1/workers",
            { body: { workerId: id, hostname: "bench-peers", pid: process.pid, queues: [queue], concurrency: CLAIM } });
        // The worker's liveness, as a real one reports it (an empty list:
        // no task is held between one request and the next).
        const beat = setInterval(() => {
            http.request("POST", `/api/v1/workers/${id}/heartbeat`, { body: { tasks: [] } }).catch(() => {});
        }, reg.claimerHeartbeatIntervalMs ?? 5000);
        try {
            while (!signal.aborted) {
                let reply;
                try {
                    reply = await http.request("POST", `/api/v1/workers/${id}/claim`, {
                        body: { queues: [queue], max: CLAIM, start: true, waitMs: 1000 }, waitMs: 1000, signal });
                } catch (err) {
                    if (signal.aborted) return;   // a claim given up hands back what it took
                    throw err;
                }
                const tasks = reply?.tasks ?? [];
                if (tasks.length === 0) continue;
                for (const t of tasks) onTask(t.args);
                const done = await http.request("POST", `/api/v1/workers/${id}/finish`,
                    { body: { tasks: tasks.map((t) => ({ id: t.id, claimId: t.claimId, result: null })) } });
                add(completedIn, queue, done.tasks.filter((t) => t.status === "COMPLETED").length);
            }
        } finally {
            clearInterval(beat);
        }
    }

    return {
        serverPid,
        async setup() {},
        async sendMany(queue, payloads) {
            await http.request("POST", "/api/v1/tasks",
                { body: { tasks: payloads.map((args) => ({ name: "noop", queue, args })) } });
            add(sentTo, queue, payloads.length);
        },
        async sendOne(queue, args) {
            await http.request("POST", "/api/v1/tasks", { body: { name: "noop", queue, args } });
            add(sentTo, queue, 1);
        },
        async startWorkers(queue, onTask) {
            const abort = new AbortController();
            const loops = Array.from({ length: WORKERS }, (_, i) =>
                worker(`peers-${process.pid}-${queue}-${i}`, queue, onTask, abort.signal));
            // A loop that fails rejects unhandled: the run stops there, loudly.
            return async () => {
                abort.abort();
                await Promise.all(loops);
            };
        },
        async pending(queue) {
            return (sentTo.get(queue) ?? 0) - (completedIn.get(queue) ?? 0);
        },
        async close() {},
    };
}

// pg-boss's side of the peers benchmark: 8 work() loops on the queue, each
// fetching up to 100 jobs (batchSize) and completing them together when
// the handler returns. pg-boss 10 workers poll: after a fetch a loop sleeps
// what is left of its polling interval, full batch or not, so the interval
// bounds the drain (8 × 100 per interval) and the latency (half of it on
// average). It runs at pg-boss's minimum, 0.5 s, unless
// BENCH_PEERS_BOSS_POLL_S says otherwise; everything else is a default.
//
// `require` comes from the npm scratch folder scripts/bench-peers.sh made.

const WORKERS = 8;
const BATCH = 100;

export function makeAdapter({ require, connectionString }) {
    const PgBoss = require("pg-boss");
    const poll = Number(process.env.BENCH_PEERS_BOSS_POLL_S || 0.5);
    let boss;
    return {
        serverPid: null,
        async setup(queues) {
            boss = new PgBoss({ connectionString });
            boss.on("error", (err) => console.error(`pg-boss: ${err.message}`));
            await boss.start();
            for (const q of queues) await boss.createQueue(q);
        },
        async sendMany(queue, payloads) {
            await boss.insert(payloads.map((data) => ({ name: queue, data })));
        },
        async sendOne(queue, data) {
            await boss.send(queue, data);
        },
        async startWorkers(queue, onTask) {
            for (let i = 0; i < WORKERS; i++) {
                await boss.work(queue, { batchSize: BATCH, pollingIntervalSeconds: poll }, async (jobs) => {
                    for (const job of jobs) onTask(job.data);
                });
            }
            return () => boss.offWork(queue);
        },
        // created, retry or active: not yet completed (completions are not
        // awaited by the work loop, so the drain waits for this to reach 0).
        async pending(queue) {
            return boss.getQueueSize(queue, { before: "completed" });
        },
        async close() {
            await boss?.stop({ graceful: false, wait: true });
        },
    };
}

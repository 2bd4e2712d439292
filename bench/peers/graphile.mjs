// graphile-worker's side of the peers benchmark, with the settings of its
// own performance test (worker.graphile.org/docs/performance): 24 jobs at
// once, a pool of 25, a local queue of 500 jobs fetched and locked
// together, completions batched (completeJobBatchDelay 0). A "queue" here
// is a task identifier: the runner started for one knows only that task,
// so it never takes another scenario's jobs.
//
// `require` comes from the npm scratch folder scripts/bench-peers.sh made
// (graphile-worker is CommonJS).

const PRESET = {
    concurrentJobs: 24,
    maxPoolSize: 25,
    pollInterval: 2000,
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
};

export function makeAdapter({ require, connectionString }) {
    const gw = require("graphile-worker");
    // Warnings and errors only: its info lines would be written in the window.
    const logger = new gw.Logger(() => (level, message) => {
        if (level === "error" || level === "warning") console.error(`graphile-worker: ${message}`);
    });
    let utils;
    return {
        serverPid: null,
        async setup() {
            utils = await gw.makeWorkerUtils({ connectionString, logger });
            await utils.migrate();
        },
        async sendMany(queue, payloads) {
            await utils.addJobs(payloads.map((payload) => ({ identifier: queue, payload })));
        },
        async sendOne(queue, payload) {
            await utils.addJob(queue, payload);
        },
        async startWorkers(queue, onTask) {
            const runner = await gw.run({
                noHandleSignals: true,
                logger,
                taskList: { [queue]: async (payload) => { onTask(payload); } },
                preset: { worker: { connectionString, ...PRESET } },
            });
            return () => runner.stop();
        },
        // A completed job is deleted: what is left is pending, locked or failed.
        async pending(queue) {
            return utils.withPgClient(async (c) => {
                const { rows } = await c.query(
                    "SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier = $1", [queue]);
                return rows[0].n;
            });
        },
        async close() {
            await utils?.release();
        },
    };
}

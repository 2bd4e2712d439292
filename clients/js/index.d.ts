// Type declarations of silt-client (hand-written; the code is src/*.js).

/** Any value JSON can carry. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export type TaskStatus = "PENDING" | "CLAIMED" | "RUNNING" | "COMPLETED" | "FAILED" | "CANCELLED" | "EXPIRED";
export type WorkflowStatus = "PENDING" | "RUNNING" | "PAUSED" | "COMPLETED" | "FAILED" | "CANCELLED" | "EXPIRED";

/** A retry policy: delaysMs or backoff, not both. */
export interface RetryPolicy {
    /** retries after a failed attempt, 0 to 20 (default 0) */
    maxRetries?: number;
    /** fixed delays before retry 1, 2, ...; the last repeats (1 to 20 entries, each 0 to 86,400,000) */
    delaysMs?: number[];
    /** before retry n: min(capMs, baseMs × 2^(n−1)) */
    backoff?: { baseMs: number; capMs?: number };
    /** each delay times a random factor in [1 − jitter, 1 + jitter], 0 to 1 */
    jitter?: number;
    /** the error codes that retry (default: every code) */
    retryOn?: string[];
}

/** The options of a send (all checked before anything is sent). null or undefined: the default. */
export interface SendOptions {
    /** the queue (required, at most 255 bytes) */
    queue?: string;
    /** 1 (most urgent) to 100 */
    priority?: number | null;
    /** claimable this long after the send, 0 to 366 days (not with runAt) */
    delayMs?: number | null;
    /** claimable from this time (not with delayMs) */
    runAt?: Date | string | null;
    /** still PENDING then: EXPIRED */
    goodUntil?: Date | string | null;
    /** an attempt running longer fails TASK_TIMEOUT, 1 to 86,400,000 */
    timeoutMs?: number | null;
    retry?: RetryPolicy | null;
    /** a second send with the same key answers the first task (at most 200 bytes) */
    idempotencyKey?: string | null;
    /** the retention class of the task's record; null: kept forever */
    retentionClassKey?: string | null;
    /** a key the queue's rate_limit_per_key counts separately (1 to 255 bytes); kept with the task on any queue */
    rateKey?: string | null;
    /** one task per key at a time (docs/tasks.md, "Uniqueness"): a send of a held key answers the holder */
    unique?: UniqueOptions | null;
}

/** The key (a string, or the name with the args), how long it is held, what a send of a held key does. */
export interface UniqueOptions {
    key?: string;
    byArgs?: true;
    /** held this long from the send; else while the task is live */
    forMs?: number;
    while?: "live";
    /** existing (default); replace: the holder's args; debounce: its start. Only while it has not started */
    onConflict?: "existing" | "replace" | "debounce";
}

/** One task to send through a Client. */
export interface TaskSpec<A = Json> extends SendOptions {
    name: string;
    queue: string;
    args?: A;
}

/** A task as GET /api/v1/tasks/:id answers it. */
export interface TaskRecord<R = Json, A = Json> {
    id: string;
    name: string;
    queue: string;
    status: TaskStatus;
    args: A;
    priority: number;
    attempt: number;
    retryCount: number;
    maxRetries: number;
    sentAt: string;
    runAt: string | null;
    goodUntil: string | null;
    timeoutMs: number | null;
    workerId: string | null;
    claimedAt: string | null;
    startedAt: string | null;
    finishedAt: string | null;
    cancelRequested: boolean;
    result: R | null;
    errorCode: string | null;
    errorMessage: string | null;
    idempotencyKey: string | null;
    retentionClassKey: string | null;
    /** the id of the task this one reruns; null for a task sent by a send */
    rerunOf: string | null;
    /** the key the queue's rate_limit_per_key counts it under, or null */
    rateKey: string | null;
    /** the last progress report of the running attempt (kept when it ends), or null */
    progress: number | null;
    progressInfo: Json | null;
    /** when that report came, or null for none */
    progressAt: string | null;
}

export interface Attempt {
    attempt: number;
    workerId: string;
    claimId: string;
    startedAt: string;
    finishedAt: string | null;
    outcome: "COMPLETED" | "FAILED" | "CANCELLED" | null;
    errorCode: string | null;
    errorMessage: string | null;
}

/** The overrides of a rerun (the original's value for any left out). */
export interface RerunOverrides {
    priority?: number;
    timeoutMs?: number;
    /** the whole policy; {}: no retries */
    retry?: RetryPolicy;
    /** null: kept forever */
    retentionClassKey?: string | null;
}

export interface RerunReply {
    /** the rerun's id */
    id: string;
    /** the task it reruns */
    rerunOf: string;
    /** false: the task had been rerun already, and this is that rerun */
    created: boolean;
    /** a workflow node's task: its workflow, which goes on from the rerun node (null: a plain task) */
    workflowId: string | null;
    /** that workflow's status after the rerun (RUNNING again after FAILED; PAUSED stays PAUSED) */
    workflowStatus: string | null;
}

/** The filters of a rerun by filter (all given must match), with its overrides. */
export interface RerunFilter extends RerunOverrides {
    queue?: string;
    name?: string;
    errorCode?: string;
    status?: "FAILED" | "CANCELLED" | "EXPIRED" | "COMPLETED";
    finishedAfter?: Date | string;
    finishedBefore?: Date | string;
    /** 1 to 1,000 (default 100): the most one call reruns */
    limit?: number;
    /** only count */
    dryRun?: boolean;
    /** COMPLETED tasks too */
    includeCompleted?: boolean;
}

export interface RerunManyReply {
    dryRun: boolean;
    /** how many were (or would be) rerun, at most limit */
    count: number;
    /** further tasks match: call again to go on */
    more: boolean;
    /** absent with dryRun */
    tasks?: RerunReply[];
}

/** A rate limit of a queue: at most `limit` claims in any window of `periodMs`. */
export interface RateLimit {
    limit: number;
    periodMs: number;
}

/** A queue silt.conf declares, with its load now. */
export interface TaskQueueInfo {
    queue: string;
    priority: number;
    maxConcurrency: number;
    claimedOrRunning: number;
    /** a task of it is due */
    due: boolean;
    atCap: boolean;
    heldBack: boolean;
    rateLimit: RateLimit | null;
    rateLimitPerKey: RateLimit | null;
    atRateLimit: boolean;
    heldBackByRateLimit: boolean;
    paused: boolean;
}

export interface QueuePauseReply {
    queue: string;
    paused: boolean;
    /** when it was paused; null once resumed */
    pausedAt: string | null;
    /** false: it already was so */
    changed: boolean;
}

/** The task queues: client.queues. */
export declare class TaskQueues {
    /** The declared queues with their load, and every paused queue. */
    list(): Promise<{ queues: TaskQueueInfo[]; paused: Array<{ queue: string; pausedAt: string }> }>;
    /** Pauses a queue (admin; idempotent): sends are accepted, nothing is handed out. */
    pause(queue: string): Promise<QueuePauseReply>;
    /** Resumes a queue (admin; idempotent). */
    resume(queue: string): Promise<QueuePauseReply>;
}

/** A schedule as the server shows it. */
export interface ScheduleRecord {
    name: string;
    /** config: a [schedule.NAME] of silt.conf (read-only here); api: made through the API */
    origin: "config" | "api";
    paused: boolean;
    pausedAt: string | null;
    cron: string;
    timezone: string;
    task: string;
    queue: string;
    args: Json;
    /** 0: missed slots skipped; 1 to 1,000: that many fired */
    catchUp: number;
    /** null: the queue's */
    priority: number | null;
    /** null: the queue's */
    retentionClassKey: string | null;
    createdAt: string;
    updatedAt: string;
    lastSlot: string | null;
    lastFiredAt: string | null;
    lastTaskId: string | null;
    /** null while paused */
    nextFire: string | null;
}

/** What a create takes (checked by the server: a 400 names the field). */
export interface ScheduleSpec {
    /** 1 to 48 characters of A-Z a-z 0-9 _ - */
    name: string;
    cron: string;
    task: string;
    queue: string;
    /** default UTC */
    timezone?: string;
    args?: Json;
    /** 0 (default) to 1,000 */
    catchUp?: number;
    /** 1 to 100; default the queue's */
    priority?: number;
    retentionClassKey?: string;
    /** created paused */
    paused?: boolean;
}

/** A change: the fields given change; null sets timezone, args, catchUp, priority, retentionClassKey to their default. */
export interface ScheduleChange {
    cron?: string;
    task?: string;
    queue?: string;
    timezone?: string | null;
    args?: Json;
    catchUp?: number | null;
    priority?: number | null;
    retentionClassKey?: string | null;
}

/** The schedules: client.schedules. Changes are admin calls; a config schedule refuses them (409). */
export declare class Schedules {
    /** Every schedule, by name. */
    list(): Promise<ScheduleRecord[]>;
    get(name: string): Promise<ScheduleRecord>;
    create(schedule: ScheduleSpec): Promise<ScheduleRecord>;
    change(name: string, changes: ScheduleChange): Promise<ScheduleRecord>;
    pause(name: string): Promise<ScheduleRecord>;
    resume(name: string): Promise<ScheduleRecord>;
    delete(name: string): Promise<{ name: string; deleted: true }>;
}

export interface CancelReply {
    id: string;
    status: TaskStatus;
    cancelled: boolean;
    cancelRequested: boolean;
}

export interface ClientOptions {
    /** the server, e.g. http://localhost:6632 */
    url: string;
    /** sent as Authorization: Bearer <token> */
    token?: string | null;
    /** how long a reply may take beyond any wait the server was asked to hold (default 30000) */
    timeoutMs?: number;
}

/** A sent task. */
export declare class TaskHandle<R = Json> {
    readonly id: string;
    /** false when an idempotencyKey or a unique key named an earlier task: this is that task */
    readonly created: boolean;
    /** a send with unique: true when replace or debounce changed the task holding the key; otherwise undefined */
    readonly changed?: boolean;
    /**
     * Waits for the end: COMPLETED answers the result; FAILED, CANCELLED and
     * EXPIRED throw TaskFailedError; past timeoutMs (default: no limit), WaitTimeoutError.
     */
    result(options?: { timeoutMs?: number }): Promise<R>;
    get(): Promise<TaskRecord<R>>;
    cancel(): Promise<CancelReply>;
    attempts(): Promise<Attempt[]>;
    /** Reruns the ended task (see Client.rerun); a handle on the rerun. */
    rerun(overrides?: RerunOverrides & { name?: string; queue?: string; args?: Json; includeCompleted?: boolean }): Promise<TaskHandle>;
}

export interface WorkflowNode {
    id: string;
    task: string;
    queue: string;
    args?: Json;
    waitsFor?: string[];
    join?: "all" | "any" | "quorum";
    minSuccess?: number;
    allowFailedDeps?: boolean;
    argsFrom?: Record<string, string>;
    priority?: number;
    timeoutMs?: number;
    retry?: RetryPolicy;
    goodUntil?: string;
    retentionClassKey?: string | null;
}

export interface WorkflowDefinition {
    name: string;
    nodes: WorkflowNode[];
    onError?: "FAIL" | "PAUSE";
    output?: string;
}

export interface WorkflowRecord {
    id: string;
    name: string;
    status: WorkflowStatus;
    onError: "FAIL" | "PAUSE";
    output: string | null;
    createdAt: string;
    startedAt: string | null;
    pausedAt: string | null;
    finishedAt: string | null;
    result: Json;
    errorCode: string | null;
    errorMessage: string | null;
    /** present on get, absent on list */
    nodes?: Array<{
        id: string; task: string; queue: string; status: string; taskId: string | null; waitsFor: string[];
        join: string; result: Json; errorCode: string | null; errorMessage: string | null; finishedAt: string | null;
    }>;
}

/** The workflow calls: client.workflows. */
export declare class Workflows {
    start(definition: WorkflowDefinition): Promise<{ id: string; status: WorkflowStatus }>;
    get(id: string, options?: { waitMs?: number }): Promise<WorkflowRecord>;
    /** Waits until it has ended (COMPLETED, FAILED, CANCELLED or EXPIRED). */
    wait(id: string, options?: { timeoutMs?: number }): Promise<WorkflowRecord>;
    list(filter?: { status?: WorkflowStatus; name?: string; limit?: number; cursor?: string }):
        Promise<{ workflows: WorkflowRecord[]; nextCursor: string | null }>;
    pause(id: string): Promise<{ id: string; status: WorkflowStatus }>;
    resume(id: string): Promise<{ id: string; status: WorkflowStatus }>;
    cancel(id: string): Promise<{ id: string; status: WorkflowStatus }>;
}

/** A connection to one silt server. */
export declare class Client {
    constructor(options: ClientOptions);
    readonly url: string;
    readonly workflows: Workflows;
    readonly queues: TaskQueues;
    readonly schedules: Schedules;
    send<A = Json, R = Json>(task: TaskSpec<A>): Promise<TaskHandle<R>>;
    /** 1 to 1,000 tasks in one request: all written, or none. */
    sendBatch(tasks: TaskSpec[]): Promise<TaskHandle[]>;
    get(id: string, options?: { waitMs?: number }): Promise<TaskRecord>;
    /** Waits until the task has ended (any terminal status) and answers it. */
    wait(id: string, options?: { timeoutMs?: number }): Promise<TaskRecord>;
    /** search: names holding it (case aside); order desc: newest first. total counts up to 10,000 (totalCapped past it). */
    list(filter?: { queue?: string; status?: TaskStatus; search?: string; order?: "asc" | "desc"; limit?: number; cursor?: string }):
        Promise<{ tasks: TaskRecord[]; nextCursor: string | null; total: number; totalCapped: boolean }>;
    cancel(id: string): Promise<CancelReply>;
    attempts(id: string, options?: { waitMs?: number }): Promise<Attempt[]>;
    /** Sends an ended task again as a new task (at most once per task: again, created false and that rerun). */
    rerun(id: string, overrides?: RerunOverrides & { name?: string; queue?: string; args?: Json; includeCompleted?: boolean }):
        Promise<RerunReply>;
    /** Reruns the ended tasks matching every filter, up to limit (admin); dryRun only counts. */
    rerunMany(filter?: RerunFilter): Promise<RerunManyReply>;
    handle(id: string): TaskHandle;
}

/** What a task function receives besides its args. */
export interface TaskContext {
    /** aborts on cancel, timeout, the end of a stop's grace, or a lost claim; its reason is a TaskAbortedError */
    signal: AbortSignal;
    taskId: string;
    /** 1 for the first run, 2 for the first retry ... */
    attempt: number;
    retryCount: number;
    name: string;
    queue: string;
    /**
     * Reports how far the task is: `value` a finite number (or null), `info`
     * any JSON value of at most 4096 bytes (or null). Each report replaces the
     * last; the latest goes with the next heartbeat, brought forward to at most
     * one a second, and the last one made before the function settles is sent
     * before its end. Throws TypeError or RangeError on a bad value.
     */
    progress(value?: number | null, info?: unknown): void;
}

export type TaskFunction<A = any, R = any> = (args: A, ctx: TaskContext) => R | Promise<R>;

/** A task definition: what app.task answers. */
export declare class Task<A = any, R = any> {
    readonly name: string;
    readonly queue: string;
    readonly options: Readonly<SendOptions>;
    readonly fn: TaskFunction<A, R> | null;
    /** The same task with some send options replaced (checked now). */
    withOptions(overrides: SendOptions): Task<A, R>;
    send(args?: A): Promise<TaskHandle<Awaited<R>>>;
    /** 1 to 1,000 tasks in one request. */
    sendMany(argsList: A[]): Promise<Array<TaskHandle<Awaited<R>>>>;
}

export interface Logger {
    info?(message: string): void;
    warn?(message: string): void;
    error?(message: string): void;
}

export interface WorkerOptions {
    /** default: the queues of the app's tasks that have a function */
    queues?: string[];
    /** tasks run at once, 1 to 10,000 (default 16) */
    concurrency?: number;
    /** on stop, how long running tasks may take before they are failed WORKER_CRASHED (default 30000) */
    graceMs?: number;
    /** default: one the server makes */
    workerId?: string;
    /** heartbeat this often when sooner than the server's runnerHeartbeatIntervalMs (100 to 600000) */
    heartbeatMs?: number;
    /** how long a claim with nothing to take waits in the server, 1 to 60000 (default 20000) */
    claimWaitMs?: number;
    /** aborting it stops the worker */
    signal?: AbortSignal;
    /** default: warnings and errors on stderr, info dropped */
    logger?: Logger;
}

export interface WorkerStats {
    /** tasks claimed */
    claimed: number;
    /** the server's answers to this worker's ends, by status (COMPLETED, FAILED, PENDING when retried, CANCELLED) */
    ended: Partial<Record<TaskStatus, number>>;
    /** ends refused because the claim was no longer current */
    fenced: number;
    /** tasks a heartbeat said were lost */
    lost: number;
    /** ends the server refused outright (4xx alone), left to its recovery */
    refused: number;
}

/** An in-process worker: app.worker(options). */
export declare class Worker {
    /** the worker's id, once registered */
    readonly id: string | null;
    readonly concurrency: number;
    readonly graceMs: number;
    readonly stats: WorkerStats;
    /** Runs until stopped; resolves once stopped with every end delivered. Rejects if the server refuses the registration. */
    run(): Promise<void>;
    /** Stops gracefully; resolves when stopped. */
    stop(): Promise<void>;
}

export interface AppOptions {
    url?: string;
    token?: string | null;
    timeoutMs?: number;
    /** an existing Client instead of url and token */
    client?: Client;
}

/** A program's task definitions, talking to one server. */
export declare class App {
    constructor(options: AppOptions);
    readonly client: Client;
    readonly tasks: ReadonlyMap<string, Task>;
    /** Defines a task; without fn, one this process only sends. */
    task<A = any, R = any>(name: string, options: SendOptions & { queue: string }, fn?: TaskFunction<A, R>): Task<A, R>;
    /** The queues of the tasks this app runs. */
    queues(): string[];
    worker(options?: WorkerOptions): Worker;
    /** Runs a worker until it is stopped; resolves once it has stopped and its ends are delivered. */
    runWorker(options?: WorkerOptions): Promise<void>;
    /** Stops every worker runWorker started. */
    stopWorkers(): Promise<void>;
}

/** The server answered with an error status. */
export declare class SiltError extends Error {
    readonly name: "SiltError";
    readonly status: number;
    /** the request field the server names, when it names one */
    readonly field?: string;
    /** every problem of a refused workflow definition */
    readonly problems?: string[];
    /** the parsed reply */
    readonly body: unknown;
}

/** No answer from the server (refused, reset, timed out, not JSON). */
export declare class TransportError extends Error {
    readonly name: "TransportError";
    /** ECONNREFUSED, ECONNRESET, ETIMEDOUT (no reply in time), ... when known */
    readonly code?: string;
}

/** A task ended FAILED, CANCELLED or EXPIRED. */
export declare class TaskFailedError extends Error {
    readonly name: "TaskFailedError";
    readonly taskId: string;
    readonly status: TaskStatus;
    readonly errorCode: string | null;
    readonly errorMessage: string | null;
    readonly task: TaskRecord;
}

/** A wait ran out before the task or workflow ended. */
export declare class WaitTimeoutError extends Error {
    readonly name: "WaitTimeoutError";
    readonly timeoutMs: number;
    /** the status seen last */
    readonly status: string;
}

/** The reason a running task's signal gives. */
export declare class TaskAbortedError extends Error {
    readonly name: "TaskAbortedError";
    readonly code: "CANCELLED" | "TASK_TIMEOUT" | "WORKER_CRASHED" | "LOST";
}

/** The names of the send options. */
export declare const SEND_OPTIONS: readonly string[];

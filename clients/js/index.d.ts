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
    /** false when an idempotencyKey named an earlier task: this is that task */
    readonly created: boolean;
    /**
     * Waits for the end: COMPLETED answers the result; FAILED, CANCELLED and
     * EXPIRED throw TaskFailedError; past timeoutMs (default: no limit), WaitTimeoutError.
     */
    result(options?: { timeoutMs?: number }): Promise<R>;
    get(): Promise<TaskRecord<R>>;
    cancel(): Promise<CancelReply>;
    attempts(): Promise<Attempt[]>;
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
    send<A = Json, R = Json>(task: TaskSpec<A>): Promise<TaskHandle<R>>;
    /** 1 to 1,000 tasks in one request: all written, or none. */
    sendBatch(tasks: TaskSpec[]): Promise<TaskHandle[]>;
    get(id: string, options?: { waitMs?: number }): Promise<TaskRecord>;
    /** Waits until the task has ended (any terminal status) and answers it. */
    wait(id: string, options?: { timeoutMs?: number }): Promise<TaskRecord>;
    list(filter?: { queue?: string; status?: TaskStatus; limit?: number; cursor?: string }):
        Promise<{ tasks: TaskRecord[]; nextCursor: string | null }>;
    cancel(id: string): Promise<CancelReply>;
    attempts(id: string, options?: { waitMs?: number }): Promise<Attempt[]>;
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
    /** ECONNREFUSED, ECONNRESET, ... when known */
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

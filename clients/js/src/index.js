// silt-client: the JavaScript client of silt's task queue — send tasks and
// read them back (Client), define tasks and run them in this process (App,
// Worker), and drive workflows (client.workflows).

export { App } from "./app.js";
export { Client } from "./client.js";
export { Task } from "./task.js";
export { TaskHandle } from "./handle.js";
export { Worker } from "./worker.js";
export { Workflows } from "./workflows.js";
export { TaskQueues } from "./queues.js";
export { Schedules } from "./schedules.js";
export { SiltError, TransportError, TaskFailedError, WaitTimeoutError, TaskAbortedError } from "./errors.js";
export { SEND_OPTIONS } from "./options.js";

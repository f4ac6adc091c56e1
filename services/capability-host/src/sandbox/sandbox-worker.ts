// A sandbox worker thread: one QuickJS sandbox, one script at a time, host functions answered
// by the capability host's thread. A script computing for seconds stalls this thread only; the
// host keeps heartbeating its work, answering probes and running other scripts.

import { parentPort, workerData } from "node:worker_threads";
import { QuickJsSandbox } from "./quickjs-sandbox.ts";
import type { FromWorker, ToWorker, WorkerData } from "./worker-protocol.ts";

const port = parentPort;
if (port === null) throw new Error("sandbox-worker.ts runs as a worker thread");
const { limits } = workerData as WorkerData;
const sandbox = await QuickJsSandbox.create(limits);
const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
let nextCallId = 0;

const post = (message: FromWorker): void => port.postMessage(message);

port.on("message", (message: ToWorker) => {
  if (message.kind === "answer") {
    const waiter = waiting.get(message.callId);
    if (waiter === undefined) return;
    waiting.delete(message.callId);
    if (message.ok) waiter.resolve(message.value);
    else waiter.reject(Object.assign(new Error(message.error?.message ?? "host call failed"), { name: message.error?.name ?? "Error" }));
    return;
  }
  const { runId } = message;
  void sandbox
    .run({
      javascript: message.javascript,
      agentPath: message.agentPath,
      deadlineAtMs: message.deadlineAtMs,
      onHostCall: (op, args) =>
        new Promise((resolve, reject) => {
          const callId = nextCallId++;
          waiting.set(callId, { resolve, reject });
          post({ kind: "call", runId, callId, op, args });
        }),
    })
    .then(
      (outcome) => {
        try {
          post({ kind: "done", runId, outcome });
        } catch (error) {
          // The outcome could not be handed to the host's thread (its clone failed): the script
          // is reported failed, not left to hold this sandbox until its deadline.
          post({ kind: "done", runId, outcome: { kind: "threw", error: `the script's result could not be handed to the host: ${String(error)}`, startMs: 0, runMs: 0 } });
        }
      },
      (error: unknown) => post({ kind: "done", runId, outcome: { kind: "threw", error: `sandbox failure: ${String(error)}`, startMs: 0, runMs: 0 } }),
    );
});

post({ kind: "ready" });

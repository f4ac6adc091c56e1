// Messages between the capability host and a sandbox worker thread. One script at a time per
// worker: the host posts `run`, the worker asks for host functions with `call` (answered by
// `answer`), and ends with `done`. Values are what JSON can carry (the sandbox's own bridge).

import type { SandboxLimits, SandboxOutcome } from "./quickjs-sandbox.ts";

export interface WorkerData {
  readonly limits: SandboxLimits;
}

export type ToWorker =
  | { readonly kind: "run"; readonly runId: number; readonly javascript: string; readonly agentPath: string; readonly deadlineAtMs: number }
  | {
      readonly kind: "answer";
      readonly runId: number;
      readonly callId: number;
      readonly ok: boolean;
      readonly value?: unknown;
      readonly error?: { readonly name: string; readonly message: string };
    };

export type FromWorker =
  | { readonly kind: "ready" }
  | { readonly kind: "call"; readonly runId: number; readonly callId: number; readonly op: string; readonly args: unknown[] }
  | { readonly kind: "done"; readonly runId: number; readonly outcome: SandboxOutcome };

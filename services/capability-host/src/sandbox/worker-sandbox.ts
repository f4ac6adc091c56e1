// Runs scripts in worker threads: a pool of workers, each with its own QuickJS sandbox and one
// script at a time. The host's thread keeps what must never stall (work heartbeats, NATS, ops
// probes, the other scripts) while a script computes; host functions run here, answered to
// the worker by message. A worker that does not return a script by its deadline (plus a grace
// for the worker's own deadline handling) is terminated and replaced, and so is one that dies.

import { Worker } from "node:worker_threads";
import type { SandboxLimits, SandboxOutcome, SandboxRun, ScriptSandbox } from "./quickjs-sandbox.ts";
import type { FromWorker, ToWorker, WorkerData } from "./worker-protocol.ts";

export interface WorkerSandboxOptions {
  /** Worker threads, i.e. scripts run at once (more wait their turn). */
  readonly workers: number;
  /** How long past a script's deadline its worker may take to report before it is terminated. */
  readonly hardStopGraceMs?: number;
  /** The worker's entry module (default: the QuickJS worker); tests put misbehaving workers here. */
  readonly entry?: URL;
  /** Told each time a worker is replaced: it held a script past its deadline, or it died. */
  readonly onWorkerReplaced?: (reason: WorkerReplacedReason, detail: string) => void;
}

export type WorkerReplacedReason = "deadline" | "died";

interface Running {
  readonly runId: number;
  readonly request: SandboxRun;
  readonly resolve: (outcome: SandboxOutcome) => void;
  readonly startedAt: number;
  readonly hardStop: NodeJS.Timeout;
}

interface Slot {
  /** Undefined until first spawned (`start` spawns one worker first, the rest once it is ready). */
  worker: Worker | undefined;
  /** Its worker has loaded its sandbox: scripts are given only to ready workers. */
  ready: boolean;
  current: Running | undefined;
  /** Its replacement worker could not start: no script is given to it. */
  broken: boolean;
}

interface Queued {
  readonly request: SandboxRun;
  readonly resolve: (outcome: SandboxOutcome) => void;
}

const ENTRY = new URL("./sandbox-worker-entry.mjs", import.meta.url);

export class WorkerSandbox implements ScriptSandbox {
  /** Workers replaced after dying or being terminated at a deadline (each also told to `onWorkerReplaced`). */
  workersReplaced = 0;
  private readonly slots: Slot[] = [];
  private readonly queue: Queued[] = [];
  private nextRunId = 0;
  private closed = false;
  private readonly hardStopGraceMs: number;
  private readonly entry: URL;
  private readonly onWorkerReplaced: WorkerSandboxOptions["onWorkerReplaced"];

  private constructor(
    private readonly limits: SandboxLimits,
    options: WorkerSandboxOptions,
  ) {
    if (!Number.isInteger(options.workers) || options.workers < 1) throw new RangeError(`workers must be an integer ≥ 1, got ${options.workers}`);
    this.hardStopGraceMs = options.hardStopGraceMs ?? 2_000;
    this.entry = options.entry ?? ENTRY;
    this.onWorkerReplaced = options.onWorkerReplaced;
    for (let i = 0; i < options.workers; i++) this.slots.push({ worker: undefined, ready: false, current: undefined, broken: false });
  }

  /**
   * Starts the workers without waiting for them (the host answers `/readyz` meanwhile): scripts
   * queue until a worker is ready. One loads first and the others once it is ready, so on a busy
   * machine the first script does not wait for every worker's start-up. A worker that cannot
   * start marks its slot broken, and scripts fail once every slot is.
   */
  static start(limits: SandboxLimits, options: WorkerSandboxOptions): WorkerSandbox {
    const sandbox = new WorkerSandbox(limits, options);
    const [first, ...rest] = sandbox.slots as [Slot, ...Slot[]];
    const spawnRest = (): void => {
      for (const slot of rest) if (!sandbox.closed) sandbox.spawn(slot).catch(() => undefined);
    };
    sandbox.spawn(first).then(spawnRest, spawnRest);
    return sandbox;
  }

  /** Starts the workers and waits until each has its sandbox loaded. */
  static async create(limits: SandboxLimits, options: WorkerSandboxOptions): Promise<WorkerSandbox> {
    const sandbox = new WorkerSandbox(limits, options);
    try {
      await Promise.all(sandbox.slots.map((slot) => sandbox.spawn(slot)));
    } catch (error) {
      await sandbox.close();
      throw error;
    }
    return sandbox;
  }

  run(request: SandboxRun): Promise<SandboxOutcome> {
    if (this.closed) return Promise.resolve({ kind: "threw", error: "the script sandbox is closed", startMs: 0, runMs: 0 });
    return new Promise((resolve) => {
      this.queue.push({ request, resolve });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const queued of this.queue.splice(0)) queued.resolve({ kind: "threw", error: "the script sandbox was closed before the script ran", startMs: 0, runMs: 0 });
    await Promise.all(
      this.slots.map(async (slot) => {
        this.finish(slot, { kind: "threw", error: "the script sandbox was closed while the script ran", startMs: 0, runMs: 0 });
        await slot.worker?.terminate();
      }),
    );
  }

  private spawn(slot: Slot): Promise<void> {
    const worker = new Worker(this.entry, { workerData: { limits: this.limits } satisfies WorkerData });
    worker.unref();
    slot.worker = worker;
    slot.ready = false;
    let ready = false;
    return new Promise<void>((resolve, reject) => {
      const lost = (reason: string): void => {
        if (!ready) reject(new Error(reason));
        // A worker that never got ready is not replaced (create() fails, or the replacement
        // of a replacement stops here): a broken install must not respawn in a loop.
        if (slot.worker !== worker) return;
        if (ready && !this.closed) {
          this.replace(slot, reason);
        } else {
          slot.broken = true;
          this.finish(slot, { kind: "threw", error: reason, startMs: 0, runMs: 0 });
          this.dispatch();
        }
      };
      worker.on("message", (message: FromWorker) => {
        if (message.kind === "ready") {
          ready = true;
          slot.broken = false;
          if (slot.worker === worker) slot.ready = true;
          resolve();
          this.dispatch();
        } else if (slot.worker === worker) this.onMessage(slot, message);
      });
      worker.on("error", (error) => lost(`the sandbox worker failed: ${error.message}`));
      worker.on("exit", (code) => lost(`the sandbox worker exited with code ${code}`));
    });
  }

  /** Ends the slot's script (if any) with `reason`, and puts a new worker in the slot. */
  private replace(slot: Slot, reason: string): void {
    this.finish(slot, { kind: "threw", error: reason, startMs: 0, runMs: 0 });
    this.respawn(slot, "died", reason);
  }

  private respawn(slot: Slot, reason: WorkerReplacedReason, detail: string): void {
    this.workersReplaced++;
    this.onWorkerReplaced?.(reason, detail);
    void slot.worker?.terminate();
    this.spawn(slot).then(
      () => this.dispatch(),
      () => {
        // The replacement could not start: the slot is marked broken by its exit handler.
      },
    );
    this.dispatch();
  }

  private dispatch(): void {
    if (this.slots.every((slot) => slot.broken)) {
      for (const queued of this.queue.splice(0)) queued.resolve({ kind: "threw", error: "no script sandbox worker could start", startMs: 0, runMs: 0 });
      return;
    }
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (slot.current !== undefined || slot.broken || !slot.ready || slot.worker === undefined) continue;
      const { request, resolve } = this.queue.shift() as Queued;
      const runId = ++this.nextRunId;
      const graceAt = Math.max(0, request.deadlineAtMs - Date.now()) + this.hardStopGraceMs;
      const hardStop = setTimeout(() => this.stopAtDeadline(slot, runId), graceAt);
      hardStop.unref();
      slot.current = { runId, request, resolve, startedAt: performance.now(), hardStop };
      const message: ToWorker = { kind: "run", runId, javascript: request.javascript, agentPath: request.agentPath, deadlineAtMs: request.deadlineAtMs };
      slot.worker.postMessage(message);
    }
  }


  private onMessage(slot: Slot, message: Exclude<FromWorker, { kind: "ready" }>): void {
    const running = slot.current;
    if (running === undefined || running.runId !== message.runId) return;
    if (message.kind === "done") {
      this.finish(slot, message.outcome);
      this.dispatch();
      return;
    }
    const { callId } = message;
    const answer = (reply: ToWorker): void => {
      // Only to the worker still running this script (a replaced one is gone).
      if (slot.current?.runId === running.runId) slot.worker?.postMessage(reply);
    };
    void (async () => {
      try {
        const value = await running.request.onHostCall(message.op, message.args);
        // What the in-thread sandbox hands a script: the value's JSON (so nothing uncloneable crosses).
        answer({ kind: "answer", runId: running.runId, callId, ok: true, ...(value === undefined ? {} : { value: JSON.parse(JSON.stringify(value)) as unknown }) });
      } catch (error) {
        const e = error instanceof Error ? error : new Error(String(error));
        answer({ kind: "answer", runId: running.runId, callId, ok: false, error: { name: e.name, message: e.message } });
      }
    })();
  }

  /** The worker did not report by the deadline plus grace: the script is over, the worker replaced. */
  private stopAtDeadline(slot: Slot, runId: number): void {
    const running = slot.current;
    if (running === undefined || running.runId !== runId) return;
    this.finish(slot, { kind: "deadline", startMs: 0, runMs: performance.now() - running.startedAt });
    this.respawn(slot, "deadline", `no report ${this.hardStopGraceMs} ms after the script's deadline`);
  }

  private finish(slot: Slot, outcome: SandboxOutcome): void {
    const running = slot.current;
    if (running === undefined) return;
    slot.current = undefined;
    clearTimeout(running.hardStop);
    running.resolve(outcome);
  }
}

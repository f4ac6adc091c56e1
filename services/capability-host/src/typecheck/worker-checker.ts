// Typechecks scripts in worker threads, so a script of pathological types can never stall the
// host's thread (heartbeats, probes, other agents' scripts). Each worker keeps a warm checker;
// a check that has not answered when its budget runs out is answered `timed-out`, its worker is
// terminated (TypeScript cannot be interrupted otherwise) and a replacement starts warming at
// once. Workers warm in the background: the host accepts work at start-up and checks wait for
// a warm worker (the budget counts from when a worker takes the script, not while it waits).
// A check is answered `timed-out` when its budget has passed on the wall clock, as ever; its
// worker is terminated only once the check has used its budget in the worker thread's CPU time
// (where Linux reports it, thread-cpu.ts) or STARVED_WALL_FACTOR times the budget in wall time.
// On a starved machine a worker that was merely kept off the CPU finishes the check (its answer
// is dropped) and stays warm: terminating it cost 15–30 s of warm-up on that machine while
// every script waited (the chaos soak under load).

import { Worker } from "node:worker_threads";
import { timerDelayMs } from "@agentrt/service-kit";
import type { CheckedScript, CheckerWorkerData, FromChecker, ToChecker } from "./checker-protocol.ts";
import type { ScriptSourceParts } from "./script-source.ts";
import { CheckBudget, threadCpuReader } from "./thread-cpu.ts";

/** What the script runner and `itx.docs.typecheck` need from a checker, wherever it runs. */
export interface ScriptCheckService {
  /** Never rejects. `deadlineAtMs`: a check still waiting for a worker then answers `timed-out`. */
  check(parts: ScriptSourceParts, budgetMs: number, options?: CheckOptions): Promise<CheckedScript>;
  setProviderDeclarations(declarations: ReadonlyMap<string, string>): void;
  close(): Promise<void>;
}

export interface CheckOptions {
  readonly compile?: boolean;
  readonly deadlineAtMs?: number;
  /**
   * `script` (the default): a script's own check before it runs, served before every waiting
   * `docs` check. `docs`: a script asking `itx.docs.typecheck` about code it may never run,
   * served when no script's own check waits, so one agent's questions cannot hold another's
   * scripts in the queue until their deadlines.
   */
  readonly lane?: "script" | "docs";
  /**
   * The agent whose script this is. Within a lane, a waiting check of an agent with fewer checks
   * running (and none timed out lately) goes first: three agents alternating typecheck bombs held
   * another agent's `return 2` 12-17 s behind them in a first-come queue (red-team).
   */
  readonly agent?: string;
}

/** How long an agent whose check timed out waits behind other agents' checks. */
export const TIMED_OUT_AGENT_HELD_BACK_MS = 30_000;
/** Agents whose last service is remembered (the longest ago forgotten first, as never served). */
const SERVED_AGENTS_KEPT = 10_000;

/** Records `key` as served at `turn`: in order of service, the longest ago first; the oldest goes once the map is full. */
function markServed(servedAt: Map<string, number>, key: string, turn: number): void {
  servedAt.delete(key);
  servedAt.set(key, turn);
  if (servedAt.size > SERVED_AGENTS_KEPT) servedAt.delete(servedAt.keys().next().value as string);
}

export type CheckerReplacedReason = "timed-out" | "died";

export interface WorkerCheckerOptions {
  readonly workers: number;
  readonly itxDeclarations: string;
  /** Heap cap of one checker thread (pathological types can also exhaust memory). */
  readonly maxHeapMb?: number;
  readonly entry?: URL;
  readonly onWarm?: (warmMs: number) => void;
  readonly onWorkerReplaced?: (reason: CheckerReplacedReason, detail: string) => void;
  /** The tenant of an agent: tenants take turns before their agents do (default: each agent its own). */
  readonly tenantOf?: (agent: string) => string;
}

interface Pending {
  readonly id: number;
  readonly lane: "script" | "docs";
  readonly agent: string | undefined;
  readonly parts: ScriptSourceParts;
  readonly budgetMs: number;
  readonly compile: boolean;
  readonly resolve: (result: CheckedScript) => void;
  readonly queuedAt: number;
  waitTimer?: NodeJS.Timeout;
}

interface Slot {
  worker: Worker | undefined;
  warm: boolean;
  /** The worker thread's CPU milliseconds (undefined where they cannot be read: the wall clock decides). */
  cpuMs: (() => number | undefined) | undefined;
  /** The check the worker is running; `answered` once its caller had `timed-out` and the worker was kept. */
  current: (Pending & { budget: CheckBudget; budgetTimer: NodeJS.Timeout; answered: boolean }) | undefined;
  /** Consecutive deaths before becoming warm (a broken install must not respawn in a hot loop). */
  failures: number;
}

const ENTRY = new URL("./checker-worker-entry.mjs", import.meta.url);

export class WorkerChecker implements ScriptCheckService {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private providers: ReadonlyArray<readonly [string, string]> = [];
  private nextId = 0;
  private closed = false;
  private readonly warmWaiters: Array<() => void> = [];
  /** When each agent's check last timed out (performance.now()), for TIMED_OUT_AGENT_HELD_BACK_MS. */
  private readonly timedOutAt = new Map<string, number>();
  /** The turn each agent was last served at (this.served counts them), in order of service. */
  private readonly servedAt = new Map<string, number>();
  /** The same for tenants. */
  private readonly tenantServedAt = new Map<string, number>();
  private served = 0;

  constructor(private readonly options: WorkerCheckerOptions) {
    if (!Number.isInteger(options.workers) || options.workers < 1) throw new RangeError(`workers must be an integer ≥ 1, got ${options.workers}`);
    for (let i = 0; i < options.workers; i++) this.slots.push({ worker: undefined, warm: false, cpuMs: undefined, current: undefined, failures: 0 });
    // One warms first, the others once it is warm: warming is seconds of CPU, and on a busy
    // machine parallel warm-ups would delay the first warm checker, which the first script awaits.
    this.spawn(this.slots[0] as Slot);
  }

  private spawnRest(): void {
    for (const slot of this.slots) if (slot.worker === undefined && !this.closed) this.spawn(slot);
  }

  /** Resolves once at least one checker is warm (tests and the bench; the host never waits). */
  whenWarm(): Promise<void> {
    if (this.slots.some((s) => s.warm)) return Promise.resolve();
    return new Promise((resolve) => this.warmWaiters.push(resolve));
  }

  check(parts: ScriptSourceParts, budgetMs: number, options: CheckOptions = {}): Promise<CheckedScript> {
    if (this.closed) return Promise.resolve({ kind: "checker-lost", reason: "the checker is closed", durationMs: 0 });
    return new Promise((resolve) => {
      const lane = options.lane ?? "script";
      const pending: Pending = { id: ++this.nextId, lane, agent: options.agent, parts, budgetMs, compile: options.compile ?? false, resolve, queuedAt: performance.now() };
      if (options.deadlineAtMs !== undefined) {
        pending.waitTimer = setTimeout(() => {
          const at = this.queue.indexOf(pending);
          if (at < 0) return;
          this.queue.splice(at, 1);
          resolve({ kind: "timed-out", budgetMs, durationMs: performance.now() - pending.queuedAt });
        }, timerDelayMs(options.deadlineAtMs - Date.now()));
        pending.waitTimer.unref();
      }
      // A script's own check goes ahead of every waiting docs check (in order among its lane).
      const firstDocs = lane === "script" ? this.queue.findIndex((p) => p.lane === "docs") : -1;
      if (firstDocs === -1) this.queue.push(pending);
      else this.queue.splice(firstDocs, 0, pending);
      this.dispatch();
    });
  }

  setProviderDeclarations(declarations: ReadonlyMap<string, string>): void {
    this.providers = [...declarations];
    const message: ToChecker = { kind: "providers", declarations: this.providers };
    for (const slot of this.slots) slot.worker?.postMessage(message);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.queue.splice(0)) {
      clearTimeout(pending.waitTimer);
      pending.resolve({ kind: "checker-lost", reason: "the checker was closed", durationMs: 0 });
    }
    await Promise.all(
      this.slots.map(async (slot) => {
        const worker = slot.worker;
        slot.worker = undefined;
        this.finish(slot, { kind: "checker-lost", reason: "the checker was closed", durationMs: 0 });
        await worker?.terminate();
      }),
    );
  }

  private spawn(slot: Slot): void {
    const workerData: CheckerWorkerData = { itxDeclarations: this.options.itxDeclarations, providerDeclarations: this.providers };
    const worker = new Worker(this.options.entry ?? ENTRY, {
      workerData,
      resourceLimits: { maxOldGenerationSizeMb: this.options.maxHeapMb ?? 1_024 },
    });
    worker.unref();
    slot.worker = worker;
    slot.warm = false;
    slot.cpuMs = undefined;
    worker.on("message", (message: FromChecker) => {
      if (slot.worker !== worker) return;
      if (message.kind === "ready") {
        slot.warm = true;
        slot.cpuMs = threadCpuReader(message.threadStat);
        slot.failures = 0;
        this.options.onWarm?.(message.warmMs);
        for (const wake of this.warmWaiters.splice(0)) wake();
        this.spawnRest();
        this.dispatch();
        return;
      }
      const current = slot.current;
      if (current === undefined || current.id !== message.id) return;
      this.finish(slot, message.result);
      this.dispatch();
    });
    const lost = (reason: string): void => {
      if (slot.worker !== worker || this.closed) return;
      slot.worker = undefined;
      if (!slot.warm) slot.failures++;
      // A check that killed its worker (out of heap) holds its agent back as one that timed out.
      const agent = slot.current?.agent;
      if (agent !== undefined && slot.current?.answered === false) this.timedOutAt.set(agent, performance.now());
      this.finish(slot, { kind: "checker-lost", reason, durationMs: slot.current?.budget.wallMs ?? 0 });
      this.options.onWorkerReplaced?.("died", reason);
      const backoffMs = slot.failures === 0 ? 0 : Math.min(30_000, 250 * 2 ** Math.min(slot.failures, 7));
      setTimeout(() => {
        if (!this.closed && slot.worker === undefined) this.spawn(slot);
      }, backoffMs).unref();
    };
    worker.on("error", (error) => lost(`the checker failed: ${error.message}`));
    worker.on("exit", (code) => lost(`the checker exited with code ${code}`));
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (!slot.warm || slot.current !== undefined || slot.worker === undefined) continue;
      const pending = this.takeNext();
      clearTimeout(pending.waitTimer);
      const worker = slot.worker;
      const budgetTimer = setTimeout(() => this.stopAtBudget(slot, pending.id), pending.budgetMs);
      budgetTimer.unref();
      slot.current = { ...pending, budget: new CheckBudget(pending.budgetMs, slot.cpuMs), budgetTimer, answered: false };
      const message: ToChecker = { kind: "check", id: pending.id, parts: pending.parts, budgetMs: pending.budgetMs, compile: pending.compile };
      worker.postMessage(message);
    }
  }

  /**
   * The next check to run: of the first lane waiting (the queue holds script checks before docs
   * checks), the one whose tenant has the fewest checks running, then the tenant served longest
   * ago (or never); within it, the agent with the fewest checks running, then the agent served
   * longest ago; an agent whose check timed out lately counts one more running (for its tenant
   * too); first come among the checks of one agent. So tenants take turns, and their agents
   * within them, whatever the order they queued in: a tenant's many agents do not outnumber
   * another tenant's one.
   */
  private takeNext(): Pending {
    const lane = (this.queue[0] as Pending).lane;
    const now = performance.now();
    for (const [agent, at] of this.timedOutAt) if (now - at > TIMED_OUT_AGENT_HELD_BACK_MS) this.timedOutAt.delete(agent);
    const tenantOf = this.options.tenantOf ?? ((agent: string) => agent);
    const running = (matches: (agent: string) => boolean): number => {
      let count = 0;
      for (const agent of this.timedOutAt.keys()) if (matches(agent)) count++;
      for (const slot of this.slots) if (slot.current?.agent !== undefined && !slot.current.answered && matches(slot.current.agent)) count++;
      return count;
    };
    const rank = (agent: string | undefined): readonly number[] => {
      if (agent === undefined) return [0, -1, 0, -1];
      const tenant = tenantOf(agent);
      return [running((a) => tenantOf(a) === tenant), this.tenantServedAt.get(tenant) ?? -1, running((a) => a === agent), this.servedAt.get(agent) ?? -1];
    };
    const before = (a: readonly number[], b: readonly number[]): boolean => {
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number);
      return false;
    };
    let best = 0;
    let bestRank = rank(this.queue[0]?.agent);
    for (let i = 1; i < this.queue.length; i++) {
      const candidate = this.queue[i] as Pending;
      if (candidate.lane !== lane) break;
      const r = rank(candidate.agent);
      if (before(r, bestRank)) {
        best = i;
        bestRank = r;
      }
    }
    const next = this.queue.splice(best, 1)[0] as Pending;
    if (next.agent !== undefined) {
      this.served += 1;
      markServed(this.servedAt, next.agent, this.served);
      markServed(this.tenantServedAt, tenantOf(next.agent), this.served);
    }
    return next;
  }

  /**
   * The budget's time has passed on the wall clock: the caller is answered `timed-out`. The
   * worker is terminated (and a new one starts warming) once the check has used its budget of
   * CPU or the wall cap; until then it may finish, its answer dropped, and take the next check.
   */
  private stopAtBudget(slot: Slot, id: number): void {
    const current = slot.current;
    if (current === undefined || current.id !== id) return;
    const verdict = current.budget.verdict();
    const { wallMs, cpuMs } = verdict;
    if (!current.answered) {
      current.answered = true;
      if (current.agent !== undefined) this.timedOutAt.set(current.agent, performance.now());
      current.resolve({ kind: "timed-out", budgetMs: current.budgetMs, durationMs: wallMs });
    }
    if (verdict.kind === "continue") {
      current.budgetTimer = setTimeout(() => this.stopAtBudget(slot, id), verdict.moreMs);
      current.budgetTimer.unref();
      return;
    }
    const worker = slot.worker;
    slot.worker = undefined;
    slot.current = undefined;
    this.options.onWorkerReplaced?.(
      "timed-out",
      cpuMs === undefined ? `no answer within ${current.budgetMs} ms` : `no answer after ${Math.round(cpuMs)} ms of CPU in ${Math.round(wallMs)} ms (budget ${current.budgetMs} ms)`,
    );
    void worker?.terminate();
    this.spawn(slot);
    this.dispatch();
  }

  /** Ends the slot's check; its caller gets `result` unless it was answered `timed-out` already. */
  private finish(slot: Slot, result: CheckedScript): void {
    const current = slot.current;
    if (current === undefined) return;
    slot.current = undefined;
    clearTimeout(current.budgetTimer);
    if (!current.answered) current.resolve(result);
  }
}

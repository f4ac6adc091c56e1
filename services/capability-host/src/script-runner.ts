// One script work item, end to end (codemode.md "Script lifecycle"). The work item is only a
// hint: the stream is re-read and the core's `decideScriptRun` decides (settled, started by a
// host that may be dead, expired, past its deadline, too large, or to check and run). This
// shell does the IO: asks the liveness lease, typechecks (provable errors, or a checker that
// did not finish within its budget, settle `typecheck`, no started event), appends `started`
// BEFORE the body runs, runs in the sandbox with the deadline, settles.
// Every append is keyed, so a twin incarnation's late append commits nothing.

import { decideScriptRun, runDeadline, type ScriptRunDecision, type ScriptRunRequested } from "@agentrt/agent-core";
import { AgentRuntimeError, ContractViolationError, isAgentRuntimeError, mendIllFormedText, type AgentEvent } from "@agentrt/contract";
import { inSpan, isTransientFailure, retryTransient, triggerOffsetOfRequestKey, turnContext } from "@agentrt/service-kit";
import type { Tracer } from "@opentelemetry/api";
import { type EventStore, jsonBytes } from "@agentrt/streams";
import type { Logger } from "pino";
import type { AgentFiles } from "./itx/agent-storage.ts";
import type { HostCallHandler, ScriptSandbox } from "./sandbox/quickjs-sandbox.ts";
import { resultPreview, resultSpillPath, resultTypeText } from "./codemode.ts";
import { scopeAt, type ScriptScope } from "./scope.ts";
import {
  checkerLostFailed,
  deadlineFailed,
  expiredFailed,
  orphanedFailed,
  runtimeFailed,
  type Settlement,
  settlementRefusedFailed,
  settledKey,
  sliceFailed,
  sourceTooLargeFailed,
  startedKey,
  typecheckFailed,
  typecheckTimedOut,
} from "./settlements.ts";
import type { ScriptSourceParts } from "./typecheck/script-source.ts";
import type { ScriptCheckService } from "./typecheck/worker-checker.ts";

export interface ScriptLimits {
  /** Budget of one typecheck; a checker that has not finished by then settles the script `typecheck`. */
  readonly typecheckBudgetMs: number;
  /** Largest script source (UTF-8 bytes) that is checked and run at all. */
  readonly maxSourceBytes: number;
  /** Upper bound of any run, whatever expiresAt allows. */
  readonly maxRunMs: number;
  /** The execution deadline is expiresAt minus this (codemode.md: 15 s). */
  readonly deadlineMarginMs: number;
  /**
   * Largest result kept in the settlement, in UTF-8 bytes of its JSON as the event holds it
   * (escapes included); larger ones are spilled (`oversized`).
   */
  readonly maxSettlementResultBytes: number;
}

export const DEFAULT_SCRIPT_LIMITS: ScriptLimits = { typecheckBudgetMs: 2_000, maxSourceBytes: 64 * 1024, maxRunMs: 120_000, deadlineMarginMs: 15_000, maxSettlementResultBytes: 256_000 };

/** Conditional `started` appends tried before the item goes back to the queue (see appendStarted). */
const START_ATTEMPTS = 5;

export interface ScriptRunnerDeps {
  /** Traces each script the agent's own reply requested as a span of that turn. */
  readonly tracer?: Tracer;
  readonly store: EventStore;
  /**
   * The stream's events, at least through `offset` when the stream has them (the host's stream
   * cache: a script then costs no read of its whole stream). Absent: the store is read.
   */
  readonly readStream?: (streamPath: string, offset: number) => Promise<readonly AgentEvent[]>;
  readonly sandbox: ScriptSandbox;
  readonly files: AgentFiles;
  readonly check: ScriptCheckService["check"];
  /** Who runs which script, and whether that host still lives (absent: every started script is orphaned). */
  readonly liveness?: RunLiveness;
  readonly wrap: (code: string) => string;
  /** The script's itx calls; `ended` aborts once its sandbox run is over (see `limitInFlight`). */
  readonly hostCalls: (caller: { agentPath: string; executionId: string }, scope: ScriptScope, ended: AbortSignal) => HostCallHandler;
  readonly limits: ScriptLimits;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Observes each phase's duration (metrics, bench). */
  readonly onTiming?: (phase: "typecheck" | "sandbox-start" | "run", ms: number) => void;
}

/**
 * An itx call of a script whose host may have been found dead since it started: another host may
 * have settled the script orphaned ("NOT re-run"), so nothing more of it may take effect.
 */
export class ScriptFencedError extends Error {
  constructor(op: string) {
    super(`itx ${op}: refused: this capability host was stalled or cut off from NATS while the script ran and may have been found dead, so the script may already be settled orphaned; nothing was called.`);
    this.name = "ScriptFencedError";
  }
}

/** Liveness of the host that started a script (see `host-liveness.ts`). */
export interface RunLiveness {
  /** Records that this host runs the script; called before `started` is appended. */
  recordRun(streamPath: string, executionId: string): Promise<void>;
  /**
   * Who runs a started script: `self` when the run record names this host, `alive` when it
   * names another host holding a current liveness lease, `gone` otherwise (no proof of life).
   */
  runnerOf(streamPath: string, executionId: string): Promise<"self" | "alive" | "gone">;
  /** Drops the record once the script is settled. */
  forgetRun(streamPath: string, executionId: string): Promise<void>;
  /** The fence a script started now runs under. */
  currentGeneration(): number;
  /** Whether a script started under `generation` may go on: this host cannot have been found dead since. */
  holds(generation: number): Promise<boolean>;
}

export type ScriptRunOutcome =
  | "not-found"
  /** The stream read ended before the request (a read lagging the work item): try again later, never ack. */
  | "not-visible"
  /** Started by a host that still lives: not ours to settle; look again later. */
  | "runner-alive"
  | "already-settled"
  | "orphaned"
  | "expired"
  | "typecheck"
  | "deadline"
  | "succeeded"
  | "runtime"
  /** Another incarnation committed first (started or settled this run): ours committed nothing. */
  | "lost-race";

/** The checker broke its contract (a bug, not the script's fault): the work item is retried. */
export class CheckerProtocolError extends AgentRuntimeError {
  constructor(message: string) {
    super("protocol_violation", message, { retryable: true });
  }
}

/**
 * The turn a script belongs to: `agent-output:<n>` names the assistant reply at n, whose
 * `llmRequestOffset` names the request, whose key `agent/request/<trigger>` names the trigger.
 */
function turnTriggerOf(events: readonly AgentEvent[], executionId: string): number | undefined {
  const match = /^agent-output:(\d+)$/.exec(executionId);
  if (!match) return undefined;
  const reply = events.find((e) => e.offset === Number(match[1]));
  if (reply?.type !== "agents/context-added" || reply.payload.llmRequestOffset === undefined) return undefined;
  const requestOffset = reply.payload.llmRequestOffset;
  return triggerOffsetOfRequestKey(events.find((e) => e.offset === requestOffset)?.idempotencyKey);
}

/** One handling of a work item: what every step needs to name it, log and stop it. */
interface Run {
  readonly streamPath: string;
  readonly executionId: string;
  readonly log: Logger;
  readonly shutdown: AbortSignal | undefined;
}

/** Settlements kept in memory while they cannot be stored (see `ScriptRunner.unstored`). */
const KEPT_SETTLEMENTS = 100;

export class ScriptRunner {
  private readonly now: () => number;

  constructor(private readonly deps: ScriptRunnerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Scripts this process is running now, by stream and execution id. */
  private readonly inFlight = new Map<string, Promise<ScriptRunOutcome>>();
  /** Handlings in progress per script: more than one only when two redeliveries woke together. */
  private readonly handling = new Map<string, number>();
  /** The step each script's handling is at (for the log of a handling that runs long). */
  private readonly phases = new Map<string, string>();
  /**
   * Settlements this host made but could not store (NATS down past every retry), by stream and
   * execution id: when the work item comes back, the script is found started by this host and not
   * running here, and its kept settlement is stored instead of `orphaned`. A 16 s outage had
   * turned a finished script's real result into "the host stopped; NOT re-run" (red-team). The
   * oldest are forgotten past KEPT_SETTLEMENTS (they then settle `orphaned`, as before).
   */
  private readonly unstored = new Map<string, { readonly settlement: Settlement; readonly outcome: ScriptRunOutcome }>();

  /** The step the handling of this script is at, or undefined when none runs here. */
  phaseOf(streamPath: string, executionId: string): string | undefined {
    return this.phases.get(`${streamPath}\u0000${executionId}`);
  }

  private at(run: { streamPath: string; executionId: string }, phase: string): void {
    this.phases.set(`${run.streamPath}\u0000${run.executionId}`, phase);
  }

  /**
   * Handles one work item. A redelivery of a script THIS process is still running (its claim
   * lapsed while a long synchronous stretch blocked the heartbeats) waits for that run: seeing
   * its started event, it would otherwise wrongly settle a live script as orphaned.
   */
  async handle(streamPath: string, executionId: string, requestedOffset?: number, shutdown?: AbortSignal): Promise<ScriptRunOutcome> {
    const key = `${streamPath}\u0000${executionId}`;
    // A second delivery of an item this host is still handling (a redelivery after a NATS
    // failover lost our heartbeats) waits for that attempt and then decides again from the
    // stream: that attempt may have failed (its own delivery, no longer the live one, was naked
    // for nothing), and acking this one unseen would drop the script for good (chaos soak).
    if (this.inFlight.has(key)) this.phases.set(key, "waiting for this host's earlier handling of the script");
    for (let running = this.inFlight.get(key); running !== undefined; ) {
      await running.catch(() => undefined);
      const next = this.inFlight.get(key);
      running = next === running ? undefined : next;
    }
    this.handling.set(key, (this.handling.get(key) ?? 0) + 1);
    const run = this.handleOnce(streamPath, executionId, requestedOffset, shutdown);
    this.inFlight.set(key, run);
    try {
      return await run;
    } finally {
      if (this.inFlight.get(key) === run) this.inFlight.delete(key);
      const left = (this.handling.get(key) ?? 1) - 1;
      if (left === 0) {
        this.handling.delete(key);
        this.phases.delete(key);
      }
      else this.handling.set(key, left);
    }
  }

  private async handleOnce(streamPath: string, executionId: string, requestedOffset: number | undefined, shutdown: AbortSignal | undefined): Promise<ScriptRunOutcome> {
    const log = this.deps.logger.child({ streamPath, executionId });
    const run: Run = { streamPath, executionId, log, shutdown };
    log.debug("handling script work item");
    this.at(run, "reading the stream");
    const events = requestedOffset !== undefined && this.deps.readStream !== undefined ? await this.deps.readStream(streamPath, requestedOffset) : await this.deps.store.read(streamPath);
    const decision = decideScriptRun(events, executionId, this.now(), this.deps.limits, requestedOffset);
    if (decision.kind === "not-found") return "not-found";
    if (decision.kind === "settled") return "already-settled";
    if (decision.kind === "not-visible") {
      // The chaos soak saw a script never run: its item was acked on a read that lagged it.
      log.warn({ lastOffset: decision.lastOffset, requestedOffset }, "the stream read ended before the script's request; trying the work item again");
      return "not-visible";
    }
    const trigger = turnTriggerOf(events, executionId);
    if (this.deps.tracer === undefined || trigger === undefined) return this.runDecided(run, events, decision);
    return inSpan(this.deps.tracer, "script.run", turnContext(streamPath, trigger), { "agentrt.stream_path": streamPath, "agentrt.execution_id": executionId }, async (span) => {
      const outcome = await this.runDecided(run, events, decision);
      span.setAttribute("agentrt.outcome", outcome);
      return outcome;
    });
  }

  private async runDecided(
    run: Run,
    events: readonly AgentEvent[],
    decision: Exclude<ScriptRunDecision, { kind: "not-found" | "settled" | "not-visible" }>,
  ): Promise<ScriptRunOutcome> {
    const { streamPath, executionId, log } = run;
    switch (decision.kind) {
      case "started": {
        this.at(run, "asking who runs the started script");
        const runner = (await this.deps.liveness?.runnerOf(streamPath, executionId)) ?? "gone";
        if (runner === "alive") {
          log.info("script is running on a host whose liveness lease is current; leaving it to that host");
          return "runner-alive";
        }
        if (runner === "self") {
          // `handle` waits for any earlier handling of this script here, so one still going
          // is a twin woken with this one: it may be running the body.
          if ((this.handling.get(`${streamPath}\u0000${executionId}`) ?? 0) > 1) return "runner-alive";
          // Not running here: its started append reported failure but landed (an unknown outcome
          // during a NATS failover), or its settlement failed past every retry. Taken for a live
          // run, it was put back every second for as long as this host lived.
          const kept = this.unstored.get(`${streamPath}\u0000${executionId}`);
          if (kept !== undefined) {
            log.info("script was run here and its settlement could not be stored then; storing it now");
            return this.settle(run, kept.settlement, kept.outcome);
          }
          log.warn("script was started by this host but is not running here; settling orphaned without re-running it");
          return this.settle(run, orphanedFailed(), "orphaned");
        }
        log.warn("script was started by a host that died; settling orphaned without re-running it");
        return this.settle(run, orphanedFailed(), "orphaned");
      }
      case "expired":
        return this.settle(run, expiredFailed(decision.requested.payload.expiresAt), "expired");
      case "deadline":
        return this.settle(run, deadlineFailed("before-execution", 0), "deadline");
      case "source-too-large":
        return this.settle(run, sourceTooLargeFailed(decision.bytes, decision.limitBytes), "typecheck");
      case "check-and-run":
        return this.checkAndRun(run, events, decision.requested, decision.checkDeadlineAtMs);
      default: {
        const never: never = decision;
        throw new Error(`unhandled script-run decision ${JSON.stringify(never)}`);
      }
    }
  }

  private async checkAndRun(run: Run, events: readonly AgentEvent[], requested: ScriptRunRequested, checkDeadlineAtMs: number): Promise<ScriptRunOutcome> {
    const { streamPath, executionId, log } = run;
    const scope = scopeAt(events, requested.offset);
    const code = requested.payload.code.trim();
    const parts: ScriptSourceParts = { preamble: scope.preamble, resultsPreamble: scope.resultsPreamble, code, wrapped: this.deps.wrap(code) };
    const budget = Math.min(this.deps.limits.typecheckBudgetMs, checkDeadlineAtMs - this.now());
    // Recorded while the check runs (one round trip off the path): a record with no started
    // event is harmless, since a script that was never started is simply run by whoever claims it.
    const recorded = this.deps.liveness?.recordRun(streamPath, executionId);
    recorded?.catch(() => undefined);
    const fence = this.fenceOf();
    this.at(run, "typechecking");
    const checked = await this.deps.check(parts, budget, { compile: true, deadlineAtMs: checkDeadlineAtMs, agent: streamPath });
    this.deps.onTiming?.("typecheck", checked.durationMs);
    const timing = runDeadline(checkDeadlineAtMs, this.now(), this.deps.limits.maxRunMs);
    if (timing.kind === "deadline") return this.settle(run, deadlineFailed("typecheck", 0), "deadline");
    const { deadlineAtMs } = timing;
    if (checked.kind === "timed-out") return this.settle(run, typecheckTimedOut(checked.budgetMs), "typecheck");
    if (checked.kind === "checker-lost") return this.settle(run, checkerLostFailed(checked.reason), "typecheck");
    if (checked.kind === "blocked") return this.settle(run, typecheckFailed(checked.problems), "typecheck");
    if (checked.kind === "unchecked") log.info({ reason: checked.reason }, "running unchecked");
    if (checked.compiled === undefined) throw new CheckerProtocolError("the checker returned no compiled script for a script it let run");
    if (!checked.compiled.ok) return this.settle(run, typecheckFailed([checked.compiled.error]), "typecheck");
    const javascript = checked.compiled.javascript;

    this.at(run, "recording the run");
    await recorded;
    this.at(run, "appending script-run-started");
    const started = await this.appendStarted(run, events);
    if (started !== "started") return started;
    if (await fence.lapsed()) {
      // Another host may have found this one dead meanwhile and settled the script orphaned.
      log.warn("this host may have been found dead before the script's body started; settling orphaned without running it");
      return this.settle(run, orphanedFailed(), "orphaned");
    }
    this.at(run, "running");

    const limitMs = deadlineAtMs - this.now();
    const ended = new AbortController();
    const calls = this.deps.hostCalls({ agentPath: streamPath, executionId }, scope, ended.signal);
    const outcome = await this.deps.sandbox
      .run({
        javascript,
        agentPath: streamPath,
        deadlineAtMs,
        onHostCall: async (op, args) => {
          if (await fence.lapsed()) throw new ScriptFencedError(op);
          return calls(op, args);
        },
      })
      .finally(() => ended.abort());
    this.deps.onTiming?.("sandbox-start", outcome.startMs);
    this.deps.onTiming?.("run", outcome.runMs);
    if (outcome.kind === "slice") return this.settle(run, sliceFailed(outcome.limitMs), "deadline");
    if (outcome.kind === "deadline") return this.settle(run, deadlineFailed("execution", Math.round(limitMs)), "deadline");
    if (outcome.kind === "threw") return this.settle(run, runtimeFailed(outcome.error), "runtime");
    const settlement = await this.success(streamPath, executionId, outcome.value, this.deps.limits.maxSettlementResultBytes, log);
    return this.settle(run, settlement, "succeeded");
  }

  /**
   * The fence of a script starting now: lapsed once this host may have been found dead (its
   * lease lapsed, its connection dropped), when another host may settle the script orphaned.
   */
  private fenceOf(): { lapsed(): Promise<boolean> } {
    const liveness = this.deps.liveness;
    if (liveness === undefined) return { lapsed: async () => false };
    const generation = liveness.currentGeneration();
    return { lapsed: async () => !(await liveness.holds(generation)) };
  }

  /**
   * Appends `started` only onto the stream as last decided on. The check can take seconds, and
   * meanwhile another host may have settled the script (its own check ran out of time): the
   * started key alone does not see that, and the script ran after its settlement (the chaos
   * soak's audit: script-lifecycle-order). So the append is conditional on the last offset read,
   * and whatever arrived since is decided on again by the core before trying once more.
   */
  private async appendStarted(run: Run, seen: readonly AgentEvent[]): Promise<"started" | ScriptRunOutcome> {
    const { streamPath, executionId, log } = run;
    let events = seen;
    for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
      const lastOffset = events.at(-1)?.offset ?? 0;
      try {
        const start = await this.deps.store.append(
          streamPath,
          [{ type: "capability-host/script-run-started", payload: { executionId }, idempotencyKey: startedKey(executionId) }],
          { expectedLastOffset: lastOffset },
        );
        if (start.status === "committed") return "started";
        log.info("another incarnation started this script first (lost race); standing down");
        return "lost-race";
      } catch (error) {
        if (!(isAgentRuntimeError(error) && error.code === "conflict")) throw error;
      }
      events = [...events, ...(await this.deps.store.read(streamPath, { fromOffset: lastOffset + 1 }))];
      const decision = decideScriptRun(events, executionId, this.now(), this.deps.limits);
      if (decision.kind === "settled") {
        log.info("settled elsewhere while this host checked it; not running it");
        return "already-settled";
      }
      if (decision.kind === "started") {
        log.info("another incarnation started this script first (lost race); standing down");
        return "lost-race";
      }
      if (decision.kind === "not-found" || decision.kind === "not-visible") throw new Error(`script ${executionId} vanished from ${streamPath} after it was read`);
      if (decision.kind !== "check-and-run") return this.runDecided(run, events, decision);
    }
    throw new AgentRuntimeError("conflict", `the stream ${streamPath} kept moving while script ${executionId} was about to start; retry`, { retryable: true });
  }

  /**
   * Inline when it fits in an event; a result too big for the settlement itself is spilled to
   * the workspace file the renderer names, and settled as `oversized` (size, type, preview).
   * (Results merely longer than the history limit stay inline: the renderer spills those.)
   */
  private async success(streamPath: string, executionId: string, value: unknown, limitBytes: number, log: Logger): Promise<Settlement> {
    if (value === undefined) return { status: "succeeded" };
    const serialized = typeof value === "string" ? value : JSON.stringify(value);
    // Measured as the settlement event holds it: escaped JSON, in UTF-8 bytes. Counted in
    // characters, 250 000 "\u0001" (6 bytes each, escaped) passed as 250 000, the store refused
    // the 1.5 MB settlement, and the script never settled (red-team rt3).
    if (jsonBytes(value) <= limitBytes) return { status: "succeeded", result: value };
    try {
      await this.deps.files.write(streamPath, resultSpillPath(executionId, value), new TextEncoder().encode(serialized));
    } catch (error) {
      log.warn({ err: error }, "could not spill an oversized result; settling with its preview only");
    }
    return {
      status: "succeeded",
      oversized: { kind: "omitted", serializedChars: serialized.length, preview: resultPreview(value), typeText: resultTypeText(value) },
    };
  }

  private async settle(run: Run, settlement: Settlement, outcome: ScriptRunOutcome, refusedBefore = false): Promise<ScriptRunOutcome> {
    const { streamPath, executionId, log } = run;
    this.at(run, `settling (${outcome})`);
    // Retried here across a NATS blip: thrown back to the queue, a settlement (the result of a
    // script that ran, or an orphan's) waited for a redelivery up to 30 s after NATS was back
    // (chaos soak). The key makes a retry of an append that did land answer `duplicate`.
    const key = `${streamPath}\u0000${executionId}`;
    let result;
    try {
      result = await retryTransient(
        () =>
          this.deps.store.append(streamPath, [
            // The script's result and errors are its text, not the host's: mended to well-formed Unicode.
            { type: "capability-host/script-run-settled", payload: { executionId, settlement: mendIllFormedText(settlement) }, idempotencyKey: settledKey(executionId) },
          ]),
        { signal: run.shutdown, now: this.now, onRetry: (error, attempt, delayMs) => log.warn({ err: error, attempt, retryInMs: delayMs }, "settlement append failed transiently; retrying") },
      );
    } catch (error) {
      // A settlement the store refuses (too large, not well-formed) is refused however often it
      // is sent: thrown, its work item was terminated and the script never settled (then taken
      // for orphaned). It settles failed instead, saying why.
      if (!refusedBefore && error instanceof ContractViolationError) {
        log.warn({ err: error, outcome }, "the store refused the script's settlement; settling it failed");
        return this.settle(run, settlementRefusedFailed(error.message), "runtime", true);
      }
      // Kept for the item's return (see `unstored`), when storing it may work later; an orphan's own settlement needs no keeping.
      if (outcome !== "orphaned" && isTransientFailure(error)) {
        this.unstored.delete(key);
        this.unstored.set(key, { settlement, outcome });
        if (this.unstored.size > KEPT_SETTLEMENTS) this.unstored.delete(this.unstored.keys().next().value as string);
      }
      throw error;
    }
    this.unstored.delete(key);
    if (result.status === "duplicate") {
      log.info("another incarnation settled first (lost race); standing down");
      return "lost-race";
    }
    log.info({ outcome }, "script settled");
    await this.deps.liveness?.forgetRun(streamPath, executionId).catch((error: unknown) => log.warn({ err: error }, "could not drop the run record"));
    return outcome;
  }
}

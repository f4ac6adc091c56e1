// One script work item, end to end (codemode.md "Script lifecycle"). The work item is only a
// hint: the stream is re-read and decides. Settled → nothing to do. Started but unsettled →
// if the host that started it is provably dead (its liveness lease expired) settle `orphaned`,
// NEVER re-run; if it lives (merely slow or stalled) come back later. Unstarted and expired →
// `expired`. Otherwise bound the size, typecheck (provable errors, or a checker that did not
// finish within its budget, settle `typecheck`, no started event), append `started` BEFORE the
// body runs, run in the sandbox with the deadline, settle.
// Every append is keyed, so a twin incarnation's late append commits nothing.

import type { AgentEvent } from "@agentrt/contract";
import { inSpan, triggerOffsetOfRequestKey, turnContext } from "@agentrt/service-kit";
import type { Tracer } from "@opentelemetry/api";
import type { EventStore } from "@agentrt/streams";
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
  /** Longest serialized result kept in the settlement; longer ones are spilled (`oversized`). */
  readonly maxSettlementResultChars: number;
}

export const DEFAULT_SCRIPT_LIMITS: ScriptLimits = { typecheckBudgetMs: 2_000, maxSourceBytes: 64 * 1024, maxRunMs: 120_000, deadlineMarginMs: 15_000, maxSettlementResultChars: 256_000 };

export interface ScriptRunnerDeps {
  /** Traces each script the agent's own reply requested as a span of that turn. */
  readonly tracer?: Tracer;
  readonly store: EventStore;
  readonly sandbox: ScriptSandbox;
  readonly files: AgentFiles;
  readonly check: ScriptCheckService["check"];
  /** Who runs which script, and whether that host still lives (absent: every started script is orphaned). */
  readonly liveness?: RunLiveness;
  readonly wrap: (code: string) => string;
  readonly hostCalls: (caller: { agentPath: string; executionId: string }, scope: ScriptScope) => HostCallHandler;
  readonly limits: ScriptLimits;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Observes each phase's duration (metrics, bench). */
  readonly onTiming?: (phase: "typecheck" | "sandbox-start" | "run", ms: number) => void;
}

/** Liveness of the host that started a script (see `host-liveness.ts`). */
export interface RunLiveness {
  /** Records that this host runs the script; called before `started` is appended. */
  recordRun(streamPath: string, executionId: string): Promise<void>;
  /** True while the host that started the script holds a current liveness lease. */
  runnerAlive(streamPath: string, executionId: string): Promise<boolean>;
  /** Drops the record once the script is settled. */
  forgetRun(streamPath: string, executionId: string): Promise<void>;
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
  | "stood-down";

/** The checker broke its contract (a bug, not the script's fault): the work item is retried. */
export class CheckerProtocolError extends Error {
  override readonly name = "CheckerProtocolError";
  readonly code = "CHECKER_PROTOCOL";
}

type Requested = Extract<AgentEvent, { type: "capability-host/script-run-requested" }>;

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

export class ScriptRunner {
  private readonly now: () => number;

  constructor(private readonly deps: ScriptRunnerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Scripts this process is running now, by stream and execution id. */
  private readonly inFlight = new Map<string, Promise<ScriptRunOutcome>>();

  /**
   * Handles one work item. A redelivery of a script THIS process is still running (its claim
   * lapsed while a long synchronous stretch blocked the heartbeats) waits for that run: seeing
   * its started event, it would otherwise wrongly settle a live script as orphaned.
   */
  async handle(streamPath: string, executionId: string, requestedOffset?: number): Promise<ScriptRunOutcome> {
    const key = `${streamPath}\u0000${executionId}`;
    const running = this.inFlight.get(key);
    if (running !== undefined) {
      await running.catch(() => undefined);
      return "already-settled";
    }
    const run = this.handleOnce(streamPath, executionId, requestedOffset);
    this.inFlight.set(key, run);
    try {
      return await run;
    } finally {
      this.inFlight.delete(key);
    }
  }

  private async handleOnce(streamPath: string, executionId: string, requestedOffset: number | undefined): Promise<ScriptRunOutcome> {
    const log = this.deps.logger.child({ streamPath, executionId });
    log.debug("handling script work item");
    const events = await this.deps.store.read(streamPath);
    let requested: Requested | undefined;
    let started = false;
    for (const e of events) {
      if (e.type === "capability-host/script-run-requested" && e.payload.executionId === executionId) requested ??= e;
      else if (e.type === "capability-host/script-run-started" && e.payload.executionId === executionId) started = true;
      else if (e.type === "capability-host/script-run-settled" && e.payload.executionId === executionId) return "already-settled";
    }
    if (requested === undefined) {
      // An acked item is the script's only hand-off: a read that lags the item (a follower
      // behind after a NATS failover) must not drop it (the chaos soak saw a script never run).
      const lastOffset = events.at(-1)?.offset ?? 0;
      if (requestedOffset !== undefined && lastOffset < requestedOffset) {
        log.warn({ lastOffset, requestedOffset }, "the stream read ended before the script's request; trying the work item again");
        return "not-visible";
      }
      return "not-found";
    }
    const trigger = turnTriggerOf(events, executionId);
    if (this.deps.tracer === undefined || trigger === undefined) return this.runRequested(streamPath, executionId, events, requested, started, log);
    return inSpan(this.deps.tracer, "script.run", turnContext(streamPath, trigger), { "agentrt.stream_path": streamPath, "agentrt.execution_id": executionId }, async (span) => {
      const outcome = await this.runRequested(streamPath, executionId, events, requested, started, log);
      span.setAttribute("agentrt.outcome", outcome);
      return outcome;
    });
  }

  private async runRequested(
    streamPath: string,
    executionId: string,
    events: readonly AgentEvent[],
    requested: Requested,
    started: boolean,
    log: Logger,
  ): Promise<ScriptRunOutcome> {
    if (started) {
      if (this.deps.liveness !== undefined && (await this.deps.liveness.runnerAlive(streamPath, executionId))) {
        log.info("script is running on a host whose liveness lease is current; leaving it to that host");
        return "runner-alive";
      }
      log.warn("script was started by a host that died; settling orphaned without re-running it");
      return this.settle(streamPath, executionId, orphanedFailed(), "orphaned", log);
    }
    const expiresAtMs = Date.parse(requested.payload.expiresAt);
    if (this.now() >= expiresAtMs) return this.settle(streamPath, executionId, expiredFailed(requested.payload.expiresAt), "expired", log);
    // The check (and any wait for a warm checker) is bounded by the execution deadline; the run's
    // own cap (maxRunMs) counts from when the script is ready to run.
    const checkDeadlineAtMs = expiresAtMs - this.deps.limits.deadlineMarginMs;
    if (this.now() >= checkDeadlineAtMs) return this.settle(streamPath, executionId, deadlineFailed("before-execution", 0), "deadline", log);

    const sourceBytes = Buffer.byteLength(requested.payload.code, "utf8");
    if (sourceBytes > this.deps.limits.maxSourceBytes) {
      return this.settle(streamPath, executionId, sourceTooLargeFailed(sourceBytes, this.deps.limits.maxSourceBytes), "typecheck", log);
    }
    const scope = scopeAt(events, requested.offset);
    const code = requested.payload.code.trim();
    const parts: ScriptSourceParts = { preamble: scope.preamble, resultsPreamble: scope.resultsPreamble, code, wrapped: this.deps.wrap(code) };
    const budget = Math.min(this.deps.limits.typecheckBudgetMs, checkDeadlineAtMs - this.now());
    // Recorded while the check runs (one round trip off the path): a record with no started
    // event is harmless, since a script that was never started is simply run by whoever claims it.
    const recorded = this.deps.liveness?.recordRun(streamPath, executionId);
    recorded?.catch(() => undefined);
    const checked = await this.deps.check(parts, budget, { compile: true, deadlineAtMs: checkDeadlineAtMs });
    this.deps.onTiming?.("typecheck", checked.durationMs);
    const deadlineAtMs = Math.min(checkDeadlineAtMs, this.now() + this.deps.limits.maxRunMs);
    if (this.now() >= checkDeadlineAtMs) return this.settle(streamPath, executionId, deadlineFailed("typecheck", 0), "deadline", log);
    if (checked.kind === "timed-out") return this.settle(streamPath, executionId, typecheckTimedOut(checked.budgetMs), "typecheck", log);
    if (checked.kind === "checker-lost") return this.settle(streamPath, executionId, checkerLostFailed(checked.reason), "typecheck", log);
    if (checked.kind === "blocked") return this.settle(streamPath, executionId, typecheckFailed(checked.problems), "typecheck", log);
    if (checked.kind === "unchecked") log.info({ reason: checked.reason }, "running unchecked");
    if (checked.compiled === undefined) throw new CheckerProtocolError("the checker returned no compiled script for a script it let run");
    if (!checked.compiled.ok) return this.settle(streamPath, executionId, typecheckFailed([checked.compiled.error]), "typecheck", log);
    const javascript = checked.compiled.javascript;

    await recorded;
    const start = await this.deps.store.append(streamPath, [
      { type: "capability-host/script-run-started", payload: { executionId }, idempotencyKey: startedKey(executionId) },
    ]);
    if (start.status === "duplicate") {
      log.info("another incarnation started this script; standing down");
      return "stood-down";
    }

    const limitMs = deadlineAtMs - this.now();
    const outcome = await this.deps.sandbox.run({
      javascript,
      agentPath: streamPath,
      deadlineAtMs,
      onHostCall: this.deps.hostCalls({ agentPath: streamPath, executionId }, scope),
    });
    this.deps.onTiming?.("sandbox-start", outcome.startMs);
    this.deps.onTiming?.("run", outcome.runMs);
    if (outcome.kind === "slice") return this.settle(streamPath, executionId, sliceFailed(outcome.limitMs), "deadline", log);
    if (outcome.kind === "deadline") return this.settle(streamPath, executionId, deadlineFailed("execution", Math.round(limitMs)), "deadline", log);
    if (outcome.kind === "threw") return this.settle(streamPath, executionId, runtimeFailed(outcome.error), "runtime", log);
    const settlement = await this.success(streamPath, executionId, outcome.value, this.deps.limits.maxSettlementResultChars, log);
    return this.settle(streamPath, executionId, settlement, "succeeded", log);
  }

  /**
   * Inline when it fits in an event; a result too big for the settlement itself is spilled to
   * the workspace file the renderer names, and settled as `oversized` (size, type, preview).
   * (Results merely longer than the history limit stay inline: the renderer spills those.)
   */
  private async success(streamPath: string, executionId: string, value: unknown, limitChars: number, log: Logger): Promise<Settlement> {
    if (value === undefined) return { status: "succeeded" };
    const serialized = typeof value === "string" ? value : JSON.stringify(value);
    if (serialized.length <= limitChars) return { status: "succeeded", result: value };
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

  private async settle(streamPath: string, executionId: string, settlement: Settlement, outcome: ScriptRunOutcome, log: Logger): Promise<ScriptRunOutcome> {
    const result = await this.deps.store.append(streamPath, [
      { type: "capability-host/script-run-settled", payload: { executionId, settlement }, idempotencyKey: settledKey(executionId) },
    ]);
    if (result.status === "duplicate") {
      log.info("another incarnation settled first; standing down");
      return "stood-down";
    }
    log.info({ outcome }, "script settled");
    await this.deps.liveness?.forgetRun(streamPath, executionId).catch((error: unknown) => log.warn({ err: error }, "could not drop the run record"));
    return outcome;
  }
}

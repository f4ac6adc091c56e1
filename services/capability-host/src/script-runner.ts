// One script work item, end to end (codemode.md "Script lifecycle"). The work item is only a
// hint: the stream is re-read and decides. Settled → nothing to do. Started but unsettled →
// the host that ran it died: settle `orphaned`, NEVER re-run. Unstarted and expired →
// `expired`. Otherwise typecheck (provable errors settle `typecheck`, no started event),
// append `started` BEFORE the body runs, run in the sandbox with the deadline, settle.
// Every append is keyed, so a twin incarnation's late append commits nothing.

import type { AgentEvent } from "@agentrt/contract";
import { inSpan, triggerOffsetOfRequestKey, turnContext } from "@agentrt/service-kit";
import type { Tracer } from "@opentelemetry/api";
import type { EventStore } from "@agentrt/streams";
import type { Logger } from "pino";
import type { AgentFiles } from "./itx/agent-storage.ts";
import { compileScript, type HostCallHandler, ScriptCompileError, type ScriptSandbox } from "./sandbox/index.ts";
import { resultPreview, resultSpillPath, resultTypeText } from "./codemode.ts";
import { scopeAt, type ScriptScope } from "./scope.ts";
import {
  deadlineFailed,
  expiredFailed,
  orphanedFailed,
  runtimeFailed,
  type Settlement,
  settledKey,
  startedKey,
  typecheckFailed,
} from "./settlements.ts";
import { buildScriptSource, type CheckOutcome, type ScriptSourceParts } from "./typecheck/index.ts";

export interface ScriptLimits {
  /** Budget of one typecheck; over it the script runs unchecked. */
  readonly typecheckBudgetMs: number;
  /** Upper bound of any run, whatever expiresAt allows. */
  readonly maxRunMs: number;
  /** The execution deadline is expiresAt minus this (codemode.md: 15 s). */
  readonly deadlineMarginMs: number;
  /** Longest serialized result kept in the settlement; longer ones are spilled (`oversized`). */
  readonly maxSettlementResultChars: number;
}

export const DEFAULT_SCRIPT_LIMITS: ScriptLimits = { typecheckBudgetMs: 2_000, maxRunMs: 120_000, deadlineMarginMs: 15_000, maxSettlementResultChars: 256_000 };

export interface ScriptRunnerDeps {
  /** Traces each script the agent's own reply requested as a span of that turn. */
  readonly tracer?: Tracer;
  readonly store: EventStore;
  readonly sandbox: ScriptSandbox;
  readonly files: AgentFiles;
  readonly check: (parts: ScriptSourceParts, budgetMs: number) => CheckOutcome;
  readonly wrap: (code: string) => string;
  readonly hostCalls: (caller: { agentPath: string; executionId: string }, scope: ScriptScope) => HostCallHandler;
  readonly limits: ScriptLimits;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Observes each phase's duration (metrics, bench). */
  readonly onTiming?: (phase: "typecheck" | "sandbox-start" | "run", ms: number) => void;
}

export type ScriptRunOutcome =
  | "not-found"
  | "already-settled"
  | "orphaned"
  | "expired"
  | "typecheck"
  | "deadline"
  | "succeeded"
  | "runtime"
  | "stood-down";

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
  async handle(streamPath: string, executionId: string): Promise<ScriptRunOutcome> {
    const key = `${streamPath}\u0000${executionId}`;
    const running = this.inFlight.get(key);
    if (running !== undefined) {
      await running.catch(() => undefined);
      return "already-settled";
    }
    const run = this.handleOnce(streamPath, executionId);
    this.inFlight.set(key, run);
    try {
      return await run;
    } finally {
      this.inFlight.delete(key);
    }
  }

  private async handleOnce(streamPath: string, executionId: string): Promise<ScriptRunOutcome> {
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
    if (requested === undefined) return "not-found";
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
      log.warn("script was started by a host that died; settling orphaned without re-running it");
      return this.settle(streamPath, executionId, orphanedFailed(), "orphaned", log);
    }
    const expiresAtMs = Date.parse(requested.payload.expiresAt);
    if (this.now() >= expiresAtMs) return this.settle(streamPath, executionId, expiredFailed(requested.payload.expiresAt), "expired", log);
    const deadlineAtMs = Math.min(expiresAtMs - this.deps.limits.deadlineMarginMs, this.now() + this.deps.limits.maxRunMs);
    if (this.now() >= deadlineAtMs) return this.settle(streamPath, executionId, deadlineFailed("before-execution", 0), "deadline", log);

    const scope = scopeAt(events, requested.offset);
    const code = requested.payload.code.trim();
    const parts: ScriptSourceParts = { preamble: scope.preamble, resultsPreamble: scope.resultsPreamble, code, wrapped: this.deps.wrap(code) };
    const budget = Math.min(this.deps.limits.typecheckBudgetMs, deadlineAtMs - this.now());
    const checked = this.deps.check(parts, budget);
    this.deps.onTiming?.("typecheck", checked.durationMs);
    if (checked.kind === "blocked") return this.settle(streamPath, executionId, typecheckFailed(checked.problems), "typecheck", log);
    if (checked.kind === "unchecked") log.info({ reason: checked.reason }, "running unchecked");
    if (this.now() >= deadlineAtMs) return this.settle(streamPath, executionId, deadlineFailed("typecheck", 0), "deadline", log);

    let javascript: string;
    try {
      javascript = compileScript(buildScriptSource(parts));
    } catch (error) {
      if (!(error instanceof ScriptCompileError)) throw error;
      return this.settle(streamPath, executionId, typecheckFailed([error.message]), "typecheck", log);
    }

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
    return outcome;
  }
}

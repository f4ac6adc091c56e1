// The script-run lifecycle decisions of codemode.md "Script lifecycle", pure: what a host does
// with a script work item given the stream and the clock, and what one script sees of its
// agent. The work item is only a hint; the stream decides:
//  - settled → nothing to do;
//  - started but unsettled → never re-run: settle `orphaned` unless the host that started it
//    still lives (the shell asks its liveness lease);
//  - unstarted and past `expiresAt` → settle `expired`;
//  - unstarted and past the execution deadline (`expiresAt` − margin) → settle `deadline`;
//  - a source over the size limit → settle `typecheck` without checking it;
//  - otherwise typecheck, then run if the deadline still allows, capped at the longest run.

import { DEFAULT_AGENT_CONFIG, mergeAgentConfig, type AgentConfig, type AgentEvent, type AgentEventOf } from "@agentrt/contract";
import {
  applyPreambleEvent,
  buildPreambleSource,
  buildResultsPreamble,
  type PreambleEntry,
  RESULTS_PREAMBLE_MAX,
  type SettledScriptResult,
} from "./preamble.ts";

export type ScriptRunRequested = AgentEventOf<"capability-host/script-run-requested">;

export interface ScriptRunLimits {
  /** The execution deadline is `expiresAt` minus this (codemode.md: 15 s). */
  readonly deadlineMarginMs: number;
  /** Largest script source (UTF-8 bytes) that is checked and run at all. */
  readonly maxSourceBytes: number;
}

export type ScriptRunDecision =
  | { readonly kind: "not-found" }
  /**
   * The events end before the offset the work item names for the request: a read that lags the
   * item (a follower behind after a NATS failover) proves nothing, so the item is tried again,
   * never acked (an acked item is the script's only hand-off).
   */
  | { readonly kind: "not-visible"; readonly lastOffset: number }
  | { readonly kind: "settled" }
  /** Started by some host and not settled: orphaned unless that host still lives. Never re-run. */
  | { readonly kind: "started"; readonly requested: ScriptRunRequested }
  | { readonly kind: "expired"; readonly requested: ScriptRunRequested }
  /** Too late to start: the execution deadline passed before it could run. */
  | { readonly kind: "deadline"; readonly requested: ScriptRunRequested }
  | { readonly kind: "source-too-large"; readonly requested: ScriptRunRequested; readonly bytes: number; readonly limitBytes: number }
  /** Typecheck it, bounded by `checkDeadlineAtMs`, then run it (see `runDeadline`). */
  | { readonly kind: "check-and-run"; readonly requested: ScriptRunRequested; readonly checkDeadlineAtMs: number };

const utf8 = new TextEncoder();

/** What to do with the work item for `executionId` at `nowMs` (`requestedOffset`: where the item says the request is, when it says). */
export function decideScriptRun(events: readonly AgentEvent[], executionId: string, nowMs: number, limits: ScriptRunLimits, requestedOffset?: number): ScriptRunDecision {
  let requested: ScriptRunRequested | undefined;
  let started = false;
  for (const e of events) {
    if (e.type === "capability-host/script-run-requested" && e.payload.executionId === executionId) requested ??= e;
    else if (e.type === "capability-host/script-run-started" && e.payload.executionId === executionId) started = true;
    else if (e.type === "capability-host/script-run-settled" && e.payload.executionId === executionId) return { kind: "settled" };
  }
  if (requested === undefined) {
    const lastOffset = events.at(-1)?.offset ?? 0;
    return requestedOffset !== undefined && lastOffset < requestedOffset ? { kind: "not-visible", lastOffset } : { kind: "not-found" };
  }
  if (started) return { kind: "started", requested };
  const expiresAtMs = Date.parse(requested.payload.expiresAt);
  if (nowMs >= expiresAtMs) return { kind: "expired", requested };
  const checkDeadlineAtMs = expiresAtMs - limits.deadlineMarginMs;
  if (nowMs >= checkDeadlineAtMs) return { kind: "deadline", requested };
  const bytes = utf8.encode(requested.payload.code).length;
  if (bytes > limits.maxSourceBytes) return { kind: "source-too-large", requested, bytes, limitBytes: limits.maxSourceBytes };
  return { kind: "check-and-run", requested, checkDeadlineAtMs };
}

/**
 * Once the typecheck is done: run with a deadline of the execution deadline or the longest run
 * from now, whichever is first; or settle `deadline` if the check used up the time.
 */
export function runDeadline(checkDeadlineAtMs: number, nowMs: number, maxRunMs: number): { readonly kind: "run"; readonly deadlineAtMs: number } | { readonly kind: "deadline" } {
  if (nowMs >= checkDeadlineAtMs) return { kind: "deadline" };
  return { kind: "run", deadlineAtMs: Math.min(checkDeadlineAtMs, nowMs + maxRunMs) };
}

export interface ScriptAgentScope {
  readonly config: AgentConfig;
  /** The preamble entries set before the request, as source. */
  readonly preamble: string;
  /** The last settled results (newest first), as the `results` preamble. */
  readonly resultsPreamble: string;
}

/** Folds the events strictly before `beforeOffset` into what the script requested there sees. */
export function scriptScopeAt(events: readonly AgentEvent[], beforeOffset: number): ScriptAgentScope {
  let config = DEFAULT_AGENT_CONFIG;
  let preamble: readonly PreambleEntry[] = [];
  const settled: SettledScriptResult[] = [];
  for (const event of events) {
    if (event.offset >= beforeOffset) break;
    if (event.type === "agent/configured") config = mergeAgentConfig(config, event.payload.config) ?? config;
    else if (event.type === "capability-host/script-run-settled") settled.push(event.payload);
    else preamble = applyPreambleEvent(preamble, event);
  }
  return {
    config,
    preamble: buildPreambleSource(preamble),
    resultsPreamble: buildResultsPreamble(settled.slice(-RESULTS_PREAMBLE_MAX).reverse()),
  };
}

// What the reducer does at the head of a stream (contract.md "What the reducer does at the
// head of the stream"): resume, trip the autonomous breaker, ask for a debounced request, or
// adopt/expire an open one. Pure: the shell passes the clock and which requests it is
// already running, appends the batches, arms a timer for `wakeAtMs`, and re-decides. Each
// decision says why (`why`), so `agents replay --decide` can show decisions in time.

import { idempotencyKeys, CONTRACT_VERSION, type EventInput, eventInput, REQUEST_EXPIRY_MARGIN_MS } from "@agentrt/contract";
import { epochMs } from "./fold/triggers.ts";
import { BIRTH_WINDOW_DEBOUNCE_MS } from "./project-worker/birth.ts";
import type { PendingTrigger, ReactionState } from "./state.ts";

/** Expiry margin: a request with less than this left is not worth handing to a driver (the contract's). */
export const EXPIRY_MARGIN_MS = REQUEST_EXPIRY_MARGIN_MS;

export interface HeadDecisionInput {
  readonly nowMs: number;
  /** Requests this incarnation is already driving (or has handed to a driver). */
  readonly runningRequestOffsets?: ReadonlySet<number> | readonly number[];
}

export interface AdoptInstruction {
  readonly requestOffset: number;
  readonly expiresAt: string;
  readonly model: string;
}

/** Why the head decision is what it is, one entry per rule that applied. */
export type HeadReason =
  | { readonly rule: "not-born" }
  | { readonly rule: "request-running"; readonly requestOffset: number }
  | { readonly rule: "request-expired"; readonly requestOffset: number; readonly expiresAt: string }
  | { readonly rule: "request-adopted"; readonly requestOffset: number; readonly expiresAt: string }
  | { readonly rule: "no-trigger" }
  | { readonly rule: "resume"; readonly triggerOffset: number }
  | { readonly rule: "paused"; readonly triggerOffset: number; readonly reason?: string }
  | { readonly rule: "after-open-request"; readonly triggerOffset: number; readonly requestOffset: number }
  | { readonly rule: "breaker"; readonly triggerOffset: number; readonly autonomousTurns: number; readonly maxAutonomousTurns: number }
  | {
      readonly rule: "turn-due" | "turn-waits";
      readonly triggerOffset: number;
      readonly debounceMs: number;
      /** The 60 s birth window still holds the first turn (no worker configured the agent yet). */
      readonly birthHold: boolean;
      readonly backoffMs: number;
      readonly consecutiveFailures: number;
      readonly dueAt: string;
    };

export interface HeadDecision {
  /** Batches to append now, in order; each carries the contract's idempotency keys. */
  readonly appends: EventInput[][];
  /** When to decide again (epoch ms), or null when nothing is waiting on the clock. */
  readonly wakeAtMs: number | null;
  /** An open request nobody here is driving: hand it to a driver. */
  readonly adopt: AdoptInstruction | null;
  /** The rules that produced this decision, in the order they were applied. */
  readonly why: readonly HeadReason[];
}

export function decideAtHead(state: ReactionState, input: HeadDecisionInput): HeadDecision {
  if (state.birthCertificate === null) return { appends: [], wakeAtMs: null, adopt: null, why: [{ rule: "not-born" }] };
  const { nowMs } = input;
  const appends: EventInput[][] = [];
  const wakes: number[] = [];
  const why: HeadReason[] = [];
  let adopt: AdoptInstruction | null = null;

  const open = state.openRequest;
  if (open !== null && isRunning(input.runningRequestOffsets, open.requestedAtOffset)) {
    why.push({ rule: "request-running", requestOffset: open.requestedAtOffset });
  } else if (open !== null) {
    const expiresAtMs = epochMs(open.expiresAt);
    if (nowMs + EXPIRY_MARGIN_MS >= expiresAtMs) {
      appends.push(expiryBatch(open.requestedAtOffset));
      why.push({ rule: "request-expired", requestOffset: open.requestedAtOffset, expiresAt: open.expiresAt });
    } else {
      adopt = { requestOffset: open.requestedAtOffset, expiresAt: open.expiresAt, model: open.model };
      wakes.push(expiresAtMs - EXPIRY_MARGIN_MS);
      why.push({ rule: "request-adopted", requestOffset: open.requestedAtOffset, expiresAt: open.expiresAt });
    }
  }

  const trigger = state.pendingLlmRequestTrigger;
  if (trigger === null) {
    why.push({ rule: "no-trigger" });
  } else if (state.paused !== null && trigger.source === "external") {
    appends.push([
      eventInput("agent/resumed", { reason: "external input" }, idempotencyKeys.resume(trigger.offset)),
    ]);
    why.push({ rule: "resume", triggerOffset: trigger.offset });
  } else if (state.paused !== null) {
    why.push({ rule: "paused", triggerOffset: trigger.offset, ...(state.paused.reason === undefined ? {} : { reason: state.paused.reason }) });
  } else if (open !== null) {
    why.push({ rule: "after-open-request", triggerOffset: trigger.offset, requestOffset: open.requestedAtOffset });
  } else if (trigger.source === "agent-loop" && state.autonomousTurnCount >= state.config.maxAutonomousTurns) {
    appends.push([breakerPause(state, trigger)]);
    why.push({ rule: "breaker", triggerOffset: trigger.offset, autonomousTurns: state.autonomousTurnCount, maxAutonomousTurns: state.config.maxAutonomousTurns });
  } else {
    const dueAtMs = requestDueAtMs(state, trigger);
    const due = nowMs >= dueAtMs;
    if (due) appends.push([requestInput(state, trigger)]);
    else wakes.push(dueAtMs);
    why.push({
      rule: due ? "turn-due" : "turn-waits",
      triggerOffset: trigger.offset,
      debounceMs: state.config.llmRequestDebounceMs,
      birthHold: inBirthHold(state),
      backoffMs: backoffMs(state),
      consecutiveFailures: state.consecutiveLlmFailures,
      dueAt: new Date(dueAtMs).toISOString(),
    });
  }

  const future = wakes.filter((t) => t > nowMs);
  return { appends, wakeAtMs: future.length > 0 ? Math.min(...future) : null, adopt, why };
}

/** The birth window's long debounce still applies: nothing has configured the agent since create(). */
export function inBirthHold(state: ReactionState): boolean {
  return state.config.llmRequestDebounceMs === BIRTH_WINDOW_DEBOUNCE_MS && state.lastLlmRequestOffset === 0;
}

/** Debounce plus exponential backoff after failures, capped. */
export function backoffMs(state: ReactionState): number {
  const failures = state.consecutiveLlmFailures;
  if (failures <= 0) return 0;
  const { backoffBaseMs, backoffMaxMs } = state.config.llmRequestRetryPolicy;
  return Math.min(2 ** (failures - 1) * backoffBaseMs, backoffMaxMs);
}

export function requestDueAtMs(state: ReactionState, trigger: PendingTrigger): number {
  return trigger.atMs + state.config.llmRequestDebounceMs + backoffMs(state);
}

function requestInput(state: ReactionState, trigger: PendingTrigger): EventInput {
  const expiresAt = new Date(trigger.atMs + state.config.llmRequestExpiryMs).toISOString();
  return eventInput(
    "agent/llm-request-requested",
    { model: state.config.llm.model, expiresAt, contractVersion: CONTRACT_VERSION },
    idempotencyKeys.request(trigger.offset),
  );
}

function breakerPause(state: ReactionState, trigger: PendingTrigger): EventInput {
  const reason = `autonomous turn limit reached (${state.autonomousTurnCount} consecutive turns without external input)`;
  return eventInput("agent/paused", { reason, triggerOffset: trigger.offset }, idempotencyKeys.pause(trigger.offset));
}

/** The two events that cancel a request that can no longer run in time. */
export function expiryBatch(requestOffset: number): EventInput[] {
  return [
    eventInput(
      "agent/llm-request-settled",
      { requestOffset, result: { status: "cancelled", reason: "expired" } },
      idempotencyKeys.settle(requestOffset),
    ),
    eventInput(
      "stream/error-occurred",
      {
        message: `LLM request @${requestOffset} expired before it ran; the pending turn was dropped. A new message starts fresh.`,
      },
      idempotencyKeys.expiryError(requestOffset),
    ),
  ];
}

function isRunning(running: HeadDecisionInput["runningRequestOffsets"], offset: number): boolean {
  if (running === undefined) return false;
  return Array.isArray(running) ? running.includes(offset) : (running as ReadonlySet<number>).has(offset);
}

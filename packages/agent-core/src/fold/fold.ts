// The agent fold: one pure function from (state, event) to state, shared by every service
// that needs agent state (contract.md "The agent state"). Events arrive already parsed
// (`parseStoredEvent`); the fold still never throws, because a crashing fold would wedge a
// stream forever.

import {
  type AgentEvent,
  type AgentEventOf,
  DEFAULT_AGENT_CONFIG,
  assertNever,
  isEphemeralType,
  mergeAgentConfig,
} from "@agentrt/contract";
import type { AgentState, ReactionState } from "../state.ts";
import { addKeyedItem, addMessage, compact, isCompaction, isZombieOutput, rewrite } from "./context-items.ts";
import { type Draft, finishDraft, reactionView, startDraft, writableItems } from "./draft.ts";
import { foldScriptRequested, foldScriptSettled, foldSummary, foldTokenUsage } from "./bookkeeping.ts";
import { epochMs, triggerSourceOf } from "./triggers.ts";

export function initialAgentState(streamPath: string): AgentState {
  return {
    streamPath,
    lastFoldedOffset: 0,
    lastFoldedAtMs: 0,
    birthCertificate: null,
    config: DEFAULT_AGENT_CONFIG,
    contextItems: [],
    contextRevision: 0,
    lastLlmRequestOffset: 0,
    latestExternalTriggerOffset: 0,
    pendingLlmRequestTrigger: null,
    openRequest: null,
    consecutiveLlmFailures: 0,
    paused: null,
    autonomousTurnCount: 0,
    activeScriptExecutions: [],
    summary: {},
    tokenUsage: { totalInputTokens: 0, totalOutputTokens: 0, totalCachedInputTokens: 0, totalReasoningOutputTokens: 0 },
  };
}

export function foldAgentEvent(state: AgentState, event: AgentEvent): AgentState {
  const draft = startDraft(state);
  applyEvent(draft, event);
  return finishDraft(draft);
}

/** Folds many events through one draft: linear in the number of events. */
export function foldAgentEvents(state: AgentState, events: Iterable<AgentEvent>): AgentState {
  const draft = startDraft(state);
  for (const event of events) applyEvent(draft, event);
  return finishDraft(draft);
}

/**
 * The fold for a consumer that goes event by event and reacts to each (the reducer, the audit):
 * one draft between events, so each event costs what its rule costs. `foldAgentEvent` per event
 * copies the context on each one's first write: quadratic in the stream, and 40 000 messages
 * held the reducer's event loop for 17 s (red-team, 2026-12-07). `state` publishes what is folded
 * so far (the context is copied once, at the next write after it); `apply` answers the states
 * around the event without their context, which no reaction reads.
 */
export class StepwiseFold {
  private readonly draft: Draft;
  private published: AgentState | undefined;
  private current: ReactionState;

  constructor(state: AgentState) {
    this.draft = startDraft(state);
    this.published = state;
    this.current = reactionView(this.draft);
  }

  /** The state folded so far without its context (nothing is published or copied). */
  get view(): ReactionState {
    return this.current;
  }

  /** The state folded so far. */
  get state(): AgentState {
    if (this.published === undefined) {
      this.published = finishDraft(this.draft);
      // Shared with the published state now: the next write copies them.
      this.draft.itemsOwned = false;
    }
    return this.published;
  }

  /** Folds one event; answers the state before and after it, without the context. */
  apply(event: AgentEvent): { readonly before: ReactionState; readonly after: ReactionState } {
    const before = this.current;
    applyEvent(this.draft, event);
    this.published = undefined;
    this.current = reactionView(this.draft);
    return { before, after: this.current };
  }
}

function applyEvent(draft: Draft, event: AgentEvent): void {
  // Live-lane events are not part of the durable log and change nothing.
  if (event.ephemeral === true || isEphemeralType(event.type)) return;
  try {
    foldByType(draft, event);
  } catch {
    // A payload that slipped past validation must not wedge the stream: skip the event.
  }
  draft.lastFoldedOffset = Math.max(draft.lastFoldedOffset, event.offset);
  draft.lastFoldedAtMs = epochMs(event.createdAt) || draft.lastFoldedAtMs;
}

function foldByType(draft: Draft, event: AgentEvent): void {
  switch (event.type) {
    case "agent/created":
      if (draft.birthCertificate === null) draft.birthCertificate = { createdAtOffset: event.offset };
      return;
    case "agent/configured": {
      const merged = mergeAgentConfig(draft.config, event.payload.config);
      if (merged !== null) draft.config = merged;
      return;
    }
    case "agents/context-added":
      return foldContextAdded(draft, event);
    case "agents/context-rewritten":
      return rewrite(draft, event);
    case "agent/llm-request-requested":
      return foldRequested(draft, event);
    case "agent/llm-request-settled":
      return foldSettled(draft, event);
    case "agent/token-usage-reported":
      return foldTokenUsage(draft, event);
    case "agent/summary-updated":
      return foldSummary(draft, event);
    case "agent/paused":
      return foldPaused(draft, event);
    case "agent/resumed":
      return foldResumed(draft, event);
    case "capability-host/script-run-requested":
      return foldScriptRequested(draft, event);
    case "capability-host/script-run-settled":
      return foldScriptSettled(draft, event);
    case "agent/binding-set":
    case "agents/web-message-sent":
    case "agent/llm-response-chunks":
    case "agent/runtime-changed":
    case "capability-host/script-run-started":
    case "capability-host/preamble-set":
    case "capability-host/preamble-removed":
    case "stream/error-occurred":
    case "render/message-delta":
    case "render/script-delta":
      return;
    default:
      assertNever(event, "event type");
  }
}

function foldContextAdded(draft: Draft, event: AgentEventOf<"agents/context-added">): void {
  const payload = event.payload;
  if (isCompaction(event)) compact(draft, event);
  else if (isZombieOutput(draft, payload)) return;
  else if (payload.key !== undefined) addKeyedItem(draft, event, payload.key);
  else addMessage(draft, event);

  const source = triggerSourceOf(payload);
  if (source === null) return;
  draft.pendingLlmRequestTrigger = { offset: event.offset, atMs: epochMs(event.createdAt), source };
  if (source === "external") {
    draft.autonomousTurnCount = 0;
    draft.consecutiveLlmFailures = 0;
    draft.latestExternalTriggerOffset = event.offset;
  }
}

function foldRequested(draft: Draft, event: AgentEventOf<"agent/llm-request-requested">): void {
  const trigger = draft.pendingLlmRequestTrigger;
  // A late or duplicate intent is a harmless stream fact: no stamp, no state change.
  if (trigger === null || draft.openRequest !== null || draft.paused !== null) return;
  draft.pendingLlmRequestTrigger = null;
  draft.openRequest = { requestedAtOffset: event.offset, expiresAt: event.payload.expiresAt, model: event.payload.model };
  draft.lastLlmRequestOffset = event.offset;
  writableItems(draft).push({ kind: "request", offset: event.offset, requestedAt: event.createdAt });
  if (trigger.source === "agent-loop") draft.autonomousTurnCount += 1;
}

function foldSettled(draft: Draft, event: AgentEventOf<"agent/llm-request-settled">): void {
  if (draft.openRequest?.requestedAtOffset !== event.payload.requestOffset) return;
  draft.openRequest = null;
  const result = event.payload.result;
  if (result.status === "succeeded") {
    draft.consecutiveLlmFailures = 0;
  } else if (result.status === "failed") {
    draft.consecutiveLlmFailures += 1;
    if (draft.consecutiveLlmFailures < draft.config.llmRequestRetryPolicy.maxAttempts) {
      draft.pendingLlmRequestTrigger = { offset: event.offset, atMs: epochMs(event.createdAt), source: "agent-loop" };
    }
  }
}

function foldPaused(draft: Draft, event: AgentEventOf<"agent/paused">): void {
  const { reason, triggerOffset } = event.payload;
  // A breaker pause decided before newer external input reduces to nothing.
  if (triggerOffset !== undefined && triggerOffset < draft.latestExternalTriggerOffset) return;
  draft.paused = reason === undefined ? { atOffset: event.offset } : { reason, atOffset: event.offset };
  if (draft.pendingLlmRequestTrigger?.source === "agent-loop") draft.pendingLlmRequestTrigger = null;
}

function foldResumed(draft: Draft, event: AgentEventOf<"agent/resumed">): void {
  draft.paused = null;
  draft.autonomousTurnCount = 0;
  const trigger = draft.pendingLlmRequestTrigger;
  if (trigger !== null) {
    // A fresh anchor: new debounce, new expiry, and a new request idempotency key.
    draft.pendingLlmRequestTrigger = { offset: event.offset, atMs: epochMs(event.createdAt), source: trigger.source };
  }
}

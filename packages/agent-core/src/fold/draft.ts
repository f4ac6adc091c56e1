// A mutable working copy of the agent state used inside the fold. States handed out are never
// mutated: a draft copies `contextItems` on its first write (copy-on-write), and folding many
// events through one draft appends in place, so replaying a long stream stays linear.

import type { AgentState, ContextItem, ReactionState } from "../state.ts";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export interface Draft extends Omit<Mutable<AgentState>, "contextItems"> {
  items: ContextItem[];
  /** True once `items` is a private copy this draft may mutate. */
  itemsOwned: boolean;
  /**
   * Each section key's latest position in `items`, built at a draft's second keyed look-up (a
   * draft folding one event scans once) and kept up as sections are added; dropped when the
   * items are replaced wholesale. Without it every new key scanned the whole context: 40 000
   * keyed sections took 7 s to fold even in one batch (red-team).
   */
  latestByKey?: Map<string, number>;
  /** Keyed look-ups this draft made before it built `latestByKey`. */
  keyedLookups?: number;
}

// The conversions a fold makes per event list every field explicitly: rest/spread copies made
// the live fold's per-event overhead several times the cost of the fold rules themselves.
export function startDraft(state: AgentState): Draft {
  return {
    streamPath: state.streamPath,
    lastFoldedOffset: state.lastFoldedOffset,
    lastFoldedAtMs: state.lastFoldedAtMs,
    birthCertificate: state.birthCertificate,
    config: state.config,
    items: state.contextItems as ContextItem[],
    itemsOwned: false,
    latestByKey: undefined,
    keyedLookups: 0,
    contextRevision: state.contextRevision ?? 0,
    lastLlmRequestOffset: state.lastLlmRequestOffset,
    latestExternalTriggerOffset: state.latestExternalTriggerOffset,
    pendingLlmRequestTrigger: state.pendingLlmRequestTrigger,
    openRequest: state.openRequest,
    consecutiveLlmFailures: state.consecutiveLlmFailures,
    paused: state.paused,
    autonomousTurnCount: state.autonomousTurnCount,
    activeScriptExecutions: state.activeScriptExecutions,
    summary: state.summary,
    tokenUsage: state.tokenUsage,
  };
}

/** The draft's items, copied first if they are still shared with a published state. */
export function writableItems(draft: Draft): ContextItem[] {
  if (!draft.itemsOwned) {
    draft.items = draft.items.slice();
    draft.itemsOwned = true;
  }
  return draft.items;
}

/** Replaces the items wholesale (a rebuild); counts as a non-append change. */
export function replaceItems(draft: Draft, items: ContextItem[]): void {
  draft.items = items;
  draft.itemsOwned = true;
  draft.latestByKey = undefined;
  bumpRevision(draft);
}

export function bumpRevision(draft: Draft): void {
  draft.contextRevision = (draft.contextRevision ?? 0) + 1;
}

/**
 * The draft's state without its context, for reactions: nothing of it is shared with the draft
 * that a later event changes in place.
 */
export function reactionView(draft: Draft): ReactionState {
  return {
    streamPath: draft.streamPath,
    lastFoldedOffset: draft.lastFoldedOffset,
    lastFoldedAtMs: draft.lastFoldedAtMs,
    birthCertificate: draft.birthCertificate,
    config: draft.config,
    contextRevision: draft.contextRevision ?? 0,
    lastLlmRequestOffset: draft.lastLlmRequestOffset,
    latestExternalTriggerOffset: draft.latestExternalTriggerOffset,
    pendingLlmRequestTrigger: draft.pendingLlmRequestTrigger,
    openRequest: draft.openRequest,
    consecutiveLlmFailures: draft.consecutiveLlmFailures,
    paused: draft.paused,
    autonomousTurnCount: draft.autonomousTurnCount,
    activeScriptExecutions: draft.activeScriptExecutions,
    summary: draft.summary,
    tokenUsage: draft.tokenUsage,
  };
}

/**
 * Publishes the draft as an immutable state. The draft may go on folding only as a
 * `StepwiseFold` does: its items are shared with the state now, so its next write copies them.
 */
export function finishDraft(draft: Draft): AgentState {
  // Once per published state, not per event: the per-event view above is the hot one.
  return { ...reactionView(draft), contextItems: draft.items };
}

// The fold's bookkeeping rules: token tallies, the human-readable summary, and the agent's
// own running scripts. None of them touch the context the model sees.

import type { AgentEventOf } from "@agentrt/contract";
import type { AgentSummary } from "../state.ts";
import type { Draft } from "./draft.ts";

export function foldTokenUsage(draft: Draft, event: AgentEventOf<"agent/token-usage-reported">): void {
  const p = event.payload;
  const t = draft.tokenUsage;
  draft.tokenUsage = {
    totalInputTokens: t.totalInputTokens + (p.inputTokens ?? 0),
    totalOutputTokens: t.totalOutputTokens + (p.outputTokens ?? 0),
    totalCachedInputTokens: t.totalCachedInputTokens + (p.cachedInputTokens ?? 0),
    totalReasoningOutputTokens: t.totalReasoningOutputTokens + (p.reasoningOutputTokens ?? 0),
  };
}

const SUMMARY_FIELDS = ["title", "description", "activity", "waitingFor", "pinned"] as const;

export function foldSummary(draft: Draft, event: AgentEventOf<"agent/summary-updated">): void {
  const payload = event.payload;
  const current = draft.summary;
  if ("clearWaitingForThroughOffset" in payload) {
    // The reducer's own clear only ends a wait established at or before the waking input.
    const since = current.waitingForSinceOffset;
    if (current.waitingFor === undefined || since === undefined || since > payload.clearWaitingForThroughOffset) return;
    draft.summary = withoutWait(current);
    return;
  }
  const next: Record<string, unknown> = { ...current };
  let changed = false;
  for (const field of SUMMARY_FIELDS) {
    if (!(field in payload)) continue;
    const value = (payload as Record<string, unknown>)[field];
    if (value === undefined) continue;
    if (value === null) {
      if (field in next) {
        delete next[field];
        changed = true;
      }
    } else if (next[field] !== value) {
      next[field] = value;
      changed = true;
    }
  }
  if (!changed) return;
  if (next.waitingFor === undefined) delete next.waitingForSinceOffset;
  else if (next.waitingFor !== current.waitingFor) next.waitingForSinceOffset = event.offset;
  draft.summary = next as AgentSummary;
}

function withoutWait(summary: AgentSummary): AgentSummary {
  const { waitingFor: _w, waitingForSinceOffset: _s, ...rest } = summary;
  return rest;
}

/** Only the agent's own scripts count: those it asked for in a reply or a slash command. */
export function isAgentExecution(executionId: string): boolean {
  return executionId.startsWith("agent-output:") || executionId.startsWith("slash-command:");
}

export function foldScriptRequested(draft: Draft, event: AgentEventOf<"capability-host/script-run-requested">): void {
  const { executionId } = event.payload;
  if (!isAgentExecution(executionId)) return;
  if (draft.activeScriptExecutions.some((e) => e.executionId === executionId)) return;
  draft.activeScriptExecutions = [
    ...draft.activeScriptExecutions,
    { executionId, requestedAt: event.createdAt, requestedOffset: event.offset },
  ];
}

export function foldScriptSettled(draft: Draft, event: AgentEventOf<"capability-host/script-run-settled">): void {
  const { executionId } = event.payload;
  if (!draft.activeScriptExecutions.some((e) => e.executionId === executionId)) return;
  draft.activeScriptExecutions = draft.activeScriptExecutions.filter((e) => e.executionId !== executionId);
}

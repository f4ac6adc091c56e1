// The agent's runtime summary for live UIs: is a turn pending, can it run, is a request open,
// how many of the agent's scripts are running. Published on the live lane when it changes.

import { idempotencyKeys, type AgentEvent, type EventInput, eventInput } from "@agentrt/contract";
import type { ReactionState } from "./state.ts";

export interface AgentRuntime {
  readonly triggers: { readonly pending: number; readonly runnable: number };
  readonly llmRequests: { readonly requested: 0 | 1 };
  readonly runningScripts: number;
}

export function computeRuntime(state: ReactionState): AgentRuntime {
  const pending = state.pendingLlmRequestTrigger === null ? 0 : 1;
  const runnable = pending === 1 && state.openRequest === null && state.paused === null ? 1 : 0;
  return {
    triggers: { pending, runnable },
    llmRequests: { requested: state.openRequest === null ? 0 : 1 },
    runningScripts: state.activeScriptExecutions.length,
  };
}

export function sameRuntime(a: AgentRuntime, b: AgentRuntime): boolean {
  return (
    a.triggers.pending === b.triggers.pending &&
    a.triggers.runnable === b.triggers.runnable &&
    a.llmRequests.requested === b.llmRequests.requested &&
    a.runningScripts === b.runningScripts
  );
}

/** The ephemeral `agent/runtime-changed` for this event, or null when nothing changed. */
export function runtimeChangedInput(
  before: ReactionState,
  event: AgentEvent,
  after: ReactionState,
): { runtime: AgentRuntime; input: EventInput | null } {
  const runtime = computeRuntime(after);
  if (sameRuntime(computeRuntime(before), runtime)) return { runtime, input: null };
  const input: EventInput = {
    ...eventInput(
      "agent/runtime-changed",
      { runtime, sinceOffset: event.offset, since: event.createdAt },
      idempotencyKeys.runtimeChanged(event.offset),
    ),
    ephemeral: true,
  };
  return { runtime, input };
}

// The reducer's view of the pure core: one place that maps @agentrt/agent-core's fold,
// reactions and head decisions onto what the stream processor needs.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import {
  type AgentRuntime,
  type AgentState,
  computeRuntime,
  decideAtHead,
  foldAgentEvent,
  initialAgentState,
  interruptBatch,
  reactToEvent,
} from "@agentrt/agent-core";

export const newState = (streamPath: string): AgentState => initialAgentState(streamPath);

export const fold = (state: AgentState, event: AgentEvent): AgentState => foldAgentEvent(state, event);

export interface Reaction {
  readonly batches: EventInput[][];
  readonly interruptRequestOffset?: number;
}

export function react(before: AgentState, event: AgentEvent, after: AgentState): Reaction {
  const reaction = reactToEvent(before, event, after);
  return reaction.interrupt === null
    ? { batches: reaction.appends }
    : { batches: reaction.appends, interruptRequestOffset: reaction.interrupt.requestOffset };
}

export interface Decision {
  readonly batches: EventInput[][];
  readonly wakeAtMs?: number;
}

export function decide(state: AgentState, nowMs: number): Decision {
  // The reducer drives no request itself: an open request is always "adopted" (handed to the
  // work queue, deduplicated there) and expired by the clock when nobody settles it.
  const decision = decideAtHead(state, { nowMs });
  return decision.wakeAtMs === null ? { batches: decision.appends } : { batches: decision.appends, wakeAtMs: decision.wakeAtMs };
}

export const runtimeOf = (state: AgentState): AgentRuntime => computeRuntime(state);

export const interruptEvents = (requestOffset: number, partialText: string | undefined): EventInput[] =>
  interruptBatch(requestOffset, partialText);

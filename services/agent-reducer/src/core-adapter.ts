// The reducer's view of the pure core: one place that maps @agentrt/agent-core's fold,
// reactions and head decisions onto what the stream processor needs.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import {
  type AgentRuntime,
  type LiveDialect,
  type AgentState,
  computeRuntime,
  decideAtHead,
  foldAgentEvent,
  initialAgentState,
  interruptBatch,
  type ProjectWorkerTexts,
  projectWorkerReactions,
  reactToEvent,
} from "@agentrt/agent-core";

export const newState = (streamPath: string): AgentState => initialAgentState(streamPath);

export const fold = (state: AgentState, event: AgentEvent): AgentState => foldAgentEvent(state, event);

export interface Reaction {
  readonly batches: EventInput[][];
  readonly interruptRequestOffset?: number;
}

/**
 * The project worker runs inside the reducer process. Its birth reaction is for agents born
 * into a project (`agent/created` carrying `project`, as the gateway's create() writes it);
 * an agent created bare keeps the 60 s birth window and the defaults, as the contract says.
 * Its tag-dialect interpreter follows the contract's own switch, `interpretResponses: false`.
 */
export interface ProjectWorkerOptions {
  readonly enabled: boolean;
  readonly texts?: ProjectWorkerTexts;
}

export function react(before: AgentState, event: AgentEvent, after: AgentState, worker: ProjectWorkerOptions = { enabled: true }): Reaction {
  // A stream that was never born is not an agent: nothing is transcribed, mirrored or
  // interpreted into it (the birth certificate itself is the one event reacted to).
  if (before.birthCertificate === null && event.type !== "agent/created") return { batches: [] };
  const reaction = reactToEvent(before, event, after, { interpreters: { codemode: true, projectWorker: false } });
  const batches = [...reaction.appends];
  if (worker.enabled && (event.type !== "agent/created" || bornIntoProject(event))) {
    batches.push(...projectWorkerReactions(before, event, worker.texts));
  }
  return reaction.interrupt === null ? { batches } : { batches, interruptRequestOffset: reaction.interrupt.requestOffset };
}

function bornIntoProject(event: AgentEvent): boolean {
  return event.type === "agent/created" && typeof event.payload.project === "object" && event.payload.project !== null;
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

/**
 * Which reply dialect to preview on the live lane, if any: the one that will interpret the
 * reply (fenced while `interpretResponses` is on; tag when the project worker interprets).
 */
export function liveDialect(state: AgentState, worker: ProjectWorkerOptions = { enabled: true }): LiveDialect | undefined {
  if (state.birthCertificate === null) return undefined;
  if (state.config.interpretResponses) return "fenced";
  return worker.enabled ? "tag" : undefined;
}

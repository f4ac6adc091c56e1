// Given / when / then for the pure core, in the style of emmett's DeciderSpecification:
// given the events already on a stream, when one more event is folded (or the reducer looks
// at the head at some time), then check the state, the per-event reaction or the decision.
// Reactions run under the production reaction policy, the one the reducer and replay use.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import {
  type AgentState,
  type EventReaction,
  type HeadDecision,
  decideAtHead,
  foldAgentEvent,
  initialAgentState,
  PRODUCTION_REACTION_POLICY,
  reactToEvent,
} from "../../src/index.ts";
import { PATH } from "./stream.ts";

export interface WhenResult {
  readonly before: AgentState;
  readonly state: AgentState;
  readonly reaction: EventReaction;
  /** Every event the reaction appends, flattened in order. */
  readonly appended: EventInput[];
}

export interface Given {
  readonly state: AgentState;
  when(event: AgentEvent): { then(check: (result: WhenResult) => void): WhenResult };
  atHead(
    nowMs: number,
    runningRequestOffsets?: readonly number[],
  ): { then(check: (decision: HeadDecision) => void): HeadDecision };
}

/** Folds `events` in order (one at a time, as the live reducer does). */
export function given(...events: AgentEvent[]): Given {
  let state = initialAgentState(PATH);
  for (const event of events) state = foldAgentEvent(state, event);
  const frozen = state;
  return {
    state: frozen,
    when(event) {
      const after = foldAgentEvent(frozen, event);
      const reaction = reactToEvent(frozen, event, after, PRODUCTION_REACTION_POLICY);
      const result: WhenResult = { before: frozen, state: after, reaction, appended: reaction.appends.flat() };
      return {
        then(check) {
          check(result);
          return result;
        },
      };
    },
    atHead(nowMs, runningRequestOffsets) {
      const decision = decideAtHead(frozen, { nowMs, runningRequestOffsets });
      return {
        then(check) {
          check(decision);
          return decision;
        },
      };
    },
  };
}

/** The events of a decision's first batch, for specs that expect exactly one. */
export function onlyBatch(decision: HeadDecision): EventInput[] {
  if (decision.appends.length !== 1) {
    throw new Error(`expected exactly one batch, got ${decision.appends.length}: ${JSON.stringify(decision.appends)}`);
  }
  return decision.appends[0] as EventInput[];
}

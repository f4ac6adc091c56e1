// Wires the pure agent core (@agentrt/agent-core) into the gateway's AgentCorePort: the same
// fold the reducer runs gives the state, the list summaries and, folded through a request's
// offset, the exact messages the driver rendered for it.

import { agentTitle, auditAgentStream, foldAgentEvent, initialAgentState, type AgentState } from "@agentrt/agent-core";
import type { AgentEvent, EventInput } from "@agentrt/contract";
import type { AgentCorePort, BirthInput, RenderedMessage } from "./agent-core-port.ts";

export interface CoreFunctions {
  /** The driver's renderer: the messages of the request state was folded through. */
  readonly renderRequest: (state: AgentState, request: AgentEvent) => RenderedMessage[];
  readonly birthBatch: (input: BirthInput) => EventInput[];
}

export function agentCoreAdapter(fns: CoreFunctions): AgentCorePort<AgentState> {
  return {
    initialState: initialAgentState,
    foldEvent: foldAgentEvent,
    view: (state) => ({
      title: agentTitle(state),
      activity: state.summary.activity ?? null,
      waitingFor: state.summary.waitingFor ?? null,
      openRequestOffset: state.openRequest?.requestedAtOffset ?? null,
      paused: state.paused !== null,
    }),
    toJson: (state) => JSON.parse(JSON.stringify(state)) as Record<string, unknown>,
    renderRequest: fns.renderRequest,
    birthBatch: fns.birthBatch,
    audit: (events, nowMs) => auditAgentStream(events, { nowMs }),
  };
}

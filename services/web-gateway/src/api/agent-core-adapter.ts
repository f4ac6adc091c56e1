// Wires the pure agent core (@agentrt/agent-core) into the gateway's AgentCorePort: the same
// fold the reducer runs gives the state, the list summaries and, folded through a request's
// offset, the exact messages the driver rendered for it.

import { agentTitle, foldAgentEvents, initialAgentState, StreamAudit, type AgentState } from "@agentrt/agent-core";
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
    foldEvents: foldAgentEvents,
    view: (state) => ({
      title: agentTitle(state),
      activity: state.summary.activity ?? null,
      waitingFor: state.summary.waitingFor ?? null,
      openRequestOffset: state.openRequest?.requestedAtOffset ?? null,
      paused: state.paused !== null,
    }),
    // Plain data already: the response serialises it once (a copy through a string held two more).
    toJson: (state) => state as unknown as Record<string, unknown>,
    renderRequest: fns.renderRequest,
    birthBatch: fns.birthBatch,
    auditor: (nowMs) => new StreamAudit({ nowMs }),
  };
}

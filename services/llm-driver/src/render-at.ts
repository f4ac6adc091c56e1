// Where the driver meets the pure core: fold the stream through the requested offset R and
// render what the model sees. Folding only events ≤ R makes the prompt a function of the
// stream prefix, so a retry or a successor driver sends byte-identical messages.

import { foldAgentEvents, initialAgentState, renderRequest, type AgentState } from "@agentrt/agent-core";
import type { AgentEvent } from "@agentrt/contract";
import type { RenderedMessage } from "./model-client.ts";

export type RequestStatus =
  | { readonly kind: "open"; readonly state: AgentState }
  | { readonly kind: "settled" }
  | { readonly kind: "not-open"; readonly reason: string }
  /**
   * The read ended before R: a read that lags the work item (a cache or a follower behind the
   * leader after a failover) proves nothing about R, so the item must be tried again later,
   * never acked — an acked item is the request's only hand-off until it expires.
   */
  | { readonly kind: "not-visible"; readonly lastOffset: number };

/** Decides from the stream whether request R is still to be driven, and folds through R. */
export function requestStatus(streamPath: string, events: readonly AgentEvent[], requestOffset: number): RequestStatus {
  if (events.some((e) => e.type === "agent/llm-request-settled" && e.payload.requestOffset === requestOffset)) {
    return { kind: "settled" };
  }
  const lastOffset = events.at(-1)?.offset ?? 0;
  if (lastOffset < requestOffset) return { kind: "not-visible", lastOffset };
  const upTo = events.filter((e) => e.offset <= requestOffset);
  if (upTo.at(-1)?.offset !== requestOffset || upTo.at(-1)?.type !== "agent/llm-request-requested") {
    return { kind: "not-open", reason: `offset ${requestOffset} is not an agent/llm-request-requested on the stream` };
  }
  const state = foldAgentEvents(initialAgentState(streamPath), upTo);
  if (state.openRequest?.requestedAtOffset !== requestOffset) {
    return { kind: "not-open", reason: "the fold ignored the request (no trigger pending, another request open, or paused)" };
  }
  return { kind: "open", state };
}

export function renderMessages(state: AgentState): RenderedMessage[] {
  return renderRequest(state);
}

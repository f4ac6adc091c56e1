// "Is this request still open?" and "did the fold accept it?", decided once from the stream:
// the driver asks before it drives a work item, the gateway and `renderRequestAt` before they
// show what a model saw. A request is ACCEPTED when folding the stream through its offset
// leaves it open (the fold ignores a request with no trigger pending, with another one open or
// while the agent is paused: no model ever saw such a request). An accepted request is OPEN
// until a settlement names it, and EXPIRED once the clock passes its `expiresAt` unsettled
// (the reducer then settles it; a driver must not start it).

import type { AgentEvent } from "@agentrt/contract";
import { foldAgentEvents, initialAgentState } from "./fold/fold.ts";
import type { AgentState, OpenRequest } from "./state.ts";

/** Why a requested event was not accepted by the fold, in the words every caller reports. */
export const REQUEST_NOT_ACCEPTED_REASON = "the fold ignored it (no trigger pending, a request already open, or the agent paused)";

/** The request at `requestOffset` as the fold accepted it, given the state folded through it; null when ignored. */
export function acceptedRequest(stateThroughRequest: AgentState, requestOffset: number): OpenRequest | null {
  const open = stateThroughRequest.openRequest;
  return open !== null && open.requestedAtOffset === requestOffset && stateThroughRequest.lastLlmRequestOffset === requestOffset ? open : null;
}

export type RequestStatus =
  /** Accepted, unsettled, not expired: drive it. `state` is folded through the request. */
  | { readonly kind: "open"; readonly state: AgentState; readonly request: OpenRequest }
  /** Accepted and unsettled, but past `expiresAt`: the reducer expires it. */
  | { readonly kind: "expired"; readonly state: AgentState; readonly request: OpenRequest }
  | { readonly kind: "settled" }
  /** No accepted request at that offset (with the reason, for logs and API errors). */
  | { readonly kind: "not-open"; readonly reason: string }
  /**
   * The events end before the request: a read that lags the work item (a cache, or a follower
   * behind the leader after a failover) proves nothing about it, so a driver tries the item
   * again later and never acks it (an acked item is the request's only hand-off until it expires).
   */
  | { readonly kind: "not-visible"; readonly lastOffset: number };

/**
 * Decides from the stream (which may run past the request) what a driver does with request
 * `requestOffset` at `nowMs`. The prompt depends only on the prefix through the request, so a
 * retry or a successor driver renders byte-identical messages. `base`, a state this stream
 * already folded through an earlier offset, lets a caller that serves the same stream turn after
 * turn fold only the events after it (the same state as a fold from scratch); a base past the
 * request is ignored.
 */
export function requestStatus(
  events: readonly AgentEvent[],
  requestOffset: number,
  options: { readonly nowMs: number; readonly streamPath?: string; readonly base?: AgentState },
): RequestStatus {
  const end = endThrough(events, requestOffset);
  for (let i = end; i < events.length; i += 1) {
    const e = events[i] as AgentEvent;
    if (e.type === "agent/llm-request-settled" && e.payload.requestOffset === requestOffset) return { kind: "settled" };
  }
  const lastOffset = events.at(-1)?.offset ?? 0;
  if (lastOffset < requestOffset) return { kind: "not-visible", lastOffset };
  const last = events[end - 1];
  if (last?.offset !== requestOffset || last.type !== "agent/llm-request-requested") {
    return { kind: "not-open", reason: `offset ${requestOffset} is not an agent/llm-request-requested on the stream` };
  }
  const base = options.base;
  const from = base !== undefined && base.lastFoldedOffset <= requestOffset ? base : initialAgentState(options.streamPath ?? last.streamPath);
  const state = foldAgentEvents(from, eventsBetween(events, from.lastFoldedOffset, end));
  const request = acceptedRequest(state, requestOffset);
  if (request === null) return { kind: "not-open", reason: REQUEST_NOT_ACCEPTED_REASON };
  if (Date.parse(request.expiresAt) <= options.nowMs) return { kind: "expired", state, request };
  return { kind: "open", state, request };
}

/** Index just past the last event with offset ≤ `offset` (events are in offset order). */
function endThrough(events: readonly AgentEvent[], offset: number): number {
  let lo = 0;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((events[mid] as AgentEvent).offset <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function* eventsBetween(events: readonly AgentEvent[], after: number, end: number): Generator<AgentEvent> {
  for (let i = endThrough(events, after); i < end; i += 1) yield events[i] as AgentEvent;
}

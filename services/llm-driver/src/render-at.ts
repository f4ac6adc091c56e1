// Where the driver meets the pure core: fold the stream through the requested offset R and
// render what the model sees. Folding only events ≤ R makes the prompt a function of the
// stream prefix, so a retry or a successor driver sends byte-identical messages.
//
// A driver serves the same streams turn after turn, so it keeps, per stream, the state it
// folded through its last request and an incremental renderer: the next request folds and
// renders only the events after the last one (O(new events), not O(stream)). Both give what
// a fold and render from scratch give (the renderer's contract in agent-core); a request
// before the kept state simply starts from scratch.

import { foldAgentEvents, IncrementalRequestRenderer, initialAgentState, type AgentState } from "@agentrt/agent-core";
import type { AgentEvent } from "@agentrt/contract";
import type { RenderedMessage } from "./model-client.ts";

export type RequestStatus =
  | { readonly kind: "open"; readonly state: AgentState }
  | { readonly kind: "settled" }
  | { readonly kind: "not-open"; readonly reason: string };

/** Decides from the stream whether request R is still to be driven, and folds through R (from `base` when given). */
export function requestStatus(streamPath: string, events: readonly AgentEvent[], requestOffset: number, base?: AgentState): RequestStatus {
  const end = endThrough(events, requestOffset);
  for (let i = end; i < events.length; i += 1) {
    const e = events[i] as AgentEvent;
    if (e.type === "agent/llm-request-settled" && e.payload.requestOffset === requestOffset) return { kind: "settled" };
  }
  const last = events[end - 1];
  if (last?.offset !== requestOffset || last.type !== "agent/llm-request-requested") {
    return { kind: "not-open", reason: `offset ${requestOffset} is not an agent/llm-request-requested on the stream` };
  }
  const from = base !== undefined && base.lastFoldedOffset <= requestOffset ? base : initialAgentState(streamPath);
  const state = foldAgentEvents(from, eventsAfter(events, from.lastFoldedOffset, end));
  if (state.openRequest?.requestedAtOffset !== requestOffset) {
    return { kind: "not-open", reason: "the fold ignored the request (no trigger pending, another request open, or paused)" };
  }
  return { kind: "open", state };
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

function* eventsAfter(events: readonly AgentEvent[], after: number, end: number): Generator<AgentEvent> {
  for (let i = endThrough(events, after); i < end; i += 1) yield events[i] as AgentEvent;
}

interface StreamFold {
  state: AgentState;
  renderer: IncrementalRequestRenderer;
}

/** Per stream (least recently used dropped first), the state folded through the last request and its renderer. */
export class RequestFolds {
  private readonly folds = new Map<string, StreamFold>();

  constructor(private readonly maxStreams: number) {}

  status(streamPath: string, events: readonly AgentEvent[], requestOffset: number): RequestStatus {
    const kept = this.folds.get(streamPath);
    return requestStatus(streamPath, events, requestOffset, kept?.state);
  }

  /** Renders an open request's state and keeps it as the stream's base for the next request. */
  render(streamPath: string, state: AgentState): RenderedMessage[] {
    let fold = this.folds.get(streamPath);
    // The renderer takes states in stream order only: an older state gets a fresh one.
    if (fold === undefined || fold.state.lastFoldedOffset > state.lastFoldedOffset) fold = { state, renderer: new IncrementalRequestRenderer() };
    const messages = fold.renderer.render(state);
    fold.state = state;
    this.folds.delete(streamPath);
    this.folds.set(streamPath, fold);
    if (this.folds.size > this.maxStreams) {
      const oldest = this.folds.keys().next().value;
      if (oldest !== undefined) this.folds.delete(oldest);
    }
    return messages;
  }
}

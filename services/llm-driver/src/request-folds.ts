// The driver's fold-and-render through request R, kept per stream. A driver serves the same
// streams turn after turn, so it keeps the state it folded through its last request and an
// incremental renderer: the next request folds and renders only the events after the last one
// (O(new events), not O(stream)). The decision is the core's `requestStatus` (given the kept
// state as its base) and the messages are what a fold and render from scratch give (the
// renderer's contract in agent-core), so a successor with nothing kept sends the same bytes; a
// request before the kept state simply starts from scratch.

import { IncrementalRequestRenderer, requestStatus, type AgentState, type RequestStatus } from "@agentrt/agent-core";
import type { AgentEvent } from "@agentrt/contract";
import type { RenderedMessage } from "./model-client.ts";

interface StreamFold {
  state: AgentState;
  renderer: IncrementalRequestRenderer;
}

/** Per stream (least recently used dropped first), the state folded through the last request and its renderer. */
export class RequestFolds {
  private readonly folds = new Map<string, StreamFold>();

  constructor(private readonly maxStreams: number) {}

  status(streamPath: string, events: readonly AgentEvent[], requestOffset: number, nowMs: number): RequestStatus {
    const kept = this.folds.get(streamPath);
    return requestStatus(events, requestOffset, { nowMs, streamPath, ...(kept === undefined ? {} : { base: kept.state }) });
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

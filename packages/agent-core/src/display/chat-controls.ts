// Which of the chat's controls apply right now (Stop while a request runs, Pause or Resume),
// from the SAME fold the reducer runs: a breaker pause made stale by newer user input, or a
// request settled by expiry, read exactly as the reducer reads them. Events from the wire are
// parsed here (a browser gets JSON), never cast; one that does not parse is skipped.

import { parseStoredEvent } from "@agentrt/contract";
import { initialAgentState, StepwiseFold } from "../fold/fold.ts";
import type { AgentState } from "../state.ts";

export interface ChatControls {
  /** A request is open: Stop interrupts it. */
  readonly requestOpen: boolean;
  /** The agent is paused: Resume (or the user's next message) releases it. */
  readonly paused: boolean;
}

export const chatControls = (state: Pick<AgentState, "openRequest" | "paused">): ChatControls => ({
  requestOpen: state.openRequest !== null,
  paused: state.paused !== null,
});

/**
 * The chat's fold of a stream, event by event from the wire, through one draft (linear in the
 * stream: folding each event into a new state copied the context every time, and a stream of
 * tens of thousands of events took the tab that long squared). Read `fold.view` for the controls.
 */
export const initialChatFold = (streamPath: string): StepwiseFold => new StepwiseFold(initialAgentState(streamPath));

/** Folds one durable event as received over the wire into the chat's fold; one that does not parse changes nothing. */
export function foldWireEventInto(fold: StepwiseFold, raw: unknown): void {
  const parsed = parseStoredEvent(raw);
  if (parsed.ok) fold.apply(parsed.event);
}

// Replay: feed a recorded stream through the pure core and report what the model saw for each
// accepted request and everything the system would append in reaction to each event. This is
// how users inspect a turn and how the scenario fixtures are checked. Reactions are reported,
// not fed back: the recorded stream already holds whatever was appended at the time.
// `decideAt` shows the head decision in time: after folding up to an offset, at a given clock.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { type HeadDecision, decideAtHead } from "./decide.ts";
import { foldAgentEvents, initialAgentState, StepwiseFold } from "./fold/fold.ts";
import { interruptBatch, reactToEvent } from "./react.ts";
import { PRODUCTION_REACTION_POLICY, type ReactionPolicy } from "./reaction-policy.ts";
import { IncrementalRequestRenderer } from "./render/incremental.ts";
import type { ChatMessage } from "./render/items.ts";
import type { AgentState } from "./state.ts";

export const PROTOCOL_PROMPT_PLACEHOLDER = "$PROTOCOL_PROMPT";

export interface ReplayOptions {
  /** Print `$PROTOCOL_PROMPT` instead of the protocol prompt itself. */
  readonly placeholderProtocol?: boolean;
  /** The reaction policy; production's by default, so a replay reports what the reducer appends. */
  readonly policy?: ReactionPolicy;
  /** Also report the live-lane `agent/runtime-changed` transitions. */
  readonly includeRuntime?: boolean;
  readonly streamPath?: string;
}

export interface ReplayedRequest {
  readonly offset: number;
  readonly model: string;
  readonly messages: ChatMessage[];
}

export interface DerivedEvent {
  readonly fromOffset: number;
  readonly type: string;
  readonly payload: unknown;
  readonly idempotencyKey?: string;
}

export interface ReplayResult {
  readonly requests: ReplayedRequest[];
  readonly derived: DerivedEvent[];
  readonly state: AgentState;
}

function derivedFrom(fromOffset: number, input: EventInput): DerivedEvent {
  return {
    fromOffset,
    type: input.type,
    payload: input.payload,
    ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
  };
}

export function replayScenario(events: readonly AgentEvent[], options: ReplayOptions = {}): ReplayResult {
  const streamPath = options.streamPath ?? events[0]?.streamPath ?? "/";
  const renderer = new IncrementalRequestRenderer(
    options.placeholderProtocol === true ? { protocolPrompt: PROTOCOL_PROMPT_PLACEHOLDER } : {},
  );
  const requests: ReplayedRequest[] = [];
  const derived: DerivedEvent[] = [];
  // Event by event through one draft (linear in the stream), the full state published only at requests.
  const fold = new StepwiseFold(initialAgentState(streamPath));
  for (const event of events) {
    const { before, after } = fold.apply(event);
    if (event.type === "agent/llm-request-requested" && before.openRequest === null && after.openRequest?.requestedAtOffset === event.offset) {
      requests.push({ offset: event.offset, model: after.openRequest.model, messages: renderer.render(fold.state) });
    }
    const reaction = reactToEvent(before, event, after, options.policy ?? PRODUCTION_REACTION_POLICY);
    const batches: EventInput[][] = [...reaction.appends];
    // Without a driver to ask there is no partial text: the settlement alone is appended.
    if (reaction.interrupt !== null) batches.push(interruptBatch(reaction.interrupt.requestOffset));
    if (options.includeRuntime === true && reaction.runtimeChanged !== null) batches.push([reaction.runtimeChanged]);
    for (const input of batches.flat()) derived.push(derivedFrom(event.offset, input));
  }
  return { requests, derived, state: fold.state };
}

/** What the head decision does after folding a recorded stream up to an offset, at a time. */
export interface DecisionInTime {
  /** The last offset folded (≤ the one asked for; the stream may have gaps or end before it). */
  readonly foldedThrough: number;
  readonly at: string;
  readonly appends: DerivedEvent[];
  /** When the reducer would decide again, or null when nothing waits on the clock. */
  readonly wakeAt: string | null;
  /** The open request a driver would be handed, if any. */
  readonly adopt: HeadDecision["adopt"];
  readonly why: HeadDecision["why"];
}

/**
 * Folds the events with offsets ≤ `offset` and decides at the head with the clock at `nowMs`,
 * exactly as the reducer does (it drives no request itself, so none counts as running).
 */
export function decideAt(events: readonly AgentEvent[], offset: number, nowMs: number, streamPath?: string): DecisionInTime {
  const upTo = events.filter((e) => e.offset <= offset);
  const state = foldAgentEvents(initialAgentState(streamPath ?? events[0]?.streamPath ?? "/"), upTo);
  const decision = decideAtHead(state, { nowMs });
  return {
    foldedThrough: state.lastFoldedOffset,
    at: new Date(nowMs).toISOString(),
    appends: decision.appends.flat().map((input) => derivedFrom(state.lastFoldedOffset, input)),
    wakeAt: decision.wakeAtMs === null ? null : new Date(decision.wakeAtMs).toISOString(),
    adopt: decision.adopt,
    why: decision.why,
  };
}

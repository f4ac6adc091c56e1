// The request renderer (rendering.md): the folded context items become the `messages` of a
// chat request. A pure function of the stream up to the request's offset, so a retry or a
// successor driver sends byte-identical messages.

import { type AgentEvent, AgentRuntimeError } from "@agentrt/contract";
import { foldAgentEvents, initialAgentState } from "../fold/fold.ts";
import type { AgentState, ContextItem, SectionItem } from "../state.ts";
import { acceptedRequest, REQUEST_NOT_ACCEPTED_REASON } from "../request-status.ts";
import { type ChatMessage, renderTailItem, sectionBlock } from "./items.ts";
import { PROTOCOL_PROMPT } from "./protocol-prompt.ts";

export interface RenderOptions {
  /** Replaces the protocol prompt (the replay CLI prints a placeholder). */
  readonly protocolPrompt?: string;
}

/** Number of leading items that form the standing document. */
export function standingDocumentLength(items: readonly ContextItem[], from = 0): number {
  let i = from;
  while (i < items.length) {
    const item = items[i] as ContextItem;
    if (item.kind !== "section" || item.supersedes !== undefined) break;
    i += 1;
  }
  return i;
}

export function renderStandingDocument(sections: readonly ContextItem[]): string {
  return sections.map((s) => sectionBlock(s as SectionItem, false)).join("\n\n");
}

export function renderRequest(state: AgentState, options: RenderOptions = {}): ChatMessage[] {
  const items = state.contextItems;
  const standing = standingDocumentLength(items);
  const messages: ChatMessage[] = [
    { role: "system", content: options.protocolPrompt ?? PROTOCOL_PROMPT },
    { role: "system", content: renderStandingDocument(items.slice(0, standing)) },
  ];
  for (let i = standing; i < items.length; i += 1) messages.push(renderTailItem(items[i] as ContextItem));
  return messages;
}

/** Thrown when asked to render a request the fold did not accept (it carries no stamp). */
export class RequestNotRenderableError extends AgentRuntimeError {
  constructor(streamPath: string, requestOffset: number) {
    super(
      "not_found",
      `No accepted agent/llm-request-requested at offset ${requestOffset} on ${streamPath}: ${REQUEST_NOT_ACCEPTED_REASON}, or the events do not reach it.`,
      { details: { streamPath, requestOffset } },
    );
  }
}

/**
 * Renders the request at offset R by folding the stream up to and including R. `events` may
 * run past R; later events are ignored.
 */
export function renderRequestAt(
  events: readonly AgentEvent[],
  requestOffset: number,
  options: RenderOptions & { streamPath?: string } = {},
): ChatMessage[] {
  const streamPath = options.streamPath ?? events[0]?.streamPath ?? "/";
  const upTo = events.filter((e) => e.offset <= requestOffset);
  const state = foldAgentEvents(initialAgentState(streamPath), upTo);
  if (acceptedRequest(state, requestOffset) === null) {
    throw new RequestNotRenderableError(streamPath, requestOffset);
  }
  return renderRequest(state, options);
}

// Incremental rendering: request N+1 costs O(new events), not O(stream). Between two requests
// a stream normally only grows at the tail (stamps are permanent, sent sections are
// superseded at the tail), so the renderer keeps the messages it produced last time and
// renders only the new items. Anything else (in-place coalesce, rewrite, compaction) bumps
// the state's `contextRevision`, and the renderer rebuilds from a per-item cache.

import type { AgentEvent } from "@agentrt/contract";
import { foldAgentEvents, initialAgentState } from "../fold/fold.ts";
import type { AgentState, ContextItem, SectionItem } from "../state.ts";
import { type ChatMessage, renderTailItem, sectionBlock } from "./items.ts";
import { PROTOCOL_PROMPT } from "./protocol-prompt.ts";
import { type RenderOptions, RequestNotRenderableError, standingDocumentLength } from "./render.ts";

/**
 * Renders successive states of ONE stream. Byte-identical to `renderRequest` for every state;
 * only the cost differs. Feed it states in stream order.
 */
export class IncrementalRequestRenderer {
  private readonly tailCache = new WeakMap<ContextItem, ChatMessage>();
  private messages: ChatMessage[] = [];
  private revision = -1;
  private count = 0;
  private lastItem: ContextItem | undefined;
  private standing = 0;
  private standingText = "";
  /** Items rendered by the last call (0 after a pure extension with nothing new). */
  lastRenderedItems = 0;

  constructor(private readonly options: RenderOptions = {}) {}

  render(state: AgentState): ChatMessage[] {
    const items = state.contextItems;
    const revision = state.contextRevision ?? 0;
    const extends_ =
      revision === this.revision &&
      items.length >= this.count &&
      (this.count === 0 || items[this.count - 1] === this.lastItem);
    if (extends_) this.extend(items);
    else this.rebuild(items);
    this.revision = revision;
    this.count = items.length;
    this.lastItem = items[items.length - 1];
    return this.messages.slice();
  }

  private rebuild(items: readonly ContextItem[]): void {
    this.standing = 0;
    this.standingText = "";
    this.messages = [
      { role: "system", content: this.options.protocolPrompt ?? PROTOCOL_PROMPT },
      { role: "system", content: "" },
    ];
    this.count = 0;
    this.lastRenderedItems = 0;
    this.extend(items);
  }

  private extend(items: readonly ContextItem[]): void {
    let from = this.count;
    this.lastRenderedItems = items.length - from;
    if (this.standing === this.count) {
      // The standing document is still open: new leading sections join it.
      const end = standingDocumentLength(items, this.standing);
      if (end > this.standing) {
        const blocks = items.slice(this.standing, end).map((s) => sectionBlock(s as SectionItem, false));
        this.standingText = [...(this.standing > 0 ? [this.standingText] : []), ...blocks].join("\n\n");
        this.standing = end;
        this.messages[1] = { role: "system", content: this.standingText };
      }
      from = Math.max(from, end);
    }
    for (let i = from; i < items.length; i += 1) this.messages.push(this.renderCached(items[i] as ContextItem));
  }

  private renderCached(item: ContextItem): ChatMessage {
    let message = this.tailCache.get(item);
    if (message === undefined) {
      message = renderTailItem(item);
      this.tailCache.set(item, message);
    }
    return message;
  }
}

/**
 * What a driver keeps per stream: the folded state and an incremental renderer. Rendering
 * request R folds only the events after the last one it saw, up to and including R.
 */
export class StreamRequestRenderer {
  private current: AgentState;
  private readonly renderer: IncrementalRequestRenderer;

  constructor(streamPath: string, options: RenderOptions = {}) {
    this.current = initialAgentState(streamPath);
    this.renderer = new IncrementalRequestRenderer(options);
  }

  get state(): AgentState {
    return this.current;
  }

  /** Whether this renderer can still render R (it never folded past it). */
  canRender(requestOffset: number): boolean {
    return this.current.lastFoldedOffset <= requestOffset;
  }

  /** `events` may overlap what was already folded or run past R; both are skipped. */
  renderAt(events: readonly AgentEvent[], requestOffset: number): ChatMessage[] {
    const from = this.current.lastFoldedOffset;
    if (from > requestOffset) throw new RequestNotRenderableError(this.current.streamPath, requestOffset);
    const fresh = events.filter((e) => e.offset > from && e.offset <= requestOffset);
    this.current = foldAgentEvents(this.current, fresh);
    if (this.current.openRequest?.requestedAtOffset !== requestOffset) {
      throw new RequestNotRenderableError(this.current.streamPath, requestOffset);
    }
    return this.renderer.render(this.current);
  }
}

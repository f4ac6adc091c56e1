// How `agents/context-added` and `agents/context-rewritten` change the ordered context items
// (contract.md "How each event folds"). The rules exist for prompt-cache stability: an
// occurrence no request has sent yet is edited in place, a sent one is superseded at the tail.

import type { AgentEventOf } from "@agentrt/contract";
import type { ContextAddedPayload, ContextItem, SectionItem } from "../state.ts";
import { type Draft, bumpRevision, replaceItems, writableItems } from "./draft.ts";

type ContextAddedEvent = AgentEventOf<"agents/context-added">;
type ContextRewrittenEvent = AgentEventOf<"agents/context-rewritten">;

/** True when the item is a compaction summary that cuts history off before itself. */
export function isCompaction(event: ContextAddedEvent): boolean {
  const compaction = event.payload.compaction;
  return compaction !== undefined && compaction.replacesHistoryThrough < event.offset;
}

/** A zombie's late output: assistant text for a request that is not the open one. */
export function isZombieOutput(draft: Draft, payload: ContextAddedPayload): boolean {
  return (
    payload.role === "assistant" &&
    payload.llmRequestOffset !== undefined &&
    draft.openRequest?.requestedAtOffset !== payload.llmRequestOffset
  );
}

function section(offset: number, key: string, payload: ContextAddedPayload, supersedes?: number): SectionItem {
  return supersedes === undefined
    ? { kind: "section", offset, key, payload }
    : { kind: "section", offset, key, supersedes, payload };
}

function scanLatest(items: readonly ContextItem[], key: string): number {
  for (let i = items.length - 1; i >= 0; i -= 1) {
    const item = items[i];
    if (item?.kind === "section" && item.key === key) return i;
  }
  return -1;
}

/**
 * A key's latest position in the draft's items. A draft's first look-up scans (a draft folding
 * one event does no more); from its second, an index of every key is built once and kept up.
 */
function latestIndexOf(draft: Draft, key: string): number {
  if (draft.latestByKey === undefined) {
    draft.keyedLookups = (draft.keyedLookups ?? 0) + 1;
    if (draft.keyedLookups === 1) return scanLatest(draft.items, key);
    const index = new Map<string, number>();
    draft.items.forEach((item, i) => {
      if (item.kind === "section") index.set(item.key, i);
    });
    draft.latestByKey = index;
  }
  return draft.latestByKey.get(key) ?? -1;
}

/** Adds a keyed item: coalesce in place while unsent, else supersede at the tail. */
export function addKeyedItem(draft: Draft, event: ContextAddedEvent, key: string): void {
  const index = latestIndexOf(draft, key);
  const prior = index >= 0 ? (draft.items[index] as SectionItem) : undefined;
  if (prior !== undefined && prior.offset > draft.lastLlmRequestOffset) {
    writableItems(draft)[index] = section(event.offset, key, event.payload, prior.supersedes);
    bumpRevision(draft);
    return;
  }
  const items = writableItems(draft);
  items.push(section(event.offset, key, event.payload, prior?.offset));
  draft.latestByKey?.set(key, items.length - 1);
}

export function addMessage(draft: Draft, event: ContextAddedEvent): void {
  writableItems(draft).push({ kind: "message", offset: event.offset, payload: event.payload });
}

/**
 * What a compaction keeps of the history, whatever its cut-off: each key's newest section (in
 * the order of each key's first appearance) and the unkeyed system messages; the rest is the
 * history a summary replaces through its cut-off. The fold's
 * `compact` and the driver's question whether a compaction could shrink a context both ask it.
 */
export function keptByCompaction(items: readonly ContextItem[]): { sections: SectionItem[]; systemMessages: ContextItem[]; history: ContextItem[] } {
  const newestByKey = new Map<string, SectionItem>();
  const systemMessages: ContextItem[] = [];
  /** The rest: what a compaction's summary replaces through its cut-off. */
  const history: ContextItem[] = [];
  for (const item of items) {
    if (item.kind === "section") newestByKey.set(item.key, item);
    else if (item.kind === "message" && item.payload.role === "system") systemMessages.push(item);
    else history.push(item);
  }
  // Map iteration order is first insertion, i.e. each key's first appearance.
  return { sections: [...newestByKey.values()], systemMessages, history };
}

/**
 * Rebuilds the items around a compaction summary: the standing document survives (each key's
 * newest content at its first position), then unkeyed system items, the summary, and whatever
 * happened after the cut-off.
 */
export function compact(draft: Draft, event: ContextAddedEvent): void {
  const cutOff = event.payload.compaction?.replacesHistoryThrough ?? 0;
  draft.lastLlmRequestOffset = Math.max(draft.lastLlmRequestOffset, cutOff);
  const { sections, systemMessages, history } = keptByCompaction(draft.items);
  const afterCutOff = history.filter((item) => item.offset > cutOff);
  const summary: ContextItem = { kind: "message", offset: event.offset, payload: event.payload };
  replaceItems(draft, [...sections.map((s) => section(s.offset, s.key, s.payload)), ...systemMessages, summary, ...afterCutOff]);
}

/** Deliberate history rewriting: busts the cache from the first touched position down. */
export function rewrite(draft: Draft, event: ContextRewrittenEvent): void {
  const { op, key, content } = event.payload;
  if (op === "delete") {
    if (key === "*") {
      replaceItems(draft, []);
      return;
    }
    const kept = draft.items.filter((item) => !(item.kind === "section" && item.key === key));
    if (kept.length !== draft.items.length) replaceItems(draft, kept);
    return;
  }
  const firstIndex = draft.items.findIndex((item) => item.kind === "section" && item.key === key);
  if (firstIndex < 0) {
    const items = writableItems(draft);
    items.push(section(event.offset, key, { role: "system", key, content: content ?? "" }));
    draft.latestByKey?.set(key, items.length - 1);
    return;
  }
  const first = draft.items[firstIndex] as SectionItem;
  const replacement = section(
    event.offset,
    key,
    { role: first.payload.role, key, content: content ?? "" },
    first.supersedes,
  );
  const rebuilt: ContextItem[] = [];
  draft.items.forEach((item, i) => {
    if (i === firstIndex) rebuilt.push(replacement);
    else if (!(item.kind === "section" && item.key === key)) rebuilt.push(item);
  });
  replaceItems(draft, rebuilt);
}

// A mutable working copy of the agent state used inside the fold. States handed out are never
// mutated: a draft copies `contextItems` on its first write (copy-on-write), and folding many
// events through one draft appends in place, so replaying a long stream stays linear.

import type { AgentState, ContextItem } from "../state.ts";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export interface Draft extends Omit<Mutable<AgentState>, "contextItems"> {
  items: ContextItem[];
  /** True once `items` is a private copy this draft may mutate. */
  itemsOwned: boolean;
}

export function startDraft(state: AgentState): Draft {
  const { contextItems, ...rest } = state;
  return { ...rest, items: contextItems as ContextItem[], itemsOwned: false };
}

/** The draft's items, copied first if they are still shared with a published state. */
export function writableItems(draft: Draft): ContextItem[] {
  if (!draft.itemsOwned) {
    draft.items = draft.items.slice();
    draft.itemsOwned = true;
  }
  return draft.items;
}

/** Replaces the items wholesale (a rebuild); counts as a non-append change. */
export function replaceItems(draft: Draft, items: ContextItem[]): void {
  draft.items = items;
  draft.itemsOwned = true;
  bumpRevision(draft);
}

export function bumpRevision(draft: Draft): void {
  draft.contextRevision = (draft.contextRevision ?? 0) + 1;
}

/** Publishes the draft as an immutable state; the draft must not be used afterwards. */
export function finishDraft(draft: Draft): AgentState {
  const { items, itemsOwned: _owned, ...rest } = draft;
  return { ...rest, contextItems: items };
}

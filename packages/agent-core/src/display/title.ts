// The name an agent goes by in lists: the title its summary set (`agent/summary-updated`),
// else one derived from the first thing a user asked it, else nothing (the list shows the
// path). Derived from the folded state, so the gateway's list and any other reader agree.

import type { AgentState } from "../state.ts";
import { oneLine } from "./reply-preview.ts";

/** Longest derived title; the summary's own title is shown as set. */
export const DERIVED_TITLE_MAX = 60;

/** A title from a message: its first non-empty line, on one line, at most DERIVED_TITLE_MAX chars. */
export function titleFromMessage(content: string): string | null {
  const firstLine = content.split("\n").find((line) => line.trim() !== "");
  return firstLine === undefined ? null : oneLine(firstLine, DERIVED_TITLE_MAX);
}

/** The summary title, else a title from the first user message still in context, else null. */
export function agentTitle(state: Pick<AgentState, "summary" | "contextItems">): string | null {
  const set = state.summary.title?.trim();
  if (set !== undefined && set !== "") return set;
  for (const item of state.contextItems) {
    if (item.kind === "message" && item.payload.role === "user") {
      const derived = titleFromMessage(item.payload.content);
      if (derived !== null) return derived;
    }
  }
  return null;
}

// Which context items start a turn, and whose turn it is (contract.md "What triggers a turn").
// External input resets the autonomous loop; the agent's own follow-ups (script results,
// feedback, mail from other agents) count against it.

import type { ContextAddedPayload, TriggerSource } from "../state.ts";

/** The trigger a context item would set, or null when it does not start a turn. */
export function triggerSourceOf(payload: ContextAddedPayload): TriggerSource | null {
  if (payload.role === "system" || payload.role === "assistant") return null;
  if (payload.llmRequestPolicy?.behaviour === "dont-trigger-request") return null;
  if (isAwaitingMentionResolution(payload)) return null;
  if (payload.role === "user") return "external";
  const actor = payload.actor;
  if (actor === undefined || actor.type === "agent" || actor.type === "script") return "agent-loop";
  return "external";
}

/**
 * An item that names mentions but has not been materialised yet: the resolver's follow-up
 * item is the one that triggers, so the turn sees the resolved content.
 */
function isAwaitingMentionResolution(payload: ContextAddedPayload): boolean {
  return Array.isArray(payload.mentions) && payload.mentions.length > 0 && payload.mentionResolution === undefined;
}

/** True for the item the reducer must react to by interrupting an open request. */
export function isInterruptingItem(payload: ContextAddedPayload): boolean {
  return (
    (payload.role === "user" || payload.role === "developer") &&
    payload.llmRequestPolicy?.behaviour === "interrupt-current-request" &&
    !isAwaitingMentionResolution(payload)
  );
}

/** Parses an ISO timestamp to epoch ms; 0 when unparsable, so the fold never throws. */
export function epochMs(iso: string): number {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : 0;
}

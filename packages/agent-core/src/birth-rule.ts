// "Nothing is scheduled on a stream before" its birth (contract.md, `agent/created`): user
// input sent to a path with no agent would create a stream without a birth, which the reducer
// never answers and which then blocks `create` (its batch needs an empty stream). A script
// request is held the same way: a script runs with its agent's grant, and a path with no agent
// has none to give (it ran there, and its events likewise blocked `create`). So is one agent's
// message to another (`itx.agents.get(p).message()`): sent to a path with no agent it became
// that stream's first event, and `create` there answered `created: false` (the gateway 409) for
// good. All are accepted only on a born stream, or in a batch that brings the birth itself
// first. Other writers (the reducer, the driver, the host's own events, operators' steering)
// are not held.

import type { EventInput } from "@agentrt/contract";

/** A user's message: the input `agents send` and the chat's composer append. */
export function isUserInput(event: Pick<EventInput, "type" | "payload">): boolean {
  return event.type === "agents/context-added" && (event.payload as { role?: unknown }).role === "user";
}

/** A message from another agent: the context `itx.agents.get(p).message()` appends, its actor an agent. */
export function isAgentMessage(event: Pick<EventInput, "type" | "payload">): boolean {
  if (event.type !== "agents/context-added") return false;
  const actor = (event.payload as { actor?: unknown }).actor;
  return typeof actor === "object" && actor !== null && (actor as { type?: unknown }).type === "agent";
}

/** What only an agent can take: a user's message, another agent's, or a request to run a script as the agent. */
export function needsAgent(event: Pick<EventInput, "type" | "payload">): boolean {
  return isUserInput(event) || isAgentMessage(event) || event.type === "capability-host/script-run-requested";
}

/**
 * The index of the first event in `batch` that needs an agent (`needsAgent`) and would land on
 * a stream with no birth (`streamIsBorn` false and no `agent/created` earlier in the batch), or
 * null when none would.
 */
export function firstUnbornInput(batch: readonly Pick<EventInput, "type" | "payload">[], streamIsBorn: boolean): number | null {
  let born = streamIsBorn;
  for (const [index, event] of batch.entries()) {
    if (event.type === "agent/created") born = true;
    else if (!born && needsAgent(event)) return index;
  }
  return null;
}

/** The message a refused send carries: what is missing and the command that fixes it. */
export function noAgentMessage(streamPath: string): string {
  return `no agent at ${streamPath}; create it with \`agents create ${streamPath}\``;
}

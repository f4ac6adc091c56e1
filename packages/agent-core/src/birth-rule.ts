// "Nothing is scheduled on a stream before" its birth (contract.md, `agent/created`): user
// input sent to a path with no agent would create a stream without a birth, which the reducer
// never answers and which then blocks `create` (its batch needs an empty stream). A script
// request is held the same way: a script runs with its agent's grant, and a path with no agent
// has none to give (it ran there, and its events likewise blocked `create`). So both are
// accepted only on a born stream, or in a batch that brings the birth itself first. Other
// writers (the reducer, the driver, the host, operators' steering) are not held.

import type { EventInput } from "@agentrt/contract";

/** A user's message: the input `agents send` and the chat's composer append. */
export function isUserInput(event: Pick<EventInput, "type" | "payload">): boolean {
  return event.type === "agents/context-added" && (event.payload as { role?: unknown }).role === "user";
}

/** What only an agent can take: a user's message, or a request to run a script as the agent. */
export function needsAgent(event: Pick<EventInput, "type" | "payload">): boolean {
  return isUserInput(event) || event.type === "capability-host/script-run-requested";
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

// Turns a parsed reply of the agent's own open request into the events codemode.md lists, in
// order and as ONE batch: activity status, script request, extracted prose — or, for a block
// that did not run, the developer feedback that says so. Both dialects share this.

import { idempotencyKeys, type AgentEventOf, type EventInput } from "@agentrt/contract";
import type { ReactionState } from "../state.ts";
import type { ParsedReply } from "./reply.ts";

export type AssistantContextEvent = AgentEventOf<"agents/context-added">;

/** The assistant item answers the agent's currently open request (not a zombie's reply). */
export function isOwnOpenReply(state: ReactionState, event: AssistantContextEvent): boolean {
  const requestOffset = event.payload.llmRequestOffset;
  return (
    event.payload.role === "assistant" &&
    requestOffset !== undefined &&
    state.openRequest !== null &&
    requestOffset === state.openRequest.requestedAtOffset
  );
}

export function scriptExpiresAt(createdAt: string, expiryMs: number): string {
  return new Date(Date.parse(createdAt) + expiryMs).toISOString();
}

/**
 * The batch for one parsed reply. A rejected reply gets only its feedback: the prose is not
 * published, because the model answers the feedback with a whole new reply (prose included)
 * and the user would otherwise read the same message twice.
 */
export function replyEvents(state: ReactionState, event: AssistantContextEvent, parsed: ParsedReply): EventInput[] {
  const off = event.offset;
  const llmRequestOffset = event.payload.llmRequestOffset;
  if (parsed.kind === "rejected") {
    const key = parsed.reason === "multiple" ? idempotencyKeys.multiSnippetRejected(off) : idempotencyKeys.malformedSnippetRejected(off);
    return [
      {
        type: "agents/context-added",
        payload: { role: "developer", content: parsed.feedback, llmRequestPolicy: { behaviour: "after-current-request" } },
        idempotencyKey: key,
      },
    ];
  }
  const batch: EventInput[] = [];
  if (parsed.kind !== "none" && parsed.status !== undefined) {
    batch.push({ type: "agent/summary-updated", payload: { activity: parsed.status }, idempotencyKey: idempotencyKeys.codemodeStatus(off) });
  }
  if (parsed.kind === "script") {
    batch.push({
      type: "capability-host/script-run-requested",
      payload: {
        code: parsed.code,
        executionId: `agent-output:${off}`,
        expiresAt: scriptExpiresAt(event.createdAt, state.config.llmRequestExpiryMs),
      },
      idempotencyKey: idempotencyKeys.codemodeScriptRun(off),
    });
  }
  if (parsed.prose.length > 0) {
    batch.push({
      type: "agents/web-message-sent",
      payload: llmRequestOffset === undefined ? { message: parsed.prose } : { message: parsed.prose, llmRequestOffset },
      idempotencyKey: idempotencyKeys.codemodeProse(off),
    });
  }
  return batch;
}

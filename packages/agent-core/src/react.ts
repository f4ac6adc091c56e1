// The reducer's per-event consequences (contract.md "Per delivered event"): what it appends in
// reaction to one event, given the state just before and just after folding it, under the
// reaction policy (production's unless a spec narrows it). Pure: the
// shell performs the interrupt round-trip to the driver and appends the batches with their
// idempotency keys, so two incarnations reacting to the same event collapse to one set.

import { idempotencyKeys, type AgentEvent, type AgentEventOf, type EventInput, eventInput } from "@agentrt/contract";
import { isInterruptingItem, triggerSourceOf } from "./fold/triggers.ts";
import { interpreterReactions } from "./interpreters.ts";
import { PRODUCTION_REACTION_POLICY, publishesRuntime, type ReactionPolicy, reactsTo } from "./reaction-policy.ts";
import { type AgentRuntime, computeRuntime, runtimeChangedInput } from "./runtime.ts";
import type { ReactionState } from "./state.ts";

export const INTERRUPTED_PARTIAL_PREFIX = "[Response interrupted by the user's next message; partial output follows]\n";

export interface EventReaction {
  /** Batches to append, in order. */
  readonly appends: EventInput[][];
  /** Ask the driver running this request to abort, then append `interruptBatch(R, partial)`. */
  readonly interrupt: { readonly requestOffset: number } | null;
  /** The live-lane runtime transition to publish, when the runtime changed. */
  readonly runtimeChanged: EventInput | null;
  readonly runtime: AgentRuntime;
}

export function reactToEvent(
  before: ReactionState,
  event: AgentEvent,
  after: ReactionState,
  policy: ReactionPolicy = PRODUCTION_REACTION_POLICY,
): EventReaction {
  if (!reactsTo(before, event)) return { appends: [], interrupt: null, runtimeChanged: null, runtime: computeRuntime(after) };
  const appends: EventInput[][] = [];
  let interrupt: EventReaction["interrupt"] = null;
  switch (event.type) {
    case "agents/context-added": {
      const open = before.openRequest;
      if (open !== null && isInterruptingItem(event.payload)) interrupt = { requestOffset: open.requestedAtOffset };
      const clear = waitingClear(before, event);
      if (clear !== null) appends.push([clear]);
      break;
    }
    case "agents/web-message-sent":
      if (event.payload.llmRequestOffset === undefined) appends.push([webMessageMirror(event)]);
      break;
    case "stream/error-occurred":
      appends.push([errorTranscription(event)]);
      break;
    case "capability-host/preamble-set":
    case "capability-host/preamble-removed":
      appends.push([preambleTranscription(event)]);
      break;
    default:
      break;
  }
  appends.push(...interpreterReactions(before, event, policy));
  const change = runtimeChangedInput(before, event, after);
  return { appends, interrupt, runtimeChanged: publishesRuntime(after) ? change.input : null, runtime: change.runtime };
}

/**
 * What to append once the driver answered an interrupt: the partial text as history (when
 * any streamed) and the cancelled settlement, one atomic batch.
 */
export function interruptBatch(requestOffset: number, partialText?: string): EventInput[] {
  const batch: EventInput[] = [];
  const hasPartial = partialText !== undefined && partialText.length > 0;
  if (hasPartial) {
    batch.push(
      eventInput(
        "agents/context-added",
        { role: "assistant", content: `${INTERRUPTED_PARTIAL_PREFIX}${partialText}` },
        idempotencyKeys.renderInterruptedPartial(requestOffset),
      ),
    );
  }
  batch.push(
    eventInput(
      "agent/llm-request-settled",
      {
        requestOffset,
        result: hasPartial
          ? { status: "cancelled", reason: "interrupted-by-user-input", partialText }
          : { status: "cancelled", reason: "interrupted-by-user-input" },
      },
      idempotencyKeys.settle(requestOffset),
    ),
  );
  return batch;
}

function waitingClear(before: ReactionState, event: AgentEventOf<"agents/context-added">): EventInput | null {
  if (before.summary.waitingFor === undefined) return null;
  const payload = event.payload;
  if (triggerSourceOf(payload) === null) return null;
  const wakes =
    payload.role === "user" ||
    (payload.role === "developer" && payload.actor !== undefined && payload.actor.type !== "script");
  if (!wakes) return null;
  return eventInput(
    "agent/summary-updated",
    { waitingFor: null, clearWaitingForThroughOffset: event.offset },
    idempotencyKeys.waitingClear(event.offset),
  );
}

function webMessageMirror(event: AgentEventOf<"agents/web-message-sent">): EventInput {
  const { message, files } = event.payload;
  const content = `The assistant sent this visible web-chat message: ${message}`;
  return eventInput(
    "agents/context-added",
    files !== undefined && files.length > 0 ? { role: "assistant", content, files } : { role: "assistant", content },
    idempotencyKeys.renderWebResponse(event.offset),
  );
}

function errorTranscription(event: AgentEventOf<"stream/error-occurred">): EventInput {
  return eventInput(
    "agents/context-added",
    {
      role: "developer",
      content: `Error on stream: ${event.payload.message}`,
      actor: { type: "integration", name: "stream-error" },
      llmRequestPolicy: { behaviour: "dont-trigger-request" },
    },
    idempotencyKeys.transcribeError(event.offset),
  );
}

function preambleTranscription(
  event: AgentEventOf<"capability-host/preamble-set"> | AgentEventOf<"capability-host/preamble-removed">,
): EventInput {
  const key = event.payload.key;
  const content =
    event.type === "capability-host/preamble-set"
      ? `Preamble entry "${key}" was set. This TypeScript is now injected above your scripts — its symbols are in scope:\n\`\`\`ts\n${event.payload.code}\n\`\`\``
      : `Preamble entry "${key}" was removed; its symbols are no longer available to your scripts.`;
  return eventInput(
    "agents/context-added",
    { role: "developer", content, llmRequestPolicy: { behaviour: "dont-trigger-request" } },
    idempotencyKeys.renderPreambleChange(event.offset),
  );
}

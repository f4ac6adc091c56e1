// A reply's reaction (the codemode interpreter's `agents/web-message-sent`) races the user's
// next message for the offset after the settlement. When the message wins, the reaction lands
// after it, ahead of what the reducer has folded: a request decided then would be refused, and
// its speculative work item would name the reaction's offset (a driver reads the stream only to
// ack it). The reducer waits for its own reaction to come back and decides once, for real.

import { type AgentEvent, idempotencyKeys, isAgentRuntimeError } from "@agentrt/contract";
import { MemoryEventStore } from "@agentrt/streams";
import { createLogger } from "@agentrt/service-kit";
import { userMessage, waitFor } from "@agentrt/testing";
import { describe, expect, it } from "vitest";
import type { ReducerEffects } from "../src/effects.ts";
import { StreamProcessor } from "../src/stream-processor.ts";

const PATH = "/agents/test/reaction-race";
const logger = createLogger("test", "silent");

function effectsOn(store: MemoryEventStore) {
  const handedOff: number[] = [];
  const refused: number[] = [];
  const effects: ReducerEffects = {
    now: () => Date.now(),
    append: (path, batch) => store.append(path, batch),
    appendAtHead: async (path, batch, expectedLastOffset) => {
      try {
        const result = await store.append(path, batch, { expectedLastOffset });
        return result.status === "committed" ? result : { status: result.status, events: [] };
      } catch (error) {
        if (!isAgentRuntimeError(error) || error.code !== "conflict") throw error;
        refused.push(expectedLastOffset);
        return { status: "conflict", events: [] };
      }
    },
    publishLlmWork: async (_path, offset) => void handedOff.push(offset),
    publishScriptWork: async () => undefined,
    interruptDriver: async () => undefined,
    publishRuntime: async () => undefined,
    publishPreviews: async () => undefined,
  };
  return { effects, handedOff, refused };
}

/** A born agent (replies interpreted) whose first turn settled: the request at 4, the reply at 5 and 6. */
async function storeWithSettledTurn(): Promise<MemoryEventStore> {
  const store = new MemoryEventStore();
  await store.append(PATH, [
    { type: "agent/created", payload: {} },
    { type: "agent/configured", payload: { config: { interpretResponses: true, llmRequestDebounceMs: 0 } } },
  ]);
  await store.append(PATH, [userMessage("first")]);
  await store.append(PATH, [
    { type: "agent/llm-request-requested", payload: { model: "m", expiresAt: new Date(Date.now() + 600_000).toISOString(), contractVersion: "7.0.0" }, idempotencyKey: idempotencyKeys.request(3) },
  ]);
  await store.append(PATH, [
    { type: "agents/context-added", payload: { role: "assistant", content: "a plain reply", llmRequestOffset: 4 }, idempotencyKey: idempotencyKeys.assistantContext(4) },
    { type: "agent/llm-request-settled", payload: { requestOffset: 4, durationMs: 5, result: { status: "succeeded", text: "a plain reply" } }, idempotencyKey: idempotencyKeys.settle(4) },
  ]);
  return store;
}

describe("a reply's reaction racing the user's next message", () => {
  it("given the message took the offset first, when the reaction lands after it, then the request is decided once, after the reaction, and no work item names another event", async () => {
    // Given a settled turn the reducer has folded, and the user's next message stored before
    // the reducer reacted to the reply
    const store = await storeWithSettledTurn();
    const { effects, handedOff, refused } = effectsOn(store);
    const processor = new StreamProcessor(PATH, effects, logger);
    for (const event of await store.read(PATH)) processor.apply(event);
    const next = (await store.append(PATH, [userMessage("second")])).events[0] as AgentEvent;
    expect(next.offset).toBe(7);
    processor.apply(next);

    // When the reducer flushes: its reaction lands at 8, after the message it has folded
    await processor.settle();
    await waitFor(async () => (await store.read(PATH)).length >= 8);
    const reaction = (await store.read(PATH, { fromOffset: 8 }))[0] as AgentEvent;
    expect(reaction.type).toBe("agents/web-message-sent");
    // Then nothing is decided or handed over while the reaction is not folded
    await processor.settle();
    expect(handedOff).toEqual([]);
    expect(refused).toEqual([]);

    // And once the feed brings the reaction, the request lands after it and is handed over once
    processor.apply(reaction);
    await waitFor(async () => {
      await processor.settle();
      return handedOff.length > 0;
    });
    const request = (await store.read(PATH, { fromOffset: 9 }))[0] as AgentEvent;
    expect([request.type, request.idempotencyKey]).toEqual(["agent/llm-request-requested", idempotencyKeys.request(7)]);
    expect(handedOff).toEqual([9]);
    expect(refused).toEqual([]);
    processor.close();
  });
});

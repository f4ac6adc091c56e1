// The reducer folds what its own appends put on the stream as soon as the store acknowledges
// it, where that continues its fold: a reaction that lands after a new message does not leave
// the message's request waiting for the feed to bring the reaction back.

import type { AgentEvent, EventInput } from "@agentrt/contract";
import { MemoryEventStore } from "@agentrt/streams";
import { testLogger } from "@agentrt/testing";
import { expect, it } from "vitest";
import type { ReducerEffects } from "../src/effects.ts";
import { StreamProcessor } from "../src/stream-processor.ts";

const PATH = "/agents/test/fold-stored";
const logger = testLogger("test");

const born: EventInput[] = [
  { type: "agent/created", payload: {} },
  { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } },
];
const userSays = (content: string): EventInput => ({ type: "agents/context-added", payload: { role: "user", content, actor: { type: "user", origin: "web" } } });
/** A visible message a script sent: the reducer mirrors it into the context (its reaction). */
const scriptSent: EventInput = { type: "agents/web-message-sent", payload: { message: "done" } };

function effectsOn(store: MemoryEventStore, llmWork: number[]): ReducerEffects {
  return {
    now: Date.now,
    append: async (path, batch) => (await store.append(path, batch)).events,
    appendAtHead: async (path, batch, expectedLastOffset) => {
      try {
        const result = await store.append(path, batch, { expectedLastOffset });
        return result.status === "committed" ? result : { status: result.status, events: [] };
      } catch (error) {
        if ((error as { code?: string }).code === "conflict") return { status: "conflict", events: [] };
        throw error;
      }
    },
    publishLlmWork: async (_path, offset) => void llmWork.push(offset),
    publishScriptWork: async () => undefined,
    interruptDriver: async () => undefined,
    publishRuntime: async () => undefined,
    publishPreviews: async () => undefined,
  };
}

/** Lets every scheduled flush (and the flushes they schedule) run. */
async function flushed(processor: StreamProcessor): Promise<void> {
  for (let i = 0; i < 5; i += 1) {
    await new Promise((resolve) => setImmediate(resolve));
    await processor.settle();
  }
}

const kinds = (events: readonly AgentEvent[]) => events.map((e) => (e.type === "agents/context-added" ? `${e.type}:${e.payload.role}` : e.type));

it("given a reaction still to append and a new message after it, when the reaction lands, then the message's request follows it without the feed delivering it", async () => {
  const store = new MemoryEventStore();
  const llmWork: number[] = [];
  const processor = new StreamProcessor(PATH, effectsOn(store, llmWork), logger);
  // Given: an agent that folded its birth, a script's visible message (to be mirrored) and the
  // user's next message, which the store put before the mirror could be appended.
  for (const event of (await store.append(PATH, born)).events) processor.apply(event);
  const sent = (await store.append(PATH, [scriptSent])).events;
  const said = (await store.append(PATH, [userSays("thanks")])).events;
  for (const event of [...sent, ...said]) processor.apply(event);
  // When: the reducer reacts, and the feed brings nothing more.
  await flushed(processor);
  // Then: the mirror landed after the message, and the request after the mirror, handed over.
  const events = await store.read(PATH);
  expect(kinds(events)).toEqual([
    "agent/created",
    "agent/configured",
    "agents/web-message-sent",
    "agents/context-added:user",
    "agents/context-added:assistant",
    "agent/llm-request-requested",
  ]);
  expect(events[5]?.idempotencyKey).toBe("agent/request/4");
  expect(llmWork).toEqual([6]);
  expect(processor.state.lastFoldedOffset).toBe(6);
  // The feed's copies, arriving later, are skipped: nothing is reacted to twice.
  for (const event of events.slice(4)) processor.apply(event);
  await flushed(processor);
  expect(await store.read(PATH)).toHaveLength(6);
  expect(llmWork).toEqual([6]);
});

it("given its own append that lands past a gap in its fold, then it leaves that event to the feed", async () => {
  const store = new MemoryEventStore();
  const llmWork: number[] = [];
  const processor = new StreamProcessor(PATH, effectsOn(store, llmWork), logger);
  for (const event of (await store.append(PATH, born)).events) processor.apply(event);
  const sent = (await store.append(PATH, [scriptSent])).events;
  // The user's message is stored but the feed has not delivered it yet.
  const said = (await store.append(PATH, [userSays("thanks")])).events;
  for (const event of sent) processor.apply(event);
  await flushed(processor);
  // The mirror (offset 5) does not continue the fold (through 3): nothing is decided from it.
  expect(processor.state.lastFoldedOffset).toBe(3);
  expect(kinds(await store.read(PATH)).at(-1)).toBe("agents/context-added:assistant");
  expect(llmWork).toEqual([]);
  // The feed then brings the message and the mirror, in order, and the request follows.
  for (const event of [...said, ...(await store.read(PATH)).slice(4)]) processor.apply(event);
  await flushed(processor);
  expect(kinds(await store.read(PATH)).at(-1)).toBe("agent/llm-request-requested");
  expect(llmWork).toEqual([6]);
});

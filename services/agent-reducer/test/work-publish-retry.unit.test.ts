// A work item whose publish failed is published again under a new message id. The failed
// publish's outcome is unknown, and the long soak saw nats-server 2.9 leave such an item's id
// unusable: every later publish of the same item timed out, every 5 s for a minute, while the
// re-issue under a new id went through at once.

import { MemoryEventStore } from "@agentrt/streams";
import { createLogger } from "@agentrt/service-kit";
import { describe, expect, it } from "vitest";
import type { ReducerEffects } from "../src/effects.ts";
import { StreamProcessor } from "../src/stream-processor.ts";

const PATH = "/agents/test/work-publish-retry";
const logger = createLogger("test", "silent");

function effectsOn(store: MemoryEventStore, failFirst: { llm: number; script: number }) {
  const published: string[] = [];
  const effects: ReducerEffects = {
    now: () => Date.now(),
    append: (path, batch) => store.append(path, batch),
    appendAtHead: async (path, batch, expectedLastOffset) => {
      const result = await store.append(path, batch, { expectedLastOffset });
      return result.status === "committed" ? result : { status: result.status, events: [] };
    },
    publishLlmWork: async (_path, offset, options) => {
      if (failFirst.llm-- > 0) throw new Error("timeout");
      published.push(`llm ${offset}${options?.redrive === true ? " (new id)" : ""}`);
    },
    publishScriptWork: async (_path, _offset, executionId, options) => {
      if (failFirst.script-- > 0) throw new Error("timeout");
      published.push(`script ${executionId}${options?.redrive === true ? " (new id)" : ""}`);
    },
    interruptDriver: async () => undefined,
    publishRuntime: async () => undefined,
    publishPreviews: async () => undefined,
  };
  return { effects, published };
}

/** An agent with one open request, at offset 3. */
async function storeWithOpenRequest(): Promise<MemoryEventStore> {
  const store = new MemoryEventStore();
  await store.append(PATH, [
    { type: "agent/created", payload: {} },
    { type: "agents/context-added", payload: { role: "user", content: "hi", actor: { type: "user", origin: "web" } } },
  ]);
  await store.append(PATH, [{ type: "agent/llm-request-requested", payload: { model: "m", expiresAt: new Date(Date.now() + 600_000).toISOString(), contractVersion: "7.0.0" }, idempotencyKey: "agent/request/2" }]);
  return store;
}

async function run(processor: StreamProcessor, store: MemoryEventStore, untilPublished: () => boolean): Promise<void> {
  for (const event of await store.read(PATH)) processor.apply(event);
  const deadline = Date.now() + 5_000;
  while (!untilPublished() && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    await processor.settle();
  }
}

describe("publishing a work item again after a failed publish", () => {
  it("given a request whose work publish times out, when the flush is retried, then the item goes out once, under a new message id", async () => {
    // Given an open request and a work queue that times out the first publish of its item
    const store = await storeWithOpenRequest();
    const { effects, published } = effectsOn(store, { llm: 1, script: 0 });
    const processor = new StreamProcessor(PATH, effects, logger);
    // When the processor hands it off and retries after the failure
    await run(processor, store, () => published.length > 0);
    // Then the retry used a new id
    expect(published).toEqual(["llm 3 (new id)"]);
    processor.close();
  });

  it("given a request whose publish succeeds, then its item keeps its usual message id", async () => {
    const store = await storeWithOpenRequest();
    const { effects, published } = effectsOn(store, { llm: 0, script: 0 });
    const processor = new StreamProcessor(PATH, effects, logger);
    await run(processor, store, () => published.length > 0);
    expect(published).toEqual(["llm 3"]);
    processor.close();
  });

  it("given a script whose work publish fails twice, when the flush is retried, then it goes out under a new id", async () => {
    const store = new MemoryEventStore();
    await store.append(PATH, [
      { type: "agent/created", payload: {} },
      { type: "capability-host/script-run-requested", payload: { executionId: "x-1", code: "return 1", expiresAt: new Date(Date.now() + 600_000).toISOString() }, idempotencyKey: "script/x-1" },
    ]);
    const { effects, published } = effectsOn(store, { llm: 0, script: 2 });
    const processor = new StreamProcessor(PATH, effects, logger);
    await run(processor, store, () => published.length > 0);
    expect(published).toEqual(["script x-1 (new id)"]);
    processor.close();
  });
});

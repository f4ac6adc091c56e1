// Given an agent whose stream holds many events delivered one by one (a rebuild after eviction
// replays the whole stream this way, in one synchronous loop), when the reducer folds them,
// then it copies the agent's context once, not per event. Per event it was quadratic: an
// append-only key's 40 000 messages held the reducer's event loop for minutes, every tenant's
// turns waited 20–80 s and every partition lease was lost (red-team, 2026-12-07).

import type { AgentEvent } from "@agentrt/contract";
import { createLogger } from "@agentrt/service-kit";
import { MemoryEventStore } from "@agentrt/streams";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ReducerEffects } from "../src/effects.ts";
import { StreamProcessor } from "../src/stream-processor.ts";

const PATH = "/agents/test/long-stream";
afterEach(() => vi.restoreAllMocks());

const quietEffects = (store: MemoryEventStore): ReducerEffects => ({
  now: () => Date.now(),
  append: (path, batch) => store.append(path, batch),
  appendAtHead: async () => ({ status: "conflict", events: [] }),
  publishLlmWork: async () => undefined,
  publishScriptWork: async () => undefined,
  interruptDriver: async () => undefined,
  publishRuntime: async () => undefined,
  publishPreviews: async () => undefined,
});

describe("the reducer folding a long stream", () => {
  it("given 3 000 events delivered one at a time, when applied, then the context is not copied per event and the state holds them all", async () => {
    const store = new MemoryEventStore();
    await store.append(PATH, [{ type: "agent/created", payload: {} }]);
    for (let i = 0; i < 3; i++) {
      await store.append(PATH, Array.from({ length: 1_000 }, (_, j) => ({ type: "agents/context-added" as const, payload: { role: "user" as const, content: `m${i}-${j}`, llmRequestPolicy: { behaviour: "dont-trigger-request" as const } } })));
    }
    const events: AgentEvent[] = await store.read(PATH);
    const processor = new StreamProcessor(PATH, quietEffects(store), createLogger("test", "silent"));
    const slice = vi.spyOn(Array.prototype, "slice");
    for (const event of events) processor.apply(event);
    const copies = slice.mock.calls.length;
    slice.mockRestore();
    expect(copies).toBeLessThan(10);
    expect(processor.state.contextItems).toHaveLength(3_000);
    expect(processor.state.lastFoldedOffset).toBe(3_001);
    processor.close();
  });
});

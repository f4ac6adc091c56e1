// Given an agent brought in whose tail is long (a rebuild folds it in slices of 1 000 events
// and lets the event loop turn between them), then the agent decides and reacts only once the
// whole tail is folded. A flush between slices handed a driver a request the tail had already
// settled, and published a runtime the stream never had (review, 2026-12-07).

import type { AgentEvent } from "@agentrt/contract";
import { idempotencyKeys } from "@agentrt/contract";
import { createLogger } from "@agentrt/service-kit";
import { MemoryEventStore } from "@agentrt/streams";
import { describe, expect, it } from "vitest";
import type { ReducerEffects } from "../src/effects.ts";
import { StreamProcessor } from "../src/stream-processor.ts";

const PATH = "/agents/test/rebuild-yield";

describe("an agent brought in folds its tail in slices", () => {
  it("given a tail of 2 005 events folded in slices with flushes held, when a flush waits, then it decides only at the end: no work for the request the tail settles", async () => {
    const store = new MemoryEventStore();
    await store.append(PATH, [{ type: "agent/created", payload: {} }, { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } }]);
    await store.append(PATH, [{ type: "agents/context-added", payload: { role: "user", content: "hi" } }]);
    await store.append(PATH, [{ type: "agent/llm-request-requested", payload: { model: "m", expiresAt: new Date(Date.now() + 600_000).toISOString(), contractVersion: "7.0.0" }, idempotencyKey: idempotencyKeys.request(3) }]);
    for (let i = 0; i < 2; i++) await store.append(PATH, Array.from({ length: 1_000 }, (_, j) => ({ type: "agents/context-added" as const, payload: { role: "user" as const, content: `m${i}-${j}`, llmRequestPolicy: { behaviour: "dont-trigger-request" as const } } })));
    await store.append(PATH, [{ type: "agent/llm-request-settled", payload: { requestOffset: 4, durationMs: 5, result: { status: "succeeded", text: "ok" } }, idempotencyKey: idempotencyKeys.settle(4) }]);
    const events: AgentEvent[] = await store.read(PATH);
    const calls: string[] = [];
    const effects: ReducerEffects = {
      now: () => Date.now(),
      append: (path, batch) => store.append(path, batch),
      appendAtHead: async () => ({ status: "conflict", events: [] }),
      publishLlmWork: async (_p, off) => void calls.push(`llm-work@${off}`),
      publishScriptWork: async () => undefined,
      interruptDriver: async () => undefined,
      publishRuntime: async (_p, payload) => void calls.push(`runtime since ${payload.sinceOffset} ${JSON.stringify(payload.runtime)}`),
      publishPreviews: async () => undefined,
    };
    const processor = new StreamProcessor(PATH, effects, createLogger("test", "silent"));
    // The partition worker's rebuild loop: flushes held while the slices fold
    const held = processor.holdFlushes();
    let folded = 0;
    for (const event of events) {
      processor.apply(event);
      if (++folded % 1_000 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    held.release();
    await new Promise((r) => setTimeout(r, 50));
    await processor.settle();
    processor.close();
    expect(calls.filter((c) => c.startsWith("llm-work"))).toEqual([]);
    // The runtime published is the one at the tail's end
    const runtimes = calls.filter((c) => c.startsWith("runtime"));
    expect(runtimes.length).toBeGreaterThan(0);
    expect(runtimes.every((c) => c.startsWith("runtime since 2005 "))).toBe(true);
  });
});

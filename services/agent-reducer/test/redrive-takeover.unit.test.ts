// A processor built for an agent whose open request has been quiet for minutes (a takeover, or
// an agent rebuilt from its snapshot) hands the request over once, with its usual item: a
// re-issued item at that same moment would make two drivers call the model for one request
// (the chaos soak saw exactly that after lease moves). The re-issue waits for this
// processor's own quiet time.

import type { AgentEvent } from "@agentrt/contract";
import { MemoryEventStore } from "@agentrt/streams";
import { createLogger } from "@agentrt/service-kit";
import { describe, expect, it } from "vitest";
import type { ReducerEffects } from "../src/effects.ts";
import { StreamProcessor } from "../src/stream-processor.ts";

const PATH = "/agents/test/redrive-takeover";
const logger = createLogger("test", "silent");

describe("re-issuing work after a takeover", () => {
  it("hands a long-quiet open request over once, and re-issues it only after its own quiet time", async () => {
    const store = new MemoryEventStore();
    await store.append(PATH, [
      { type: "agent/created", payload: {} },
      { type: "agent/configured", payload: { config: { llmRequestDebounceMs: 0 } } },
      { type: "agents/context-added", payload: { role: "user", content: "hi", actor: { type: "user", origin: "web" } } },
    ]);
    await store.append(PATH, [{ type: "agent/llm-request-requested", payload: { model: "m", expiresAt: new Date(Date.now() + 600_000).toISOString(), contractVersion: "7.0.0" }, idempotencyKey: "agent/request/3" }]);
    const events: AgentEvent[] = await store.read(PATH);
    // The successor's clock: the stream has been quiet for two minutes.
    let nowMs = Date.now() + 120_000;
    const published: Array<{ offset: number; redrive: boolean }> = [];
    const effects: ReducerEffects = {
      now: () => nowMs,
      append: (path, batch) => store.append(path, batch),
      appendAtHead: async (path, batch, expectedLastOffset) => {
        const result = await store.append(path, batch, { expectedLastOffset });
        return result.status === "committed" ? result : { status: result.status, events: [] };
      },
      publishLlmWork: async (_path, offset, options) => void published.push({ offset, redrive: options?.redrive === true }),
      publishScriptWork: async () => undefined,
      interruptDriver: async () => undefined,
      publishRuntime: async () => undefined,
      publishPreviews: async () => undefined,
    };
    const processor = new StreamProcessor(PATH, effects, logger, undefined, undefined, 1_000);
    for (const event of events) processor.apply(event);
    await new Promise((r) => setImmediate(r));
    await processor.settle();
    expect(published).toEqual([{ offset: 4, redrive: false }]);
    // Its own quiet time later, the request (still open) is issued again as a new item.
    nowMs += 1_000;
    processor.scheduleFlush();
    await new Promise((r) => setImmediate(r));
    await processor.settle();
    expect(published).toEqual([{ offset: 4, redrive: false }, { offset: 4, redrive: true }]);
    processor.close();
  });
});

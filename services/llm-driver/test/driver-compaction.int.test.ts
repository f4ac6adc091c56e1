// Compaction: a turn whose usage crosses compactionTriggerFraction of the context window
// makes the driver ask the model for a summary and append the developer compaction item,
// which the fold turns into the new start of history.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentEvent } from "@agentrt/contract";
import { type FakeReply, waitFor } from "@agentrt/testing";
import { COMPACTION_INSTRUCTION } from "../src/compaction.ts";
import type { LlmDriver } from "../src/driver.ts";
import { append, birthEvents, type DriverEnv, foldStream, publishLlmWork, requested, seedTurn, startDriverEnv, userMessage, waitForEvent } from "./driver-harness.ts";

let env: DriverEnv;
let driver: LlmDriver;
beforeAll(async () => {
  env = await startDriverEnv();
  driver = await env.startDriver({ contextWindows: { byPrefix: { "openai/gpt-5": 1_000 }, defaultTokens: 128_000 } });
});
afterAll(async () => env?.close());

describe("llm-driver: compaction", () => {
  it("summarises the history through R when usage reaches the trigger", async () => {
    const path = "/agents/test/compaction";
    env.model.script({ text: "Here is a long answer.", usage: { inputTokens: 480, outputTokens: 20 } });
    env.model.script({ text: "The user said hello; I answered at length." });
    const R = await seedTurn(env, path, "hello there");
    await publishLlmWork(env, path, R);

    const report = await waitForEvent(env.store, path, "agent/token-usage-reported");
    expect(report.payload).toMatchObject({ maxContextTokens: 1_000, inputTokens: 480, outputTokens: 20 });
    const compaction = await waitForEvent(env.store, path, "agents/context-added", (e) => e.payload.compaction !== undefined);
    expect(compaction.idempotencyKey).toBe(`agent/compact-context@${report.offset}`);
    expect(compaction.payload).toMatchObject({
      role: "developer",
      content: `[Earlier conversation history was compacted through @${R} (~500 tokens > 500). Summary:]\n\nThe user said hello; I answered at length.`,
      compaction: { replacesHistoryThrough: R },
      llmRequestPolicy: { behaviour: "dont-trigger-request" },
    });
    // The summary request is the turn's own messages plus the instruction.
    const [turn, summary] = env.model.requests.slice(-2).map((r) => r.body as { messages: { role: string; content: string }[] });
    expect(summary?.messages).toEqual([...(turn?.messages ?? []), { role: "user", content: COMPACTION_INSTRUCTION }]);

    const state = await foldStream(env.store, path);
    expect(state.pendingLlmRequestTrigger).toBeNull();
    expect(state.contextItems.some((i) => i.kind === "message" && i.payload.compaction !== undefined)).toBe(true);
    expect(state.contextItems.some((i) => i.kind === "message" && i.payload.content === "hello there")).toBe(false);
  });

  /** A turn over the trigger whose summary call the model answers with `summary`; the stream's events once that call has ended. */
  async function turnWithSummary(path: string, summary: FakeReply): Promise<AgentEvent[]> {
    env.model.script({ text: "Answer.", usage: { inputTokens: 480, outputTokens: 20 } });
    env.model.script(summary);
    const R = await seedTurn(env, path, "hello there");
    const calls = env.model.requests.length;
    await publishLlmWork(env, path, R);
    await waitForEvent(env.store, path, "agent/token-usage-reported");
    await waitFor(() => env.model.requests.length === calls + 2 && driver.runningCount === 0, { what: "the summary call to end" });
    return await env.store.read(path);
  }

  it("given a summary past what a reply may hold, when the model streams it, then the call is cut off and history stays as it is", async () => {
    // A summary of 500 KB, past MAX_REPLY_BYTES (400 KB)
    const events = await turnWithSummary("/agents/test/compaction-too-long", { tokens: Array.from({ length: 500 }, () => "s".repeat(1_000)) });
    expect(events.some((e) => e.type === "agents/context-added" && e.payload.compaction !== undefined)).toBe(false);
    expect(events.at(-1)?.type).toBe("agent/token-usage-reported");
  });

  it("given an empty summary, when the model answers the compaction with nothing, then history stays as it is", async () => {
    // Red-team: the empty summary replaced the whole history, and the next turn had lost it.
    const path = "/agents/test/compaction-empty";
    const events = await turnWithSummary(path, { tokens: [" ", "\n"] });
    expect(events.some((e) => e.type === "agents/context-added" && e.payload.compaction !== undefined)).toBe(false);
    const state = await foldStream(env.store, path);
    expect(state.contextItems.some((i) => i.kind === "message" && i.payload.content === "hello there")).toBe(true);
  });

  it("given a context that is mostly keyed sections, when usage crosses the trigger, then no summary is asked for (it would keep them all)", async () => {
    // Red-team: 40 000 keyed sections stayed over the trigger after every summary, and each turn made a second, full-context call.
    const path = "/agents/test/compaction-sections";
    await append(env.store, path, [
      ...birthEvents(),
      ...Array.from({ length: 50 }, (_, i) => ({ type: "agents/context-added" as const, payload: { role: "system" as const, key: `doc-${i}`, content: "standing text ".repeat(40) } })),
      userMessage("hi"),
    ]);
    const [request] = await append(env.store, path, [requested()]);
    const R = request!.offset;
    env.model.script({ text: "Answer.", usage: { inputTokens: 480, outputTokens: 20 } });
    const calls = env.model.requests.length;
    await publishLlmWork(env, path, R);
    await waitForEvent(env.store, path, "agent/token-usage-reported");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(env.model.requests.length).toBe(calls + 1);
    expect((await env.store.read(path)).some((e) => e.type === "agents/context-added" && e.payload.compaction !== undefined)).toBe(false);
  });

  it("does not compact below the trigger", async () => {
    const path = "/agents/test/no-compaction";
    env.model.script({ text: "Short.", usage: { inputTokens: 400, outputTokens: 99 } });
    const R = await seedTurn(env, path, "hi");
    const modelCalls = env.model.requests.length;
    await publishLlmWork(env, path, R);
    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled");
    expect(settled.payload.requestOffset).toBe(R);
    // The run (compaction included) is over once the driver no longer lists it.
    await waitFor(() => driver.runningCount === 0, { what: "the run to finish" });
    expect(env.model.requests.length).toBe(modelCalls + 1);
    // The usage report is the last event of the settlement batch; nothing follows it.
    expect((await env.store.read(path)).at(-1)?.type).toBe("agent/token-usage-reported");
  });
});

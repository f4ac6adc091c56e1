// A full turn through the driver on a real nats-server with the real `openai` client against
// the fake model: the request body, the live chunks (in order, before the settlement), the
// one-batch settlement, and the usage tally.

import { renderRequestAt } from "@agentrt/agent-core";
import { cutShortNote } from "@agentrt/agent-core/display";
import type { AgentEvent } from "@agentrt/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DriverEnv, foldStream, publishLlmWork, seedTurn, startDriverEnv, waitForEvent } from "./driver-harness.ts";

let env: DriverEnv;
beforeAll(async () => {
  env = await startDriverEnv();
  await env.startDriver();
});
afterAll(async () => env?.close());

function chunkText(events: readonly AgentEvent[]): string {
  let text = "";
  for (const event of events) {
    if (event.type !== "agent/llm-response-chunks") continue;
    for (const chunk of event.payload.chunks as { choices?: { delta?: { content?: string } }[] }[]) text += chunk.choices?.[0]?.delta?.content ?? "";
  }
  return text;
}

describe("llm-driver: a full turn", () => {
  it("renders through R, streams, and settles assistant + settled + usage in one batch", async () => {
    const path = "/agents/test/full-turn";
    const reply = "Hi! I can run scripts for you.";
    env.model.script({ text: reply, usage: { inputTokens: 321, outputTokens: 9, cachedInputTokens: 256, reasoningOutputTokens: 4 } });
    const R = await seedTurn(env, path, "what can you do?");
    await publishLlmWork(env, path, R);

    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", (e) => e.payload.requestOffset === R);
    const events = await env.store.read(path);
    const batch = events.filter((e) => e.offset >= R + 1);
    expect(batch.map((e) => [e.offset, e.type, e.idempotencyKey])).toEqual([
      [R + 1, "agents/context-added", `agent/assistant-context@${R}`],
      [R + 2, "agent/llm-request-settled", `agent/settle/${R}`],
      [R + 3, "agent/token-usage-reported", `agent/token-usage@${R}`],
    ]);
    // One batch: one commit time for all three.
    expect(new Set(batch.map((e) => e.createdAt)).size).toBe(1);
    expect(batch[0]?.payload).toEqual({ role: "assistant", content: reply, llmRequestOffset: R });
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: reply, usage: { prompt_tokens: 321, completion_tokens: 9 } });
    expect(settled.payload.durationMs).toBeGreaterThanOrEqual(0);
    expect(batch[2]?.payload).toEqual({
      llmRequestOffset: R,
      model: "openai/gpt-5.6-terra",
      maxContextTokens: 272_000,
      inputTokens: 321,
      outputTokens: 9,
      cachedInputTokens: 256,
      reasoningOutputTokens: 4,
    });

    const request = env.model.requests.find((r) => (r.body as { prompt_cache_key?: string }).prompt_cache_key === path);
    expect(request?.body).toEqual({
      model: "gpt-5.6-terra",
      messages: renderRequestAt(events, R),
      stream: true,
      stream_options: { include_usage: true },
      prompt_cache_key: path,
    });

    // Usage lands in the tally.
    const state = await foldStream(env.store, path);
    expect(state.openRequest).toBeNull();
    expect(state.tokenUsage).toEqual({ totalInputTokens: 321, totalOutputTokens: 9, totalCachedInputTokens: 256, totalReasoningOutputTokens: 4 });
  });

  it("given a provider that sends lone surrogates (a pair split across chunks), when the reply settles, then it is stored mended to U+FFFD, live chunks too", async () => {
    const path = "/agents/test/lone-surrogates";
    env.model.script({ tokens: ["half ", "\ud83d", " pair ", "\ude00", " end"] });
    const R = await seedTurn(env, path, "say something odd");
    const live = env.store.subscribe(path, { fromOffset: R + 1, ephemeral: true });
    const chunks: AgentEvent[] = [];
    const watched = (async () => {
      for await (const event of live) {
        chunks.push(event);
        if (event.type === "agent/llm-request-settled") break;
      }
    })();
    await publishLlmWork(env, path, R);

    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", (e) => e.payload.requestOffset === R);
    await watched;
    await live.close();
    const mended = "half \ufffd pair \ufffd end";
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: mended });
    const assistant = (await env.store.read(path)).find((e) => e.type === "agents/context-added" && e.payload.role === "assistant");
    expect(assistant?.payload).toMatchObject({ content: mended });
    expect(chunkText(chunks)).toBe(mended);
  });

  it("given a reply cut at the model's output limit, when it settles, then the settlement says so and keeps the text", async () => {
    const path = "/agents/test/cut-short";
    env.model.script({ text: "The first half of", finishReason: "length" });
    const R = await seedTurn(env, path, "write a long essay");
    await publishLlmWork(env, path, R);
    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", (e) => e.payload.requestOffset === R);
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: "The first half of", rawResponse: { finishReason: "length" } });
    // A finished reply carries none
    const done = "/agents/test/finished";
    env.model.script({ text: "All of it." });
    const doneR = await seedTurn(env, done, "write a short one");
    await publishLlmWork(env, done, doneR);
    const finished = await waitForEvent(env.store, done, "agent/llm-request-settled", (e) => e.payload.requestOffset === doneR);
    expect(finished.payload.result).not.toHaveProperty("rawResponse");
  });

  it("delivers chunks to a live subscriber in order, coalesced, before the settlement", async () => {
    const path = "/agents/test/live-chunks";
    const tokens = Array.from({ length: 60 }, (_, i) => `tok${i} `);
    env.model.script({ tokens, tokensPerSecond: 100, firstTokenDelayMs: 300 });
    const R = await seedTurn(env, path, "stream please");
    const live = env.store.subscribe(path, { fromOffset: R + 1, ephemeral: true });
    const seen: AgentEvent[] = [];
    const done = (async () => {
      for await (const event of live) {
        seen.push(event);
        if (event.type === "agent/llm-request-settled") break;
      }
    })();
    await publishLlmWork(env, path, R);
    await done;
    await live.close();

    const chunkEvents = seen.filter((e) => e.type === "agent/llm-response-chunks");
    const settledIndex = seen.findIndex((e) => e.type === "agent/llm-request-settled");
    expect(seen.slice(settledIndex + 1).some((e) => e.type === "agent/llm-response-chunks")).toBe(false);
    expect(chunkEvents.every((e) => e.ephemeral === true)).toBe(true);
    expect(chunkEvents.map((e) => (e.type === "agent/llm-response-chunks" ? e.payload.sequence : -1))).toEqual(chunkEvents.map((_, i) => i));
    expect(chunkEvents.every((e) => e.type === "agent/llm-response-chunks" && e.payload.llmRequestOffset === R)).toBe(true);
    // 600 ms of tokens at a 150 ms window: coalesced into a handful of events, not one per token.
    expect(chunkEvents.length).toBeGreaterThanOrEqual(3);
    expect(chunkEvents.length).toBeLessThan(20);
    expect(chunkText(chunkEvents)).toBe(tokens.join(""));
    const settled = seen[settledIndex];
    expect(settled?.type === "agent/llm-request-settled" && settled.payload.result.status === "succeeded" && settled.payload.result.text).toBe(tokens.join(""));
    // Chunk events are never part of the durable log.
    expect((await env.store.read(path)).some((e) => e.type === "agent/llm-response-chunks")).toBe(false);
  });

  it("speaks the Responses API where a provider is configured for it", async () => {
    const path = "/agents/test/responses-api";
    env.model.script({ text: "via responses", usage: { inputTokens: 40, outputTokens: 2, cachedInputTokens: 8, reasoningOutputTokens: 1 } });
    const R = await seedTurn(env, path, "hi", { model: "resp/gpt-5" });
    await publishLlmWork(env, path, R);
    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled");
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: "via responses", usage: { input_tokens: 40 } });
    const usage = await waitForEvent(env.store, path, "agent/token-usage-reported");
    expect(usage.payload).toEqual({ llmRequestOffset: R, model: "resp/gpt-5", maxContextTokens: 128_000, inputTokens: 40, outputTokens: 2, cachedInputTokens: 8, reasoningOutputTokens: 1 });
    const request = env.model.requests.at(-1);
    expect(request?.api).toBe("responses");
    const events = await env.store.read(path);
    expect(request?.body).toEqual({
      model: "gpt-5-responses",
      input: renderRequestAt(events, R).map((m) => ({ type: "message", role: m.role, content: m.content })),
      stream: true,
      store: false,
    });
  });

  it("given a Responses API reply that ends incomplete at the output limit, when it settles, then it keeps the text and says why, not a failed attempt", async () => {
    const path = "/agents/test/responses-incomplete";
    env.model.script({ text: "The first half via responses", finishReason: "length" });
    const R = await seedTurn(env, path, "write a long essay", { model: "resp/gpt-5" });
    await publishLlmWork(env, path, R);
    const settled = await waitForEvent(env.store, path, "agent/llm-request-settled", (e) => e.payload.requestOffset === R);
    expect(settled.payload.result).toMatchObject({ status: "succeeded", text: "The first half via responses", rawResponse: { finishReason: "max_output_tokens" } });
    expect(cutShortNote(settled.payload.result)).toMatch(/output token limit/);
    const assistant = (await env.store.read(path)).find((e) => e.type === "agents/context-added" && e.payload.role === "assistant");
    expect(assistant?.payload).toMatchObject({ content: "The first half via responses" });
  });
});

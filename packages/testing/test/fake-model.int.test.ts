// The fake model speaks both OpenAI streaming dialects well enough for the real `openai`
// client, and does what tests script: replies, pacing, failures, stalls, usage, a body log.

import OpenAI, { APIError } from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeModel, type FakeModel } from "../src/fake-model/index.ts";

let model: FakeModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

function client(url: string): OpenAI {
  return new OpenAI({ baseURL: url, apiKey: "test-key", maxRetries: 0 });
}

describe("fake model: chat completions", () => {
  it("streams the scripted text in order, then usage and [DONE], and logs the body", async () => {
    model = await startFakeModel({ replies: [{ text: "Hello there, agent.", usage: { inputTokens: 120, cachedInputTokens: 64, reasoningOutputTokens: 5 } }] });
    const stream = await client(model.url).chat.completions.create({
      model: "gpt-5.6-terra",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) deltas.push(choice.delta.content);
      if (choice?.finish_reason) finish = choice.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas).toEqual(["Hello ", "there, ", "agent."]);
    expect(finish).toBe("stop");
    expect(usage).toMatchObject({
      prompt_tokens: 120,
      completion_tokens: 3,
      total_tokens: 123,
      prompt_tokens_details: { cached_tokens: 64 },
      completion_tokens_details: { reasoning_tokens: 5 },
    });
    expect(model.requests).toHaveLength(1);
    const [request] = model.requests;
    expect(request?.api).toBe("chat");
    expect(request?.body).toMatchObject({ model: "gpt-5.6-terra", messages: [{ role: "user", content: "hi" }], stream: true });
    expect(request?.headers.authorization).toBe("Bearer test-key");
    expect(request?.progress.completed).toBe(true);
  });

  it("sends no usage chunk unless include_usage was asked for", async () => {
    model = await startFakeModel({ defaultReply: { text: "ok" } });
    const stream = await client(model.url).chat.completions.create({ model: "m", messages: [], stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("ok");
  });

  it("computes replies from the request body", async () => {
    model = await startFakeModel({
      defaultReply: (request) => ({ text: `echo:${JSON.stringify((request.body as { messages: unknown[] }).messages.length)}` }),
    });
    const stream = await client(model.url).chat.completions.create({ model: "m", messages: [{ role: "user", content: "a" }, { role: "user", content: "b" }], stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("echo:2");
  });

  it("fails with the scripted HTTP status and OpenAI error JSON", async () => {
    model = await startFakeModel({ replies: [{ failure: { status: 429, message: "slow down", type: "rate_limit_exceeded", code: "rate_limit" } }, { failure: { status: 500 } }] });
    const api = client(model.url);
    const first = await api.chat.completions.create({ model: "m", messages: [], stream: true }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(OpenAI.RateLimitError);
    expect((first as APIError).message).toContain("slow down");
    expect((first as APIError).code).toBe("rate_limit");
    const second = await api.chat.completions.create({ model: "m", messages: [], stream: true }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(OpenAI.InternalServerError);
    expect((second as APIError).status).toBe(500);
  });

  it("paces tokens at the scripted rate after the first-token delay", async () => {
    model = await startFakeModel({ replies: [{ tokens: Array.from({ length: 20 }, (_, i) => `t${i} `), tokensPerSecond: 100, firstTokenDelayMs: 150 }] });
    const started = performance.now();
    const stream = await client(model.url).chat.completions.create({ model: "m", messages: [], stream: true });
    let firstAt = 0;
    let count = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) {
        count += 1;
        if (firstAt === 0) firstAt = performance.now();
      }
    }
    const lastAt = performance.now();
    expect(count).toBe(20);
    expect(firstAt - started).toBeGreaterThanOrEqual(140);
    // 19 intervals at 100 tokens/s = 190 ms between the first and the last token.
    expect(lastAt - firstAt).toBeGreaterThanOrEqual(170);
  });

  it("stalls mid-stream without closing, and notices the client abort", async () => {
    model = await startFakeModel({ replies: [{ text: "one two three four", stallAfterTokens: 2 }] });
    const controller = new AbortController();
    const stream = await client(model.url).chat.completions.create({ model: "m", messages: [], stream: true }, { signal: controller.signal });
    const received: string[] = [];
    let secondAt = 0;
    // The openai client ends the iteration quietly when its signal aborts, so the only way
    // out of a stalled stream is the abort, which the stall timing below proves.
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) received.push(content);
      if (received.length === 2 && secondAt === 0) {
        secondAt = performance.now();
        setTimeout(() => controller.abort(), 200);
      }
    }
    expect(performance.now() - secondAt).toBeGreaterThanOrEqual(190);
    expect(received).toEqual(["one ", "two "]);
    expect(controller.signal.aborted).toBe(true);
    await expect.poll(() => model?.requests[0]?.progress.clientAborted, { timeout: 2000 }).toBe(true);
    expect(model.requests[0]?.progress.completed).toBe(false);
  });

  it("answers HTTP 500 when no reply is scripted, and waits for requests with a deadline", async () => {
    model = await startFakeModel();
    const waiting = model.waitForRequests(1, 5000);
    const error = await client(model.url).chat.completions.create({ model: "m", messages: [], stream: true }).catch((e: unknown) => e);
    expect((error as APIError).status).toBe(500);
    expect((await waiting)[0]?.path).toBe("/v1/chat/completions");
    await expect(model.waitForRequests(2, 50)).rejects.toThrow(/expected 2 requests/);
  });
});

describe("fake model: responses API", () => {
  it("streams output_text deltas and reports usage in the input/output dialect", async () => {
    model = await startFakeModel({ replies: [{ text: "Hi from responses", usage: { inputTokens: 50, outputTokens: 7, cachedInputTokens: 10, reasoningOutputTokens: 2 } }] });
    const stream = await client(model.url).responses.create({ model: "gpt-5", input: [{ role: "user", content: "hi" }], stream: true });
    const deltas: string[] = [];
    const types: string[] = [];
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") deltas.push(event.delta);
      if (event.type === "response.completed") completed = event.response;
    }
    expect(deltas.join("")).toBe("Hi from responses");
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe("response.completed");
    expect(completed?.output_text ?? (completed?.output[0] as { content: { text: string }[] }).content[0]?.text).toBe("Hi from responses");
    expect(completed?.usage).toMatchObject({
      input_tokens: 50,
      output_tokens: 7,
      input_tokens_details: { cached_tokens: 10 },
      output_tokens_details: { reasoning_tokens: 2 },
    });
    expect(model.requests[0]?.api).toBe("responses");
  });
});

import { describe, expect, it } from "vitest";
import { parseEventInput } from "@agentrt/contract";
import type { ContextItem } from "@agentrt/agent-core";
import { compactionCanShrink, compactionCheck, compactionItem } from "../src/compaction.ts";
import { failureBatch, failureMessage, keptErrorMessage, keptRawUsage, MAX_ERROR_MESSAGE_CHARS, MAX_RAW_USAGE_BYTES, successBatch } from "../src/settlement.ts";
import { normaliseUsage } from "../src/usage.ts";

describe("settlement batches", () => {
  it("success: assistant context, settled and usage, each keyed, in one batch", () => {
    const batch = successBatch({
      requestOffset: 26,
      model: "openai/gpt-5.6-terra",
      text: "Hi!",
      durationMs: 812.4,
      usage: { inputTokens: 100, outputTokens: 5, cachedInputTokens: 64 },
      rawUsage: { prompt_tokens: 100, completion_tokens: 5 },
    });
    expect(batch).toEqual([
      { type: "agents/context-added", payload: { role: "assistant", content: "Hi!", llmRequestOffset: 26 }, idempotencyKey: "agent/assistant-context@26" },
      {
        type: "agent/llm-request-settled",
        payload: { requestOffset: 26, durationMs: 812, result: { status: "succeeded", text: "Hi!", usage: { prompt_tokens: 100, completion_tokens: 5 } } },
        idempotencyKey: "agent/settle/26",
      },
      {
        type: "agent/token-usage-reported",
        payload: { llmRequestOffset: 26, model: "openai/gpt-5.6-terra", maxContextTokens: 272_000, inputTokens: 100, outputTokens: 5, cachedInputTokens: 64 },
        idempotencyKey: "agent/token-usage@26",
      },
    ]);
    for (const event of batch) expect(() => parseEventInput(event)).not.toThrow();
  });

  it("success without usage: no usage event", () => {
    const batch = successBatch({ requestOffset: 3, model: "m", text: "", durationMs: 1, usage: null });
    expect(batch.map((e) => e.type)).toEqual(["agents/context-added", "agent/llm-request-settled"]);
  });

  it("given a reply cut at the output limit, when settled, then the settlement keeps its finish reason; a finished one keeps none", () => {
    const settledOf = (finishReason: string | undefined) =>
      successBatch({ requestOffset: 3, model: "m", text: "It be", durationMs: 1, usage: null, ...(finishReason === undefined ? {} : { finishReason }) })[1]!;
    const cut = settledOf("length");
    expect(cut.payload).toEqual({ requestOffset: 3, durationMs: 1, result: { status: "succeeded", text: "It be", rawResponse: { finishReason: "length" } } });
    expect(() => parseEventInput(cut)).not.toThrow();
    expect((settledOf("stop").payload as { result: object }).result).toEqual({ status: "succeeded", text: "It be" });
    expect((settledOf(undefined).payload as { result: object }).result).toEqual({ status: "succeeded", text: "It be" });
  });

  it("failure: the attempt message says Retrying while attempts remain, then gives up", () => {
    expect(failureMessage({ requestOffset: 40, errorMessage: "HTTP 500: boom.", attempt: 1, maxAttempts: 3 })).toBe(
      "LLM request @40 failed (attempt 1 of 3): HTTP 500: boom. Retrying.",
    );
    expect(failureMessage({ requestOffset: 44, errorMessage: "HTTP 500: boom", attempt: 3, maxAttempts: 3 })).toBe(
      "LLM request @44 failed (attempt 3 of 3): HTTP 500: boom. Giving up; a new user message starts fresh.",
    );
    const batch = failureBatch({ requestOffset: 40, errorMessage: "HTTP 500: boom", durationMs: 5, attempt: 2, maxAttempts: 3 });
    expect(batch).toEqual([
      { type: "agent/llm-request-settled", payload: { requestOffset: 40, durationMs: 5, result: { status: "failed", errorMessage: "HTTP 500: boom" } }, idempotencyKey: "agent/settle/40" },
      {
        type: "stream/error-occurred",
        payload: { message: "LLM request @40 failed (attempt 2 of 3): HTTP 500: boom. Retrying.", error: { name: "LlmRequestFailed", message: "HTTP 500: boom" } },
        idempotencyKey: "agent/failure-error/40",
      },
    ]);
    for (const event of batch) expect(() => parseEventInput(event)).not.toThrow();
  });
});

describe("compaction", () => {
  const report = { llmRequestOffset: 80, model: "openai/gpt-5.6-terra", maxContextTokens: 272_000, inputTokens: 130_000, outputTokens: 6_000 };

  it("is due when input + output reaches floor(window × fraction)", () => {
    expect(compactionCheck(report, 0.5)).toEqual({ due: true, usedTokens: 136_000, thresholdTokens: 136_000 });
    expect(compactionCheck({ ...report, outputTokens: 5_999 }, 0.5).due).toBe(false);
    expect(compactionCheck({ ...report, maxContextTokens: 128_001 }, 0.3).thresholdTokens).toBe(38_400);
  });

  it("is not due on counts no prompt of that size could use: an endpoint's junk, not usage", () => {
    // Red-team: 99 M prompt tokens reported every turn compacted the history after every turn
    const prompt = { bytes: 600_000, messages: 40 };
    expect(compactionCheck({ ...report, inputTokens: 99_000_000 }, 0.5, prompt)).toMatchObject({ due: false, usedTokens: 99_006_000 });
    expect(compactionCheck({ ...report, inputTokens: 130_000 }, 0.5, { bytes: 20_000, messages: 4 }).due).toBe(false);
    expect(compactionCheck({ ...report, inputTokens: 10, outputTokens: 8 * 272_000 + 1 }, 0.5, prompt).due).toBe(false);
    // Review: a real count past the configured window (a larger model) still compacts
    expect(compactionCheck({ ...report, maxContextTokens: 128_000, inputTokens: 150_000, outputTokens: 900 }, 0.8, prompt).due).toBe(true);
    expect(compactionCheck(report, 0.5, prompt).due).toBe(true);
  });

  it("appends the developer compaction item, dont-trigger, keyed by the report offset", () => {
    const item = compactionItem(report, 83, compactionCheck(report, 0.5), "We talked about PRs.");
    expect(item).toEqual({
      type: "agents/context-added",
      payload: {
        role: "developer",
        content: "[Earlier conversation history was compacted through @80 (~136000 tokens > 136000). Summary:]\n\nWe talked about PRs.",
        compaction: { replacesHistoryThrough: 80, usage: report },
        llmRequestPolicy: { behaviour: "dont-trigger-request" },
      },
      idempotencyKey: "agent/compact-context@83",
    });
    expect(() => parseEventInput(item)).not.toThrow();
  });
});

describe("what a settlement keeps of an endpoint's answer", () => {
  it("given a usage object that is not one, or too large, when kept, then it is dropped; a plain small one is kept", () => {
    expect(keptRawUsage([1, 2, 3])).toBeUndefined();
    expect(keptRawUsage("NaN")).toBeUndefined();
    expect(keptRawUsage({ pad: "u".repeat(MAX_RAW_USAGE_BYTES) })).toBeUndefined();
    expect(keptRawUsage({ prompt_tokens: 3, completion_tokens: 4 })).toEqual({ prompt_tokens: 3, completion_tokens: 4 });
  });

  it("given an error of megabytes, when kept, then it is cut with a note of its length, and a short one is kept whole", () => {
    expect(keptErrorMessage("HTTP 500: boom")).toBe("HTTP 500: boom");
    const cut = keptErrorMessage("e".repeat(2_000_000));
    expect(cut).toBe(`${"e".repeat(MAX_ERROR_MESSAGE_CHARS)}… (cut from 2000000 characters)`);
  });

  it("given an error whose cut falls inside an emoji, when kept, then the emoji goes whole and no half of it is stored", () => {
    const cut = keptErrorMessage(`${"e".repeat(MAX_ERROR_MESSAGE_CHARS - 1)}😀${"e".repeat(10)}`);
    expect(cut.isWellFormed()).toBe(true);
    expect(cut).toBe(`${"e".repeat(MAX_ERROR_MESSAGE_CHARS - 1)}… (cut from ${MAX_ERROR_MESSAGE_CHARS + 11} characters)`);
  });

  it("given token counts no model has (2^53 − 1), when normalised, then they are not usage", () => {
    expect(normaliseUsage({ prompt_tokens: Number.MAX_SAFE_INTEGER, completion_tokens: 1 })).toBeNull();
    expect(normaliseUsage({ prompt_tokens: 1_000_000, completion_tokens: 1 })).toEqual({ inputTokens: 1_000_000, outputTokens: 1 });
  });

  describe("whether a compaction could shrink the context", () => {
    const section = (offset: number, key: string, content: string): ContextItem => ({ kind: "section", offset, key, payload: { role: "system", key, content } });
    const message = (offset: number, role: "user" | "assistant" | "system", content: string): ContextItem => ({ kind: "message", offset, payload: { role, content } });

    it("given a context of many keyed sections and a little talk, then no compaction is asked for: it keeps the sections", () => {
      const items = [...Array.from({ length: 1_000 }, (_, i) => section(i + 1, `k${i}`, "x".repeat(300))), message(1_001, "user", "hi"), message(1_002, "assistant", "hello")];
      expect(compactionCanShrink(items)).toBe(false);
    });

    it("given a conversation past its standing document, then a compaction can shrink it", () => {
      const items = [section(1, "goal", "x".repeat(2_000)), ...Array.from({ length: 200 }, (_, i) => message(i + 2, i % 2 === 0 ? "user" : "assistant", "y".repeat(500)))];
      expect(compactionCanShrink(items)).toBe(true);
    });

    it("given one key rewritten many times, then only its newest content counts as kept", () => {
      const items = Array.from({ length: 100 }, (_, i) => section(i + 1, "plan", "z".repeat(1_000)));
      expect(compactionCanShrink(items)).toBe(true);
    });

    it("given system messages only, or nothing, then none is asked for", () => {
      expect(compactionCanShrink([message(1, "system", "rules".repeat(100))])).toBe(false);
      expect(compactionCanShrink([])).toBe(false);
    });
  });
});

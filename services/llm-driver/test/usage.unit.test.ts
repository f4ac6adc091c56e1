import { describe, expect, it } from "vitest";
import { maxContextTokensFor, normaliseUsage, tokenUsagePayload } from "../src/usage.ts";

describe("usage normalisation", () => {
  it("reads the Chat Completions dialect", () => {
    expect(
      normaliseUsage({
        prompt_tokens: 1200,
        completion_tokens: 80,
        total_tokens: 1280,
        prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 32 },
      }),
    ).toEqual({ inputTokens: 1200, outputTokens: 80, cachedInputTokens: 1024, reasoningOutputTokens: 32 });
  });

  it("reads the Responses dialect", () => {
    expect(
      normaliseUsage({
        input_tokens: 900,
        input_tokens_details: { cached_tokens: 512 },
        output_tokens: 40,
        output_tokens_details: { reasoning_tokens: 7 },
        total_tokens: 940,
      }),
    ).toEqual({ inputTokens: 900, outputTokens: 40, cachedInputTokens: 512, reasoningOutputTokens: 7 });
  });

  it("leaves out what the provider did not report (null details count as missing)", () => {
    expect(normaliseUsage({ prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: null })).toEqual({ inputTokens: 10, outputTokens: 2 });
  });

  it("rejects things that are not usage", () => {
    expect(normaliseUsage(null)).toBeNull();
    expect(normaliseUsage({ total_tokens: 5 })).toBeNull();
    expect(normaliseUsage({ prompt_tokens: -1, completion_tokens: 2 })).toBeNull();
  });
});

describe("context window table", () => {
  it("uses the longest matching prefix, else the default", () => {
    expect(maxContextTokensFor("openai/gpt-5.6-terra")).toBe(272_000);
    expect(maxContextTokensFor("openai/gpt-4o")).toBe(128_000);
    const table = { byPrefix: { "openai/": 100_000, "openai/gpt-5": 272_000, "openai/gpt-5-mini": 64_000 }, defaultTokens: 8_000 };
    expect(maxContextTokensFor("openai/gpt-5-mini-2", table)).toBe(64_000);
    expect(maxContextTokensFor("openai/gpt-5.6", table)).toBe(272_000);
    expect(maxContextTokensFor("openai/o3", table)).toBe(100_000);
    expect(maxContextTokensFor("ollama/llama3", table)).toBe(8_000);
  });

  it("builds the token-usage-reported payload", () => {
    expect(tokenUsagePayload(26, "openai/gpt-5.6-terra", { inputTokens: 10, outputTokens: 3, cachedInputTokens: 0 })).toEqual({
      llmRequestOffset: 26,
      model: "openai/gpt-5.6-terra",
      maxContextTokens: 272_000,
      inputTokens: 10,
      outputTokens: 3,
      cachedInputTokens: 0,
    });
  });
});

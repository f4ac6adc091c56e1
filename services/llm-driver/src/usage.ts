// Token usage: provider dialects normalised into `agent/token-usage-reported` payloads.
// Chat Completions says prompt_tokens / completion_tokens / prompt_tokens_details.cached_tokens
// / completion_tokens_details.reasoning_tokens; the Responses API says input_tokens /
// output_tokens / input_tokens_details.cached_tokens / output_tokens_details.reasoning_tokens.

import { z } from "zod";
import type { PayloadOf } from "@agentrt/contract";

// No model's window is near 100 M tokens: a larger count is an endpoint's junk, and taken as
// usage it triggered a compaction at once (2^53 − 1 input tokens).
const count = z.number().int().nonnegative().max(100_000_000);
const rawUsageSchema = z.looseObject({
  prompt_tokens: count.optional(),
  completion_tokens: count.optional(),
  input_tokens: count.optional(),
  output_tokens: count.optional(),
  prompt_tokens_details: z.looseObject({ cached_tokens: count.nullish() }).nullish(),
  input_tokens_details: z.looseObject({ cached_tokens: count.nullish() }).nullish(),
  completion_tokens_details: z.looseObject({ reasoning_tokens: count.nullish() }).nullish(),
  output_tokens_details: z.looseObject({ reasoning_tokens: count.nullish() }).nullish(),
});

export interface NormalisedUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens?: number;
  readonly reasoningOutputTokens?: number;
}

/** Normalises a provider usage object; null when it is not usage in either dialect. */
export function normaliseUsage(raw: unknown): NormalisedUsage | null {
  const parsed = rawUsageSchema.safeParse(raw);
  if (!parsed.success) return null;
  const u = parsed.data;
  const input = u.input_tokens ?? u.prompt_tokens;
  const output = u.output_tokens ?? u.completion_tokens;
  if (input === undefined && output === undefined) return null;
  const cached = u.input_tokens_details?.cached_tokens ?? u.prompt_tokens_details?.cached_tokens ?? undefined;
  const reasoning = u.output_tokens_details?.reasoning_tokens ?? u.completion_tokens_details?.reasoning_tokens ?? undefined;
  return {
    inputTokens: input ?? 0,
    outputTokens: output ?? 0,
    ...(cached === undefined ? {} : { cachedInputTokens: cached }),
    ...(reasoning === undefined ? {} : { reasoningOutputTokens: reasoning }),
  };
}

/** Context window sizes by model-name prefix; the longest matching prefix wins. */
export interface ContextWindowTable {
  readonly byPrefix: Readonly<Record<string, number>>;
  readonly defaultTokens: number;
}

export const DEFAULT_CONTEXT_WINDOWS: ContextWindowTable = {
  byPrefix: { "openai/gpt-5": 272_000 },
  defaultTokens: 128_000,
};

export function maxContextTokensFor(model: string, table: ContextWindowTable = DEFAULT_CONTEXT_WINDOWS): number {
  let best: { prefix: string; tokens: number } | null = null;
  for (const [prefix, tokens] of Object.entries(table.byPrefix)) {
    if (model.startsWith(prefix) && (best === null || prefix.length > best.prefix.length)) best = { prefix, tokens };
  }
  return best?.tokens ?? table.defaultTokens;
}

export function tokenUsagePayload(
  requestOffset: number,
  model: string,
  usage: NormalisedUsage,
  table: ContextWindowTable = DEFAULT_CONTEXT_WINDOWS,
): PayloadOf<"agent/token-usage-reported"> {
  return {
    llmRequestOffset: requestOffset,
    model,
    maxContextTokens: maxContextTokensFor(model, table),
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    ...(usage.cachedInputTokens === undefined ? {} : { cachedInputTokens: usage.cachedInputTokens }),
    ...(usage.reasoningOutputTokens === undefined ? {} : { reasoningOutputTokens: usage.reasoningOutputTokens }),
  };
}

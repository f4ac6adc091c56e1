// Usage the fake model reports: scripted numbers win; otherwise a rough estimate (4 request
// bytes per input token, one output token per streamed token), like a real provider would.

import type { FakeReply } from "./types.ts";

export interface ResolvedUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  readonly reasoningOutputTokens: number;
}

export function resolveUsage(reply: FakeReply, rawBody: string, tokenCount: number): ResolvedUsage {
  const scripted = reply.usage === false || reply.usage === undefined ? {} : reply.usage;
  return {
    inputTokens: scripted.inputTokens ?? Math.ceil(Buffer.byteLength(rawBody) / 4),
    outputTokens: scripted.outputTokens ?? tokenCount,
    cachedInputTokens: scripted.cachedInputTokens ?? 0,
    reasoningOutputTokens: scripted.reasoningOutputTokens ?? 0,
  };
}

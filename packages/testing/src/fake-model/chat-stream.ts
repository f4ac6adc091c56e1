// The Chat Completions streaming dialect: `data: {chat.completion.chunk}` SSE lines, a final
// chunk with `finish_reason`, an optional usage chunk (`stream_options.include_usage`) with
// empty `choices`, then `data: [DONE]`. Non-streaming requests get one `chat.completion`.

import type { ServerResponse } from "node:http";
import { paceTokens } from "./pacing.ts";
import type { FakeReply, FakeRequestProgress } from "./types.ts";
import { resolveUsage, type ResolvedUsage } from "./usage.ts";

export interface StreamContext {
  readonly id: string;
  readonly model: string;
  readonly body: Record<string, unknown>;
  readonly rawBody: string;
  readonly reply: FakeReply;
  readonly tokens: readonly string[];
  readonly progress: FakeRequestProgress;
  readonly response: ServerResponse;
}

export function chatUsage(usage: ResolvedUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: usage.reasoningOutputTokens, audio_tokens: 0 },
  };
}

export async function streamChat(ctx: StreamContext): Promise<void> {
  const { id, model, body, reply, tokens, progress, response } = ctx;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): void => {
    const frame = { id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_fake", choices, ...extra };
    response.write(`data: ${JSON.stringify(frame)}\n\n`);
  };
  const choice = (delta: Record<string, unknown>, finish: string | null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finish,
  });
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const complete = await paceTokens({
    tokens,
    tokensPerSecond: reply.tokensPerSecond ?? Infinity,
    stallAfterTokens: reply.stallAfterTokens,
    progress,
    response,
    writeToken: (token, index) => chunk([choice(index === 0 ? { role: "assistant", content: token } : { content: token }, null)]),
  });
  if (!complete) return; // stalled or abandoned: leave the connection hanging / closed
  chunk([choice({}, reply.finishReason ?? "stop")]);
  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
  if (streamOptions?.include_usage === true && reply.usage !== false) {
    chunk([], { usage: chatUsage(resolveUsage(reply, ctx.rawBody, tokens.length)) });
  }
  progress.completed = true;
  if (reply.keepOpenAfterFinish === true) return;
  response.write("data: [DONE]\n\n");
  response.end();
}

export function chatCompletionJson(ctx: Omit<StreamContext, "response" | "progress">): Record<string, unknown> {
  const text = ctx.tokens.join("");
  return {
    id: ctx.id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: ctx.model,
    choices: [{ index: 0, message: { role: "assistant", content: text, refusal: null }, logprobs: null, finish_reason: ctx.reply.finishReason ?? "stop" }],
    ...(ctx.reply.usage === false ? {} : { usage: chatUsage(resolveUsage(ctx.reply, ctx.rawBody, ctx.tokens.length)) }),
  };
}

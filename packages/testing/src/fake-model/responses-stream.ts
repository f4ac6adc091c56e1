// The Responses API streaming dialect: named SSE events (`event: response.output_text.delta`
// + `data: {...}`) with a `sequence_number`, from `response.created` to `response.completed`,
// whose response carries `usage` in the input/output dialect.

import { paceTokens } from "./pacing.ts";
import type { StreamContext } from "./chat-stream.ts";
import { resolveUsage, type ResolvedUsage } from "./usage.ts";

export function responsesUsage(usage: ResolvedUsage): Record<string, unknown> {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningOutputTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

function responseObject(ctx: Pick<StreamContext, "id" | "model">, status: string, output: unknown[], usage: unknown, incompleteReason?: string) {
  return {
    id: ctx.id,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: incompleteReason === undefined ? null : { reason: incompleteReason },
    model: ctx.model,
    output,
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    usage,
  };
}

function messageItem(itemId: string, text: string, status: string) {
  return {
    type: "message",
    id: itemId,
    status,
    role: "assistant",
    content: status === "in_progress" ? [] : [{ type: "output_text", text, annotations: [], logprobs: [] }],
  };
}

export async function streamResponses(ctx: StreamContext): Promise<void> {
  const { reply, tokens, progress, response } = ctx;
  const itemId = `msg_${ctx.id}`;
  let sequence = 0;
  const send = (type: string, data: Record<string, unknown>): void => {
    response.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
  };
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  send("response.created", { response: responseObject(ctx, "in_progress", [], null) });
  send("response.in_progress", { response: responseObject(ctx, "in_progress", [], null) });
  send("response.output_item.added", { output_index: 0, item: messageItem(itemId, "", "in_progress") });
  send("response.content_part.added", {
    item_id: itemId,
    output_index: 0,
    content_index: 0,
    part: { type: "output_text", text: "", annotations: [] },
  });
  const complete = await paceTokens({
    tokens,
    tokensPerSecond: reply.tokensPerSecond ?? Infinity,
    stallAfterTokens: reply.stallAfterTokens,
    progress,
    response,
    writeToken: (token) =>
      send("response.output_text.delta", { item_id: itemId, output_index: 0, content_index: 0, delta: token, logprobs: [] }),
  });
  if (!complete) return;
  const text = tokens.join("");
  const part = { type: "output_text", text, annotations: [] };
  send("response.output_text.done", { item_id: itemId, output_index: 0, content_index: 0, text, logprobs: [] });
  send("response.content_part.done", { item_id: itemId, output_index: 0, content_index: 0, part });
  // Cut short (the chat dialect's finish_reason length / content_filter): the response ends incomplete.
  const incompleteReason = reply.finishReason === "length" ? "max_output_tokens" : reply.finishReason === "content_filter" ? "content_filter" : undefined;
  const done = messageItem(itemId, text, incompleteReason === undefined ? "completed" : "incomplete");
  send("response.output_item.done", { output_index: 0, item: done });
  const usage = reply.usage === false ? null : responsesUsage(resolveUsage(reply, ctx.rawBody, tokens.length));
  if (incompleteReason === undefined) send("response.completed", { response: responseObject(ctx, "completed", [done], usage) });
  else send("response.incomplete", { response: responseObject(ctx, "incomplete", [done], usage, incompleteReason) });
  progress.completed = true;
  if (reply.keepOpenAfterFinish === true) return;
  response.end();
}

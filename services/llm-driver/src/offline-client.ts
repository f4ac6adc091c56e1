// The offline model as a model client: its deterministic reply is streamed as Chat
// Completions chunks through the same path as a real provider's (coalescer, live lane,
// settlement), with an estimated usage chunk, so nothing downstream can tell the difference
// except the "[offline model]" label.

import { splitWords } from "./words.ts";
import type { ModelCall, ModelClient, ModelStreamEvent } from "./model-client.ts";
import { offlineReply, offlineSummary } from "./offline-reply.ts";

export const OFFLINE_MODEL_NAME = "offline";

export class OfflineModelClient implements ModelClient {
  async *stream(call: ModelCall): AsyncIterable<ModelStreamEvent> {
    const text = call.purpose === "compaction" ? offlineSummary(call.messages.slice(0, -1)) : offlineReply(call.messages, call.interpretResponses);
    const id = `offline-${call.promptCacheKey}`;
    const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) => ({
      id,
      object: "chat.completion.chunk",
      created: 0,
      model: OFFLINE_MODEL_NAME,
      choices: finish === "none" ? [] : [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
    for (const [index, word] of splitWords(text).entries()) {
      // Yield to the event loop between tokens so an abort lands like it would on a socket.
      await new Promise((resolve) => setImmediate(resolve));
      if (call.signal.aborted) throw call.signal.reason;
      yield { kind: "chunk", raw: chunk(index === 0 ? { role: "assistant", content: word } : { content: word }, null), text: word };
    }
    yield { kind: "chunk", raw: chunk({}, "stop"), text: "" };
    const promptChars = call.messages.reduce((sum, m) => sum + m.content.length, 0);
    const usage = { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: splitWords(text).length, total_tokens: 0 };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    yield { kind: "chunk", raw: chunk({}, "none", { usage }), text: "" };
    yield { kind: "usage", raw: usage };
  }
}

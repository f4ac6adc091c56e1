// The OpenAI adapter of the model port, on the official `openai` package. The client's own
// retries are off (maxRetries 0): retrying is the reducer's decision, visible on the stream.

import OpenAI, { APIError } from "openai";
import { ModelCallError } from "./errors.ts";
import type { ModelCall, ModelClient, ModelStreamEvent } from "./model-client.ts";
import type { ModelRoute } from "./providers.ts";
import { createHttpFetch, type HttpFetch } from "./http-fetch.ts";

export class OpenAiModelClient implements ModelClient {
  private readonly clients = new Map<string, OpenAI>();
  /** The providers' kept-alive connections (http-fetch.ts). */
  private readonly http: HttpFetch = createHttpFetch();

  constructor(private readonly options: { timeoutMs?: number } = {}) {}

  /** Closes the kept-alive connections to the providers. */
  close(): void {
    this.http.close();
  }

  async *stream(call: ModelCall): AsyncIterable<ModelStreamEvent> {
    if (call.route === null) throw new ModelCallError("the OpenAI client needs a provider route");
    const client = this.clientFor(call.route);
    try {
      if (call.route.api === "responses") yield* this.streamResponses(client, call, call.route);
      else yield* this.streamChat(client, call, call.route);
    } catch (error) {
      if (call.signal.aborted) throw call.signal.reason;
      throw toModelCallError(error);
    }
    // The client ends its iteration quietly when the signal aborts; an abort is not an answer.
    if (call.signal.aborted) throw call.signal.reason;
  }

  private async *streamChat(client: OpenAI, call: ModelCall, route: ModelRoute): AsyncIterable<ModelStreamEvent> {
    const stream = await client.chat.completions.create(
      {
        model: route.remoteModel,
        messages: call.messages.map((m) => ({ role: m.role, content: m.content })),
        stream: true,
        stream_options: { include_usage: true },
        ...(route.promptCacheKey ? { prompt_cache_key: call.promptCacheKey } : {}),
      },
      { signal: call.signal },
    );
    let finished = false;
    for await (const chunk of stream) {
      // An endpoint's chunk is not trusted to have the shape the types say: `choices` missing
      // read as "Cannot read properties of undefined", and an object as content became
      // "[object Object]" in the reply.
      const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      if (choice?.finish_reason) finished = true;
      const content: unknown = choice?.delta?.content;
      if (content !== undefined && content !== null && typeof content !== "string") {
        const what = Array.isArray(content) ? "an array" : typeof content === "object" ? "an object" : `a ${typeof content}`;
        throw new ModelCallError(`the model sent ${what} as delta.content, where the chat completions protocol has text`);
      }
      yield { kind: "chunk", raw: chunk, text: content ?? "" };
      if (chunk.usage) yield { kind: "usage", raw: chunk.usage as unknown as Record<string, unknown> };
    }
    if (!finished && !call.signal.aborted) throw new ModelCallError("the model's stream ended without a finish_reason");
  }

  private async *streamResponses(client: OpenAI, call: ModelCall, route: ModelRoute): AsyncIterable<ModelStreamEvent> {
    const stream = await client.responses.create(
      {
        model: route.remoteModel,
        input: call.messages.map((m) => ({ type: "message" as const, role: m.role, content: m.content })),
        stream: true,
        store: false,
        ...(route.promptCacheKey ? { prompt_cache_key: call.promptCacheKey } : {}),
      },
      { signal: call.signal },
    );
    let completed = false;
    for await (const event of stream) {
      yield { kind: "chunk", raw: event, text: event.type === "response.output_text.delta" ? event.delta : "" };
      if (event.type === "response.completed") {
        completed = true;
        if (event.response.usage) yield { kind: "usage", raw: event.response.usage as unknown as Record<string, unknown> };
      } else if (event.type === "response.failed" || event.type === "response.incomplete") {
        throw new ModelCallError(`the model's response ${event.type.slice("response.".length)}: ${JSON.stringify(event.response.error ?? event.response.incomplete_details)}`);
      } else if (event.type === "error") {
        throw new ModelCallError(`the model's stream reported an error: ${event.message}`);
      }
    }
    if (!completed && !call.signal.aborted) throw new ModelCallError("the model's stream ended before response.completed");
  }

  private clientFor(route: ModelRoute): OpenAI {
    const id = `${route.baseUrl}\u0000${route.apiKey}`;
    let client = this.clients.get(id);
    if (client === undefined) {
      client = new OpenAI({ baseURL: route.baseUrl, apiKey: route.apiKey, maxRetries: 0, timeout: this.options.timeoutMs ?? 600_000, fetch: this.http.fetch });
      this.clients.set(id, client);
    }
    return client;
  }
}

function toModelCallError(error: unknown): ModelCallError {
  if (error instanceof ModelCallError) return error;
  if (error instanceof APIError) {
    const status = error.status === undefined ? "" : `HTTP ${error.status}: `;
    // The client's "Connection error." alone says nothing of why: the cause does.
    const why = error.status === undefined && error.cause instanceof Error && error.cause.message !== "" ? `: ${error.cause.message}` : "";
    return new ModelCallError(`${status}${error.message.replace(/\.$/, why === "" ? "." : "")}${why}`.replace(/^(HTTP \d+: )\d{3} /, "$1"), { cause: error, status: error.status });
  }
  return new ModelCallError(error instanceof Error ? error.message : String(error), { cause: error });
}

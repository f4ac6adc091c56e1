// The OpenAI adapter of the model port, on the official `openai` package. The client's own
// retries are off (maxRetries 0): retrying is the reducer's decision, visible on the stream.

import OpenAI, { APIError } from "openai";
import { FINISH_REASON_PATTERN } from "@agentrt/agent-core/display";
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
    const { data: stream, response } = await client.chat.completions
      .create(
        {
          model: route.remoteModel,
          messages: call.messages.map((m) => ({ role: m.role, content: m.content })),
          stream: true,
          stream_options: { include_usage: true },
          ...(route.promptCacheKey ? { prompt_cache_key: call.promptCacheKey } : {}),
        },
        { signal: call.signal },
      )
      .withResponse();
    let finished = false;
    for await (const chunk of stream) {
      // An endpoint's chunk is not trusted to have the shape the types say: `choices` missing
      // read as "Cannot read properties of undefined", and an object as content became
      // "[object Object]" in the reply.
      if (typeof chunk !== "object" || chunk === null || Array.isArray(chunk)) {
        throw new ModelCallError(`the model sent ${describeJson(chunk)} as a stream chunk, where the chat completions protocol has an object`);
      }
      const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
      const content: unknown = choice?.delta?.content;
      if (content !== undefined && content !== null && typeof content !== "string") {
        throw new ModelCallError(`the model sent ${describeJson(content)} as delta.content, where the chat completions protocol has text`);
      }
      // Text after the finish is not part of the answer (the protocol sends none).
      const text = finished ? "" : (content ?? "");
      const finishReason = finished || !choice?.finish_reason ? undefined : keptFinishReason(choice.finish_reason);
      yield {
        kind: "chunk",
        raw: chunk,
        text,
        ...(text === "" && !carriesOutput(choice?.delta) ? { empty: true as const } : {}),
        ...(finishReason === undefined ? {} : { finishReason }),
      };
      if (choice?.finish_reason) finished = true;
      if (chunk.usage) {
        yield { kind: "usage", raw: chunk.usage as unknown as Record<string, unknown> };
        // The usage chunk is the stream's last: an endpoint that then keeps the connection open
        // had the finished answer wait for the idle watchdog and fail.
        if (finished) break;
      }
    }
    if (!finished && !call.signal.aborted) throw new ModelCallError(`the model's stream ended without a finish_reason${notAnEventStream(response)}`);
  }

  private async *streamResponses(client: OpenAI, call: ModelCall, route: ModelRoute): AsyncIterable<ModelStreamEvent> {
    const { data: stream, response } = await client.responses
      .create(
        {
          model: route.remoteModel,
          input: call.messages.map((m) => ({ type: "message" as const, role: m.role, content: m.content })),
          stream: true,
          store: false,
          ...(route.promptCacheKey ? { prompt_cache_key: call.promptCacheKey } : {}),
        },
        { signal: call.signal },
      )
      .withResponse();
    let completed = false;
    for await (const event of stream) {
      if (typeof event !== "object" || event === null || Array.isArray(event)) {
        throw new ModelCallError(`the model sent ${describeJson(event)} as a stream event, where the responses protocol has an object`);
      }
      const delta: unknown = event.type === "response.output_text.delta" ? event.delta : "";
      if (typeof delta !== "string") throw new ModelCallError(`the model sent ${describeJson(delta)} as a response.output_text.delta's delta, where the responses protocol has text`);
      const output = delta !== "" || (typeof event.type === "string" && event.type.endsWith(".delta") && carriesOutput(event));
      // Cut short (its output token limit, the content filter): the text so far is the answer,
      // kept with why, as a chat completion's finish_reason length is (it had failed the attempt,
      // and the retry was cut at the same limit).
      const incomplete = event.type === "response.incomplete";
      const finishReason = incomplete ? keptFinishReason((event.response as { incomplete_details?: { reason?: unknown } | null } | undefined)?.incomplete_details?.reason ?? "incomplete") : undefined;
      yield { kind: "chunk", raw: event, text: delta, ...(output ? {} : { empty: true as const }), ...(finishReason === undefined ? {} : { finishReason }) };
      if (event.type === "response.completed" || incomplete) {
        completed = true;
        const usage: unknown = (event as { response?: { usage?: unknown } }).response?.usage;
        if (typeof usage === "object" && usage !== null) yield { kind: "usage", raw: usage as Record<string, unknown> };
        // Nothing after the completion is part of the answer.
        break;
      } else if (event.type === "response.failed") {
        throw new ModelCallError(`the model's response failed: ${JSON.stringify(event.response.error)}`);
      } else if (event.type === "error") {
        throw new ModelCallError(`the model's stream reported an error: ${event.message}`);
      }
    }
    if (!completed && !call.signal.aborted) throw new ModelCallError(`the model's stream ended before response.completed${notAnEventStream(response)}`);
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
  // The client parses each event's data as JSON: its bare "Expected property name…" named no one.
  if (error instanceof SyntaxError) return new ModelCallError(`the model sent a stream event whose data is not JSON (${error.message})`, { cause: error });
  if (error instanceof APIError) {
    const status = error.status === undefined ? "" : `HTTP ${error.status}: `;
    // The client's "Connection error." alone says nothing of why: the cause does.
    const why = error.status === undefined && error.cause instanceof Error && error.cause.message !== "" ? `: ${error.cause.message}` : "";
    return new ModelCallError(`${status}${error.message.replace(/\.$/, why === "" ? "." : "")}${why}`.replace(/^(HTTP \d+: )\d{3} /, "$1"), { cause: error, status: error.status });
  }
  return new ModelCallError(error instanceof Error ? error.message : String(error), { cause: error });
}

/**
 * Why a stream that ended without its end may have held no events at all, from its answer's
 * headers: a body compressed though nobody asked (it is not inflated), or one that is not an
 * event stream (a proxy's HTML page, a server that ignores `stream: true` and sends one JSON
 * completion). Empty when it was an event stream. Header values are quoted and cut short.
 */
function notAnEventStream(response: Response): string {
  const quoted = (value: string) => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  const encoding = response.headers.get("content-encoding") ?? "";
  if (encoding !== "" && encoding.toLowerCase() !== "identity") return ` (the endpoint sent its body compressed as ${quoted(encoding)}, which was not asked for and is not inflated)`;
  const type = response.headers.get("content-type") ?? "";
  if (/^\s*text\/event-stream\s*(;|$)/i.test(type)) return "";
  return ` (the endpoint answered ${type === "" ? "without a content-type" : `as ${quoted(type)}`}, not as an event stream: is it an OpenAI-compatible endpoint that streams?)`;
}

/** A finish reason as the settlement keeps it: a short identifier, or `unrecognised`. */
function keptFinishReason(reason: unknown): string {
  return typeof reason === "string" && FINISH_REASON_PATTERN.test(reason) ? reason : "unrecognised";
}

/** What a value from the wire is, for an error naming it ("null", "an array", "a number"). */
function describeJson(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

const NOT_OUTPUT_FIELDS: ReadonlySet<string> = new Set(["role", "type", "item_id", "sequence_number", "output_index", "content_index", "obfuscation", "logprobs"]);

/**
 * Whether a chat delta (or a responses event) carries model output besides its text: reasoning
 * text, tool-call arguments, a refusal. A delta of only its role, or of empty strings, does not.
 */
function carriesOutput(delta: unknown): boolean {
  if (typeof delta !== "object" || delta === null) return false;
  for (const [field, value] of Object.entries(delta)) {
    // Framing, not output (`obfuscation` is the responses API's random padding of a delta).
    if (NOT_OUTPUT_FIELDS.has(field)) continue;
    if (typeof value === "string" && value !== "") return true;
    if (Array.isArray(value) && value.length > 0) return true;
  }
  return false;
}

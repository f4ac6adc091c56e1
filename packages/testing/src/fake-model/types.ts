// The fake model's vocabulary: what a test scripts (a reply) and what it inspects afterwards
// (the log of request bodies). Kept apart from the server so tests can build replies without
// pulling in node:http.

/** Usage numbers the fake reports; omitted fields are derived from the request and reply. */
export interface FakeUsage {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly cachedInputTokens?: number;
  readonly reasoningOutputTokens?: number;
}

/** An HTTP error answer, shaped like OpenAI's `{error: {message, type, param, code}}`. */
export interface FakeFailure {
  /** HTTP status, e.g. 500 or 429. */
  readonly status: number;
  readonly message?: string;
  readonly type?: string;
  readonly code?: string | null;
}

/** One scripted answer. */
export interface FakeReply {
  /** The assistant text; streamed as `tokens` when given, else split into word-sized tokens. */
  readonly text?: string;
  readonly tokens?: readonly string[];
  /** Fail with this HTTP error instead of streaming. */
  readonly failure?: FakeFailure;
  /** Milliseconds between receiving the request and the first token. */
  readonly firstTokenDelayMs?: number;
  /** Pacing; `Infinity` (default) streams as fast as the socket takes it. */
  readonly tokensPerSecond?: number;
  /** Stop sending after this many tokens and keep the connection open (a hung provider). */
  readonly stallAfterTokens?: number;
  /** Usage to report; `false` reports none even when the client asked for it. */
  readonly usage?: FakeUsage | false;
  /** How the answer ends; on the Responses API, `length` and `content_filter` end it with `response.incomplete` (`max_output_tokens`, `content_filter`). */
  readonly finishReason?: "stop" | "length" | "content_filter";
  /** After the finish (and usage), send no end of stream and keep the connection open (a provider that never closes). */
  readonly keepOpenAfterFinish?: boolean;
}

/** A request as the fake received it. */
export interface FakeModelRequest {
  /** Position in the log, from 0. */
  readonly index: number;
  readonly method: string;
  /** URL path, e.g. `/v1/chat/completions`. */
  readonly path: string;
  readonly api: "chat" | "responses" | "other";
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The parsed JSON body (undefined when it was not JSON). */
  readonly body: unknown;
  readonly rawBody: string;
  /** When the whole body had arrived, in epoch milliseconds (`Date.now()`): comparable with an event's `createdAt` or `Date.now()` in any process. */
  readonly receivedAtMs: number;
  /** The same moment on the machine's monotonic clock (`monotonicMs`): sub-millisecond, comparable with `monotonicMs()` in any process on this machine. */
  readonly receivedAtMonotonicMs: number;
  /** Filled in while streaming: how the answer went. */
  readonly progress: FakeRequestProgress;
}

export interface FakeRequestProgress {
  tokensSent: number;
  /** When the first and the last token were written, on the monotonic clock (`monotonicMs`). */
  firstTokenAtMs?: number;
  lastTokenAtMs?: number;
  /** The client closed the connection before the answer was complete. */
  clientAborted: boolean;
  completed: boolean;
}

/** A reply, or a function of the request that computes one. */
export type FakeReplySource = FakeReply | ((request: FakeModelRequest) => FakeReply | Promise<FakeReply>);

export interface FakeModelOptions {
  /** Replies used in order, one per model request. */
  readonly replies?: readonly FakeReplySource[];
  /** Used when the queue is empty; without it an empty queue answers HTTP 500. */
  readonly defaultReply?: FakeReplySource;
  readonly host?: string;
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** Model name echoed in chunks when the request names none. */
  readonly modelName?: string;
}

export interface FakeModel {
  /** Base URL including `/v1`, ready for `new OpenAI({baseURL})`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in arrival order. */
  readonly requests: readonly FakeModelRequest[];
  /** Queue a reply for the next request. */
  script(reply: FakeReplySource): void;
  /** Resolves once `count` requests have arrived; rejects after `timeoutMs`. */
  waitForRequests(count: number, timeoutMs?: number): Promise<FakeModelRequest[]>;
  close(): Promise<void>;
}

// The model port: one streaming call, whatever answers it. The OpenAI adapter speaks Chat
// Completions or the Responses API through the `openai` package; the offline model answers
// in-process. Both yield the provider's raw chunks (published verbatim on the live lane),
// each with its text delta, plus the usage when the provider reports it.

import type { ModelRoute } from "./providers.ts";

export interface RenderedMessage {
  readonly role: "system" | "developer" | "user" | "assistant";
  readonly content: string;
}

export interface ModelCall {
  /** The provider route, or null for the built-in offline model. */
  readonly route: ModelRoute | null;
  /** The agent's model name (e.g. `openai/gpt-5.6-terra`). */
  readonly model: string;
  readonly messages: readonly RenderedMessage[];
  /** Sent as `prompt_cache_key` where the provider accepts it: the stream path. */
  readonly promptCacheKey: string;
  /** The agent's reply dialect (the offline model answers in it). */
  readonly interpretResponses: boolean;
  readonly purpose: "turn" | "compaction";
  readonly signal: AbortSignal;
}

export type ModelStreamEvent =
  | {
      readonly kind: "chunk";
      readonly raw: unknown;
      readonly text: string;
      /**
       * The chunk carries no model output (an empty delta, a keep-alive): it is no progress for
       * the idle watchdog. An endpoint sending an empty delta every 200 ms had held its turn,
       * and a driver slot, until the request expired ten minutes later.
       */
      readonly empty?: true;
      /**
       * The chunk ends the answer for this reason (a chat completion's `finish_reason`, a short
       * identifier; one that is not reads `unrecognised`): kept on the settlement when it is not
       * `stop`, so a reply cut at the output limit or by a content filter is not a plain answer.
       */
      readonly finishReason?: string;
    }
  | { readonly kind: "usage"; readonly raw: Record<string, unknown> };

export interface ModelClient {
  /**
   * Streams the answer. Ends normally when the answer is complete; throws a ModelCallError on
   * provider failure, and throws `signal.reason` when the call was aborted.
   */
  stream(call: ModelCall): AsyncIterable<ModelStreamEvent>;
}

// The driver's settlement batches (contract: "The LLM request (driver)"). Every event is
// keyed, and a keyed batch is all-or-nothing, so when two drivers race for one request the
// first batch commits and the other commits nothing.

import { eventInput, idempotencyKeys, textHead, type EventInput, type PayloadOf } from "@agentrt/contract";
import { MAX_BATCH_BYTES } from "@agentrt/streams";
import { tokenUsagePayload, type ContextWindowTable, type NormalisedUsage } from "./usage.ts";

// The keys live in the contract's reserved namespaces (one builder each).
export const { settle: settleKey, assistantContext: assistantContextKey, tokenUsage: tokenUsageKey, failureError: failureErrorKey, compactContext: compactContextKey } =
  idempotencyKeys;

/** Bytes of a success batch kept beside the reply's two copies: its envelope, keys, usage. */
const SUCCESS_BATCH_ROOM = 100_000;
/**
 * UTF-8 bytes of reply a success settlement stores (400 000): its batch carries the text twice
 * (the assistant's context and the settled result) and encodes to at most MAX_BATCH_BYTES.
 */
export const MAX_REPLY_BYTES = (MAX_BATCH_BYTES - SUCCESS_BATCH_ROOM) / 2;
/** Characters of an error a failure settlement keeps (an endpoint's error page can be megabytes). */
export const MAX_ERROR_MESSAGE_CHARS = 4_000;
/** Bytes of the provider's usage object, as JSON, a settlement keeps (the normalised counts are always kept). */
export const MAX_RAW_USAGE_BYTES = 4_096;

/** An error message as a settlement keeps it: at most MAX_ERROR_MESSAGE_CHARS, cut with a note of its length. */
export function keptErrorMessage(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE_CHARS) return message;
  return `${textHead(message, MAX_ERROR_MESSAGE_CHARS)}… (cut from ${message.length} characters)`;
}

/** The provider's usage object when a settlement can keep it: a plain object of at most MAX_RAW_USAGE_BYTES as JSON. */
export function keptRawUsage(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const json = JSON.stringify(raw);
  return Buffer.byteLength(json) <= MAX_RAW_USAGE_BYTES ? (raw as Record<string, unknown>) : undefined;
}

export interface SuccessSettlement {
  readonly requestOffset: number;
  readonly model: string;
  readonly text: string;
  readonly durationMs: number;
  readonly usage: NormalisedUsage | null;
  /** The provider's usage object as reported (kept on the settlement). */
  readonly rawUsage?: Record<string, unknown>;
  readonly contextWindows?: ContextWindowTable;
  /**
   * Why the answer ended, as the provider said: kept as `result.rawResponse.finishReason` when
   * it is not `stop` (a reply cut at the output limit, by a content filter, or ending in tool
   * calls is stored, and shown as such, not as a plain answer).
   */
  readonly finishReason?: string;
}

/** Assistant context + succeeded settlement (+ usage when known), committed as one batch. */
export function successBatch(s: SuccessSettlement): EventInput[] {
  const usageRecord = s.rawUsage ?? (s.usage === null ? undefined : { ...s.usage });
  const cutShort = s.finishReason !== undefined && s.finishReason !== "stop";
  const batch: EventInput[] = [
    eventInput(
      "agents/context-added",
      { role: "assistant", content: s.text, llmRequestOffset: s.requestOffset },
      assistantContextKey(s.requestOffset),
    ),
    eventInput(
      "agent/llm-request-settled",
      {
        requestOffset: s.requestOffset,
        durationMs: Math.max(0, Math.round(s.durationMs)),
        result: {
          status: "succeeded",
          text: s.text,
          ...(usageRecord === undefined ? {} : { usage: usageRecord }),
          ...(cutShort ? { rawResponse: { finishReason: s.finishReason } } : {}),
        },
      },
      settleKey(s.requestOffset),
    ),
  ];
  if (s.usage !== null) {
    batch.push(
      eventInput("agent/token-usage-reported", tokenUsagePayload(s.requestOffset, s.model, s.usage, s.contextWindows), tokenUsageKey(s.requestOffset)),
    );
  }
  return batch;
}

export interface FailureSettlement {
  readonly requestOffset: number;
  readonly errorMessage: string;
  readonly durationMs: number;
  /** This attempt's number: the fold's consecutive failures before it, plus one. */
  readonly attempt: number;
  readonly maxAttempts: number;
}

/** The stream error text: the reducer retries while attempts remain (contract fold rules). */
export function failureMessage(f: Pick<FailureSettlement, "requestOffset" | "errorMessage" | "attempt" | "maxAttempts">): string {
  const error = f.errorMessage.trim().replace(/\.+$/, "");
  const head = `LLM request @${f.requestOffset} failed (attempt ${f.attempt} of ${f.maxAttempts}): ${error}.`;
  return f.attempt < f.maxAttempts ? `${head} Retrying.` : `${head} Giving up; a new user message starts fresh.`;
}

export function failureBatch(input: FailureSettlement): EventInput[] {
  const f = { ...input, errorMessage: keptErrorMessage(input.errorMessage) };
  const settled: PayloadOf<"agent/llm-request-settled"> = {
    requestOffset: f.requestOffset,
    durationMs: Math.max(0, Math.round(f.durationMs)),
    result: { status: "failed", errorMessage: f.errorMessage },
  };
  return [
    eventInput("agent/llm-request-settled", settled, settleKey(f.requestOffset)),
    eventInput(
      "stream/error-occurred",
      { message: failureMessage(f), error: { name: "LlmRequestFailed", message: f.errorMessage } },
      failureErrorKey(f.requestOffset),
    ),
  ];
}

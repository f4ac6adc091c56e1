// Why a reply ended other than by the model finishing its answer, as the web UI and the CLI
// show it beside the request: the driver keeps a chat completion's `finish_reason` on the
// settlement (`result.rawResponse.finishReason`) when it is not `stop`. One function, so the
// chat and the terminal say the same. The Responses API's `response.incomplete` is kept the same
// way, its `incomplete_details.reason` as the finish reason. Pure.

/** A finish reason the driver keeps: a short identifier, never the provider's free text. */
export const FINISH_REASON_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * What the settled `result` of a request says about how its reply ended, or undefined when it
 * ended normally (or says nothing).
 */
export function cutShortNote(result: unknown): string | undefined {
  if (typeof result !== "object" || result === null) return undefined;
  const raw = (result as { rawResponse?: unknown }).rawResponse;
  if (typeof raw !== "object" || raw === null) return undefined;
  const reason = (raw as { finishReason?: unknown }).finishReason;
  if (typeof reason !== "string" || reason === "stop" || !FINISH_REASON_PATTERN.test(reason)) return undefined;
  switch (reason) {
    case "length":
      return "cut short: the model reached its output token limit (finish_reason length)";
    // The Responses API's response.incomplete names its reason so
    case "max_output_tokens":
      return "cut short: the model reached its output token limit (response incomplete: max_output_tokens)";
    case "content_filter":
      return "cut short by the provider's content filter (finish_reason content_filter)";
    case "tool_calls":
    case "function_call":
      return `the model asked for tool calls, which this runtime does not offer; their arguments are not kept (finish_reason ${reason})`;
    default:
      return `the model stopped with finish_reason ${reason}`;
  }
}

// The text of raw provider chunks (`agent/llm-response-chunks`), as the driver stored them:
// Chat Completions deltas or Responses API events. The reducer's live lane, the CLI's `tail`
// and the web UI's streaming bubble all read chunks through this one function, so a provider
// shape added here shows up everywhere at once.

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Text and end-of-stream of one raw provider chunk (chat completions or Responses API). */
export function chunkText(chunk: unknown): { text: string; done: boolean } {
  if (!isRecord(chunk)) return { text: "", done: false };
  if (Array.isArray(chunk.choices)) {
    const choice: unknown = chunk.choices[0];
    if (!isRecord(choice)) return { text: "", done: false };
    const delta = choice.delta;
    const text = isRecord(delta) && typeof delta.content === "string" ? delta.content : "";
    return { text, done: choice.finish_reason !== undefined && choice.finish_reason !== null };
  }
  if (chunk.type === "response.output_text.delta" && typeof chunk.delta === "string") return { text: chunk.delta, done: false };
  return { text: "", done: chunk.type === "response.output_text.done" || chunk.type === "response.completed" };
}

/** The text of a run of raw chunks, in order (anything that is not a chunk adds nothing). */
export function chunksText(chunks: readonly unknown[]): string {
  let text = "";
  for (const chunk of chunks) text += chunkText(chunk).text;
  return text;
}

// Server-sent events as a test reads them off a response body: one frame per blank-line-ended
// block, its `id:` kept as sent and its `data:` lines joined. Comments and heartbeats come out
// as frames with empty data; callers skip them.

export interface SseFrame {
  readonly id?: string;
  readonly data: string;
}

/** Splits an SSE body into frames as bytes arrive (a frame may span chunks). */
export async function* readSseFrames(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const lines = buffer.slice(0, cut).split("\n");
      buffer = buffer.slice(cut + 2);
      const data = lines
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6))
        .join("\n");
      const id = lines.find((l) => l.startsWith("id: "))?.slice(4);
      yield id === undefined ? { data } : { id, data };
    }
  }
}

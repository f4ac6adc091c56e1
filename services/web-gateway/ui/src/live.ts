// One live subscription to a stream over SSE (read with fetch so the API key can travel as a
// header). Durable events carry their offset as the SSE id; after a dropped connection we
// reconnect with `Last-Event-ID: <last offset seen>`, so nothing is lost or repeated. The
// caller also de-duplicates by offset as a second line of defence.

import { authHeaders, enc, type StreamEvent } from "./api.ts";

export type ConnectionState = "connecting" | "live" | "reconnecting";

export interface LiveHandle {
  close(): void;
}

export function subscribeLive(
  streamPath: string,
  onEvent: (event: StreamEvent) => void,
  onState: (state: ConnectionState) => void,
): LiveHandle {
  let lastOffset = 0;
  let closed = false;
  let controller: AbortController | null = null;
  let attempt = 0;

  const run = async () => {
    while (!closed) {
      controller = new AbortController();
      onState(attempt === 0 ? "connecting" : "reconnecting");
      try {
        const res = await fetch(`/v1/streams/${enc(streamPath)}/subscribe?ephemeral=1`, {
          headers: { ...authHeaders(), accept: "text/event-stream", ...(lastOffset > 0 ? { "last-event-id": String(lastOffset) } : {}) },
          signal: controller.signal,
        });
        if (!res.ok || res.body === null) throw new Error(`subscribe failed: ${res.status}`);
        onState("live");
        attempt = 0;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let cut: number;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const frame = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const data = frame
              .split("\n")
              .filter((l) => l.startsWith("data: "))
              .map((l) => l.slice(6))
              .join("\n");
            if (data === "") continue;
            const event = JSON.parse(data) as StreamEvent;
            if (event.ephemeral !== true) {
              if (event.offset <= lastOffset) continue;
              lastOffset = event.offset;
            }
            onEvent(event);
          }
        }
      } catch {
        // dropped or refused: fall through to the backoff below
      }
      if (closed) return;
      attempt += 1;
      onState("reconnecting");
      await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 5000)));
    }
  };
  void run();
  return {
    close() {
      closed = true;
      controller?.abort();
    },
  };
}

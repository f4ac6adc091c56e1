// Live subscribers as a user's code would write them: an SSE client that resumes with
// Last-Event-ID and a WebSocket client that resumes with fromOffset = last + 1, both
// reconnecting after any drop and recording every durable offset they receive.

import WebSocket from "ws";

export interface LiveClient {
  readonly received: number[];
  /** The last offset held at each successful (re)connection. */
  readonly resumes: number[];
  readonly reconnects: number;
  close(): void;
}

export function sseClient(baseUrl: string, streamPath: string): LiveClient {
  const received: number[] = [];
  const resumes: number[] = [];
  let reconnects = 0;
  let closed = false;
  let controller: AbortController | undefined;
  const run = async () => {
    while (!closed) {
      controller = new AbortController();
      const last = received.at(-1);
      try {
        const response = await fetch(`${baseUrl}/v1/streams/${encodeURIComponent(streamPath)}/subscribe?fromOffset=1`, {
          headers: last === undefined ? {} : { "last-event-id": String(last) },
          signal: controller.signal,
        });
        if (!response.ok || !response.body) throw new Error(`subscribe answered ${response.status}`);
        resumes.push(last ?? 0);
        const decoder = new TextDecoder();
        let buffer = "";
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const id = /^id: (\d+)$/m.exec(frame);
            if (id) received.push(Number(id[1]));
          }
        }
      } catch {
        // dropped: reconnect below
      }
      if (closed) break;
      reconnects += 1;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  void run();
  return {
    received,
    resumes,
    get reconnects() {
      return reconnects;
    },
    close() {
      closed = true;
      controller?.abort();
    },
  };
}

export function wsClient(baseUrl: string, streamPath: string): LiveClient {
  const received: number[] = [];
  const resumes: number[] = [];
  let reconnects = 0;
  let closed = false;
  let socket: WebSocket | undefined;
  const connect = () => {
    if (closed) return;
    const from = (received.at(-1) ?? 0) + 1;
    socket = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/v1/streams/${encodeURIComponent(streamPath)}/ws?fromOffset=${from}`);
    socket.once("open", () => resumes.push(from - 1));
    socket.on("message", (data) => {
      const event = JSON.parse(String(data)) as { offset?: number; ephemeral?: boolean };
      if (event.ephemeral !== true && typeof event.offset === "number") received.push(event.offset);
    });
    const retry = () => {
      if (closed) return;
      reconnects += 1;
      setTimeout(connect, 100);
    };
    socket.once("close", retry);
    socket.once("error", () => socket?.terminate());
  };
  connect();
  return {
    received,
    resumes,
    get reconnects() {
      return reconnects;
    },
    close() {
      closed = true;
      socket?.terminate();
    },
  };
}

/** Offsets 1..n exactly once each, in order? Returns the gaps and duplicates seen. */
export function checkSequence(received: readonly number[], n: number): { gaps: number; duplicates: number } {
  let duplicates = 0;
  const seen = new Set<number>();
  for (const o of received) {
    if (seen.has(o)) duplicates += 1;
    seen.add(o);
  }
  let gaps = 0;
  for (let o = 1; o <= n; o += 1) if (!seen.has(o)) gaps += 1;
  const ordered = received.every((o, i) => i === 0 || o > received[i - 1]!);
  return { gaps, duplicates: duplicates + (ordered ? 0 : 1) };
}

// Fan-out bench subscribers: N SSE or WebSocket clients of the gateway, plus the direct
// baselines (an in-process store subscription and a raw core-NATS subscription to the
// agent's subject). Each records the arrival time of every durable offset it receives.

import WebSocket from "ws";
import type { EventStore } from "@agentrt/streams";

export interface Recorder {
  readonly name: string;
  readonly arrivals: Map<number, number>;
  close(): void;
}

export async function sseClient(url: string): Promise<Recorder> {
  const arrivals = new Map<number, number>();
  const controller = new AbortController();
  const res = await fetch(url, { signal: controller.signal, headers: { accept: "text/event-stream" } });
  if (!res.ok || res.body === null) throw new Error(`SSE subscribe failed: ${res.status}`);
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        const now = performance.now();
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const id = /^id: (\d+)$/m.exec(frame)?.[1];
          if (id !== undefined) arrivals.set(Number(id), now);
        }
      }
    } catch {
      // aborted at close
    }
  })();
  return { name: "sse", arrivals, close: () => controller.abort() };
}

export function wsClient(url: string): Promise<Recorder> {
  return new Promise((resolve, reject) => {
    const arrivals = new Map<number, number>();
    const ws = new WebSocket(url);
    ws.on("open", () => resolve({ name: "ws", arrivals, close: () => ws.terminate() }));
    ws.on("message", (data) => {
      const now = performance.now();
      const event = JSON.parse(String(data)) as { offset: number; ephemeral?: boolean };
      if (event.ephemeral !== true) arrivals.set(event.offset, now);
    });
    ws.on("error", reject);
  });
}

export function storeClient(store: EventStore, path: string): Recorder {
  const arrivals = new Map<number, number>();
  const sub = store.subscribe(path, { fromOffset: 1 });
  void (async () => {
    for await (const event of sub) arrivals.set(event.offset, performance.now());
  })();
  return { name: "store.subscribe", arrivals, close: () => void sub.close() };
}

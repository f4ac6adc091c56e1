// Fan-out bench subscribers: N SSE or WebSocket clients of the gateway (the shared live
// follower of @agentrt/testing), plus the direct baseline (an in-process store subscription).
// Each records the arrival time of every durable offset it receives.

import type { EventStore } from "@agentrt/streams";
import { followLive, type LiveTransport } from "@agentrt/testing";

export interface Recorder {
  readonly name: string;
  readonly arrivals: Map<number, number>;
  close(): void;
}

/** A gateway subscriber, resolved once the subscription is accepted. */
export async function gatewayClient(transport: LiveTransport, url: string): Promise<Recorder> {
  const arrivals = new Map<number, number>();
  const follower = followLive(transport, url, {
    ...(transport === "sse" ? { headers: { accept: "text/event-stream" } } : {}),
    onMessage: (message) => {
      if (message.offset !== undefined) arrivals.set(message.offset, message.at);
    },
  });
  const status = await follower.opened;
  if (status !== (transport === "sse" ? 200 : 101)) {
    follower.close();
    throw new Error(`${transport} subscribe failed: ${status}`);
  }
  return { name: transport, arrivals, close: () => follower.close() };
}

export function storeClient(store: EventStore, path: string): Recorder {
  const arrivals = new Map<number, number>();
  const sub = store.subscribe(path, { fromOffset: 1 });
  void (async () => {
    for await (const event of sub) arrivals.set(event.offset, performance.now());
  })();
  return { name: "store.subscribe", arrivals, close: () => void sub.close() };
}

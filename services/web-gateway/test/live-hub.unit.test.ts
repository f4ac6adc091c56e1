// The live fan-out hub over the in-memory store: many clients starting at different offsets
// while events are being appended each get exactly their offsets, in order, once; the store
// holds one subscription per stream however many clients follow it.
import { describe, expect, it } from "vitest";
import type { AgentEvent } from "@agentrt/contract";
import { MemoryEventStore, type Subscription } from "@agentrt/streams";
import { LiveHub } from "../src/api/live-hub.ts";

const msg = (i: number) => ({ type: "agents/context-added", payload: { role: "user", content: `m${i}` } });

async function take(sub: Subscription, n: number): Promise<AgentEvent[]> {
  const out: AgentEvent[] = [];
  if (n === 0) return out;
  for await (const event of sub) {
    out.push(event);
    if (out.length >= n) break;
  }
  return out;
}

describe("LiveHub", () => {
  it("gives every client its offsets exactly once, across the switch from history to live", async () => {
    const store = new MemoryEventStore();
    const hub = new LiveHub(store);
    const path = "/agents/hub/a";
    await store.append(path, [msg(0), msg(1), msg(2)]);
    const total = 40;
    const starts = [1, 2, 3, 4, 1, 3];
    const clients = starts.map((from) => ({ from, sub: hub.subscribe(path, from, false) }));
    const results = clients.map(({ from, sub }) => take(sub, total - from + 1));
    for (let i = 3; i < total; i += 1) {
      await store.append(path, [msg(i)]);
      // Late joiners attach while appends are in flight.
      if (i === 20) {
        const late = { from: 15, sub: hub.subscribe(path, 15, false) };
        clients.push(late);
        results.push(take(late.sub, total - 15 + 1));
      }
    }
    const got = await Promise.all(results);
    got.forEach((events, i) => {
      const from = clients[i]!.from;
      expect(events.map((e) => e.offset)).toEqual(Array.from({ length: total - from + 1 }, (_, k) => from + k));
    });
    expect(hub.sharedSubscriptions).toBe(0);
    await store.close();
  });

  it("shares one store subscription per stream and sends the live lane only to clients that asked", async () => {
    const store = new MemoryEventStore();
    const hub = new LiveHub(store);
    const path = "/agents/hub/b";
    await store.append(path, [msg(0)]);
    const plain = hub.subscribe(path, 1, false);
    const live = hub.subscribe(path, 1, true);
    const plainIt = plain[Symbol.asyncIterator]();
    const liveIt = live[Symbol.asyncIterator]();
    // Offset 1 comes from history, which a client reads only once it is attached to the feed.
    expect((await plainIt.next()).value?.offset).toBe(1);
    expect((await liveIt.next()).value?.offset).toBe(1);
    await take(hub.subscribe(path, 1, false), 1);
    expect(hub.sharedSubscriptions).toBe(1);
    await store.append(path, [{ type: "agent/llm-response-chunks", payload: { chunks: [{}], llmRequestOffset: 1, sequence: 0 } }]);
    await store.append(path, [msg(1)]);
    const next = async (it: AsyncIterator<AgentEvent>) => (await it.next()).value as AgentEvent;
    expect([(await next(plainIt)).offset]).toEqual([2]);
    expect([(await next(liveIt)).type, (await next(liveIt)).offset]).toEqual(["agent/llm-response-chunks", 2]);
    await plain.close();
    await live.close();
    expect(hub.sharedSubscriptions).toBe(0);
    await store.close();
  });
});

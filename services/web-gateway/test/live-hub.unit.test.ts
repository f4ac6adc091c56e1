// The live fan-out hub over the in-memory store: many clients starting at different offsets
// while events are being appended each get exactly their offsets, in order, once; the store
// holds one subscription per stream however many clients follow it; a client that stops
// reading holds one history page, and one too far behind is cut off.
import { describe, expect, it, vi } from "vitest";
import type { AgentEvent } from "@agentrt/contract";
import { MemoryEventStore, type ReadOptions, type Subscription } from "@agentrt/streams";
import { HISTORY_PAGE_BYTES, LiveHub, MAX_CLIENT_BACKLOG, MAX_CLIENT_BACKLOG_BYTES } from "../src/api/live-hub.ts";
import { sseFrame } from "../src/http/live.ts";

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

  it("reads a client's history at its pace: one that stops reading holds one page, not the stream", async () => {
    // Given a stream of 2 000 events of ~10 kB (~20 MB of JSON), and a store that counts what it hands out
    const store = new MemoryEventStore();
    let eventsRead = 0;
    const read = store.read.bind(store);
    store.read = async (path: string, options?: ReadOptions) => {
      const page = await read(path, options);
      eventsRead += page.length;
      return page;
    };
    const path = "/agents/hub/big";
    const filler = "x".repeat(10_000);
    for (let i = 0; i < 2_000; i += 50) await store.append(path, Array.from({ length: 50 }, (_, k) => ({ type: "agents/context-added", payload: { role: "user", content: `${i + k}:${filler}` } })));
    const hub = new LiveHub(store);
    // When a client takes one event and then nothing for a while
    const sub = hub.subscribe(path, 1, false);
    const it = sub[Symbol.asyncIterator]();
    expect((await it.next()).value?.offset).toBe(1);
    await new Promise((r) => setTimeout(r, 200));
    // Then the hub has read one page of at most HISTORY_PAGE_BYTES (about 100 of these events), not the 2 000
    const perPage = Math.ceil(HISTORY_PAGE_BYTES / 10_000);
    expect(eventsRead).toBeGreaterThan(0);
    expect(eventsRead).toBeLessThanOrEqual(perPage);
    // And reading on, the client gets every offset once, in order
    const offsets = [1];
    for (let next = await it.next(); !next.done; next = await it.next()) {
      offsets.push(next.value.offset);
      if (offsets.length === 2_000) break;
    }
    expect(offsets).toEqual(Array.from({ length: 2_000 }, (_, k) => k + 1));
    expect(eventsRead).toBe(2_000);
    await sub.close();
    await store.close();
  });

  it("cuts off a client that reads history so slowly that the live events waiting for it pass the backlog bound", async () => {
    // Given a client that has taken one event of a two-page history and stops
    const store = new MemoryEventStore();
    const path = "/agents/hub/slow";
    const filler = "y".repeat(100_000);
    for (let i = 0; i < 20; i += 1) await store.append(path, [{ type: "agents/context-added", payload: { role: "user", content: `${i}:${filler}` } }]);
    const hub = new LiveHub(store);
    const sub = hub.subscribe(path, 1, false);
    const it = sub[Symbol.asyncIterator]();
    expect((await it.next()).value?.offset).toBe(1);
    // When more live events arrive than a backlog may hold
    for (let i = 0; i <= MAX_CLIENT_BACKLOG; i += 1000) await store.append(path, Array.from({ length: 1000 }, (_, k) => msg(i + k)));
    await new Promise((r) => setTimeout(r, 50));
    // Then the client's subscription ends after what it already held: it resumes from its last offset
    let more = 0;
    for (let next = await it.next(); !next.done; next = await it.next()) more += 1;
    expect(more).toBeLessThan(20);
    // (the gateway's pumps close their subscription when it ends)
    await sub.close();
    expect(hub.sharedSubscriptions).toBe(0);
    await store.close();
  });

  it("cuts off a live client that stops reading once the events waiting for it pass the byte bound, long before the count bound", async () => {
    // Given a client at the stream's head that takes one event and stops
    const store = new MemoryEventStore();
    const path = "/agents/hub/fat";
    await store.append(path, [msg(0)]);
    const hub = new LiveHub(store);
    const sub = hub.subscribe(path, 1, false);
    const it = sub[Symbol.asyncIterator]();
    expect((await it.next()).value?.offset).toBe(1);
    // When live events of 880 kB each arrive: 30 of them are 26 MB, far under 10 000 events
    const fat = "f".repeat(880_000);
    for (let i = 0; i < 30; i++) await store.append(path, [{ type: "agents/context-added", payload: { role: "developer", content: `${i}:${fat}` } }]);
    await new Promise((r) => setTimeout(r, 50));
    // Then it holds at most the byte bound's worth and its subscription ends: it resumes from its last offset
    let held = 0;
    for (let next = await it.next(); !next.done; next = await it.next()) held += JSON.stringify(next.value).length;
    expect(held).toBeLessThanOrEqual(MAX_CLIENT_BACKLOG_BYTES);
    expect(held).toBeGreaterThan(MAX_CLIENT_BACKLOG_BYTES - 1_000_000);
    await sub.close();
    await store.close();
  });

  it("makes each live event's JSON once, however many clients follow the stream and send it", async () => {
    // Given three clients at the stream's head
    const store = new MemoryEventStore();
    const path = "/agents/hub/shared-json";
    await store.append(path, [msg(0)]);
    const hub = new LiveHub(store);
    const subs = [1, 2, 3].map(() => hub.subscribe(path, 1, true));
    const its = subs.map((sub) => sub[Symbol.asyncIterator]());
    for (const it of its) expect((await it.next()).value?.offset).toBe(1);
    // When a reply chunk arrives and each client's pump frames it
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      await store.append(path, [{ type: "agent/llm-response-chunks", payload: { chunks: [{ text: "hi" }], llmRequestOffset: 1, sequence: 0 } }]);
      const received = await Promise.all(its.map(async (it) => (await it.next()).value as AgentEvent));
      const frames = received.map((event) => sseFrame(event));
      // Then every client sends the same frame, and the event was made into JSON once
      expect(new Set(frames).size).toBe(1);
      expect(frames[0]).toBe(`data: ${JSON.stringify(received[0])}\n\n`);
      const ofTheEvent = stringify.mock.calls.filter(([value]) => received.includes(value as AgentEvent));
      expect(ofTheEvent).toHaveLength(1 + 1); // the hub's once, and the assertion's own above
    } finally {
      stringify.mockRestore();
    }
    for (const sub of subs) await sub.close();
    await store.close();
  });
});

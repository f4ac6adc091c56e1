import { createLogger } from "@agentrt/service-kit";
import { MemoryEventStore } from "@agentrt/streams";
import { afterEach, describe, expect, it } from "vitest";
import { StreamCache } from "../src/stream-cache.ts";

const path = "/agents/test/cache";
const note = (content: string) => ({ type: "agents/context-added", payload: { role: "user", content } });
let cache: StreamCache | undefined;
afterEach(async () => cache?.stop());

class CountingStore extends MemoryEventStore {
  reads = 0;
  override async read(...args: Parameters<MemoryEventStore["read"]>) {
    this.reads += 1;
    return super.read(...args);
  }
}

function open(store: MemoryEventStore, feedWaitMs = 200): StreamCache {
  cache = new StreamCache({ store, logger: createLogger("test", "silent"), afterSequence: 0, feedWaitMs });
  cache.start();
  return cache;
}

describe("stream cache", () => {
  it("reads a stream once, then stays current through the feed", async () => {
    const store = new CountingStore();
    await store.append(path, [note("a"), note("b")]);
    const c = open(store);
    expect((await c.eventsThrough(path, 2)).map((e) => e.offset)).toEqual([1, 2]);
    await store.append(path, [note("c")]);
    expect((await c.eventsThrough(path, 3)).map((e) => e.offset)).toEqual([1, 2, 3]);
    expect(store.reads).toBe(1);
  });

  it("waits for the feed to deliver the requested offset instead of reading", async () => {
    const store = new CountingStore();
    await store.append(path, [note("a")]);
    const c = open(store);
    await c.eventsThrough(path, 1);
    const waiting = c.eventsThrough(path, 2);
    await store.append(path, [note("b")]);
    expect((await waiting).map((e) => e.offset)).toEqual([1, 2]);
    expect(store.reads).toBe(1);
  });

  it("falls back to reading when the feed does not bring the offset in time", async () => {
    const store = new CountingStore();
    await store.append(path, [note("a")]);
    const c = open(store, 20);
    await c.eventsThrough(path, 1);
    expect((await c.eventsThrough(path, 5)).map((e) => e.offset)).toEqual([1]);
    expect(store.reads).toBe(2);
  });

  it("returns a snapshot that later events do not change", async () => {
    const store = new MemoryEventStore();
    await store.append(path, [note("a")]);
    const c = open(store);
    const snapshot = await c.eventsThrough(path, 1);
    await store.append(path, [note("b")]);
    await c.eventsThrough(path, 2);
    expect(snapshot.map((e) => e.offset)).toEqual([1]);
  });
});

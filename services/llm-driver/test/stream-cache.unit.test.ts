import { createLogger } from "@agentrt/service-kit";
import { MemoryEventStore } from "@agentrt/streams";
import { waitFor } from "@agentrt/testing";
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

  it("tells watchers of a stream's new events from an offset on, those already cached first", async () => {
    const store = new MemoryEventStore();
    await store.append(path, [note("a"), note("b")]);
    const c = open(store);
    await c.eventsThrough(path, 2);
    const seen: number[] = [];
    const unwatch = c.watch(path, 2, (events) => seen.push(...events.filter((e) => e.offset >= 2).map((e) => e.offset)));
    expect(unwatch).toBeTypeOf("function");
    expect(seen).toEqual([2]);
    await store.append(path, [note("c")]);
    await store.append("/agents/test/other", [note("elsewhere")]);
    await store.append(path, [note("d"), note("e")]);
    await waitFor(() => seen.length === 4, { what: "the watcher to see offsets 3-5" });
    expect(seen).toEqual([2, 3, 4, 5]);
    unwatch?.();
    await store.append(path, [note("f")]);
    await c.eventsThrough(path, 6);
    expect(seen).toEqual([2, 3, 4, 5]);
  });

  it("watches streams it has not cached, and declines to watch without a running feed", async () => {
    const store = new MemoryEventStore();
    const idle = new StreamCache({ store, logger: createLogger("test", "silent"), afterSequence: 0 });
    expect(idle.watch(path, 1, () => undefined)).toBeUndefined();
    const c = open(store);
    const seen: number[] = [];
    c.watch(path, 1, (events) => seen.push(...events.map((e) => e.offset)));
    await store.append(path, [note("a")]);
    await waitFor(() => seen.length === 1, { what: "the watcher to see offset 1" });
    expect(c.size).toBe(0);
  });
});

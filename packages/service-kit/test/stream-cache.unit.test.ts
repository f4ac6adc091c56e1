import { type AppendHint, type FeedBatch, MemoryEventStore } from "@agentrt/streams";
import { testLogger, waitFor } from "@agentrt/testing";
import { AgentRuntimeError } from "@agentrt/contract";
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

function open(store: MemoryEventStore, feedWaitMs = 200, bounds: { maxBytes?: number; idleMs?: number; now?: () => number } = {}): StreamCache {
  cache = new StreamCache({ store, logger: testLogger("test"), afterSequence: 0, feedWaitMs, ...bounds });
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

  it("waits for the feed when its first read of a stream ends just before the requested offset", async () => {
    // The reducer hands a request to the drivers while its append is still in flight.
    const store = new CountingStore();
    await store.append(path, [note("a")]);
    const c = open(store);
    const reading = c.eventsThrough(path, 2);
    await waitFor(() => store.reads === 1, { what: "the first read" });
    await store.append(path, [note("b")]);
    expect((await reading).map((e) => e.offset)).toEqual([1, 2]);
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
    const idle = new StreamCache({ store, logger: testLogger("test"), afterSequence: 0 });
    expect(idle.watch(path, 1, () => undefined)).toBeUndefined();
    const c = open(store);
    const seen: number[] = [];
    c.watch(path, 1, (events) => seen.push(...events.map((e) => e.offset)));
    await store.append(path, [note("a")]);
    await waitFor(() => seen.length === 1, { what: "the watcher to see offset 1" });
    expect(c.size).toBe(0);
  });

  it("drops a stream no turn used within the idle time, and reads it again on its next turn", async () => {
    const store = new CountingStore();
    await store.append(path, [note("a")]);
    let now = 1_000;
    const c = open(store, 200, { idleMs: 40, now: () => now });
    await c.eventsThrough(path, 1);
    expect(c.size).toBe(1);
    now += 39;
    c.dropIdle();
    expect(c.size).toBe(1);
    now += 1;
    c.dropIdle();
    expect([c.size, c.bytes]).toEqual([0, 0]);
    expect((await c.eventsThrough(path, 1)).map((e) => e.offset)).toEqual([1]);
    expect(store.reads).toBe(2);
  });

  it("drops idle streams on its own timer", async () => {
    const store = new MemoryEventStore();
    await store.append(path, [note("a")]);
    const c = open(store, 200, { idleMs: 20 });
    await c.eventsThrough(path, 1);
    await waitFor(() => c.size === 0, { timeoutMs: 5_000, intervalMs: 5 });
    expect(c.bytes).toBe(0);
  });

  it("holds at most maxBytes of events, dropping the least recently used stream first", async () => {
    const store = new CountingStore();
    const paths = ["/agents/test/b1", "/agents/test/b2", "/agents/test/b3"];
    for (const p of paths) await store.append(p, [note("x".repeat(1000))]);
    const one = JSON.stringify((await store.read(paths[0]!))[0]).length;
    const c = open(store, 200, { maxBytes: 2 * one + 10 });
    await c.eventsThrough(paths[0]!, 1);
    await c.eventsThrough(paths[1]!, 1);
    await c.eventsThrough(paths[0]!, 1); // b1 is now the most recently used
    await c.eventsThrough(paths[2]!, 1);
    expect(c.size).toBe(2);
    expect(c.bytes).toBeLessThanOrEqual(2 * one + 10);
    const reads = store.reads;
    await c.eventsThrough(paths[0]!, 1);
    await c.eventsThrough(paths[2]!, 1);
    expect(store.reads).toBe(reads); // b1 and b3 were kept, b2 dropped
    // Events the feed adds count too: b3 grows past the bound and the other stream goes.
    await store.append(paths[2]!, [note("y".repeat(1000))]);
    await waitFor(() => c.size === 1, { timeoutMs: 5_000, intervalMs: 5 });
    expect(c.bytes).toBeLessThanOrEqual(2 * one + 10);
    expect((await c.eventsThrough(paths[2]!, 2)).map((e) => e.offset)).toEqual([1, 2]);
  });

  it("does not cache a stream larger than the bound on its own, and still returns its events", async () => {
    const store = new CountingStore();
    await store.append(path, [note("z".repeat(5000))]);
    const c = open(store, 200, { maxBytes: 1024 });
    expect((await c.eventsThrough(path, 1)).map((e) => e.offset)).toEqual([1]);
    expect([c.size, c.bytes]).toEqual([0, 0]);
  });
});

/** A store whose feed gives each batch's record size, as the JetStream store's does. */
class SizedFeedStore extends CountingStore {
  override feed(...args: Parameters<MemoryEventStore["feed"]>) {
    const inner = super.feed(...args);
    return Object.assign(Object.create(inner) as typeof inner, {
      async *[Symbol.asyncIterator]() {
        for await (const batch of inner) yield { ...batch, bytes: 4242 };
      },
      close: () => inner.close(),
    });
  }
}

describe("stream cache, counting what the feed brings", () => {
  it("given a feed that gives each record's size, when a batch arrives, then the cache counts that size instead of encoding the events again", async () => {
    const store = new SizedFeedStore();
    await store.append(path, [note("a")]);
    const c = open(store);
    const [first] = await c.eventsThrough(path, 1);
    const before = c.bytes;
    expect(before).toBe(JSON.stringify(first).length);
    await store.append(path, [note("b"), note("c")]);
    expect((await c.eventsThrough(path, 3)).map((e) => e.offset)).toEqual([1, 2, 3]);
    expect(c.bytes).toBe(before + 4242);
    expect(store.reads).toBe(1);
  });
});

/** A store whose first feed ends retryably after `batches` batches, as one whose consumer died with its NATS node. */
class FeedEndingStore extends CountingStore {
  feeds = 0;
  constructor(
    private readonly batches: number,
    private readonly failure: Error = new AgentRuntimeError("unavailable", "the consumer stopped (a NATS node died); subscribe again", { retryable: true }),
  ) {
    super();
  }
  override feed(...args: Parameters<MemoryEventStore["feed"]>) {
    const inner = super.feed(...args);
    this.feeds += 1;
    if (this.feeds > 1) return inner;
    const limit = this.batches;
    const failure = this.failure;
    return Object.assign(Object.create(inner) as typeof inner, {
      async *[Symbol.asyncIterator]() {
        let n = 0;
        for await (const batch of inner) {
          yield batch;
          if ((n += 1) >= limit) throw failure;
        }
      },
      close: () => inner.close(),
    });
  }
}

describe("stream cache, when its feed ends", () => {
  it("given a feed that ends retryably, when events follow, then the cache follows again from its last batch and still serves them without a read", async () => {
    const store = new FeedEndingStore(2);
    // Long enough a wait for the feed to be followed again (FEED_RETRY_MS) before falling back to a read.
    const c = open(store, 2_000);
    await store.append(path, [note("a")]);
    expect((await c.eventsThrough(path, 1)).map((e) => e.offset)).toEqual([1]);
    await store.append(path, [note("b")]);
    // The feed has ended after its second batch; the third comes through the next one.
    await store.append(path, [note("c")]);
    expect((await c.eventsThrough(path, 3)).map((e) => e.offset)).toEqual([1, 2, 3]);
    expect(store.feeds).toBe(2);
    expect(store.reads).toBe(1);
    // Watching still works through the new feed.
    const seen: number[] = [];
    const stop = c.watch(path, 4, (events) => seen.push(...events.map((e) => e.offset)));
    expect(stop).toBeDefined();
    await store.append(path, [note("d")]);
    await waitFor(() => seen.includes(4), { what: "the watched event" });
    stop?.();
  });

  it("given a feed that ends with an error the store did not classify, then the cache follows again (the contract's rule: unclassified is transient)", async () => {
    const store = new FeedEndingStore(1, new Error("socket hang up"));
    const c = open(store, 2_000);
    await store.append(path, [note("a")]);
    expect((await c.eventsThrough(path, 1)).map((e) => e.offset)).toEqual([1]);
    await store.append(path, [note("b")]);
    expect((await c.eventsThrough(path, 2)).map((e) => e.offset)).toEqual([1, 2]);
    expect(store.feeds).toBe(2);
    expect(store.reads).toBe(1);
  });

  it("given a feed that ends with a terminal error, then the cache gives up: each turn reads its stream, without waiting on a feed that is gone", async () => {
    const store = new FeedEndingStore(1, new AgentRuntimeError("internal", "stream configuration refused"));
    const c = open(store, 2_000);
    await store.append(path, [note("a")]);
    await waitFor(() => c.watch(path, 1, () => undefined) === undefined, { what: "the cache to give up" });
    const started = Date.now();
    await store.append(path, [note("b")]);
    expect((await c.eventsThrough(path, 2)).map((e) => e.offset)).toEqual([1, 2]);
    await store.append(path, [note("c")]);
    expect((await c.eventsThrough(path, 3)).map((e) => e.offset)).toEqual([1, 2, 3]);
    // Each turn read its stream; none waited the 2 s feed wait for an entry no feed updates.
    expect(store.reads).toBe(2);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(store.feeds).toBe(1);
  });
});

/** Counts reads and feeds, and records what the cache told the store of streams' ends. */
class FedStore extends CountingStore {
  feeds = 0;
  readonly primed: { streamPath: string; hint: AppendHint }[] = [];
  override feed(...args: Parameters<MemoryEventStore["feed"]>) {
    this.feeds += 1;
    return super.feed(...args);
  }
  override primeAppend(streamPath: string, hint: AppendHint): void {
    this.primed.push({ streamPath, hint });
  }
}

describe("stream cache fed by its caller (the reducer's partitions, for its in-process driver)", () => {
  const fedOpen = (store: MemoryEventStore, feedWaitMs = 200) => {
    cache = new StreamCache({ store, logger: testLogger("test"), afterSequence: "fed by caller", feedWaitMs });
    cache.start();
    return cache;
  };
  let sequence = 0;
  /** Appends and returns the batch a partition feed would deliver for it. */
  const appended = async (store: MemoryEventStore, streamPath: string, ...contents: string[]): Promise<FeedBatch> => {
    const result = await store.append(streamPath, contents.map(note));
    return { sequence: (sequence += 1), streamPath, events: result.events };
  };
  const otherPath = (store: MemoryEventStore) => {
    for (let i = 0; ; i++) if (store.partitionOf(`/agents/test/other-${i}`) !== store.partitionOf(path)) return `/agents/test/other-${i}`;
  };

  it("given a followed partition, when its batches are fed, then a cached stream stays current without a read or a feed of its own, and the store learns each record", async () => {
    const store = new FedStore();
    const c = fedOpen(store);
    c.followPartition(store.partitionOf(path));
    c.feedBatch(store.partitionOf(path), await appended(store, path, "a", "b"));
    expect((await c.eventsThrough(path, 2)).map((e) => e.offset)).toEqual([1, 2]);
    const waiting = c.eventsThrough(path, 3);
    const third = await appended(store, path, "c");
    c.feedBatch(store.partitionOf(path), third);
    expect((await waiting).map((e) => e.offset)).toEqual([1, 2, 3]);
    expect([store.reads, store.feeds]).toEqual([1, 0]);
    expect(store.primed.at(-1)).toEqual({ streamPath: path, hint: { record: { sequence: third.sequence, lastOffset: 3 } } });
  });

  it("given a record holding an event this version cannot read (a newer writer's), when it is fed, then its offset is passed over, not taken for a gap: no read again", async () => {
    const store = new FedStore();
    const c = fedOpen(store);
    const partition = store.partitionOf(path);
    c.followPartition(partition);
    c.feedBatch(partition, await appended(store, path, "a", "b"));
    expect((await c.eventsThrough(path, 2)).map((e) => e.offset)).toEqual([1, 2]);
    // The feed's view of a record @3 whose one event did not parse, then of a readable one @4
    const [, fourth] = (await store.append(path, [note("unreadable"), note("d")])).events;
    const unreadable: FeedBatch = { sequence: (sequence += 1), streamPath: path, events: [], offsets: { first: 3, last: 3 } };
    c.feedBatch(partition, unreadable);
    expect(store.primed.at(-1)).toEqual({ streamPath: path, hint: { record: { sequence: unreadable.sequence, lastOffset: 3 } } });
    c.feedBatch(partition, { sequence: (sequence += 1), streamPath: path, events: [fourth!], offsets: { first: 4, last: 4 } });
    expect((await c.eventsThrough(path, 4)).map((e) => e.offset)).toEqual([1, 2, 4]);
    expect(store.reads).toBe(1);
  });

  it("given a followed partition, when a batch is fed, then a watcher of its stream hears of it; and replayed batches are skipped, a gap forgets the stream", async () => {
    const store = new FedStore();
    const c = fedOpen(store, 20);
    c.followPartition(store.partitionOf(path));
    const first = await appended(store, path, "a");
    await c.eventsThrough(path, 1);
    const seen: number[] = [];
    c.watch(path, 2, (events) => seen.push(...events.filter((e) => e.offset >= 2).map((e) => e.offset)));
    const second = await appended(store, path, "b");
    c.feedBatch(store.partitionOf(path), second);
    expect(seen).toEqual([2]);
    // A feed that starts over from an earlier batch (a takeover's checkpoint): nothing twice.
    c.feedBatch(store.partitionOf(path), first);
    c.feedBatch(store.partitionOf(path), second);
    expect((await c.eventsThrough(path, 2)).map((e) => e.offset)).toEqual([1, 2]);
    expect(store.reads).toBe(1);
    // A batch missed (offset 3 never fed): the stream is forgotten and read again.
    await appended(store, path, "c");
    c.feedBatch(store.partitionOf(path), await appended(store, path, "d"));
    expect((await c.eventsThrough(path, 4)).map((e) => e.offset)).toEqual([1, 2, 3, 4]);
    expect(store.reads).toBe(2);
  });

  it("given a stream of a partition not followed, then it is read on every ask, never cached, and not watched (the caller watches it itself)", async () => {
    const store = new FedStore();
    const c = fedOpen(store, 20);
    c.followPartition(store.partitionOf(path));
    const other = otherPath(store);
    const batch = await appended(store, other, "a");
    c.feedBatch(store.partitionOf(other), batch); // not followed: ignored
    expect((await c.eventsThrough(other, 1)).map((e) => e.offset)).toEqual([1]);
    expect((await c.eventsThrough(other, 1)).map((e) => e.offset)).toEqual([1]);
    expect([store.reads, c.size]).toEqual([2, 0]);
    expect(c.watch(other, 1, () => undefined)).toBeUndefined();
    expect(c.watch(path, 1, () => undefined)).toBeTypeOf("function");
    expect(store.primed).toEqual([]);
  });

  it("given a partition it stops following (the lease lost), then its streams are forgotten, its watchers hear nothing more and later batches are ignored", async () => {
    const store = new FedStore();
    const c = fedOpen(store, 20);
    const partition = store.partitionOf(path);
    c.followPartition(partition);
    c.feedBatch(store.partitionOf(path), await appended(store, path, "a"));
    await c.eventsThrough(path, 1);
    const seen: number[] = [];
    c.watch(path, 2, (events) => seen.push(...events.map((e) => e.offset)));
    expect(c.size).toBe(1);
    c.unfollowPartition(partition);
    expect(c.size).toBe(0);
    c.feedBatch(store.partitionOf(path), await appended(store, path, "b"));
    expect(seen).toEqual([]);
    expect(c.watch(path, 1, () => undefined)).toBeUndefined();
    expect((await c.eventsThrough(path, 2)).map((e) => e.offset)).toEqual([1, 2]);
    expect([store.reads, c.size]).toEqual([2, 0]);
    // Followed again (the lease back): cached again.
    c.followPartition(partition);
    await c.eventsThrough(path, 2);
    expect(c.size).toBe(1);
  });

  it("given a watcher that throws on a fed batch, then the cache gives up and the caller's feed goes on", async () => {
    const store = new FedStore();
    const c = fedOpen(store, 20);
    c.followPartition(store.partitionOf(path));
    c.feedBatch(store.partitionOf(path), await appended(store, path, "a"));
    await c.eventsThrough(path, 1);
    c.watch(path, 1, (events) => {
      if (events.some((e) => e.offset === 2)) throw new Error("a watcher's bug");
    });
    const batch = await appended(store, path, "b");
    expect(() => c.feedBatch(store.partitionOf(path), batch)).not.toThrow();
    expect(c.size).toBe(0);
    expect(c.watch(path, 1, () => undefined)).toBeUndefined();
    c.followPartition(store.partitionOf(path));
    await c.eventsThrough(path, 2);
    expect(c.size).toBe(0);
  });
});

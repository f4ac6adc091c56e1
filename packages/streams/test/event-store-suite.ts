// The shared EventStore suite: every adapter (memory, JetStream) must pass exactly these
// tests. Each test gets fresh storage; `open()` returns an independent writer on it (for
// JetStream: its own NATS connection), so races between two processes are real races.

import { type AgentEvent, ContractViolationError, AgentRuntimeError } from "@agentrt/contract";
import { collectUntil } from "@agentrt/testing";
import { describe, expect, it } from "vitest";
import { type AppendResult, DEFAULT_MAX_EVENT_BYTES, type EventStore, MAX_BATCH_EVENTS, type FeedBatch } from "../src/index.ts";

export interface StorageFixture {
  /** Another independent store instance over the same storage. */
  open(): Promise<EventStore>;
  dispose(): Promise<void>;
}

export interface StoreSuiteOptions {
  /** Fresh, isolated storage for one test. */
  newStorage(): Promise<StorageFixture>;
}

let pathCounter = 0;
const uniquePath = (name: string) => `/suite/${name}/${process.pid}-${++pathCounter}`;

export const note = (content: string, idempotencyKey?: string) => ({
  type: "agents/context-added",
  payload: { role: "user", content },
  ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
});

export const chunk = (text: string, sequence = 0) => ({
  type: "agent/llm-response-chunks",
  payload: { chunks: [text], llmRequestOffset: 1, sequence },
});

/** A driver's success settlement of request R: assistant context, settlement and usage, each keyed. */
export const settlementBatch = (requestOffset: number, text: string) => [
  { type: "agents/context-added", payload: { role: "assistant", content: text, llmRequestOffset: requestOffset }, idempotencyKey: `agent/assistant-context@${requestOffset}` },
  {
    type: "agent/llm-request-settled",
    payload: { requestOffset, durationMs: 5, result: { status: "succeeded", text } },
    idempotencyKey: `agent/settle/${requestOffset}`,
  },
  {
    type: "agent/token-usage-reported",
    payload: { llmRequestOffset: requestOffset, model: "m", maxContextTokens: 128000, inputTokens: 3, outputTokens: 2 },
    idempotencyKey: `agent/token-usage@${requestOffset}`,
  },
];

const contentOf = (e: AgentEvent) => (e.type === "agents/context-added" ? e.payload.content : `<${e.type}>`);

async function rejection(promise: Promise<unknown>): Promise<AgentRuntimeError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AgentRuntimeError);
  return error as AgentRuntimeError;
}

export function describeEventStoreSuite(name: string, options: StoreSuiteOptions): void {
  const withStorage = (title: string, body: (storage: StorageFixture, store: EventStore) => Promise<void>, timeout?: number) =>
    it(
      title,
      async () => {
        const storage = await options.newStorage();
        try {
          await body(storage, await storage.open());
        } finally {
          await storage.dispose();
        }
      },
      timeout,
    );

  describe(`EventStore suite: ${name}`, () => {
    withStorage("appends batches with dense offsets from 1, one store-stamped createdAt per batch", async (_s, store) => {
      const path = uniquePath("dense");
      const before = Date.now();
      const first = await store.append(path, [note("a"), note("b")]);
      const second = await store.append(path, [note("c")]);
      expect(first.status).toBe("committed");
      expect(first.events.map((e) => [e.offset, contentOf(e), e.streamPath])).toEqual([
        [1, "a", path],
        [2, "b", path],
      ]);
      expect(second.events.map((e) => e.offset)).toEqual([3]);
      const createdAt = first.events[0]?.createdAt as string;
      expect(first.events[1]?.createdAt).toBe(createdAt);
      expect(new Date(createdAt).toISOString()).toBe(createdAt);
      expect(Date.parse(createdAt)).toBeGreaterThanOrEqual(before - 1000);
      expect(await store.read(path)).toEqual([...first.events, ...second.events]);
      expect(await store.lastOffset(path)).toBe(3);
    });

    withStorage("reads from an offset with a limit, and an unknown stream as empty", async (_s, store) => {
      const path = uniquePath("read");
      for (let i = 1; i <= 10; i += 3) await store.append(path, [note(`${i}`), note(`${i + 1}`), note(`${i + 2}`)]);
      expect((await store.read(path, { fromOffset: 5 })).map((e) => e.offset)).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
      expect((await store.read(path, { fromOffset: 5, limit: 2 })).map(contentOf)).toEqual(["5", "6"]);
      expect((await store.read(path, { fromOffset: 12, limit: 5 })).map((e) => e.offset)).toEqual([12]);
      expect(await store.read(path, { fromOffset: 13 })).toEqual([]);
      expect(await store.read(path, { fromOffset: 2, limit: 0 })).toEqual([]);
      expect(await store.read(uniquePath("none"))).toEqual([]);
      expect(await store.lastOffset(uniquePath("none"))).toBe(0);
      expect((await rejection(store.read(path, { fromOffset: 0 }))).code).toBe("offset_out_of_range");
    });

    withStorage("finds the committed event carrying a key, from another instance too; an unknown key or stream finds nothing", async (storage, store) => {
      const path = uniquePath("find-keyed");
      await store.append(path, [note("a", "k-a"), note("b"), note("c", "k-c")]);
      for (let i = 0; i < 5; i++) await store.append(path, [note(`n${i}`, `k-n${i}`)]);
      const other = await storage.open();
      for (const found of [await store.findKeyed(path, "k-c"), await other.findKeyed(path, "k-c")]) {
        expect(found).toMatchObject({ offset: 3, idempotencyKey: "k-c", payload: { content: "c" } });
      }
      expect((await other.findKeyed(path, "k-a"))?.offset).toBe(1);
      expect((await other.findKeyed(path, "k-n4"))?.offset).toBe(8);
      expect(await other.findKeyed(path, "k-none")).toBeUndefined();
      expect(await other.findKeyed(uniquePath("none"), "k-a")).toBeUndefined();
      // A duplicate append does not move the key: it still names the first event.
      expect((await store.append(path, [note("again", "k-a")])).status).toBe("duplicate");
      expect((await other.findKeyed(path, "k-a"))?.payload).toMatchObject({ content: "a" });
    });

    withStorage("commits nothing of a batch with one invalid event, naming the event and field", async (_s, store) => {
      const path = uniquePath("invalid");
      await store.append(path, [note("before")]);
      const error = await rejection(store.append(path, [note("ok"), { type: "agents/context-added", payload: { role: "robot", content: "x" } }, note("ok2")]));
      expect(error).toBeInstanceOf(ContractViolationError);
      expect(error.code).toBe("invalid_payload");
      expect(error.message).toContain("events[1]");
      expect((error as ContractViolationError).issues.map((i) => i.path)).toContain("events[1].payload.role");
      expect((await store.read(path)).map(contentOf)).toEqual(["before"]);
      expect(await store.lastOffset(path)).toBe(1);
    });

    withStorage("rejects a bad path, an unknown type, ephemeral misuse and oversized batches, committing nothing", async (_s, store) => {
      const path = uniquePath("reject");
      expect((await rejection(store.append("no-slash", [note("x")]))).code).toBe("invalid_stream_path");
      expect((await rejection(store.append("/a/b.c", [note("x")]))).code).toBe("invalid_stream_path");
      expect((await rejection(store.append("/a//b", [note("x")]))).code).toBe("invalid_stream_path");
      expect((await rejection(store.append(path, [note("x"), { type: "agent/no-such-thing", payload: {} }]))).code).toBe("unknown_event_type");
      expect((await rejection(store.append(path, [{ ...chunk("x"), ephemeral: false }]))).code).toBe("ephemeral_misuse");
      expect((await rejection(store.append(path, [note("x"), chunk("y")]))).code).toBe("ephemeral_misuse");
      expect((await rejection(store.append(path, []))).code).toBe("invalid_event");
      const tooMany = Array.from({ length: MAX_BATCH_EVENTS + 1 }, (_, i) => note(`${i}`));
      const countError = await rejection(store.append(path, tooMany));
      expect(countError.code).toBe("batch_too_large");
      expect(countError.message).toContain(`${MAX_BATCH_EVENTS}`);
      const huge = [note("x".repeat(500_000)), note("y".repeat(500_000))];
      const bytesError = await rejection(store.append(path, huge));
      expect(bytesError.code).toBe("batch_too_large");
      expect(bytesError.message).toMatch(/bytes/);
      expect((await rejection(store.append(path, [note("a", "k"), note("b", "k")]))).code).toBe("invalid_event");
      expect(await store.read(path)).toEqual([]);
      expect(await store.listStreams(path)).toEqual([]);
    });

    withStorage("refuses an event over the event size limit, naming its index, type and the limit", async (_s, store) => {
      const path = uniquePath("event-size");
      const error = await rejection(store.append(path, [note("small"), note("x".repeat(DEFAULT_MAX_EVENT_BYTES))]));
      expect(error).toBeInstanceOf(ContractViolationError);
      expect(error.code).toBe("event_too_large");
      expect(error.details).toMatchObject({ index: 1, type: "agents/context-added", maxEventBytes: DEFAULT_MAX_EVENT_BYTES });
      expect(error.message).toContain("events[1]");
      expect(error.message).toContain(`${DEFAULT_MAX_EVENT_BYTES}`);
      expect(await store.read(path)).toEqual([]);
    });

    withStorage("a read page stops before the event that would pass maxBytes, at least one event, and continues", async (_s, store) => {
      const path = uniquePath("page-bytes");
      // Ten events of ~10 kB in three records, so the budget cuts inside a record too.
      const big = (i: number) => note(`${i}:${"x".repeat(10_000)}`);
      await store.append(path, [big(1), big(2), big(3)]);
      await store.append(path, [big(4), big(5), big(6), big(7)]);
      await store.append(path, [big(8), big(9), big(10)]);
      const eventBytes = Buffer.byteLength(JSON.stringify((await store.read(path, { limit: 1 }))[0]));
      const maxBytes = eventBytes * 3 + 10;
      const seen: number[] = [];
      let from = 1;
      while (from <= 10) {
        const page = await store.read(path, { fromOffset: from, maxBytes });
        expect(page.length).toBeGreaterThan(0);
        expect(page.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0)).toBeLessThanOrEqual(maxBytes);
        seen.push(...page.map((e) => e.offset));
        from = (page.at(-1) as AgentEvent).offset + 1;
      }
      expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
      expect((await store.read(path, { fromOffset: 2, maxBytes: 3 * eventBytes + 10 })).map((e) => e.offset)).toEqual([2, 3, 4]);
      // A budget below one event still returns that event: every page makes progress.
      expect((await store.read(path, { fromOffset: 5, maxBytes: 1 })).map((e) => e.offset)).toEqual([5]);
      expect((await store.read(path, { fromOffset: 9, limit: 1, maxBytes: 1_000_000 })).map((e) => e.offset)).toEqual([9]);
      expect((await rejection(store.read(path, { maxBytes: 0 }))).code).toBe("invalid_event");
    });

    withStorage("a read or a listing with an aborted signal stops with the signal's reason", async (_s, store) => {
      const path = uniquePath("abort");
      await store.append(path, [note("a")]);
      const gone = new Error("client went away");
      const controller = new AbortController();
      controller.abort(gone);
      await expect(store.read(path, { signal: controller.signal })).rejects.toBe(gone);
      await expect(store.listStreams(path, { signal: controller.signal })).rejects.toBe(gone);
      expect((await store.read(path, { signal: new AbortController().signal })).map(contentOf)).toEqual(["a"]);
    });

    withStorage("a key stays unique however long the stream grows, for a writer that never read it", async (storage, store) => {
      const path = uniquePath("keys-long");
      const original = await store.append(path, [note("keyed", "long/1")]);
      for (let i = 0; i < 60; i++) await store.append(path, [note(`filler ${i}`), note(`filler ${i}'`)]);
      const fresh = await storage.open();
      const again = await fresh.append(path, [note("keyed, retried", "long/1")]);
      expect(again).toEqual({ status: "duplicate", events: original.events });
      const next = await fresh.append(path, [note("new key", "long/2")]);
      expect(next.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[122, "long/2"]]);
      expect((await store.append(path, [note("new key again", "long/2")])).events).toEqual(next.events);
    });

    withStorage("enforces expectedLastOffset", async (_s, store) => {
      const path = uniquePath("expected");
      await store.append(path, [note("a")], { expectedLastOffset: 0 });
      await store.append(path, [note("b")], { expectedLastOffset: 1 });
      const error = await rejection(store.append(path, [note("c")], { expectedLastOffset: 1 }));
      expect(error.code).toBe("conflict");
      expect(error.details).toMatchObject({ expectedLastOffset: 1, lastOffset: 2 });
      expect((await rejection(store.append(uniquePath("expected-empty"), [note("z")], { expectedLastOffset: 3 }))).code).toBe("conflict");
      expect((await store.read(path)).map(contentOf)).toEqual(["a", "b"]);
    });

    withStorage("makes idempotency keys unique per stream forever: a batch with a known key commits nothing", async (_s, store) => {
      const path = uniquePath("keys");
      const original = await store.append(path, [note("first", "k1"), note("plain")]);
      await store.append(path, [note("between")]);
      const again = await store.append(path, [note("first, retried", "k1")]);
      expect(again).toEqual({ status: "duplicate", events: [original.events[0]] });
      const mixed = await store.append(path, [note("new", "k2"), note("old", "k1"), note("new too", "k3")]);
      expect(mixed.status).toBe("duplicate");
      expect(mixed.events).toEqual([original.events[0]]);
      expect((await store.read(path)).map(contentOf)).toEqual(["first", "plain", "between"]);
      const other = await store.append(uniquePath("keys-other"), [note("same key, other stream", "k1")]);
      expect(other.status).toBe("committed");
      const fresh = await store.append(path, [note("k2 now", "k2")]);
      expect(fresh.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[4, "k2"]]);
    });

    withStorage("a settlement's riding keys are taken with its key: a second settlement is a duplicate answering every original", async (storage, store) => {
      const path = uniquePath("settlement-keys");
      await store.append(path, [note("hello")]);
      const success = await store.append(path, settlementBatch(1, "the reply"));
      expect(success.events.map((e) => e.idempotencyKey)).toEqual(["agent/assistant-context@1", "agent/settle/1", "agent/token-usage@1"]);
      // A zombie driver's own settlement, from another writer: nothing of it lands, every original is told.
      const zombie = await storage.open();
      expect(await zombie.append(path, settlementBatch(1, "a zombie's reply"))).toEqual({ status: "duplicate", events: success.events });
      // A failure settlement of the same request shares only the settlement key.
      const failure = [
        { type: "agent/llm-request-settled", payload: { requestOffset: 1, result: { status: "failed", errorMessage: "late" } }, idempotencyKey: "agent/settle/1" },
        { type: "stream/error-occurred", payload: { message: "late" }, idempotencyKey: "agent/failure-error/1" },
      ];
      expect(await zombie.append(path, failure)).toEqual({ status: "duplicate", events: [success.events[1]] });
      expect((await store.read(path)).map((e) => e.offset)).toEqual([1, 2, 3, 4]);
      // The next request's settlement is its own.
      expect((await zombie.append(path, settlementBatch(5, "next"))).status).toBe("committed");
    });

    withStorage("refuses a riding key without its settlement key in the batch, naming the event and the key it needs", async (_s, store) => {
      const path = uniquePath("settlement-riders");
      const [assistant, settled, usage] = settlementBatch(1, "the reply");
      for (const batch of [[usage], [assistant, note("other", "agent/settle/2")], [settled, assistant, usage].slice(1)]) {
        const error = await rejection(store.append(path, batch));
        expect(error).toBeInstanceOf(ContractViolationError);
        expect(error.code).toBe("invalid_event");
        expect(error.message).toContain("agent/settle/1");
        expect(error.message).toMatch(/events\[\d\]\.idempotencyKey "agent\/(token-usage|assistant-context)@1"/);
      }
      expect(await store.read(path)).toEqual([]);
    });

    withStorage("two writers racing 1000 appends on one stream: dense offsets, every batch contiguous", async (storage, a) => {
      const b = await storage.open();
      const path = uniquePath("race");
      const appends: Promise<AppendResult>[] = [];
      for (let i = 0; i < 1000; i++) {
        const writer = i % 2 === 0 ? a : b;
        const size = (i % 3) + 1;
        appends.push(writer.append(path, Array.from({ length: size }, (_, j) => note(`${i}.${j}`))));
      }
      const results = await Promise.all(appends);
      const total = results.reduce((n, r) => n + r.events.length, 0);
      const stored = await a.read(path);
      expect(stored.map((e) => e.offset)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
      results.forEach((result, i) => {
        expect(result.status).toBe("committed");
        const first = result.events[0]?.offset as number;
        result.events.forEach((e, j) => {
          expect(e.offset).toBe(first + j);
          expect(contentOf(stored[e.offset - 1] as AgentEvent)).toBe(`${i}.${j}`);
        });
      });
    }, 60_000);

    withStorage("20 concurrent appends of one idempotency key from two writers store exactly one event", async (storage, a) => {
      const b = await storage.open();
      const path = uniquePath("key-race");
      await a.append(path, [note("seed")]);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).append(path, [note(`attempt ${i}`, "settle/1")])));
      const committed = results.filter((r) => r.status === "committed");
      expect(committed).toHaveLength(1);
      const winner = committed[0]?.events[0] as AgentEvent;
      for (const r of results.filter((x) => x.status === "duplicate")) expect(r.events).toEqual([winner]);
      const stored = await b.read(path);
      expect(stored.filter((e) => e.idempotencyKey === "settle/1")).toEqual([winner]);
      expect(stored).toHaveLength(2);
    }, 30_000);

    withStorage("two writers racing keyed records for one offset: every key stored once, each loser told the winner's event", async (storage, a) => {
      const b = await storage.open();
      const path = uniquePath("keyed-race");
      await a.append(path, [note("seed")]);
      await b.read(path);
      // Wave after wave, both writers publish a keyed record for the same next offset; one loses
      // it and goes again with its keys. Every third wave they carry the same key.
      const outcomes: { key: string; result: AppendResult }[] = [];
      for (let i = 0; i < 45; i++) {
        const shared = i % 3 === 0;
        const wave = [
          { key: `a${i}`, result: a.append(path, [note(`a ${i}`, `a${i}`)]) },
          { key: shared ? `a${i}` : `b${i}`, result: b.append(path, [note(`b ${i}`, shared ? `a${i}` : `b${i}`), note(`b ${i} more`)]) },
        ];
        for (const { key, result } of wave) outcomes.push({ key, result: await result });
      }
      const stored = await a.read(path);
      expect(stored.map((e) => e.offset)).toEqual(Array.from({ length: stored.length }, (_, i) => i + 1));
      for (const key of new Set(outcomes.map((o) => o.key))) {
        const carriers = stored.filter((e) => e.idempotencyKey === key);
        expect(carriers).toHaveLength(1);
        const results = outcomes.filter((o) => o.key === key).map((o) => o.result);
        expect(results.filter((r) => r.status === "committed")).toHaveLength(1);
        for (const r of results.filter((x) => x.status === "duplicate")) expect(r.events).toEqual(carriers);
      }
      // Nothing else was stored: the seed and what each committed append was told it stored.
      const committed = outcomes.filter((o) => o.result.status === "committed").flatMap((o) => o.result.events);
      expect(committed.sort((x, y) => x.offset - y.offset)).toEqual(stored.slice(1));
    }, 60_000);

    withStorage("a reader tailing live while two writers append sees every offset exactly once, in order", async (storage, a) => {
      const b = await storage.open();
      const reader = await storage.open();
      const path = uniquePath("tail");
      for (let i = 0; i < 5; i++) await a.append(path, [note(`pre ${i}`)]);
      const subscription = reader.subscribe(path, { fromOffset: 3 });
      const writes = Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).append(path, [note(`w${i}`), note(`w${i}'`)])));
      const seen = await collectUntil(subscription, (items) => items.length >= 403);
      await writes;
      await subscription.close();
      expect(seen.map((e) => e.offset)).toEqual(Array.from({ length: 403 }, (_, i) => i + 3));
      expect(seen).toEqual(await a.read(path, { fromOffset: 3 }));
    }, 60_000);

    withStorage("subscribes from the middle of history, then live; ends on close", async (_s, store) => {
      const path = uniquePath("sub");
      for (let i = 1; i <= 6; i++) await store.append(path, [note(`${i}`)]);
      const subscription = store.subscribe(path, { fromOffset: 4 });
      const history = await collectUntil(subscription, (items) => items.length >= 3);
      expect(history.map((e) => e.offset)).toEqual([4, 5, 6]);
      await store.append(path, [note("7"), note("8")]);
      const live = await collectUntil(subscription, (items) => items.length >= 2);
      expect(live.map(contentOf)).toEqual(["7", "8"]);
      await subscription.close();
      const after = await collectUntil(subscription, () => false, 5_000);
      expect(after).toEqual([]);
    });

    withStorage("an ephemeral append carries the last offset its caller already knows, and refuses a malformed one", async (_storage, store) => {
      const path = uniquePath("eph-known");
      await store.append(path, [note("durable 1"), note("durable 2")]);
      const stamped = await store.append(path, [chunk("hello", 0)], { knownLastOffset: 1 });
      expect(stamped.events[0]).toMatchObject({ offset: 1, ephemeral: true, type: "agent/llm-response-chunks" });
      const looked = await store.append(path, [chunk("hello", 1)]);
      expect(looked.events[0]).toMatchObject({ offset: 2, ephemeral: true });
      for (const bad of [-1, 1.5, Number.NaN]) {
        expect((await rejection(store.append(path, [chunk("x", 2)], { knownLastOffset: bad }))).code).toBe("invalid_event");
      }
    });

    withStorage("ephemeral events reach ephemeral subscribers only and never reads", async (storage, store) => {
      const path = uniquePath("eph");
      await store.append(path, [note("durable 1")]);
      const reader = await storage.open();
      const withLive = reader.subscribe(path, { ephemeral: true });
      const durableOnly = reader.subscribe(path);
      await collectUntil(withLive, (items) => items.length >= 1);
      await collectUntil(durableOnly, (items) => items.length >= 1);
      // The live lane is best-effort: publish until the subscriber is demonstrably attached.
      let result: AppendResult | undefined;
      const seenLive = collectUntil(withLive, (items) => items.some((e) => e.type === "agent/llm-response-chunks"));
      const pump = (async () => {
        for (let i = 0; i < 200 && result === undefined; i++) {
          const r = await store.append(path, [chunk("hello", i)]);
          expect(r.status).toBe("committed");
          expect(r.events[0]).toMatchObject({ offset: 1, ephemeral: true, type: "agent/llm-response-chunks" });
          if ((await Promise.race([seenLive.then(() => true), new Promise((res) => setImmediate(() => res(false)))])) === true) result = r;
        }
      })();
      const live = await seenLive;
      await pump;
      expect(live.find((e) => e.type === "agent/llm-response-chunks")).toMatchObject({ ephemeral: true, offset: 1, streamPath: path });
      await store.append(path, [note("durable 2")]);
      const durable = await collectUntil(durableOnly, (items) => items.length >= 1);
      expect(durable.map(contentOf)).toEqual(["durable 2"]);
      expect((await store.read(path)).map(contentOf)).toEqual(["durable 1", "durable 2"]);
      expect(await store.lastOffset(path)).toBe(2);
      await withLive.close();
      await durableOnly.close();
    });

    withStorage("a live feed carries the live-lane events of its partitions only, never durable ones", async (storage, store) => {
      const pathA = uniquePath("live");
      let pathB = uniquePath("live");
      while (store.partitionOf(pathB) === store.partitionOf(pathA)) pathB = uniquePath("live");
      const reader = await storage.open();
      const mine = reader.liveFeed({ partitions: [store.partitionOf(pathA)] });
      const every = reader.liveFeed();
      const chunksOnly = reader.liveFeed({ types: ["agent/llm-response-chunks"] });
      // Best effort like the lane itself: publish until both feeds are demonstrably attached.
      const attached = Promise.all([
        collectUntil(mine, (items) => items.some((e) => e.streamPath === pathA)),
        collectUntil(every, (items) => items.some((e) => e.streamPath === pathA)),
        collectUntil(chunksOnly, (items) => items.some((e) => e.streamPath === pathA)),
      ]);
      let ready = false;
      void attached.then(() => (ready = true));
      for (let i = 0; i < 200 && !ready; i++) {
        await store.append(pathA, [chunk("warm", i)]);
        await new Promise((res) => setTimeout(res, 5));
      }
      await attached;
      await store.append(pathA, [note("durable")]);
      await store.append(pathB, [chunk("elsewhere", 0)]);
      await store.append(pathA, [{ type: "render/message-delta", payload: { llmRequestOffset: 1, text: "a preview" } }]);
      await store.append(pathA, [chunk("marker", 999)]);
      const isMarker = (e: AgentEvent) => e.streamPath === pathA && e.type === "agent/llm-response-chunks" && e.payload.sequence === 999;
      const fromMine = await collectUntil(mine, (items) => items.some(isMarker));
      const fromEvery = await collectUntil(every, (items) => items.some(isMarker) && items.some((e) => e.streamPath === pathB));
      // A feed of chosen types gets nothing else (the preview published before the marker).
      const fromChunksOnly = await collectUntil(chunksOnly, (items) => items.some(isMarker));
      expect(fromEvery.some((e) => e.type === "render/message-delta")).toBe(true);
      expect(fromChunksOnly.every((e) => e.type === "agent/llm-response-chunks")).toBe(true);
      await chunksOnly.close();
      expect(fromMine.every((e) => e.ephemeral === true && e.streamPath === pathA)).toBe(true);
      expect(fromMine.find(isMarker)).toMatchObject({ offset: 1, ephemeral: true });
      expect(fromEvery.find((e) => e.streamPath === pathB)).toMatchObject({ type: "agent/llm-response-chunks", offset: 0, ephemeral: true });
      expect(fromEvery.some((e) => e.ephemeral !== true)).toBe(false);
      await mine.close();
      await every.close();
      expect(() => store.liveFeed({ partitions: [-1] })).toThrow(/partition/);
    });

    withStorage("feeds every committed batch of chosen partitions in commit order, and resumes", async (_s, store) => {
      const paths = [uniquePath("feed"), uniquePath("feed"), uniquePath("feed")];
      const written: string[][] = [];
      for (let i = 0; i < 9; i++) {
        const path = paths[i % 3] as string;
        const r = await store.append(path, [note(`${i}a`), note(`${i}b`)]);
        written.push(r.events.map(contentOf));
      }
      const mine = (b: FeedBatch) => paths.includes(b.streamPath);
      const all = store.feed();
      const batches = (await collectUntil(all, (items) => items.filter(mine).length >= 9)).filter(mine);
      await all.close();
      expect(batches.map((b) => b.events.map(contentOf))).toEqual(written);
      const sequences = batches.map((b) => b.sequence);
      expect([...sequences].sort((x, y) => x - y)).toEqual(sequences);
      expect(new Set(sequences).size).toBe(9);

      const resumed = store.feed({ afterSequence: batches[5]?.sequence as number });
      const rest = (await collectUntil(resumed, (items) => items.filter(mine).length >= 3)).filter(mine);
      expect(rest.map((b) => b.sequence)).toEqual(sequences.slice(6));
      await store.append(paths[0] as string, [note("live")]);
      const live = (await collectUntil(resumed, (items) => items.some((b) => b.streamPath === paths[0] && b.events[0]?.type === "agents/context-added" && contentOf(b.events[0]) === "live"))).filter(mine);
      expect(live.at(-1)?.events.map((e) => e.offset)).toEqual([7]);
      await resumed.close();

      const partition = store.partitionOf(paths[1] as string);
      const one = store.feed({ partitions: [partition] });
      const onlyThere = await collectUntil(one, (items) => items.filter((b) => b.streamPath === paths[1]).length >= 3);
      await one.close();
      expect(onlyThere.every((b) => store.partitionOf(b.streamPath) === partition)).toBe(true);
      expect(() => store.feed({ partitions: [store.partitionCount] })).toThrow(/partition/);
    });

    withStorage("lists streams with durable events under a prefix, with their last offsets", async (_s, store) => {
      const root = uniquePath("list");
      await store.append(`${root}/a`, [note("1"), note("2")]);
      await store.append(`${root}/b/c`, [note("1")]);
      await store.append(`${root}-sibling`, [note("1")]);
      await store.append(`${root}/eph`, [chunk("x")]);
      expect(await store.listStreams(`${root}/`)).toEqual([
        { streamPath: `${root}/a`, lastOffset: 2 },
        { streamPath: `${root}/b/c`, lastOffset: 1 },
      ]);
      const withSibling = await store.listStreams(root);
      expect(withSibling.map((s) => s.streamPath)).toEqual([`${root}-sibling`, `${root}/a`, `${root}/b/c`].sort());
      expect(await store.listStreams(`${root}/`, { limit: 1 })).toEqual([{ streamPath: `${root}/a`, lastOffset: 2 }]);
      expect(await store.listStreams(`${root}/`, { after: `${root}/a` })).toEqual([{ streamPath: `${root}/b/c`, lastOffset: 1 }]);
      expect(await store.listStreams(root, { include: (p) => !p.endsWith("/a") })).toEqual([
        { streamPath: `${root}-sibling`, lastOffset: 1 },
        { streamPath: `${root}/b/c`, lastOffset: 1 },
      ].sort((x, y) => (x.streamPath < y.streamPath ? -1 : 1)));
      expect(store.partitionOf(`${root}/a`)).toBe(store.partitionOf(`${root}/a`));
      expect(store.partitionOf(`${root}/a`)).toBeLessThan(store.partitionCount);
    });
  });
}

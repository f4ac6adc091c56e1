// The JetStream store against a real nats-server 2.9 from the harness: the shared suite (each
// test on its own JetStream stream and subjects, each writer on its own connection), plus what
// only JetStream has — stream validation on open, the on-disk record shape, cost of reads far
// into a stream.

import { type NatsServer, collectUntil, startNatsServer } from "@agentrt/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection, connect, headers as natsHeaders } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EventStore, fnv1a32 } from "../src/index.ts";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { KeyIndex } from "../src/jetstream/key-index.ts";
import { JetStreamPublisher, PublishRejectedError } from "../src/jetstream/publisher.ts";
import { LIVE_TYPES_HEADER } from "../src/jetstream/subjects.ts";
import { describeEventStoreSuite, note } from "./event-store-suite.ts";

let server: NatsServer;
let storageCounter = 0;

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

function namesFor(n: number) {
  return { streamName: `EV_${n}`, subjectPrefix: `ev${n}`, ephemeralPrefix: `eph${n}` };
}

describeEventStoreSuite("jetstream", {
  async newStorage() {
    const names = namesFor(++storageCounter);
    const connections: NatsConnection[] = [];
    const stores: EventStore[] = [];
    return {
      async open() {
        const nc = await connect({ servers: server.url });
        connections.push(nc);
        const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 8 });
        stores.push(store);
        return store;
      },
      async dispose() {
        await Promise.all(stores.map((s) => s.close()));
        await Promise.all(connections.map((c) => c.close()));
      },
    };
  },
});

describe("JetStreamEventStore specifics", () => {
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc?.close();
  });

  it("refuses an event over its configured maxEventBytes before publishing anything", async () => {
    const names = namesFor(++storageCounter);
    const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 4, maxEventBytes: 1_000 });
    await expect(store.append("/size/one", [note("x".repeat(1_000))])).rejects.toMatchObject({ code: "event_too_large", details: { index: 0, maxEventBytes: 1_000 } });
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info(names.streamName)).state.messages).toBe(0);
    await store.close();
  });

  it("creates one stream with direct get and refuses a different partition count", async () => {
    const names = namesFor(++storageCounter);
    const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 16 });
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(names.streamName);
    expect(info.config.subjects).toEqual([`${names.subjectPrefix}.>`]);
    expect(info.config.allow_direct).toBe(true);
    await expect(JetStreamEventStore.open(nc, { ...names, partitionCount: 32 })).rejects.toMatchObject({ code: "conflict" });
    const again = await JetStreamEventStore.open(nc, { ...names, partitionCount: 16 });
    expect(again.partitionCount).toBe(16);
    await store.close();
  });

  it("lets several services open (and create) the same stream at once", async () => {
    const names = namesFor(++storageCounter);
    const other = await connect({ servers: server.url });
    const stores = await Promise.all(Array.from({ length: 6 }, (_, i) => JetStreamEventStore.open(i % 2 === 0 ? nc : other, { ...names, partitionCount: 8 })));
    expect(stores.map((s) => s.partitionCount)).toEqual([8, 8, 8, 8, 8, 8]);
    await stores[0]?.append("/shared/open", [note("x")]);
    expect(await stores[5]?.lastOffset("/shared/open")).toBe(1);
    await Promise.all(stores.map((s) => s.close()));
    await other.close();
  });

  it("stores one message per batch on ev.<fnv1a(path) mod P>.<segments>", async () => {
    const names = namesFor(++storageCounter);
    const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 64 });
    const path = "/agents/web/demo";
    await store.append(path, [note("a"), note("b"), note("c")]);
    await store.append(path, [note("d")]);
    const jsm = await jetstreamManager(nc);
    const partition = fnv1a32(path) % 64;
    expect(store.partitionOf(path)).toBe(partition);
    const info = await jsm.streams.info(names.streamName, { subjects_filter: ">" });
    expect(info.state.subjects).toEqual({ [`${names.subjectPrefix}.${partition}.agents.web.demo`]: 2 });
    const stored = await jsm.streams.getMessage(names.streamName, { seq: 1 });
    expect(stored?.json<{ first: number; events: unknown[] }>()).toMatchObject({ first: 1, events: [{ type: "agents/context-added" }, {}, {}] });
    await store.close();
  });

  it("names a live-lane message's event types in a header; a feed of chosen types drops the others by that header alone", async () => {
    const names = namesFor(++storageCounter);
    const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 8 });
    const path = "/agents/live/typed";
    const subject = `${names.ephemeralPrefix}.${store.partitionOf(path)}.agents.live.typed`;
    const seen: { types: string; body: string }[] = [];
    const spy = nc.subscribe(subject, { callback: (_e, m) => void seen.push({ types: m.headers?.get(LIVE_TYPES_HEADER) ?? "", body: m.string() }) });
    await nc.flush();
    const chunk = (sequence: number) => ({ type: "agent/llm-response-chunks", payload: { llmRequestOffset: 1, sequence, chunks: [{ choices: [] }] }, ephemeral: true });
    const preview = { type: "render/message-delta", payload: { llmRequestOffset: 1, text: "x" }, ephemeral: true };
    await store.append(path, [chunk(0), preview, chunk(1)], { knownLastOffset: 0 });
    await nc.flush();
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    expect(seen[0]?.types).toBe("agent/llm-response-chunks,render/message-delta");
    spy.unsubscribe();

    const chunksOnly = store.liveFeed({ types: ["agent/llm-response-chunks"] });
    await nc.flush();
    const events = JSON.stringify([{ streamPath: path, offset: 0, createdAt: new Date().toISOString(), ...chunk(7) }]);
    // The header decides: chunks under a header naming only previews are not parsed, hence not delivered ...
    const previewsHeader = natsHeaders();
    previewsHeader.set(LIVE_TYPES_HEADER, "render/message-delta");
    nc.publish(subject, events.replace('"sequence":7', '"sequence":8'), { headers: previewsHeader });
    // ... a message without the header (a publisher from before it) is parsed and filtered item by item ...
    nc.publish(subject, events);
    // ... and one whose header names the wanted type is delivered.
    const chunksHeader = natsHeaders();
    chunksHeader.set(LIVE_TYPES_HEADER, "agent/llm-response-chunks");
    nc.publish(subject, events.replace('"sequence":7', '"sequence":9'), { headers: chunksHeader });
    const got = await collectUntil(chunksOnly, (items) => items.some((e) => e.type === "agent/llm-response-chunks" && e.payload.sequence === 9));
    expect(got.map((e) => (e.type === "agent/llm-response-chunks" ? e.payload.sequence : -1))).toEqual([7, 9]);
    await chunksOnly.close();
    await store.close();
  });

  it("a publish retried with the same Nats-Msg-Id lands once, even though its expected sequence is now stale", async () => {
    // The append path relies on the server checking the dedup id BEFORE the expected sequence.
    const names = namesFor(++storageCounter);
    const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 8 });
    const publisher = new JetStreamPublisher(nc, 5_000);
    const subject = `${names.subjectPrefix}.0.retry`;
    const body = new TextEncoder().encode("{}");
    const first = await publisher.publish(subject, body, { msgID: "attempt-1", lastSubjectSequence: 0 });
    expect(await publisher.publish(subject, body, { msgID: "attempt-1", lastSubjectSequence: 0 })).toBe(first);
    const refused = await publisher.publish(subject, body, { msgID: "attempt-2", lastSubjectSequence: 0 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PublishRejectedError);
    expect((refused as PublishRejectedError).wrongLastSequence).toBe(true);
    publisher.close();
    await store.close();
  });

  it("ends a live subscription with a retryable error when its connection goes away, not silently", async () => {
    const names = namesFor(++storageCounter);
    const own = await connect({ servers: server.url });
    const store = await JetStreamEventStore.open(own, { ...names, partitionCount: 8 });
    await store.append("/gone/conn", [note("a")]);
    const subscription = store.subscribe("/gone/conn");
    await collectUntil(subscription, (items) => items.length >= 1);
    await own.close();
    const ended = await collectUntil(subscription, () => false).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(ended).toMatchObject({ code: "unavailable", retryable: true });
  });

  it("a writer with a stale view catches up: offsets stay dense and known keys still collapse", async () => {
    const names = namesFor(++storageCounter);
    const other = await connect({ servers: server.url });
    const a = await JetStreamEventStore.open(nc, { ...names, partitionCount: 8 });
    const b = await JetStreamEventStore.open(other, { ...names, partitionCount: 8 });
    const path = "/stale/view";
    expect((await a.append(path, [note("a1", "ka")])).events[0]?.offset).toBe(1);
    expect((await b.append(path, [note("b1", "kb")])).events[0]?.offset).toBe(2);
    // a still believes the stream ends at 1: its publish is refused, it catches up and sees kb.
    expect(await a.append(path, [note("a2", "kb")])).toMatchObject({ status: "duplicate", events: [{ offset: 2, idempotencyKey: "kb" }] });
    expect((await b.append(path, [note("b2")])).events[0]?.offset).toBe(3);
    expect((await a.append(path, [note("a3")], { expectedLastOffset: 3 })).events[0]?.offset).toBe(4);
    expect((await a.read(path)).map((e) => e.offset)).toEqual([1, 2, 3, 4]);
    await a.close();
    await b.close();
    await other.close();
  });

  it("reserves new keys without looking them up first, and still collapses a key that exists", async () => {
    const names = namesFor(++storageCounter);
    const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 8 });
    const path = "/keys/guess";
    await store.append(path, [note("first")]);
    const lookup = vi.spyOn(KeyIndex.prototype, "lookup");
    try {
      const fresh = await store.append(path, [note("k1", "k1"), note("k2", "k2")]);
      expect(fresh).toMatchObject({ status: "committed", events: [{ offset: 2 }, { offset: 3 }] });
      // New keys: one reservation round, no lookups.
      expect(lookup).not.toHaveBeenCalled();
      // A key that exists: the guess fails, the lookups find the original.
      expect(await store.append(path, [note("again", "k2")])).toMatchObject({ status: "duplicate", events: [{ offset: 3, idempotencyKey: "k2" }] });
      expect(lookup).toHaveBeenCalled();
      // A batch with one new and one taken key is a duplicate; its new key's reservation, left
      // pointing at a record that does not carry it, does not stop a later append of that key.
      expect(await store.append(path, [note("mixed", "k3"), note("mixed", "k1")])).toMatchObject({ status: "duplicate" });
      expect(await store.append(path, [note("k3 alone", "k3")])).toMatchObject({ status: "committed", events: [{ offset: 4, idempotencyKey: "k3" }] });
      expect(await store.append(path, [note("k3 again", "k3")])).toMatchObject({ status: "duplicate", events: [{ offset: 4 }] });
      expect((await store.read(path)).map((e) => e.offset)).toEqual([1, 2, 3, 4]);
    } finally {
      lookup.mockRestore();
      await store.close();
    }
  });

  it("answers a retried keyed append with its originals even when its expected offset has passed (a retried create)", async () => {
    const names = namesFor(++storageCounter);
    const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 8 });
    const path = "/keys/retried-create";
    try {
      const batch = [note("born", "birth:1"), note("section", "birth:2")];
      expect(await store.append(path, batch, { expectedLastOffset: 0 })).toMatchObject({ status: "committed", events: [{ offset: 1 }, { offset: 2 }] });
      // The retry's guess (its keys taken as new) would refuse it on the offset; the lookups find the originals.
      expect(await store.append(path, batch, { expectedLastOffset: 0 })).toMatchObject({ status: "duplicate", events: [{ offset: 1 }, { offset: 2 }] });
      // Without its keys, a stale expected offset is still a conflict.
      await expect(store.append(path, [note("late")], { expectedLastOffset: 0 })).rejects.toMatchObject({ code: "conflict" });
      expect((await store.read(path)).map((e) => e.offset)).toEqual([1, 2]);
    } finally {
      await store.close();
    }
  });

  it("reads far into a long stream in about the time it reads its start", async () => {
    const names = namesFor(++storageCounter);
    const store = await JetStreamEventStore.open(nc, { ...names, partitionCount: 8 });
    const path = "/long/stream";
    // 20 000 events in 1 000 batches, interleaved with another stream so sequences are sparse.
    for (let b = 0; b < 1000; b += 50) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          await store.append(path, Array.from({ length: 20 }, (_, j) => note(`${(b + i) * 20 + j + 1}`)));
          await store.append("/long/other", [note("noise")]);
        }),
      );
    }
    expect(await store.lastOffset(path)).toBe(20_000);
    const timeRead = async (fromOffset: number) => {
      const started = performance.now();
      const events = await store.read(path, { fromOffset, limit: 10 });
      expect(events.map((e) => e.offset)).toEqual(Array.from({ length: Math.min(10, 20_001 - fromOffset) }, (_, i) => fromOffset + i));
      return performance.now() - started;
    };
    await timeRead(1);
    const near = Math.min(await timeRead(1), await timeRead(2));
    const far = Math.min(await timeRead(19_990), await timeRead(12_345));
    // A scan from the start would take hundreds of round trips; the binary search takes ~log2(2000).
    expect(far).toBeLessThan(Math.max(50, near * 10));
    await store.close();
  }, 60_000);
});

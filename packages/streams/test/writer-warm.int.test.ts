// A read through the stream's end warms the store's writer view (so the next append needs no
// catch-up of its own; keys are answered by the key index). The warmed view must behave
// exactly like a caught-up one: keys already on the stream are duplicates, other writers'
// later appends are caught up with, offsets stay dense.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";

let server: NatsServer;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];
async function store(): Promise<JetStreamEventStore> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const s = await JetStreamEventStore.open(nc, { partitionCount: 4 });
  stores.push(s);
  return s;
}
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server.stop();
});

const note = (content: string, key: string) => ({ type: "agents/context-added", payload: { role: "user", content }, idempotencyKey: key });

it("a writer warmed by a full read still finds every key and follows other writers", async () => {
  const a = await store();
  const b = await store();
  const path = "/agents/warm/one";
  await a.append(path, [note("one", "k1"), note("two", "k2")]);
  expect((await b.read(path)).map((e) => e.offset)).toEqual([1, 2]); // warms b's writer
  const dup = await b.append(path, [note("two again", "k2")]);
  expect(dup.status).toBe("duplicate");
  expect(dup.events.map((e) => e.offset)).toEqual([2]);
  // Another writer moves the stream on; b's view is now behind and must catch up.
  await a.append(path, [note("three", "k3")]);
  expect((await b.append(path, [note("three again", "k3")])).status).toBe("duplicate");
  const fresh = await b.append(path, [note("four", "k4")]);
  expect(fresh.status).toBe("committed");
  expect(fresh.events.map((e) => e.offset)).toEqual([4]);
  // A partial read does not warm: still correct.
  await a.append(path, [note("five", "k5")]);
  expect((await b.read(path, { fromOffset: 2 })).map((e) => e.offset)).toEqual([2, 3, 4, 5]);
  expect((await b.append(path, [note("five again", "k5")])).status).toBe("duplicate");
  expect((await a.read(path)).map((e) => e.offset)).toEqual([1, 2, 3, 4, 5]);
});

it("a writer advanced by a feed it follows stays exact: keys, offsets, other writers", async () => {
  const a = await store();
  const b = await store();
  const path = "/agents/warm/fed";
  await a.append(path, [note("one", "f1")]);
  await b.read(path); // b knows the stream through offset 1
  const feed = b.feed({ partitions: [b.partitionOf(path)] });
  const seen: number[] = [];
  const following = (async () => {
    for await (const batch of feed) for (const e of batch.events) if (batch.streamPath === path) seen.push(e.offset);
  })();
  await a.append(path, [note("two", "f2")]);
  await a.append(path, [note("three", "f3"), note("four", "f4")]);
  const deadline = Date.now() + 5000;
  while (!seen.includes(4) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(seen).toEqual([1, 2, 3, 4]);
  // b's view was advanced by the feed: the keys it saw there are duplicates, offsets go on at 5.
  expect((await b.append(path, [note("four again", "f4")])).status).toBe("duplicate");
  expect((await b.append(path, [note("five", "f5")])).events.map((e) => e.offset)).toEqual([5]);
  await feed.close();
  await following;
  expect((await a.read(path)).map((e) => e.idempotencyKey)).toEqual(["f1", "f2", "f3", "f4", "f5"]);
});

it("a writer that meets a stream on its feed before it ever appended or read there appends with one publish (a driver's first turn of an agent)", async () => {
  const a = await store();
  const b = await store();
  const path = "/agents/warm/fed-first";
  await a.append(path, [note("one", "ff1")]);
  await a.append(path, [note("two", "ff2")]);
  const feed = b.feed({ partitions: [b.partitionOf(path)] });
  const seen: number[] = [];
  const following = (async () => {
    for await (const batch of feed) for (const e of batch.events) if (batch.streamPath === path) seen.push(e.offset);
  })();
  const deadline = Date.now() + 5000;
  while (!seen.includes(2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(seen).toEqual([1, 2]);
  const nc = connections.at(-1) as NatsConnection;
  const sent = nc.stats().outMsgs;
  const result = await b.append(path, [note("three", "ff3")]);
  expect(result.events.map((e) => e.offset)).toEqual([3]);
  // Whether the key index holds the stream's history (its first record's header, once per
  // stream), the key's reservation and the publish: no catch-up read, no publish refused as
  // behind, no key look-ups after it (a writer that did not take the feed's record sent 12).
  expect(nc.stats().outMsgs - sent).toBe(3);
  await feed.close();
  await following;
  expect((await a.read(path)).map((e) => e.idempotencyKey)).toEqual(["ff1", "ff2", "ff3"]);
});

it("a writer primed with what another client knew (a record and the key index) appends after it, and catches up when the record was not the last", async () => {
  const a = await store();
  const path = "/agents/warm/primed";
  await a.append(path, [note("one", "p1")]);
  await a.append(path, [note("two", "p2")]);
  // a wrote the stream's first record, so it knows the key index holds every key.
  const known = a.appendHint(path);
  expect(known).toMatchObject({ keysIndexed: true, record: { lastOffset: 2 } });
  const b = await store();
  expect(b.appendHint(path)).toEqual({});
  b.primeAppend(path, known);
  expect(b.appendHint(path)).toEqual(known);
  expect((await b.append(path, [note("two again", "p2")])).status).toBe("duplicate");
  expect((await b.append(path, [note("three", "p3")])).events.map((e) => e.offset)).toEqual([3]);
  // A record that is no longer the stream's last (b appended since): the append still lands at the end.
  const c = await store();
  c.primeAppend(path, known);
  expect((await c.append(path, [note("four", "p4")], { expectedLastOffset: 3 })).events.map((e) => e.offset)).toEqual([4]);
  expect((await c.append(path, [note("three again", "p3")])).status).toBe("duplicate");
  // Priming never moves a view back.
  c.primeAppend(path, known);
  expect(c.appendHint(path).record?.lastOffset).toBe(4);
  expect((await a.read(path)).map((e) => e.idempotencyKey)).toEqual(["p1", "p2", "p3", "p4"]);
});

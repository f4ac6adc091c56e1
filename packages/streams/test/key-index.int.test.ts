// The key index's reservations when their writer did not finish: a reservation whose offset
// was taken by another record is stale and replaced; one past the stream's end is pending and
// may be carried by the next writer there; a reservation whose record carries the key makes a
// duplicate. (Races between live writers: the shared suite's concurrent-key test.)

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { KeyIndex } from "../src/jetstream/key-index.ts";
import { JetStreamPublisher } from "../src/jetstream/publisher.ts";

let server: NatsServer;
let nc: NatsConnection;
let store: JetStreamEventStore;
let index: KeyIndex;
let publisher: JetStreamPublisher;
const names = { streamName: "EV_KEYS", subjectPrefix: "evk", ephemeralPrefix: "ephk", partitionCount: 4 };

const note = (content: string, idempotencyKey?: string) => ({
  type: "agents/context-added",
  payload: { role: "user", content },
  ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
});

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  store = await JetStreamEventStore.open(nc, names);
  publisher = new JetStreamPublisher(nc, 5_000);
  index = await KeyIndex.open(jetstream(nc), publisher, "EV_KEYS_KEYS", 1);
});
afterAll(async () => {
  publisher?.close();
  await store?.close();
  await nc?.close();
  await server?.stop();
});

it("a reservation for an offset another record took is stale: the key commits, once", async () => {
  const path = "/keys/stale";
  await store.append(path, [note("one")]);
  // A writer reserved k for offset 2, then lost the race to an unkeyed record.
  expect(await index.reserve(path, "k", 2, undefined)).toBeGreaterThan(0);
  await store.append(path, [note("two")]);
  const first = await store.append(path, [note("keyed", "k")]);
  expect(first.status).toBe("committed");
  expect(first.events.map((e) => e.offset)).toEqual([3]);
  expect((await index.lookup(path, "k"))?.first).toBe(3);
  const again = await store.append(path, [note("keyed again", "k")]);
  expect(again).toEqual({ status: "duplicate", events: first.events });
});

it("a reservation past the stream's end is pending: the next writer there carries the key", async () => {
  const path = "/keys/pending";
  await store.append(path, [note("one")]);
  // A writer reserved k for offset 2 and died before publishing.
  expect(await index.reserve(path, "k", 2, undefined)).toBeGreaterThan(0);
  const committed = await store.append(path, [note("keyed", "k")]);
  expect(committed.status).toBe("committed");
  expect(committed.events.map((e) => e.offset)).toEqual([2]);
  expect((await store.append(path, [note("again", "k")])).status).toBe("duplicate");
});

it("a malformed entry reads as stale and is replaced", async () => {
  const path = "/keys/malformed";
  await store.append(path, [note("one")]);
  const kv = await new Kvm(jetstream(nc)).open("EV_KEYS_KEYS");
  expect(await index.lookup(path, "m")).toBeUndefined();
  await index.reserve(path, "m", 1, undefined);
  const entry = await index.lookup(path, "m");
  const keys = await kv.keys();
  let entryKey: string | undefined;
  for await (const k of keys) if (k.startsWith("k.keys.malformed.")) entryKey = k;
  await kv.update(entryKey as string, new TextEncoder().encode("not json"), entry?.revision as number);
  expect((await index.lookup(path, "m"))?.first).toBe(0);
  const committed = await store.append(path, [note("keyed", "m")]);
  expect(committed.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[2, "m"]]);
  expect((await store.append(path, [note("again", "m")])).status).toBe("duplicate");
});

it("a reservation is compare-and-set: a taken key or a moved revision refuses it", async () => {
  const path = "/keys/cas";
  const created = await index.reserve(path, "c", 1, undefined);
  const entry = await index.lookup(path, "c");
  expect(entry?.first).toBe(1);
  // A reservation resolves to the revision it wrote: the entry's, for a later compare-and-set.
  expect(created).toBe(entry?.revision);
  // A second create of the same key, and an update from a revision that is no longer the last.
  expect(await index.reserve(path, "c", 2, undefined)).toBeUndefined();
  const replaced = await index.reserve(path, "c", 3, entry?.revision as number);
  expect(replaced).toBeGreaterThan(entry?.revision as number);
  expect(await index.reserve(path, "c", 4, entry?.revision as number)).toBeUndefined();
  expect(await index.lookup(path, "c")).toEqual({ first: 3, revision: replaced });
});

it("a key whose entry an operator deleted is reserved again (the delete marker is replaced)", async () => {
  const path = "/keys/deleted";
  await store.append(path, [note("keyed", "d")]);
  const kv = await new Kvm(jetstream(nc)).open("EV_KEYS_KEYS");
  for await (const k of await kv.keys()) if (k.startsWith("k.keys.deleted.")) await kv.delete(k);
  expect(await index.lookup(path, "d")).toBeUndefined();
  const revision = await index.reserve(path, "d", 5, undefined);
  expect(revision).toBeGreaterThan(0);
  expect(await index.lookup(path, "d")).toEqual({ first: 5, revision });
});

it("a look-up by key finds the event its reservation names, never a stale or pending reservation's", async () => {
  const path = "/keys/find";
  await store.append(path, [note("one")]);
  // Stale: reserved for offset 2, which an unkeyed record took.
  await index.reserve(path, "stale", 2, undefined);
  await store.append(path, [note("two")]);
  expect(await store.findKeyed(path, "stale")).toBeUndefined();
  // Pending: reserved past the end by a writer that died before publishing.
  await index.reserve(path, "pending", 3, undefined);
  expect(await store.findKeyed(path, "pending")).toBeUndefined();
  const committed = await store.append(path, [note("three", "pending")]);
  expect(await store.findKeyed(path, "pending")).toEqual(committed.events[0]);
});

// A new stream's first record says itself that the stream's keys are all in the key index (its
// `Agentrt-Keys-Indexed` header names the index's epoch), so creating a stream costs no marker
// entry. Another store trusts that header only for the index it names: a bucket deleted and
// created again has a new epoch, and a stream whose first record names an older one is read
// once and its keys recorded. A first record whose keys went out alongside it (the reducer's
// `keysNewAtHead`) cannot vouch for them and is marked the old way.

import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { KEYS_INDEXED_HEADER, durableSubject } from "../src/jetstream/subjects.ts";
import { partitionOfPath } from "../src/partition.ts";

let server: NatsServer;
let nc: NatsConnection;
const stores: JetStreamEventStore[] = [];
const names = { streamName: "EV_FIRST", subjectPrefix: "evf", ephemeralPrefix: "ephf", partitionCount: 4 };

const note = (content: string, idempotencyKey?: string) => ({
  type: "agents/context-added",
  payload: { role: "user", content },
  ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
});

async function openStore(keyIndexBucket: string): Promise<JetStreamEventStore> {
  const connection = await connect({ servers: server.url });
  const store = await JetStreamEventStore.open(connection, { ...names, keyIndexBucket });
  stores.push(store);
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await connection.close();
  };
  return store;
}

/** The header on the stream's first stored message (undefined: none). */
async function firstRecordHeader(path: string): Promise<string | undefined> {
  const jsm = await jetstreamManager(nc);
  const scheme = { durablePrefix: names.subjectPrefix, ephemeralPrefix: names.ephemeralPrefix };
  const msg = await jsm.direct.getMessage(names.streamName, { next_by_subj: durableSubject(scheme, partitionOfPath(path, names.partitionCount), path), seq: 1 });
  if (msg === null) throw new Error(`no record on ${path}`);
  return msg.header.get(KEYS_INDEXED_HEADER) || undefined;
}

async function epochOf(bucket: string): Promise<string | undefined> {
  const entry = await (await new Kvm(nc).open(bucket)).get("epoch");
  return entry === null ? undefined : entry.string();
}

async function markerOf(bucket: string, marker: string): Promise<string | undefined> {
  const entry = await (await new Kvm(nc).open(bucket)).get(marker);
  return entry === null ? undefined : entry.operation;
}

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  for (const store of stores) await store.close();
  await nc?.close();
  await server?.stop();
});

it("given a new stream, when a store writes its first record, then the record names the index's epoch and no marker entry is written", async () => {
  const bucket = "EV_FIRST_KEYS_A";
  const store = await openStore(bucket);
  expect((await store.append("/first/a/one", [note("hello", "a/1")])).status).toBe("committed");
  const epoch = await epochOf(bucket);
  expect(epoch).toMatch(/^[0-9a-f-]{36}$/);
  expect(await firstRecordHeader("/first/a/one")).toBe(epoch);
  // A later record does not carry it.
  expect((await store.append("/first/a/one", [note("again", "a/2")])).status).toBe("committed");
  await new Promise((resolve) => setTimeout(resolve, 200)); // a marker put, if one were made, lands by now
  expect(await markerOf(bucket, "m.first.a.one")).toBeUndefined();

  // Another store trusts the header: it finds the key without reading the stream, and so
  // writes no marker either (a store that read the stream would mark it).
  const other = await openStore(bucket);
  const again = await other.append("/first/a/one", [note("hello again", "a/1")]);
  expect(again.status).toBe("duplicate");
  expect(again.events.map((e) => e.offset)).toEqual([1]);
  expect((await other.append("/first/a/one", [note("third", "a/3")])).events.map((e) => e.offset)).toEqual([3]);
  expect(await markerOf(bucket, "m.first.a.one")).toBeUndefined();
});

it("given a first record naming an index that was deleted, when a store with the new index appends a key, then it reads the stream once and finds the key", async () => {
  const bucket = "EV_FIRST_KEYS_B";
  const store = await openStore(bucket);
  expect((await store.append("/first/b/one", [note("hello", "b/1")])).status).toBe("committed");
  const oldEpoch = await epochOf(bucket);
  await store.close();
  // The operator deletes the index (it is rebuilt from the streams as they are used).
  await (await new Kvm(nc).open(bucket)).destroy();

  const fresh = await openStore(bucket);
  const newEpoch = await epochOf(bucket);
  expect(newEpoch).toBeDefined();
  expect(newEpoch).not.toBe(oldEpoch);
  const again = await fresh.append("/first/b/one", [note("hello again", "b/1")]);
  expect(again.status, "the key from before the index was deleted is still found").toBe("duplicate");
  expect(again.events.map((e) => e.offset)).toEqual([1]);
  expect(await markerOf(bucket, "m.first.b.one"), "the stream was read and marked").toBe("PUT");
});

it("given a stream whose index was deleted, when a store looks a key up, then it reads the stream once, finds the key and marks the stream", async () => {
  const bucket = "EV_FIRST_KEYS_F";
  const store = await openStore(bucket);
  await store.append("/first/f/one", [note("hello", "f/1")]);
  await store.append("/first/f/one", [note("later", "f/2")]);
  await store.close();
  await (await new Kvm(nc).open(bucket)).destroy();

  const fresh = await openStore(bucket);
  expect((await fresh.findKeyed("/first/f/one", "f/2"))?.offset).toBe(2);
  expect(await markerOf(bucket, "m.first.f.one"), "the stream was read and marked").toBe("PUT");
  expect((await fresh.findKeyed("/first/f/one", "f/1"))?.payload).toMatchObject({ content: "hello" });
  expect(await fresh.findKeyed("/first/f/one", "f/3")).toBeUndefined();
});

it("given a first record whose keys are reserved alongside it, when it is stored, then it carries no claim and the marker says it once the reservations landed", async () => {
  const bucket = "EV_FIRST_KEYS_C";
  const store = await openStore(bucket);
  const result = await store.append("/first/c/one", [note("decided", "c/1")], { expectedLastOffset: 0, keysNewAtHead: true });
  expect(result.status).toBe("committed");
  expect(await firstRecordHeader("/first/c/one")).toBeUndefined();
  await waitFor(async () => (await markerOf(bucket, "m.first.c.one")) === "PUT", { timeoutMs: 5_000, intervalMs: 20 });
  const other = await openStore(bucket);
  expect((await other.append("/first/c/one", [note("decided again", "c/1")])).status).toBe("duplicate");
});

it("given two stores opening a new index at once, then they agree on one epoch", async () => {
  const bucket = "EV_FIRST_KEYS_D";
  const [one, two] = await Promise.all([openStore(bucket), openStore(bucket)]);
  await one.append("/first/d/one", [note("from one")]);
  await two.append("/first/d/two", [note("from two")]);
  const epoch = await epochOf(bucket);
  expect(epoch).toMatch(/^[0-9a-f-]{36}$/);
  expect(await firstRecordHeader("/first/d/one")).toBe(epoch);
  expect(await firstRecordHeader("/first/d/two")).toBe(epoch);
});

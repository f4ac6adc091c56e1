// Key reservations forged far ahead of a stream's end. Every service's NATS user may write the
// key index's bucket (they reserve idempotency keys there), and a red-team with the gateway's
// user wrote `{"first":999999999}` for an agent's next settlement keys: every settlement was
// refused ("Too many concurrent writers"), the driver called the model again and again, and not
// even the reducer's expiry could settle the request. A reservation past the offset right after
// the stream's end names a record no writer can publish: it is replaced, compare-and-set, and
// the key is still stored exactly once, by one writer of two racing.

import { createHash } from "node:crypto";
import { streamPathSegments } from "@agentrt/contract";
import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { jetstream } from "@nats-io/jetstream";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { KeyIndex } from "../src/jetstream/key-index.ts";
import { JetStreamPublisher } from "../src/jetstream/publisher.ts";
import { note, settlementBatch } from "./event-store-suite.ts";

const BUCKET = "EV_FORGE_KEYS";
const names = { streamName: "EV_FORGE", subjectPrefix: "evf", ephemeralPrefix: "ephf", partitionCount: 4 };
// The services' user, and a squatter that may only write the key index (as every service's user may).
const AUTH = `authorization {
  users: [
    { user: "service", password: "service" }
    { user: "squatter", password: "squatter", permissions: { publish: { allow: ["$KV.${BUCKET}.>"] }, subscribe: { allow: ["_INBOX.>"] } } }
  ]
}`;

let server: NatsServer;
let squatter: NatsConnection;
let index: KeyIndex;
let publisher: JetStreamPublisher;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];

async function openStore(): Promise<JetStreamEventStore> {
  const nc = await connect({ servers: server.url, user: "service", pass: "service" });
  connections.push(nc);
  const store = await JetStreamEventStore.open(nc, names);
  stores.push(store);
  return store;
}

/** Writes, as the squatter, the entry a keyed append of `key` on `path` reserves (key-index.ts), naming offset `first`. */
async function forge(path: string, key: string, first: number): Promise<void> {
  const entry = `k.${streamPathSegments(path).join(".")}.${createHash("sha256").update(key).digest("hex")}`;
  await jetstream(squatter).publish(`$KV.${BUCKET}.${entry}`, JSON.stringify({ first }));
}

beforeAll(async () => {
  server = await startNatsServer({ extraConfig: AUTH });
  await openStore();
  const nc = connections[0] as NatsConnection;
  publisher = new JetStreamPublisher(nc, 5_000);
  index = await KeyIndex.open(jetstream(nc), publisher, BUCKET, 1);
  squatter = await connect({ servers: server.url, user: "squatter", pass: "squatter" });
});
afterAll(async () => {
  publisher?.close();
  await squatter?.close();
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server?.stop();
});

it("a reservation forged far past the stream's end refuses no keyed append, and the key is stored once", async () => {
  const store = await openStore();
  const path = "/forged/far";
  await store.append(path, [note("one")]);
  await forge(path, "k", 999_999_999);
  expect((await index.lookup(path, "k"))?.first).toBe(999_999_999);
  const committed = await store.append(path, [note("keyed", "k")]);
  expect(committed.status).toBe("committed");
  expect(committed.events.map((e) => e.offset)).toEqual([2]);
  expect((await index.lookup(path, "k"))?.first).toBe(2);
  // Retried, from this writer and from one that never saw the stream: the original.
  expect(await store.append(path, [note("keyed again", "k")])).toEqual({ status: "duplicate", events: committed.events });
  expect(await (await openStore()).append(path, [note("keyed, elsewhere", "k")])).toEqual({ status: "duplicate", events: committed.events });
}, 30_000);

it("one offset past the next is already impossible: a reservation there is replaced too", async () => {
  const store = await openStore();
  const path = "/forged/next-but-one";
  await store.append(path, [note("one")]);
  await forge(path, "k", 3);
  expect((await index.lookup(path, "k"))?.first).toBe(3);
  const committed = await store.append(path, [note("keyed", "k")]);
  expect(committed.events.map((e) => [e.offset, e.idempotencyKey])).toEqual([[2, "k"]]);
  expect((await store.read(path)).filter((e) => e.idempotencyKey === "k")).toHaveLength(1);
}, 30_000);

it("a squatted settlement key: the driver's settlement commits once, a zombie's and the reducer's expiry are duplicates", async () => {
  const driver = await openStore();
  const path = "/forged/settle";
  await driver.append(path, [note("hello")]);
  await forge(path, "agent/settle/1", 999_999_999);
  await forge(path, "agent/settle/2", 999_999_999);
  expect((await index.lookup(path, "agent/settle/1"))?.first).toBe(999_999_999);
  const settled = await driver.append(path, settlementBatch(1, "the reply"));
  expect(settled.status).toBe("committed");
  expect(await (await openStore()).append(path, settlementBatch(1, "a zombie's reply"))).toEqual({ status: "duplicate", events: settled.events });
  const head = (settled.events.at(-1) as { offset: number }).offset;
  const expiry = (requestOffset: number) => [
    { type: "agent/llm-request-settled", payload: { requestOffset, result: { status: "cancelled", reason: "expired" } }, idempotencyKey: `agent/settle/${requestOffset}` },
    { type: "stream/error-occurred", payload: { message: "expired" }, idempotencyKey: `agent/expiry-error/${requestOffset}` },
  ];
  const reducer = await openStore();
  expect(await reducer.append(path, expiry(1), { expectedLastOffset: head })).toEqual({ status: "duplicate", events: [settled.events[1]] });
  // The other squatted request is settled by its expiry, at the head the reducer folded.
  const expired = await reducer.append(path, expiry(2), { expectedLastOffset: head });
  expect(expired.status).toBe("committed");
  expect(expired.events.map((e) => e.offset)).toEqual([head + 1, head + 2]);
}, 30_000);

it("two writers racing one key over a forged reservation store it once, each told the same event", async () => {
  const [a, b] = [await openStore(), await openStore()];
  const path = "/forged/race";
  await a.append(path, [note("one")]);
  for (let wave = 0; wave < 10; wave++) {
    const key = `race/${wave}`;
    await forge(path, key, 999_999_999 - wave);
    expect((await index.lookup(path, key))?.first).toBe(999_999_999 - wave);
    const results = await Promise.all([a.append(path, [note(`a ${wave}`, key)]), b.append(path, [note(`b ${wave}`, key), note(`b ${wave} more`)])]);
    expect(results.map((r) => r.status).sort()).toEqual(["committed", "duplicate"]);
    const original = results.find((r) => r.status === "committed")?.events.find((e) => e.idempotencyKey === key);
    for (const r of results) expect(r.events.find((e) => e.idempotencyKey === key)).toEqual(original);
  }
  const stored = await a.read(path);
  for (let wave = 0; wave < 10; wave++) expect(stored.filter((e) => e.idempotencyKey === `race/${wave}`)).toHaveLength(1);
  expect(stored.map((e) => e.offset)).toEqual(stored.map((_, i) => i + 1));
}, 60_000);

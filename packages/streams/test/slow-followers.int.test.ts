// A follower slower than its stream (a reducer catching up on a large backlog, a host's stream
// cache, a live subscriber that stops reading) used to have its whole backlog read into memory:
// the consumer handed every message on to the subscriber's queue at once, and asked for 512
// records at a time. Now a consumer stops taking messages while 8 MiB (or 1 024 items) wait for
// its subscriber, asks for 64 at a time, and after 5 s without room is stopped and made again
// from the next sequence once the subscriber has taken half. Measured as the bytes the store's
// own NATS connection receives while the follower takes nothing.

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { BACKLOG_MAX_BYTES } from "../src/jetstream/subscriptions.ts";

let server: NatsServer;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];

const RECORDS = 400;
const EVENT_CHARS = 100_000;
const BACKLOG_BYTES = RECORDS * EVENT_CHARS;
const names = { streamName: "EV_SLOW", subjectPrefix: "evs", ephemeralPrefix: "ephs", partitionCount: 4 };
const path = "/slow/follower/stream";

async function freshStore(): Promise<{ store: JetStreamEventStore; nc: NatsConnection }> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const store = await JetStreamEventStore.open(nc, names);
  stores.push(store);
  return { store, nc };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  server = await startNatsServer();
  const { store } = await freshStore();
  for (let i = 0; i < RECORDS; i++) {
    await store.append(path, [{ type: "agents/context-added", payload: { role: "user", content: `${i}:${"x".repeat(EVENT_CHARS)}` } }]);
  }
}, 120_000);

afterAll(async () => {
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server?.stop();
});

// What may be in hand while the follower takes nothing: the subscriber's bounded backlog, plus
// what the consumer asked for before it stopped (64 records), plus a record over the bound.
const BOUND = BACKLOG_MAX_BYTES + 66 * EVENT_CHARS + 2_000_000;

it("a partition feed whose follower takes nothing holds a bounded backlog, and reading on gets every record once, in order", async () => {
  expect(BOUND).toBeLessThan(BACKLOG_BYTES / 2);
  const { store, nc } = await freshStore();
  const before = nc.stats().inBytes;
  // When a follower takes the first batch of a 40 MB backlog and then nothing for 7 s (past the
  // 5 s a consumer waits in place, so its consumer is also made again)
  const feed = store.feed({ partitions: [store.partitionOf(path)] });
  const it = feed[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done === true) throw new Error("the feed ended before its first batch");
  let most = 0;
  for (let t = 0; t < 14; t++) {
    await sleep(500);
    most = Math.max(most, nc.stats().inBytes - before);
  }
  process.stdout.write(`slow feed follower: ${(most / 1e6).toFixed(1)} MB received of a ${(BACKLOG_BYTES / 1e6).toFixed(0)} MB backlog\n`);
  // Then the store's connection has received at most the bound, not the backlog
  expect(most).toBeLessThan(BOUND);
  // And reading on gets every record once, in order
  const sequences = [first.value.sequence];
  const offsets = first.value.events.map((e) => e.offset);
  while (offsets.length < RECORDS) {
    const next = await it.next();
    if (next.done) break;
    sequences.push(next.value.sequence);
    offsets.push(...next.value.events.map((e) => e.offset));
  }
  expect(offsets).toEqual(Array.from({ length: RECORDS }, (_, i) => i + 1));
  expect(sequences.every((s, i) => i === 0 || s > sequences[i - 1]!)).toBe(true);
  await feed.close();
}, 60_000);

it("a live subscription from offset 1 whose subscriber takes nothing holds a bounded backlog, and reading on gets every event once, in order", async () => {
  const { store, nc } = await freshStore();
  const before = nc.stats().inBytes;
  const subscription = store.subscribe(path, { fromOffset: 1 });
  const it = subscription[Symbol.asyncIterator]();
  const first = await it.next();
  expect(first.value?.offset).toBe(1);
  let most = 0;
  for (let t = 0; t < 14; t++) {
    await sleep(500);
    most = Math.max(most, nc.stats().inBytes - before);
  }
  process.stdout.write(`slow subscriber: ${(most / 1e6).toFixed(1)} MB received of a ${(BACKLOG_BYTES / 1e6).toFixed(0)} MB stream\n`);
  expect(most).toBeLessThan(BOUND);
  const offsets = [first.value!.offset];
  while (offsets.length < RECORDS) {
    const next = await it.next();
    if (next.done) break;
    offsets.push(next.value.offset);
  }
  expect(offsets).toEqual(Array.from({ length: RECORDS }, (_, i) => i + 1));
  await subscription.close();
}, 60_000);

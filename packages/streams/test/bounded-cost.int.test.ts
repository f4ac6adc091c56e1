// What a read or a keyed append costs on the wire, measured as the bytes the store's own NATS
// connection receives: a keyed append to a long stream never reads the stream, a page read
// pulls about its byte budget (not the whole range), and an aborted read stops pulling.

import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { Kvm } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";

let server: NatsServer;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];

const RECORDS = 300;
const EVENT_CHARS = 50_000;
const STREAM_BYTES = RECORDS * EVENT_CHARS;
const names = { streamName: "EV_COST", subjectPrefix: "evc", ephemeralPrefix: "ephc", partitionCount: 4 };
const path = "/cost/long/stream";

const note = (content: string, idempotencyKey?: string) => ({
  type: "agents/context-added",
  payload: { role: "user", content },
  ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
});

/** A store on its own fresh connection, so the connection's stats count only what the test does. */
async function freshStore(options: { keyIndexBucket?: string } = {}): Promise<{ store: JetStreamEventStore; nc: NatsConnection }> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const store = await JetStreamEventStore.open(nc, { ...names, ...options });
  stores.push(store);
  return { store, nc };
}

async function received<T>(nc: NatsConnection, action: () => Promise<T>): Promise<{ result: T; bytes: number }> {
  const before = nc.stats().inBytes;
  const result = await action();
  return { result, bytes: nc.stats().inBytes - before };
}

beforeAll(async () => {
  server = await startNatsServer();
  const { store } = await freshStore();
  await store.append(path, [note("the first, keyed", "cost/first")]);
  for (let i = 0; i < RECORDS; i++) await store.append(path, [note(`${i}:${"x".repeat(EVENT_CHARS)}`)]);
}, 120_000);

afterAll(async () => {
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server?.stop();
});

it("a keyed append to a long stream reads a few records, not the stream", async () => {
  const { store, nc } = await freshStore();
  const fresh = await received(nc, () => store.append(path, [note("new", "cost/new")]));
  expect(fresh.result.status).toBe("committed");
  // A cold writer catches up by the stream's last record (a few round trips of one record each).
  expect(fresh.bytes).toBeLessThan(6 * EVENT_CHARS);
  // A key that exists far back: found through its reservation and one located record.
  const duplicate = await received(nc, () => store.append(path, [note("again", "cost/first")]));
  expect(duplicate.result.status).toBe("duplicate");
  expect(duplicate.result.events.map((e) => e.offset)).toEqual([1]);
  // Locating offset 1 is a binary search: O(log records) direct gets of one record each.
  expect(duplicate.bytes).toBeLessThan(2 * Math.ceil(Math.log2(RECORDS) + 2) * EVENT_CHARS);
  expect(duplicate.bytes).toBeLessThan(STREAM_BYTES / 10);
});

it("a read page with a byte budget pulls about that budget, not the whole range", async () => {
  const { store, nc } = await freshStore();
  const maxBytes = 2 * 1_048_576;
  const page = await received(nc, () => store.read(path, { fromOffset: 2, limit: 1000, maxBytes }));
  expect(page.result.length).toBeGreaterThan(0);
  expect(page.result.length).toBeLessThan(50);
  // The budget plus at most one pull in flight (IN_FLIGHT_BYTES), far below the 15 MB range.
  expect(page.bytes).toBeLessThan(maxBytes + 4 * 1_048_576 + 500_000);
  expect(page.bytes).toBeLessThan(STREAM_BYTES / 2);
});

it("an aborted read stops pulling from NATS and leaves no consumer behind", async () => {
  const { store, nc } = await freshStore();
  const jsm = await jetstreamManager(nc);
  const start = nc.stats().inBytes;
  const controller = new AbortController();
  const gone = new Error("client disconnected");
  const watch = setInterval(() => {
    if (nc.stats().inBytes - start > 1_000_000) controller.abort(gone);
  }, 1);
  try {
    await expect(store.read(path, { signal: controller.signal })).rejects.toBe(gone);
  } finally {
    clearInterval(watch);
  }
  const atAbort = nc.stats().inBytes - start;
  await new Promise((resolve) => setTimeout(resolve, 300)); // anything still in flight would arrive now
  const total = nc.stats().inBytes - start;
  expect(total).toBeLessThan(STREAM_BYTES / 2);
  expect(total - atAbort).toBeLessThan(5 * 1_048_576);
  const consumers = [];
  for await (const c of jsm.consumers.list(names.streamName)) consumers.push(c);
  expect(consumers).toEqual([]);
});

it("a stream written before the key index existed is indexed once, and its keys stay unique", async () => {
  // A fresh bucket stands for a deployment upgraded from a version without the index.
  const { store } = await freshStore({ keyIndexBucket: "EV_COST_KEYS_UPGRADED" });
  const again = await store.append(path, [note("again", "cost/first")]);
  expect(again.status).toBe("duplicate");
  expect(again.events.map((e) => e.offset)).toEqual([1]);
  const { store: other } = await freshStore({ keyIndexBucket: "EV_COST_KEYS_UPGRADED" });
  expect((await other.append(path, [note("new again", "cost/new")])).status).toBe("duplicate");
});

it("a new stream's first append with its keys reserved alongside does not wait for the index's mark, and without the mark another store still finds its keys", async () => {
  // (A first record whose keys were reserved before it says so itself: first-record-indexed.int.test.ts.)
  const unmarked = "/cost/unmarked/one";
  const bucket = "EV_COST_KEYS_UNMARKED";
  const { store, nc } = await freshStore({ keyIndexBucket: bucket });
  expect((await store.append(unmarked, [note("first", "unmarked/1")], { expectedLastOffset: 0, keysNewAtHead: true })).status).toBe("committed");
  // The mark never landed (the store died, or NATS lost the put): remove it once it is there.
  const kv = await new Kvm(nc).open(bucket);
  await waitFor(async () => (await kv.get("m.cost.unmarked.one")) !== null, { timeoutMs: 5_000, intervalMs: 20 });
  await kv.purge("m.cost.unmarked.one");
  const { store: other } = await freshStore({ keyIndexBucket: bucket });
  const again = await other.append(unmarked, [note("first, again", "unmarked/1")]);
  expect(again.status).toBe("duplicate");
  expect(again.events.map((e) => e.offset)).toEqual([1]);
  const next = await other.append(unmarked, [note("second", "unmarked/2")]);
  expect(next.events.map((e) => e.offset)).toEqual([2]);
  expect((await kv.get("m.cost.unmarked.one"))?.operation, "the other store marked it after its read").toBe("PUT");
});

// A full read warms the store's writer view (so the next keyed append needs no read of its
// own). The warmed view must behave exactly like a caught-up one: keys already on the stream
// are duplicates, other writers' later appends are caught up with, offsets stay dense.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/index.ts";

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

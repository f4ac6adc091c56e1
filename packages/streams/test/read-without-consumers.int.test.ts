// A read never depends on creating a consumer (see RecordReader.openConsumer). Against a real
// nats-server, a store whose NATS user may not create consumers at all (the state a cluster's
// busy meta leader leaves every client in for a while) still reads a long stream whole, and an
// ordinary user's read of the same stream returns the same events.

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";

let server: NatsServer;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];

const RECORDS = 60;
const names = { streamName: "EV_NOCONS", subjectPrefix: "evn", ephemeralPrefix: "ephn", partitionCount: 4 };
const path = "/no-consumers/long/stream";
const AUTH = `authorization {
  users: [
    { user: "writer", password: "writer" }
    { user: "reader", password: "reader", permissions: { publish: { allow: [">"], deny: ["$JS.API.CONSUMER.CREATE.>", "$JS.API.CONSUMER.DURABLE.CREATE.>"] }, subscribe: { allow: [">"] } } }
  ]
}`;

async function storeAs(user: string): Promise<JetStreamEventStore> {
  const nc = await connect({ servers: server.url, user, pass: user });
  connections.push(nc);
  const store = await JetStreamEventStore.open(nc, { ...names, publishTimeoutMs: 2_000 });
  stores.push(store);
  return store;
}

beforeAll(async () => {
  server = await startNatsServer({ extraConfig: AUTH });
  const writer = await storeAs("writer");
  for (let i = 1; i <= RECORDS; i++) await writer.append(path, [{ type: "agents/context-added", payload: { role: "user", content: `message ${i}` } }]);
}, 60_000);

afterAll(async () => {
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server?.stop();
});

it("a store that may not create consumers reads a long stream whole, by gets", async () => {
  const reader = await storeAs("reader");
  const events = await reader.read(path);
  expect(events.map((e) => e.offset)).toEqual(Array.from({ length: RECORDS }, (_, i) => i + 1));
  expect(events.at(-1)?.payload).toEqual({ role: "user", content: `message ${RECORDS}` });
  // The same from a page in the middle, and the same as a reader with every right reads.
  const page = await reader.read(path, { fromOffset: 20, limit: 30 });
  expect(page.map((e) => e.offset)).toEqual(Array.from({ length: 30 }, (_, i) => i + 20));
  expect(await (await storeAs("writer")).read(path)).toEqual(events);
}, 30_000);

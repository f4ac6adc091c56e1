// The key index's epoch entry when a NATS user that may write the bucket (every service's may:
// they reserve keys there) left it empty, malformed or deleted: the next store to open replaces
// it by compare-and-set and opens, with keys still deduplicated; a store that may not write it
// is refused with an error naming the bucket and the key, instead of looping for good.

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";

const BUCKET = "EV_EPOCH_KEYS";
const names = { streamName: "EV_EPOCH", subjectPrefix: "eve", ephemeralPrefix: "ephe", partitionCount: 4 };
// A service's user (all the key index's subjects, as the generated users have), and one that may
// not write the epoch entry (to see the refusal).
const AUTH = `authorization {
  users: [
    { user: "service", password: "service" }
    { user: "no-epoch", password: "no-epoch", permissions: { publish: { allow: [">"], deny: ["$KV.${BUCKET}.epoch"] }, subscribe: { allow: [">"] } } }
  ]
}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let server: NatsServer;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];

async function connectAs(user: string): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, user, pass: user, maxReconnectAttempts: 0 });
  connections.push(nc);
  return nc;
}

async function openStore(user = "service", publishTimeoutMs = 5_000): Promise<JetStreamEventStore> {
  const store = await JetStreamEventStore.open(await connectAs(user), { ...names, publishTimeoutMs });
  stores.push(store);
  return store;
}

/** The epoch entry as the bucket holds it now. */
async function epochEntry() {
  const kv = await new Kvm(jetstream(await connectAs("service"))).open(BUCKET);
  return await kv.get("epoch");
}

const keyed = (content: string, idempotencyKey: string) => ({ type: "agents/context-added", payload: { role: "user", content }, idempotencyKey });

beforeAll(async () => {
  server = await startNatsServer({ extraConfig: AUTH });
  await openStore();
});
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server?.stop();
});

it.each([
  ["an empty value", (nc: NatsConnection) => jetstream(nc).publish(`$KV.${BUCKET}.epoch`, "")],
  ["a value that is no epoch", (nc: NatsConnection) => jetstream(nc).publish(`$KV.${BUCKET}.epoch`, '{"first":1}')],
  ["a delete marker", async (nc: NatsConnection) => (await new Kvm(jetstream(nc)).open(BUCKET)).delete("epoch")],
])("an epoch entry left as %s is replaced by the next store to open, and keys still deduplicate", async (_, spoil) => {
  const before = await epochEntry();
  expect(before?.string()).toMatch(UUID);
  const path = `/epoch/${before?.revision}`;
  const first = await (await openStore()).append(path, [keyed("one", "k")]);
  expect(first.status).toBe("committed");

  await spoil(await connectAs("service"));
  const store = await openStore();
  const repaired = await epochEntry();
  expect(repaired?.operation).toBe("PUT");
  expect(repaired?.string()).toMatch(UUID);
  expect(repaired?.string()).not.toBe(before?.string());
  // Keys reserved under the old epoch still hold, on a stream whose header names that epoch.
  expect(await store.append(path, [keyed("one again", "k")])).toEqual({ status: "duplicate", events: first.events });
  const next = await store.append(`${path}/new`, [keyed("two", "k")]);
  expect(next.status).toBe("committed");
  expect((await (await openStore()).append(`${path}/new`, [keyed("two again", "k")])).status).toBe("duplicate");
}, 30_000);

it("a store that may not replace a spoiled epoch fails its open naming the bucket and the key", async () => {
  await jetstream(await connectAs("service")).publish(`$KV.${BUCKET}.epoch`, "");
  const error = await openStore("no-epoch", 1_000).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  expect((error as Error).message).toContain(BUCKET);
  expect((error as Error).message).toContain('"epoch"');
  // The entry is still spoiled, and the next store that may write it repairs it.
  expect((await epochEntry())?.string()).toBe("");
  await openStore();
  expect((await epochEntry())?.string()).toMatch(UUID);
}, 30_000);

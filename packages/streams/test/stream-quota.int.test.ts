// The stream quota's ledger on JetStream: one `u.<segments>` entry per stream in the key index's
// bucket, shared by every process (each with its own connection and store), so a gateway that
// never counted a stream refuses it at its quota without reading it; a deleted entry is counted
// again from the stream's start.

import { type NatsServer, startNatsServer } from "@agentrt/testing";
import { Kvm } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type EventStore, jsonBytes, quotaStore, StreamQuota } from "../src/index.ts";
import { JetStreamEventStore } from "../src/jetstream/index.ts";

let server: NatsServer;
const connections: NatsConnection[] = [];
const stores: JetStreamEventStore[] = [];

const names = { streamName: "EV_QUOTA", subjectPrefix: "evq", ephemeralPrefix: "ephq", partitionCount: 4, keyIndexBucket: "EV_QUOTA_KEYS" };
const note = (content: string) => ({ type: "agents/context-added", payload: { role: "user", content } });

async function process(): Promise<JetStreamEventStore> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const store = await JetStreamEventStore.open(nc, names);
  stores.push(store);
  return store;
}

beforeAll(async () => {
  server = await startNatsServer();
});

afterAll(async () => {
  for (const s of stores) await s.close();
  for (const nc of connections) await nc.close();
  await server?.stop();
});

it("a stream counted by one process is refused at its quota by another that never read it", async () => {
  const path = "/agents/quota/shared";
  const gateway = await process();
  const counted = new StreamQuota(gateway, { ledger: gateway.usageLedger, limits: { events: 5 } });
  const held = quotaStore(gateway, counted);
  await held.append(path, [note("1"), note("2")]);
  // The reducer's and the driver's events, appended beside the quota.
  await gateway.append(path, [note("3"), note("4")]);
  await held.append(path, [note("5")]);
  await counted.idle();
  const bytes = (await gateway.read(path)).reduce((sum, event) => sum + jsonBytes(event), 0);
  expect(await gateway.usageLedger.get(path)).toMatchObject({ usage: { bytes, through: 5 } });

  const other = await process();
  let eventsRead = 0;
  const reads: Pick<EventStore, "read" | "lastOffset"> = {
    read: async (p, options) => {
      const events = await other.read(p, options);
      eventsRead += events.length;
      return events;
    },
    lastOffset: (p) => other.lastOffset(p),
  };
  const host = quotaStore(other, new StreamQuota(reads, { ledger: other.usageLedger, limits: { events: 5 } }));
  await expect(host.append(path, [note("6")])).rejects.toMatchObject({ code: "quota_exceeded", details: { streamPath: path, events: 5, bytes } });
  expect(eventsRead).toBe(0);
  expect(await other.lastOffset(path)).toBe(5);
});

it("the ledger is an entry of the key index's bucket; one deleted is counted again from the stream's start", async () => {
  const path = "/agents/quota/deleted";
  const store = await process();
  const quota = new StreamQuota(store, { ledger: store.usageLedger });
  await quotaStore(store, quota).append(path, [note("a"), note("b")]);
  await quota.idle();
  const kv = await new Kvm(jetstream(connections[0] as NatsConnection)).open(names.keyIndexBucket);
  const entry = await kv.get("u.agents.quota.deleted");
  expect(entry?.json()).toMatchObject({ through: 2 });

  await kv.delete("u.agents.quota.deleted");
  const fresh = new StreamQuota(store, { ledger: store.usageLedger });
  await quotaStore(store, fresh).append(path, [note("c")]);
  await fresh.idle();

  const bytes = (await store.read(path)).reduce((sum, event) => sum + jsonBytes(event), 0);
  expect((await kv.get("u.agents.quota.deleted"))?.json()).toEqual({ bytes, through: 3 });
});

it("a usage report made while an append's count is charging the tenant shows the tenant charged", async () => {
  const writer = await process();
  const quota = new StreamQuota(writer, { ledger: writer.usageLedger });
  // The tenant's charge written slowly, as on a loaded machine.
  const slowed = quota as unknown as { charge: (path: string, change: unknown) => Promise<void> };
  const charge = slowed.charge.bind(quota);
  slowed.charge = async (path, change) => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    await charge(path, change);
  };
  const path = "/agents/report-race/a";
  await quotaStore(writer, quota).append(path, [note("one"), note("two")]);
  // Given the append's count has moved the stream's entry and is charging the tenant
  await new Promise((resolve) => setTimeout(resolve, 100));
  // When a report counts the stream now and reads its tenant
  const usage = await quota.countNow(path);
  const tenant = await quota.tenantUsage("/agents/report-race");
  // Then the tenant holds what the stream holds
  expect(usage.through).toBe(2);
  expect(tenant).toEqual({ bytes: usage.bytes, streams: 1 });
});

it("a tenant's usage is one `t.<segments>` entry, charged by the processes that count its streams, and refuses another process's new stream", async () => {
  const writer = await process();
  const limits = { tenantLimits: { streams: 2 } };
  const quota = new StreamQuota(writer, { ledger: writer.usageLedger, ...limits });
  const paths = ["/agents/tenant/a", "/agents/tenant/b"];
  for (const path of paths) await quotaStore(writer, quota).append(path, [note(path)]);
  await writer.append(paths[0] as string, [note("machinery")]);
  await quotaStore(writer, quota).append(paths[0] as string, [note("again")]);
  await quota.idle();

  let bytes = 0;
  for (const path of paths) bytes += (await writer.read(path)).reduce((sum, event) => sum + jsonBytes(event), 0);
  const kv = await new Kvm(jetstream(connections[0] as NatsConnection)).open(names.keyIndexBucket);
  expect((await kv.get("t.agents.tenant"))?.json()).toEqual({ bytes, streams: 2 });

  const other = await process();
  const refused = quotaStore(other, new StreamQuota(other, { ledger: other.usageLedger, ...limits })).append("/agents/tenant/c", [note("c")]);
  await expect(refused).rejects.toMatchObject({ code: "quota_exceeded", details: { tenant: "/agents/tenant", tenantStreams: 2, tenantBytes: bytes } });
  expect(await other.lastOffset("/agents/tenant/c")).toBe(0);
});

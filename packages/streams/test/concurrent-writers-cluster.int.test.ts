// Regression (chaos soak, issue 16): on a 3-node cluster with R3 streams, two writers appending
// to the same agent stream at once (the gateway with a user's message, the reducer with a
// request) could both be acknowledged at the same offset, and one of the two events was then
// invisible to every reader: an acknowledged event lost. nats-server 2.9 checks a clustered
// publish's `Nats-Expected-Last-Subject-Sequence` against the store before proposing it, not
// against proposals still in flight, so two racing publishes can both pass.

import type { AgentEvent } from "@agentrt/contract";
import { type NatsCluster, startNatsCluster } from "@agentrt/testing";
import { type NatsConnection, connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JetStreamEventStore } from "../src/jetstream/index.ts";
import { appendUntilAcked } from "./cluster-support.ts";

let cluster: NatsCluster;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  cluster = await startNatsCluster({ nodes: 3 });
  await cluster.waitForMetaLeader();
}, 60_000);
afterAll(async () => {
  for (const nc of connections) await nc.close();
  await cluster?.stop();
});

it("never acknowledges two concurrent appends at the same offset", async () => {
  // Nine writers, each on its own connection (three per node), as services would be.
  const stores: JetStreamEventStore[] = [];
  for (const server of [...cluster.servers, ...cluster.servers, ...cluster.servers]) {
    const nc = await connect({ servers: [server], maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    connections.push(nc);
    stores.push(await JetStreamEventStore.open(nc, { replicas: 3 }));
  }
  const path = "/cluster/race";
  const acked: AgentEvent[] = [];
  // Rounds with a barrier: every writer appends at the same instant, so their publishes reach
  // the leader with the same expected last subject sequence while the first is in flight.
  for (let round = 0; round < 40; round++) {
    await Promise.all(stores.map(async (store, w) => acked.push(await appendUntilAcked(store, path, `w${w}-${round}`))));
  }
  const stored = await stores[0]!.read(path);
  const lost = acked.filter((a) => stored[a.offset - 1]?.idempotencyKey !== a.idempotencyKey);
  expect(lost.map((a) => [a.offset, a.idempotencyKey, stored[a.offset - 1]?.idempotencyKey])).toEqual([]);
  expect(stored).toHaveLength(360);
  expect(new Set(acked.map((a) => a.offset)).size).toBe(360);
  for (const store of stores) await store.close();
}, 120_000);

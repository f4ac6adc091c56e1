// With R3 streams on a 3-node cluster, an acknowledged append is never lost, not even when a
// node dies mid-load; appends continue on the surviving majority.

import type { AgentEvent } from "@agentrt/contract";
import type { NatsServer } from "@agentrt/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ClusterStore, appendUntilAcked, startClusterStore } from "./cluster-support.ts";

let fx: ClusterStore;

beforeAll(async () => {
  fx = await startClusterStore();
}, 60_000);
afterAll(async () => fx?.stop());

it("loses no acknowledged append when the stream leader of an R3 cluster is killed", async () => {
  const { cluster, nc, store } = fx;
  const path = "/cluster/agent";
  const acked: AgentEvent[] = [];
  for (let i = 0; i < 50; i++) acked.push(await appendUntilAcked(store, path, `k${i}`));
  // Kill the node leading the events stream: the harshest single-node failure.
  const leader = (await (await jetstreamManager(nc)).streams.info(store.streamName)).cluster?.leader;
  const victim = cluster.nodes.find((n) => n.serverName === leader) as NatsServer;
  expect(victim).toBeDefined();
  const load = (async () => {
    for (let i = 50; i < 150; i++) acked.push(await appendUntilAcked(store, path, `k${i}`));
  })();
  await victim.kill("SIGKILL");
  await load;
  await victim.restart();
  const stored = await store.read(path);
  expect(stored.map((e) => e.offset)).toEqual(Array.from({ length: stored.length }, (_, i) => i + 1));
  for (const event of acked) expect(stored[event.offset - 1]).toEqual(event);
  // Keys retried after an unconfirmed publish never produce a second copy.
  const keys = stored.map((e) => e.idempotencyKey);
  expect(new Set(keys).size).toBe(keys.length);
  expect(stored).toHaveLength(150);
  await store.close();
}, 90_000);

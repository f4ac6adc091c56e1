// Regression (chaos soak, issue 16): a partition feed whose consumer lived on a NATS node that
// was killed and restarted went silent — it neither delivered nor ended — so a follower that
// resubscribes when a feed ends (the reducer, the driver's stream cache) never got the chance.
// A feed (and a subscription: the same consumer code) now replaces a silent consumer with a
// fresh one from the next sequence; a follower that resubscribes on an end works either way.

import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ClusterStore, appendUntilAcked, followFeed, startClusterStore } from "./cluster-support.ts";

let fx: ClusterStore;

beforeAll(async () => {
  fx = await startClusterStore();
}, 60_000);
afterAll(async () => fx?.stop());

it("a feed goes on when the node holding its consumer dies and comes back", async () => {
  const { cluster, nc, store } = fx;
  const path = "/cluster/feed";
  const seen: number[] = [];
  const follower = followFeed(store, (e) => seen.push(e.offset));
  for (let i = 0; i < 5; i++) await appendUntilAcked(store, path, `k${i}`, 100);
  const deadline = async (what: string, ok: () => boolean, ms: number) => {
    const end = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`${what} within ${ms} ms (seen ${seen.length}, ends ${follower.ends})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await deadline("the first events", () => seen.length === 5, 10_000);
  // Kill the node that holds the feed's (R1, ordered) consumer, then bring it back.
  const jsm = await jetstreamManager(nc);
  const consumers = await jsm.consumers.list(store.streamName).next();
  const host = consumers.map((c) => c.cluster?.leader).find((l) => l !== undefined);
  const victim = cluster.nodes.find((n) => n.serverName === host);
  expect(victim, `the consumer's node ${host}`).toBeDefined();
  await victim!.kill("SIGKILL");
  for (let i = 5; i < 10; i++) await appendUntilAcked(store, path, `k${i}`, 100);
  await new Promise((r) => setTimeout(r, 3_000)); // the node stays down for a while
  await victim!.restart();
  for (let i = 10; i < 15; i++) await appendUntilAcked(store, path, `k${i}`, 100);
  await deadline("every event after the failover", () => new Set(seen).size === 15, 45_000);
  follower.stop();
  await appendUntilAcked(store, path, `k${15}`, 100);
  await follower.done;
  await store.close();
}, 120_000);

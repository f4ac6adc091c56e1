// The work queue's reconciler on a real 3-node cluster: a replicated work stream whose leader
// counts items it cannot load (the long soak: a leader that took new items and never delivered
// them while another replica held every one, until the leader stepped down) has its leader
// asked to step down, once for what it shows, and a current replica takes over.

import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { type NatsCluster, startNatsCluster, waitFor } from "@agentrt/testing";
import { capturedWarnings, withStreamView } from "./support/reconcile.ts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { consumeWork, ensureWorkStreams, publishWork, workStreamName } from "../src/index.ts";

let cluster: NatsCluster;
let nc: NatsConnection;

beforeAll(async () => {
  cluster = await startNatsCluster({ nodes: 3 });
  nc = await connect({ servers: [...cluster.servers], maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  await waitFor(async () => ensureWorkStreams(await jetstreamManager(nc), { replicas: 3 }).then(() => true, () => false), { what: "the R3 work streams", timeoutMs: 30_000 });
}, 60_000);

afterAll(async () => {
  await nc?.close();
  await cluster?.stop();
});

const leaderOf = async (jsm: JetStreamManager, stream: string) => (await jsm.streams.info(stream)).cluster?.leader;

it("given an R3 work stream whose leader counts items it cannot load, when the worker compares its consumer with it, then the leader is asked to step down once and another replica leads", async () => {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const stream = workStreamName("llm");
  const { lines, capture } = capturedWarnings();
  const seen: unknown[] = [];
  let phantom = false;
  // The leader's view as the soak met it: items counted from a first sequence it cannot load.
  const doctored = withStreamView(jsm, (info) => (phantom ? { ...info, state: { ...info.state, messages: 3, first_seq: info.state.last_seq + 10 } } : undefined));
  const consumer = await consumeWork(js, doctored, {
    kind: "llm",
    durable: "leader-check",
    logger: capture,
    reconcileMs: 100,
    handler: async (item) => {
      seen.push(item);
      return { type: "ack" };
    },
  });
  try {
    await waitFor(async () => (await publishWork(js, "llm", 1, { streamPath: "/a/leader-check", requestOffset: 1 }).then(() => true, () => false)), { what: "an item published", timeoutMs: 10_000 });
    await waitFor(() => seen.length >= 1, { what: "the item handled", timeoutMs: 10_000 });
    const before = await leaderOf(jsm, stream);
    expect(before).toBeDefined();
    phantom = true;
    await waitFor(() => lines.some((l) => /leader counts items it does not hold/.test(String(l.msg))), { what: "the stepdown warning", timeoutMs: 10_000 });
    expect(lines.find((l) => /leader counts items it does not hold/.test(String(l.msg)))).toMatchObject({ leader: before });
    await waitFor(async () => ((await leaderOf(jsm, stream).catch(() => undefined)) ?? before) !== before, { what: "another replica leading", timeoutMs: 15_000 });
    // Asked once for what it shows: the same view on the next checks changes nothing more.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(lines.filter((l) => /leader counts items it does not hold/.test(String(l.msg)))).toHaveLength(1);
    expect(lines.filter((l) => l.msg === "the work stream's leader could not be asked to step down")).toEqual([]);
    // Work flows under the new leader.
    phantom = false;
    await waitFor(async () => (await publishWork(js, "llm", 2, { streamPath: "/a/leader-check", requestOffset: 2 }).then(() => true, () => false)), { what: "an item published", timeoutMs: 10_000 });
    await waitFor(() => seen.length >= 2, { what: "the next item handled", timeoutMs: 10_000 });
  } finally {
    await consumer.stop();
  }
}, 90_000);

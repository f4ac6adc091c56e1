// Regression (chaos soak, issue 16): two capability hosts starting together on a 3-node cluster
// with R3 buckets died at start-up — the liveness bucket had just been created and had no
// leader yet, so the first lease answered "no responders" and the host exited. Start-up now
// waits for the bucket to become writable. Here the cluster has lost its quorum (two of three
// nodes down) when the host starts, and gets it back a moment later.

import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { Kvm } from "@nats-io/kv";
import { type NatsCluster, startNatsCluster, testLogger } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOST_LIVENESS_BUCKET, HostLiveness } from "../src/host-liveness.ts";

let cluster: NatsCluster;
let nc: NatsConnection;
beforeAll(async () => {
  cluster = await startNatsCluster({ nodes: 3 });
  await cluster.waitForMetaLeader();
  nc = await connect({ servers: [cluster.nodes[0]!.url], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
});
afterAll(async () => {
  await nc?.close();
  await cluster?.stop();
});

describe("capability host: the liveness lease at start-up", () => {
  it("waits for a replicated bucket without a leader instead of failing the start", async () => {
    const logger = testLogger();
    const first = await HostLiveness.start({ nc, hostId: "host-a", ttlMs: 3_000, replicas: 3, logger });
    await first.stop();
    // No quorum: the buckets and the meta layer have no leader while these two are down.
    await cluster.nodes[1]!.kill("SIGKILL");
    await cluster.nodes[2]!.kill("SIGKILL");
    const starting = HostLiveness.start({ nc, hostId: "host-b", ttlMs: 3_000, replicas: 3, logger });
    let settled = false;
    void starting.then(() => (settled = true), () => (settled = true));
    await new Promise((r) => setTimeout(r, 1_500)); // still down: the start must not have given up
    expect(settled).toBe(false);
    await Promise.all([cluster.nodes[1]!.restart(), cluster.nodes[2]!.restart()]);
    const second = await starting;
    const lease = await (await new Kvm(nc).open(HOST_LIVENESS_BUCKET)).get("host.host-b");
    expect(lease?.operation).toBe("PUT");
    await second.stop();
  }, 90_000);
});

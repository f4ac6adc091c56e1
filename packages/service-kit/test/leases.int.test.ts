import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { type NatsServer, startNatsServer, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, type PartitionLeases, startPartitionLeases } from "../src/index.ts";

const logger = createLogger("test", "silent");
let server: NatsServer;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  for (const nc of connections) await nc.close().catch(() => undefined);
  await server.stop();
});

async function replica(owner: string, group: string, owned: Set<number>): Promise<{ nc: NatsConnection; leases: PartitionLeases }> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const leases = await startPartitionLeases({
    nc,
    group,
    owner,
    partitionCount: 8,
    ttlMs: 1500,
    renewMs: 300,
    logger,
    onAcquired: (p) => void owned.add(p),
    onLost: (p) => void owned.delete(p),
  });
  return { nc, leases };
}

describe("partition leases", () => {
  it("split the partitions fairly and never give one partition to two replicas", async () => {
    const a = new Set<number>();
    const b = new Set<number>();
    const ra = await replica("a", "fair", a);
    expect(a.size).toBe(8);
    const rb = await replica("b", "fair", b);
    await waitFor(() => a.size === 4 && b.size === 4, { timeoutMs: 10_000 });
    expect([...a].filter((p) => b.has(p))).toEqual([]);
    await rb.leases.stop();
    await waitFor(() => a.size === 8, { timeoutMs: 10_000 });
    await ra.leases.stop();
  });

  it("hand a dead replica's partitions to a survivor within the lease TTL", async () => {
    const a = new Set<number>();
    const b = new Set<number>();
    const ra = await replica("a", "takeover", a);
    const rb = await replica("b", "takeover", b);
    await waitFor(() => a.size === 4 && b.size === 4, { timeoutMs: 10_000 });
    const orphaned = [...b];
    // b dies without releasing anything.
    await rb.leases.stop({ release: false });
    await rb.nc.close();
    const diedAt = Date.now();
    await waitFor(() => orphaned.every((p) => a.has(p)), { timeoutMs: 10_000 });
    expect(Date.now() - diedAt).toBeLessThan(5_000);
    await ra.leases.stop();
  });
});

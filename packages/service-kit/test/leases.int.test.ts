import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { type NatsServer, startNatsServer, testLogger, waitFor } from "@agentrt/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_LEASE_TTL_MS, type PartitionLeases, startPartitionLeases } from "../src/index.ts";

const logger = testLogger("test");
let server: NatsServer;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  server = await startNatsServer();
});
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const nc of connections) await nc.close().catch(() => undefined);
  await server.stop();
});

async function replica(owner: string, group: string, owned: Set<number>, timing: { ttlMs?: number; renewMs?: number } = { ttlMs: 1500, renewMs: 300 }): Promise<{ nc: NatsConnection; leases: PartitionLeases }> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const leases = await startPartitionLeases({
    nc,
    group,
    owner,
    partitionCount: 8,
    ...timing,
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

  it("keep a lease whose renewal landed but went unanswered (a failover), and give up one another replica wrote", async () => {
    const a = new Set<number>();
    const lost: number[] = [];
    const nc = await connect({ servers: server.url });
    connections.push(nc);
    const leases = await startPartitionLeases({
      nc,
      group: "unanswered",
      owner: "a",
      partitionCount: 8,
      ttlMs: 1500,
      renewMs: 300,
      logger,
      onAcquired: (p) => void a.add(p),
      onLost: (p) => {
        a.delete(p);
        lost.push(p);
      },
    });
    expect(a.size).toBe(8);
    const kv = await new Kvm(nc).open("agentrt_leases");
    // What a renewal that timed out in an election leaves: the key rewritten with this
    // replica's own value, at a revision it never heard back.
    const ours = (await kv.get("unanswered.partition.3"))!.string();
    expect(JSON.parse(ours)).toMatchObject({ owner: "a", incarnation: expect.any(String) });
    const landed = await kv.put("unanswered.partition.3", ours);
    await waitFor(async () => ((await kv.get("unanswered.partition.3"))?.revision ?? 0) > landed, { timeoutMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // a few more beats
    expect(lost).toEqual([]);
    expect((await kv.get("unanswered.partition.3"))?.string()).toBe(ours);
    // Another replica's name on the key is a takeover: the lease is lost (and, its writer not
    // being alive, taken back by a later round).
    await kv.put("unanswered.partition.5", JSON.stringify({ owner: "z" }));
    await waitFor(() => lost.includes(5), { timeoutMs: 5_000 });
    // So is this replica's name written by another run of it (one started again under the same
    // owner while this one was frozen): that is not this process's renewal.
    await kv.put("unanswered.partition.6", JSON.stringify({ owner: "a", incarnation: "another run" }));
    await waitFor(() => lost.includes(6), { timeoutMs: 5_000 });
    expect(lost).toEqual([5, 6]);
    await leases.stop();
  });
});

describe("two runs of one owner", () => {
  it("do not take each other's leases while both live, and a run taking over a dead one's takes them at once", async () => {
    const first = new Set<number>();
    const second = new Set<number>();
    let lost = 0;
    const run = async (owned: Set<number>) => {
      const nc = await connect({ servers: server.url });
      connections.push(nc);
      const leases = await startPartitionLeases({
        nc,
        group: "runs",
        owner: "same",
        partitionCount: 8,
        ttlMs: 1500,
        renewMs: 300,
        logger,
        onAcquired: (p) => void owned.add(p),
        onLost: (p) => {
          owned.delete(p);
          lost++;
        },
      });
      return { nc, leases };
    };
    // Given one run holding every partition, when another run of the same owner starts beside it
    const a = await run(first);
    expect(first.size).toBe(8);
    const b = await run(second);
    // Then for several rounds neither takes from the other, and no partition is held twice
    let overlaps = 0;
    for (let i = 0; i < 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if ([...first].some((p) => second.has(p))) overlaps++;
    }
    expect(overlaps).toBe(0);
    expect(lost).toBe(0);
    expect(first.size).toBe(8);
    // And once the first run is gone (its connection closed), the second takes its leases at once
    await a.leases.stop({ release: false });
    await a.nc.close();
    const goneAt = Date.now();
    await waitFor(() => second.size === 8, { timeoutMs: 5_000 });
    expect(Date.now() - goneAt).toBeLessThan(1_500);
    await b.leases.stop();
  });
});

/** A holder in its own process (default timing), so it can be paused or killed like a real replica. */
async function holderProcess(group: string, owner: string): Promise<{ child: ChildProcess; owned: Set<number>; lost: number[] }> {
  const script = join(dirname(fileURLToPath(import.meta.url)), "support", "lease-holder.ts");
  const child = spawn(process.execPath, ["--import", "tsx", script, server.url, group, owner, "8"], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  const owned = new Set<number>();
  const lost: number[] = [];
  let ready = false;
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const message = JSON.parse(line) as { acquired?: number; lost?: number; ready?: boolean };
    if (message.acquired !== undefined) owned.add(message.acquired);
    if (message.lost !== undefined) {
      owned.delete(message.lost);
      lost.push(message.lost);
    }
    if (message.ready === true) ready = true;
  });
  await waitFor(() => ready, { timeoutMs: 30_000 });
  return { child, owned, lost };
}

async function leaseRevisions(group: string, partitions: Iterable<number>): Promise<Map<number, { owner: string; revision: number }>> {
  const kv = await new Kvm(connections[0] ?? (await connect({ servers: server.url }))).open("agentrt_leases");
  const out = new Map<number, { owner: string; revision: number }>();
  for (const p of partitions) {
    const entry = await kv.get(`${group}.partition.${p}`);
    if (entry && entry.operation === "PUT") out.set(p, { owner: (entry.json() as { owner: string }).owner, revision: entry.revision });
  }
  return out;
}

describe("partition leases with the default timing", () => {
  it("bring a bucket made with an older TTL to the configured one", async () => {
    const nc = await connect({ servers: server.url });
    connections.push(nc);
    await new Kvm(nc).create("agentrt_leases_old", { ttl: 6_000, history: 1 });
    const leases = await startPartitionLeases({ nc, bucket: "agentrt_leases_old", group: "old", owner: "a", partitionCount: 2, logger, onAcquired: () => undefined, onLost: () => undefined });
    expect((await (await new Kvm(nc).open("agentrt_leases_old")).status()).ttl).toBe(DEFAULT_LEASE_TTL_MS);
    await leases.stop();
  });

  it("take a killed holder's partitions as soon as its connection is gone, not after the TTL", async () => {
    const holder = await holderProcess("killed", "h");
    await waitFor(() => holder.owned.size === 8, { timeoutMs: 10_000 });
    const a = new Set<number>();
    const ra = await replica("a", "killed", a, {});
    await waitFor(() => a.size === 4 && holder.owned.size === 4, { timeoutMs: 20_000 });
    holder.child.kill("SIGKILL");
    const killedAt = Date.now();
    await waitFor(() => a.size === 8, { timeoutMs: 20_000 });
    const tookMs = Date.now() - killedAt;
    process.stdout.write(`leases: a killed holder's partitions taken over in ${tookMs} ms (TTL ${DEFAULT_LEASE_TTL_MS} ms)\n`);
    // The TTL path cannot be faster than the TTL less one heartbeat: this was presence.
    expect(tookMs).toBeLessThan(DEFAULT_LEASE_TTL_MS - DEFAULT_LEASE_TTL_MS / 6);
    await ra.leases.stop();
  });

  it("take a killed holder's partitions between acquisition rounds: its presence is watched, not only probed by the next round", async () => {
    const holder = await holderProcess("watched", "h");
    await waitFor(() => holder.owned.size === 8, { timeoutMs: 10_000 });
    const a = new Set<number>();
    const nc = await connect({ servers: server.url });
    connections.push(nc);
    // Rounds a minute apart: only the start's round runs within this test, and it finds every
    // partition held by a live holder (or freed by it for a round that never comes).
    const leases = await startPartitionLeases({ nc, group: "watched", owner: "a", partitionCount: 8, acquireEveryMs: 60_000, logger, onAcquired: (p) => void a.add(p), onLost: (p) => void a.delete(p) });
    expect(a.size).toBe(0);
    holder.child.kill("SIGKILL");
    const killedAt = Date.now();
    await waitFor(() => a.size === 8, { timeoutMs: 5_000 });
    process.stdout.write(`leases: a killed holder's partitions taken over between rounds in ${Date.now() - killedAt} ms\n`);
    await leases.stop();
  });

  it("take a holder killed while a probe to it was unanswered without waiting for that probe to time out", async () => {
    const holder = await holderProcess("unanswered", "h");
    await waitFor(() => holder.owned.size === 8, { timeoutMs: 10_000 });
    const a = new Set<number>();
    const nc = await connect({ servers: server.url });
    connections.push(nc);
    const leases = await startPartitionLeases({ nc, group: "unanswered", owner: "a", partitionCount: 8, acquireEveryMs: 60_000, logger, onAcquired: (p) => void a.add(p), onLost: (p) => void a.delete(p) });
    // Frozen (a busy event loop): the watch's probes go unanswered, and each would time out only
    // after a third of the TTL (1 s by default), counting as alive. Then it dies.
    holder.child.kill("SIGSTOP");
    const frozenAt = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(a.size).toBe(0);
    holder.child.kill("SIGKILL");
    const killedAt = Date.now();
    await waitFor(() => a.size === 8, { timeoutMs: 5_000 });
    process.stdout.write(`leases: a holder killed with a probe unanswered taken over in ${Date.now() - killedAt} ms\n`);
    // A probe sent once it froze is unanswered until it times out (a third of the TTL, at most
    // 1 s): a watch that waited for it could not take over before then.
    expect(Date.now() - frozenAt).toBeLessThan(Math.min(1_000, DEFAULT_LEASE_TTL_MS / 3));
    await leases.stop();
  });

  it("leave a paused holder (a long GC, a starved process) every lease it holds", async () => {
    const holder = await holderProcess("paused", "h");
    await waitFor(() => holder.owned.size === 8, { timeoutMs: 10_000 });
    const a = new Set<number>();
    const acquiredByA: number[] = [];
    const ra = await startPartitionLeases({
      nc: connections[0] ?? (await connect({ servers: server.url })),
      group: "paused",
      owner: "a",
      partitionCount: 8,
      logger,
      onAcquired: (p) => {
        a.add(p);
        acquiredByA.push(p);
      },
      onLost: (p) => void a.delete(p),
    });
    await waitFor(() => a.size === 4 && holder.owned.size === 4, { timeoutMs: 20_000 });
    const kept = [...holder.owned];
    const before = await leaseRevisions("paused", kept);
    const acquiredBefore = acquiredByA.length;
    const lostBefore = holder.lost.length; // the partitions it handed back when `a` joined
    // Paused for half the TTL: several acquisition rounds of `a` probe it meanwhile, and time out.
    holder.child.kill("SIGSTOP");
    await new Promise((resolve) => setTimeout(resolve, DEFAULT_LEASE_TTL_MS / 2));
    holder.child.kill("SIGCONT");
    // Resumed: its heartbeat renews every lease it held (a new revision, still its own).
    await waitFor(
      async () => {
        const now = await leaseRevisions("paused", kept);
        return kept.every((p) => (now.get(p)?.revision ?? 0) > (before.get(p)?.revision ?? 0));
      },
      { timeoutMs: 10_000 },
    );
    const after = await leaseRevisions("paused", kept);
    expect(kept.map((p) => after.get(p)?.owner)).toEqual(kept.map(() => "h"));
    expect(acquiredByA.length).toBe(acquiredBefore);
    expect(holder.lost.length).toBe(lostBefore);
    await ra.stop();
    holder.child.kill("SIGKILL");
  });
});

// Partition leases in NATS KV: each reducer replica owns a fair share of the partitions, so
// every agent stream is folded by exactly one replica at a time in normal operation.
//
// A lease is a KV key written with compare-and-set and kept alive by rewriting it; the bucket's
// TTL expires the key of a replica that died, and another replica creates it again within
// `ttlMs`. Replicas announce themselves with member keys on the same TTL so each can compute
// its fair share and hand surplus partitions back when a new replica joins. Two replicas
// briefly overlapping is harmless: every append the reducer makes is idempotency-keyed.

import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";

export interface PartitionLeaseOptions {
  readonly nc: NatsConnection;
  readonly bucket?: string;
  /** The lease group, e.g. "reducer". */
  readonly group: string;
  /** This replica's unique id. */
  readonly owner: string;
  readonly partitionCount: number;
  readonly ttlMs?: number;
  readonly renewMs?: number;
  readonly replicas?: number;
  readonly logger: Logger;
  readonly onAcquired: (partition: number) => void | Promise<void>;
  readonly onLost: (partition: number) => void | Promise<void>;
}

export interface PartitionLeases {
  owned(): ReadonlySet<number>;
  /** Runs one acquire/renew round now (also runs on a timer). */
  tick(): Promise<void>;
  stop(options?: { release?: boolean }): Promise<void>;
}

interface Held {
  revision: number;
}

export async function startPartitionLeases(options: PartitionLeaseOptions): Promise<PartitionLeases> {
  const ttlMs = options.ttlMs ?? 6_000;
  const renewMs = options.renewMs ?? Math.floor(ttlMs / 3);
  const kvm = new Kvm(options.nc);
  const kv: KV = await kvm.create(options.bucket ?? "agentrt_leases", { ttl: ttlMs, history: 1, replicas: options.replicas ?? 1 });
  const held = new Map<number, Held>();
  const leaseKey = (p: number) => `${options.group}.partition.${p}`;
  const memberKey = `${options.group}.member.${options.owner}`;
  const encode = (value: unknown) => JSON.stringify(value);
  let stopped = false;
  // Surplus is handed back only when the fair share has been the same for two rounds, so a
  // member key that lapses for a moment under load does not make partitions ping-pong.
  let previousFairShare = -1;
  let running: Promise<void> = Promise.resolve();

  const lose = async (partition: number, why: string) => {
    if (!held.delete(partition)) return;
    options.logger.warn({ partition, why }, "lease lost");
    await options.onLost(partition);
  };

  const liveMembers = async (): Promise<number> => {
    let count = 0;
    const keys = await kv.keys(`${options.group}.member.*`);
    for await (const key of keys) {
      const entry = await kv.get(key);
      if (entry && entry.operation === "PUT") count += 1;
    }
    return Math.max(1, count);
  };

  const round = async () => {
    if (stopped) return;
    await kv.put(memberKey, encode({ owner: options.owner, at: Date.now() }));
    // Renew what we hold; a failed compare-and-set means someone else has it now.
    for (const [partition, lease] of [...held]) {
      try {
        lease.revision = await kv.update(leaseKey(partition), encode({ owner: options.owner }), lease.revision);
      } catch {
        await lose(partition, "renewal rejected");
      }
    }
    const fairShare = Math.ceil(options.partitionCount / (await liveMembers()));
    const stableShare = fairShare === previousFairShare;
    previousFairShare = fairShare;
    // Hand back surplus so a replica that just joined gets its share.
    while (stableShare && held.size > fairShare) {
      const partition = [...held.keys()].pop() as number;
      const lease = held.get(partition) as Held;
      await kv.delete(leaseKey(partition), { previousSeq: lease.revision }).catch(() => undefined);
      await lose(partition, "rebalanced");
    }
    for (let p = 0; p < options.partitionCount && held.size < fairShare && !stopped; p += 1) {
      if (held.has(p)) continue;
      try {
        const revision = await kv.create(leaseKey(p), encode({ owner: options.owner }));
        held.set(p, { revision });
        options.logger.info({ partition: p }, "lease acquired");
        await options.onAcquired(p);
      } catch {
        // Held by a live replica.
      }
    }
  };

  const runRound = () => {
    running = running.then(round).catch((error: unknown) => options.logger.warn({ err: error }, "lease round failed"));
    return running;
  };

  await runRound();
  const timer = setInterval(() => void runRound(), renewMs);

  return {
    owned: () => new Set(held.keys()),
    tick: runRound,
    async stop({ release = true } = {}) {
      stopped = true;
      clearInterval(timer);
      await running;
      if (release) {
        for (const [partition, lease] of held) {
          await kv.delete(leaseKey(partition), { previousSeq: lease.revision }).catch(() => undefined);
        }
        await kv.delete(memberKey).catch(() => undefined);
      }
      held.clear();
    },
  };
}
